"""The public API around the pipeline: a dead model endpoint (clear error, session still
usable), config hot reload, post-turn compaction, cancellation, the offline coordinator, and
the CLI's JSON output."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents_helpers import (
    RAFT,
    Recorder,
    coordinator_search,
    index_small_library,
    run,
    search_then,
    terminal,
    user_prompts,
)
from conftest import LibraryBuilder
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, DeltaToolCalls, FunctionModel

from zocrates_nb.app import App


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    root = tmp_path_factory.mktemp("small-app")
    home = root / "home"
    index = index_small_library(LibraryBuilder(root / "library"), home)
    yield home, index
    index.close()


def write_config(home: Path, data: dict[str, Any]) -> None:
    """Replace the config file atomically (a new inode: the change is seen at once)."""
    tmp = home / "zocrates_config.json.tmp"
    tmp.write_text(json.dumps(data), "utf-8")
    os.replace(tmp, home / "zocrates_config.json")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_dead_endpoint_is_a_clear_error_and_the_session_survives(
    tmp_path: Path, small: tuple[Path, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, index = small
    monkeypatch.setenv("ZOCRATES_TEST_DEAD_KEY", "not-a-real-key-123456")
    write_config(
        tmp_path,
        {
            "models": {
                "base": {
                    "model": "openai:gpt-4o-mini",
                    "base_url": f"http://127.0.0.1:{closed_port()}/v1",
                    "api_key_env": "ZOCRATES_TEST_DEAD_KEY",
                }
            }
        },
    )
    app = App.open(tmp_path, index=index)
    sid = app.new_session()
    t0 = time.monotonic()
    error = terminal(run(app.ask("How does Raft elect a leader?", session_id=sid)))
    assert time.monotonic() - t0 < 20
    assert error.type == "error"
    assert "unreachable" in error.message and "127.0.0.1" in error.message
    assert "not-a-real-key" not in error.message
    assert app.history(sid)[-1].status == "error"
    # Fix the config (no restart): the next turn in the same session works.
    write_config(tmp_path, {})
    ok = terminal(run(app.ask("hello", session_id=sid)))
    assert ok.type == "final" and "without a language model" in ok.answer
    assert [t.status for t in app.history(sid)] == ["error", "answered"]


def test_config_edits_apply_at_the_next_turn(tmp_path: Path, small: tuple[Path, Any]) -> None:
    _, index = small
    rec = Recorder()
    write_config(tmp_path, {"retrieval": {"budget": 3}})
    app = App.open(
        tmp_path,
        index=index,
        role_models={
            "coordinator": rec.wrap("coordinator", coordinator_search),
            "search": rec.wrap("search", search_then(["raft"])),
        },
    )
    terminal(run(app.ask("Raft?", hitl=False)))
    assert "3 retrieval tool calls" in user_prompts(rec.seen["search"][-1])[0]
    write_config(tmp_path, {"retrieval": {"budget": 4, "word_ceiling": 5000}})
    terminal(run(app.ask("Raft again?", hitl=False)))
    assert "4 retrieval tool calls, 5,000 words" in user_prompts(rec.seen["search"][-1])[0]
    # A bad edit is a clear error naming the key; fixing it recovers.
    write_config(tmp_path, {"retrieval": {"budgett": 4}})
    err = terminal(run(app.ask("Raft once more?", hitl=False)))
    assert err.type == "error" and "retrieval.budgett" in err.message


def test_post_turn_compaction_rolls_old_turns_into_one_summary(
    tmp_path: Path, small: tuple[Path, Any]
) -> None:
    _, index = small
    write_config(
        tmp_path, {"sessions": {"compaction": {"min_turns": 3, "token_floor": 0, "keep_last": 1}}}
    )
    app = App.open(tmp_path, index=index)
    sid = app.new_session()
    for prompt in ("hello", "who are you?", "thanks", "what can you do?", "bye"):
        assert terminal(run(app.ask(prompt, session_id=sid))).type == "final"
    blocks = app.store.message_blocks(sid)
    assert blocks[0].kind == "summary" and sum(b.kind == "summary" for b in blocks) == 1
    assert len([b for b in blocks if b.kind == "turn"]) == 1  # the last turn stays verbatim
    info = app.store.get_state(sid).compaction
    assert info is not None and info.times >= 2 and info.compacted_turns == 4
    assert "who are you?" in info.summary
    assert [t.status for t in app.history(sid)] == ["answered"] * 5  # display keeps all


def test_cancel_ends_the_turn_cleanly(tmp_path: Path, small: tuple[Path, Any]) -> None:
    _, index = small
    started = asyncio.Event()

    async def slow_search(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[DeltaToolCalls]:
        started.set()
        await asyncio.sleep(60)
        yield {}

    async def main() -> tuple[list[Any], float]:
        app = App.open(
            tmp_path,
            index=index,
            role_models={
                "coordinator": Recorder().wrap("coordinator", coordinator_search),
                "search": FunctionModel(stream_function=slow_search),
            },
        )
        cancel = asyncio.Event()
        events: list[Any] = []

        async def trigger() -> None:
            await started.wait()
            cancel.set()

        task = asyncio.ensure_future(trigger())
        t0 = time.monotonic()
        async for ev in app.ask("Raft?", cancel=cancel):
            events.append(ev)
        await task
        return events, time.monotonic() - t0

    events, seconds = asyncio.run(main())
    end = terminal(events)
    assert end.type == "error" and "cancelled" in end.message and seconds < 30
    app = App.open(tmp_path, index=index)
    assert app.history(end.session_id)[-1].status == "cancelled"
    assert terminal(run(app.ask("hello", session_id=end.session_id))).type == "final"


def test_offline_coordinator_banter_and_follow_up_rewrite() -> None:
    from zocrates_nb.agents.offline import PastTurn, standalone_goal
    from zocrates_nb.agents.offline.coordinator import follow_up

    goal = "How does Raft elect a leader?"
    turns = [PastTurn(goal, goal, "Raft uses randomized timeouts.")]
    # The earlier subject is a typed field beside the goal, never text appended to it.
    why, earlier = follow_up("Why?", turns)
    assert why == "Why?" and earlier is not None
    assert (earlier.subject, earlier.question) == ("Raft", goal)
    assert earlier.context(why) == f"Why? {goal}"
    assert standalone_goal("and what about its log?", turns) == "and what about Raft's log?"
    new = "What is the boiling point of tungsten at sea level?"
    assert follow_up(new, turns) == (new, None)
    # A comparison whose one side is a pronoun refers back: the name in it is the other side.
    zab = "How does Zab order broadcasts?"
    turns = [PastTurn(zab, zab, "- Zab orders them by epoch and counter. It is total. [1]")]
    assert standalone_goal("Compare that with Raft's log.", turns) == "Compare Zab with Raft's log."
    # One that names no aspect of its own asks the earlier question of the other side, and
    # recalls the earlier side in one whole sentence.
    it, earlier = follow_up("How does it compare to Paxos?", turns)
    assert it == "How does Paxos order broadcasts?"
    assert earlier is not None and earlier.answer == "Zab orders them by epoch and counter."
    gfs = "How does GFS handle chunk server failures?"
    turns = [PastTurn(gfs, gfs, "GFS re-replicates their chunks.")]
    that = standalone_goal("How is that different in Bigtable?", turns)
    assert that == "How does Bigtable handle chunk server failures?"
    both = "How does Raft compare to Paxos?"  # names both sides: a new question
    assert standalone_goal(both, turns) == both


def test_a_correction_switches_to_what_the_researcher_means() -> None:
    from zocrates_nb.agents.offline import PastTurn
    from zocrates_nb.agents.offline.coordinator import follow_up

    q = "How does Paxos choose a value?"
    turns = [PastTurn(q, q, "- A value is chosen by a majority. [1]", ("Paxos Made Simple",))]
    goal, earlier = follow_up("No, I meant the other paper.", turns)
    assert goal == q and earlier is not None and earlier.correction
    assert earlier.not_papers == ["Paxos Made Simple"]
    goal, earlier = follow_up("I meant Zab", turns)
    assert goal == "How does Zab choose a value?" and earlier is not None and earlier.correction


def test_a_correction_by_the_librarys_names_gives_up_the_paper_it_replaces() -> None:
    """"Sorry, I meant the X paper" names no capitalised system: the library's names say which
    paper it means and which one the earlier question named; "the other MoCo paper, the one
    with the improved baselines" means the paper with that title, not the one quoted."""
    from zocrates_nb.agents.offline import PastTurn
    from zocrates_nb.agents.offline.coordinator import follow_up
    from zocrates_nb.index.names import Catalogue, CatalogueItem

    names = Catalogue([
        CatalogueItem("WN", "Weight Normalization: A Simple Reparameterization", ("Salimans",)),
        CatalogueItem("NTK", "Neural Tangent Kernel: Convergence and Generalization",
                      ("Jacot",)),
        CatalogueItem("MOCO", "Momentum Contrast for Unsupervised Visual Representation Learning",
                      ("He",), abstract="We present Momentum Contrast (MoCo). MoCo has a queue."),
        CatalogueItem("MOCO2", "Improved Baselines with Momentum Contrastive Learning",
                      ("Chen",)),
        CatalogueItem("RAFT", "In Search of an Understandable Consensus Algorithm",
                      abstract="We present Raft. Unlike Paxos, Raft separates leader election."),
        CatalogueItem("ZAB", "Zab: High-performance broadcast for primary-backup systems"),
        CatalogueItem("PAXOS", "Paxos Made Simple", ("Lamport",)),
    ])  # fmt: skip
    q = "How are the weights initialised in the weight normalization paper?"
    turns = [PastTurn(q, q, "", ("Weight Normalization: A Simple Reparameterization",))]
    goal, earlier = follow_up("Sorry, I meant the neural tangent kernel paper.", turns, names=names)
    assert goal == "How are the weights initialised in “Neural Tangent Kernel: Convergence and " \
                   "Generalization”?"  # fmt: skip
    assert earlier is not None and earlier.not_papers == [names.items["WN"].title]
    q = "What does the MoCo paper say about how large its queue can be?"
    turns = [PastTurn(q, q, "", (names.items["MOCO"].title,))]
    msg = "No, I meant the other MoCo paper, the one with the improved baselines."
    goal, earlier = follow_up(msg, turns, names=names)
    assert "Improved Baselines" in goal and "MoCo" not in goal
    assert earlier is not None and earlier.not_papers == [names.items["MOCO"].title]
    q = "Compare how Raft and Zab elect a new leader."
    turns = [PastTurn(q, q, "", (names.items["RAFT"].title, names.items["ZAB"].title))]
    goal, earlier = follow_up("No, I meant Raft and Paxos Made Simple.", turns, names=names)
    assert goal == "Compare how Raft and “Paxos Made Simple” elect a new leader."
    assert earlier is not None and earlier.not_papers == [names.items["ZAB"].title]
    # "I meant Paxos, not Raft": the paper meant replaces the one named; the other is given up.
    q = "How does Raft keep a leader from being elected twice in a term?"
    turns = [PastTurn(q, q, "", (names.items["RAFT"].title,))]
    goal, earlier = follow_up("Sorry, I meant Paxos Made Simple, not Raft.", turns, names=names)
    assert goal == "How does “Paxos Made Simple” keep a leader from being elected twice in a term?"
    assert earlier is not None and earlier.not_papers == [names.items["RAFT"].title]
    # A correction, then a new question whose "it" is what is meant.
    msg = "Oh wait, I meant Zab, not Raft. How does it order the updates it broadcasts?"
    goal, earlier = follow_up(msg, turns, names=names)
    assert goal == "How does Zab order the updates Zab broadcasts?"
    assert earlier is not None and earlier.not_papers == [names.items["RAFT"].title]
    # Other words for it: "wrong paper" gives up the paper the answer quoted.
    msg = "Sorry, wrong paper, I was thinking of the Zab one. How does it order its updates?"
    goal, earlier = follow_up(msg, turns, names=names)
    assert "Zab" in goal and "Raft" not in goal
    assert earlier is not None and earlier.not_papers == [names.items["RAFT"].title]
    # A take-back first ("Scratch that"), a colon after "wrong paper", "wanted" for "meant".
    msg = "Scratch that, wrong paper: I wanted Zab. How does it order its updates?"
    goal, earlier = follow_up(msg, turns, names=names)
    assert "Zab" in goal and "Raft" not in goal
    assert earlier is not None and earlier.not_papers == [names.items["RAFT"].title]
    # "I wanted to know …" is a question, not a correction.
    goal, earlier = follow_up("In Zab, I wanted to know how updates are ordered.", turns,
                              names=names)  # fmt: skip
    assert earlier is None or not earlier.correction


