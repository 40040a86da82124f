"""`%load_ext zocrates_nb`, then `%%zocrates` / `%zocrates` in IPython's own shell: the cell's
question is asked in the chat panel (the same answer view), with the scope and model as
options, kept as a turn of the data home; a mistake is one line in the cell."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from IPython.testing.globalipapp import get_ipython

from zocrates_nb.app import App
from zocrates_nb.turn import TurnResult

LEASES = "Leases and Lock Delays"


@pytest.fixture(scope="module")
def home(own_sample_home: Path) -> Path:
    return own_sample_home


@pytest.fixture(scope="module")
def shell():  # type: ignore[no-untyped-def]
    ip = get_ipython()
    ip.run_line_magic("load_ext", "zocrates_nb")
    return ip


def answered(home: Path, session_id: str, turn: int = 1) -> TurnResult:
    """The session's `turn`-th turn once it has ended (the panel runs it in the background:
    right after the magic returns, the turn may not be recorded yet)."""
    deadline = time.monotonic() + 300
    with App.open(home) as app:
        while time.monotonic() < deadline:
            turns = app.history(session_id)
            if len(turns) >= turn and turns[-1].status != "running":
                return turns[-1]
            time.sleep(0.5)
    raise AssertionError("the turn did not end")


def test_a_cell_asks_within_its_scope_in_the_panel(shell, home: Path) -> None:  # type: ignore[no-untyped-def]
    with App.open(home) as app:
        (lease_key,) = {h.item_key for h in app.search("lock delay lease", limit=1)}
    panel = shell.run_cell_magic(
        "zocrates", f"--home {home} --items {lease_key} --no-hitl --model offline",
        "How long must a client wait before it can take over a lock whose holder was lost?\n",
    )  # fmt: skip
    assert type(panel).__name__ == "ChatWidget" and panel.session_id
    assert panel.scope["mode"] == "items" and [i["key"] for i in panel.scope["items"]] == [
        lease_key]  # fmt: skip
    turn = answered(home, panel.session_id)
    assert turn.status == "answered", turn.error
    assert turn.prompt.startswith("How long must a client wait")
    assert turn.options.items == [lease_key] and turn.options.model == "offline"
    assert "[1]" in turn.answer and turn.cited_sources[0].title.startswith(LEASES)

    # %zocrates on one line continues the session
    again = shell.run_line_magic(
        "zocrates", f"--home {home} --session {panel.session_id} --no-hitl Why use lock delays?")
    assert again.session_id == panel.session_id
    assert answered(home, panel.session_id, turn=2).prompt == "Why use lock delays?"


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("--model nonsense why?", "'nonsense' is not a model string"),
        ("--items NOSUCHK1 why?", "NOSUCHK1"),
        ("--budget 0 why?", "budget: Input should be greater than or equal to 1"),
        ("--bogus why?", "unrecognized arguments: --bogus"),
        ("--session nosuchsession why?", "nosuchsession"),
        ("", "give a question"),
    ],
)
def test_a_mistake_is_one_line(  # type: ignore[no-untyped-def]
    shell, home: Path, line: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert shell.run_line_magic("zocrates", f"--home {home} {line}") is None
    err = capsys.readouterr().err
    assert err.startswith("zocrates: ") and err.count("\n") == 1 and says in err, err
    assert "Traceback" not in err