def test_app_lists_sessions_titles_and_doctor(tmp_path: Path, small: tuple[Path, Any]) -> None:
    _, index = small
    app = App.open(tmp_path, index=index)
    sid = app.new_session()
    terminal(run(app.ask("hello there", session_id=sid)))
    assert [s.session_id for s in app.sessions()] == [sid]
    assert app.sessions()[0].title == "hello there" and app.session(sid).turns == 1
    chips = app.search_titles("raft")
    assert chips[0].kind == "item" and chips[0].key == RAFT
    found = app.search_titles("systems")
    assert any(c.kind == "collection" and c.title == "Systems" for c in found)
    info = app.doctor()
    assert info.any_cloud_endpoint is False
    assert set(info.models.roles) == {"coordinator", "search", "synthesizer", "verifier",
                                      "online_search", "online_synthesizer"}  # fmt: skip
    assert info.embedding_model and info.rerank and info.rerank.rerank_method
    assert info.index_health.ok and info.library and info.library.items >= 4


def test_cli_ask_json_offline(small: tuple[Path, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from zocrates_nb.cli import main

    home, _ = small
    assert main(["--home", str(home), "ask", "How does Raft elect a leader?", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {
        "session_id",
        "status",
        "answer",
        "cited_sources",
        "other_sources",
        "evidence",
        "checkpoint",
        "usage",
        "seconds",
    }
    assert out["status"] == "answered" and out["checkpoint"] is None
    assert "without a language model" in out["answer"]
    assert out["cited_sources"][0]["item_key"] == RAFT
    assert set(out["cited_sources"][0]) == {"n", "item_key", "title", "authors", "year",
                                               "retracted", "notice"}
    cited = [e for e in out["evidence"] if e["cited"]]
    assert cited and all(e["item_key"] == RAFT and e["text"] and e["support"] for e in cited)
    assert main(["--home", str(home), "sessions", "--json"]) == 0
    sessions = json.loads(capsys.readouterr().out)
    assert out["session_id"] in {s["session_id"] for s in sessions}


def test_app_mirrors_the_cli_library_commands(
    small: tuple[Path, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`App.open(home).search(…)` from a plain script; status, search, toc and read are typed
    App calls the CLI prints; bad requests are one plain UsageError."""
    import subprocess
    import sys

    from zocrates_nb.cli import main
    from zocrates_nb.errors import UsageError
    from zocrates_nb.frames import audit_frame

    home, _ = small
    script = ("import sys\nfrom zocrates_nb import App\n"
              "hit = App.open(sys.argv[1]).search('how does raft elect a leader')[0]\n"
              "print(hit.title, '|', hit.item_key, '|', hit.section)\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script, str(home)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"Understandable Consensus with Raft | {RAFT} | ")

    with App.open(home) as app:
        status = app.status()
        assert status.items == 4 and status.chunks > 0 and status.documents["done"] >= 4
        hits = app.search("leader election", collections=["Systems"], limit=3)
        assert hits and {h.item_key for h in hits} == {RAFT}
        assert (hits[0].authors, hits[0].year) == (["Ada Author", "Bo Raft"], 2020)
        with pytest.raises(UsageError, match="unknown collection 'Nope'"):
            app.search("leader", collections=["Nope"])
        outline = app.toc(RAFT).outline
        assert "Understandable Consensus with Raft" in outline
        read = app.read(RAFT, ["s1"])
        assert read.assets and read.assets[0].asset_id == "s1"
        with pytest.raises(UsageError, match="Unknown item key"):
            app.toc("NOSUCHKY")
        with pytest.raises(UsageError, match="one library source"):
            app.index(folder=tmp_path, sample=True)
        with pytest.raises(UsageError, match="budget"):
            app.ask("Raft?", budget=0)

        # A collection given by key is shown by its name.
        sid = app.new_session()
        assert terminal(run(app.ask("Raft?", session_id=sid, collections=["SYSCOLL2"],
                                    hitl=False))).type == "final"  # fmt: skip
        assert audit_frame(app, sid)["scope"].tolist() == ["collections: Systems"]

    assert main(["--home", str(home), "search", "leader election", "--collection", "Systems",
                 "--limit", "3", "--json"]) == 0  # fmt: skip
    printed = json.loads(capsys.readouterr().out)
    assert [h["chunk_id"] for h in printed] == [h.chunk_id for h in hits]
    assert main(["--home", str(home), "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chunks"] == status.chunks
    assert main(["--home", str(home), "search", "x", "--collection", "Nope"]) == 2
    assert capsys.readouterr().err.startswith("zocrates-nb: error: unknown collection 'Nope'")
