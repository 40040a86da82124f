"""The chat panel's messages, typed: what the front end sends and what Python answers.

Every message of widgets/PROTOCOL.md is a model here. An inbound message is validated with
`inbound` (a malformed one becomes one plain sentence for the panel's banner, nothing else is
lost); an outbound one is built from its model and sent as `payload(message)`. The protocol's
document is generated from these models: `python -m zocrates_nb.widget.protocol >
widgets/PROTOCOL.md` (its prose around the tables lives in `widgets/PROTOCOL.in.md`).
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

from zocrates_nb.turn import (
    TURN_STATUSES,
    CheckpointView,
    CitationView,
    ScopeChips,
    ScopeCollection,
    ScopeItem,
    SourceView,
    TurnResult,
    TurnView,
)

MAX_IDS = 200  # candidate ids in one stage/unstage/save message


def _ids(value: Any) -> list[str]:
    """The candidate ids of a message, de-duplicated; anything but a list of strings is none."""
    if not isinstance(value, list):
        return []
    return list(dict.fromkeys(str(i) for i in value if isinstance(i, str) and i))[:MAX_IDS]


def _exactly_true(value: Any) -> bool:
    return value is True


Ids = Annotated[list[str], BeforeValidator(_ids)]
# A write happens only when the front end says the researcher confirmed it: exactly `true`.
Confirmed = Annotated[bool, BeforeValidator(_exactly_true)]


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")


# ---------------------------------------------------------------------------- front end → Python
class Ask(_Message):
    """Enter or the send button; never sent while `busy`. Python starts a turn as a background
    task: `turn_started`, then `busy = True`, the events, the terminal event, `busy = False`
    (see *Ordering*). If it refuses the question (longer than `max_prompt`, a pending
    checkpoint, no index…) it sends one `error` event with `turn_id: ""` and leaves `busy`."""

    kind: Literal["ask"]
    prompt: str = Field(description="trimmed, never empty")
    whole_library: bool = Field(
        False, description="the answer's “Search the whole library”: this once, `scope` unchanged"
    )


class Resume(_Message):
    """A checkpoint card's button (or "Retry answer" with an error's `retry_id`). Python resumes
    the paused turn **with the same `turn_id`**: optionally `turn_started`, `busy = True`,
    events, the terminal event, `busy = False`."""

    kind: Literal["resume"]
    interrupt_id: str = Field(min_length=1)
    action: Literal["extend_budget", "synthesize"]
    guidance: str = Field("", description="trimmed; empty for none")


class Stop(_Message):
    """The Stop button, or Escape while busy. Python cancels the running turn, then `busy =
    False`, and sends **no** `error` event: a turn that goes idle without a terminal event is
    shown as cancelled ("Stopped") with its partial answer."""

    kind: Literal["stop"]


class SearchTitles(_Message):
    """Typing in the scope box, 150 ms after the last keystroke. Python replies `title_results`
    with the same `query` (answers to older queries are ignored)."""

    kind: Literal["search_titles"]
    query: str


class SetScope(_Message):
    """Picking or removing a chip, "Whole library". Python applies it and sets the `scope`
    trait to the applied value (1–5 papers, or ≥ 1 collection, each known to the index); a
    refused scope sets `error` and the chips fall back to the `scope` trait."""

    kind: Literal["set_scope"]
    scope: ScopeChips


class OpenSession(_Message):
    """The session picker, and **every view, once, when it renders** (a message sent before a
    view exists is lost). Python sets `session_id` and sends that session's `history`; re-opening
    the current session does not disturb a running turn."""

    kind: Literal["open_session"]
    session_id: str = ""


class NewSession(_Message):
    """The ＋ button. Python creates a session, sets `session_id`, sends `history` with no turns."""

    kind: Literal["new_session"]


class RenameSession(_Message):
    """The ✎ button, Enter in the title box: renamed (whitespace collapsed, ≤ 200 characters)."""

    kind: Literal["rename_session"]
    session_id: str
    title: str


class DeleteSession(_Message):
    """The bin button, clicked twice within 4 s: refused while a turn of it runs; deleting the
    open session sets `session_id = ""` and sends `history` with no turns."""

    kind: Literal["delete_session"]
    session_id: str


class Stage(_Message):
    """A candidate card's **Stage**: `App.stage(ids, session_id=…)`, then `staged` refreshed. A
    refusal stages nothing, sets `error`, and refreshes `staged` all the same."""

    kind: Literal["stage"]
    ids: Ids = Field(default_factory=list)


class Unstage(_Message):
    """A card's **Staged ✓**, the tray's **Remove**: `App.unstage(…)`, then `staged` refreshed."""

    kind: Literal["unstage"]
    ids: Ids = Field(default_factory=list)


class StagedList(_Message):
    """Asks for the `staged` trait again."""

    kind: Literal["staged_list"]


class SaveStaged(_Message):
    """The tray's confirm step, after the researcher saw what will be written where. Without
    `confirmed` or a session nothing is written (`save_result` with `ok: false`); else
    `App.save_staged` runs in a worker thread, one `save_result` answers, `staged` refreshes."""

    kind: Literal["save_staged"]
    to: str = Field("", description='"connector" | "web" | "ris" | "bibtex"')
    ids: Ids = Field(default_factory=list, description="exactly the papers the step listed")
    confirmed: Confirmed = Field(False, description="exactly `true`")


class SaveNote(_Message):
    """An answer's **Save as note**, then its confirm step. Without `confirmed` or a session:
    `note_result` with `ok: false`; else `App.save_note` in a worker thread, one `note_result`."""

    kind: Literal["save_note"]
    turn_id: str = ""
    to: str = Field("", description='"connector" | "web"')
    confirmed: Confirmed = Field(False, description="exactly `true`")


class Annotate(_Message):
    """An answer's **Highlight in Zotero**: without `confirmed`, a dry run (the highlights it
    would write, for the confirm step); with it, `App.annotate` writes them through the Web API
    in a worker thread. Either way one `annotate_result` answers."""

    kind: Literal["annotate"]
    turn_id: str = ""
    confirmed: Confirmed = Field(False, description="exactly `true` to write")


class AddPapers(_Message):
    """The tray's **Add a paper by identifier** (DOIs, arXiv ids, ISBNs; up to 20) after its
    confirm step: `App.add` in a worker thread, one `save_result`."""

    kind: Literal["add_papers"]
    ids: list[Any] = Field(default_factory=list, description="identifiers, as typed")
    to: str = Field("", description='"connector" | "web"')
    confirmed: Confirmed = Field(False, description="exactly `true`")


Inbound = (Ask | Resume | Stop | SearchTitles | SetScope | OpenSession | NewSession
           | RenameSession | DeleteSession | Stage | Unstage | StagedList | SaveStaged | SaveNote
           | Annotate | AddPapers)  # fmt: skip
INBOUND: tuple[type[_Message], ...] = typing.get_args(Inbound)
_INBOUND: TypeAdapter[Inbound] = TypeAdapter(Annotated[Inbound, Field(discriminator="kind")])


def _kind(model: type[BaseModel]) -> str:
    return str(typing.get_args(model.model_fields["kind"].annotation)[0])


KINDS = frozenset(_kind(m) for m in INBOUND)


class BadMessage(ValueError):
    """A message of a known kind whose fields are wrong: one plain sentence for the banner."""


def inbound(content: Any) -> Inbound | None:
    """The typed message, None for an unknown kind (ignored), or `BadMessage` saying why."""
    kind = content.get("kind") if isinstance(content, dict) else None
    if kind not in KINDS:
        return None
    try:
        message = _INBOUND.validate_python(content)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"][1:]) or "message"
        raise BadMessage(f"The panel sent a {kind} message the kernel cannot read ({where}: "
                         f"{first['msg'].lower()}); nothing was done.") from None  # fmt: skip
    return message


# ---------------------------------------------------------------------------- Python → front end
class TurnStarted(_Message):
    """A turn began (or resumed: same `turn_id`). The bubble opened on Enter takes this
    `turn_id`; a known `turn_id` reuses its bubble; otherwise (a turn started from Python or
    another view) a new user bubble with `prompt` and a new assistant bubble appear."""

    kind: Literal["turn_started"] = "turn_started"
    turn_id: str
    prompt: str


class History(_Message):
    """Replaces the conversation (after `open_session`, `new_session`, `delete_session`),
    oldest turn first. Each turn is a `TurnView` (below) without its `evidence`."""

    kind: Literal["history"] = "history"
    turns: list[dict[str, Any]] = Field(default_factory=list, description="[TurnView]")


class TitleItem(_Message):
    """A paper offered by the scope search."""

    key: str
    title: str
    year: int | None = None
    authors: list[str] = Field(default_factory=list)


class TitleResults(_Message):
    """Answers `search_titles`; `query` echoes the request. Papers already in scope are not
    offered again; with five papers in scope, papers are listed but disabled."""

    kind: Literal["title_results"] = "title_results"
    query: str
    items: list[TitleItem] = Field(default_factory=list)
    collections: list[ScopeCollection] = Field(default_factory=list)


class Unsaved(_Message):
    """A paper not saved, with why (a plain sentence) when there is a reason."""

    id: str
    title: str = ""
    reason: str = ""


class SaveFile(_Message):
    """An export handed to the browser as a download: nothing is written on the kernel's disk."""

    name: str
    mime: str
    text: str


class SaveResult(_Message):
    """Answers `save_staged` and `add_papers`. `ok: false` carries only `message`: one plain
    sentence saying why nothing was saved, the list as it was. A save that stopped part-way
    lists `pending` (saving again sends them, never a paper twice)."""

    kind: Literal["save_result"] = "save_result"
    ok: bool
    to: str
    saved: list[str] = Field(default_factory=list)
    failed: list[Unsaved] = Field(default_factory=list, description="each with its reason")
    pending: list[Unsaved] = Field(default_factory=list, description="not saved yet")
    message: str = ""
    where: str = Field("", description="where it went, e.g. \"the collection 'X' in My Library\"")
    attached: int = Field(0, description="saved papers Zotero found a PDF for (connector)")
    unattached: list[Unsaved] = Field(default_factory=list, description="saved without a PDF")
    file: SaveFile | None = Field(None, description="for ris and bibtex: the download")


class NoteResult(_Message):
    """Answers `save_note`, shown under that answer."""

    kind: Literal["note_result"] = "note_result"
    turn_id: str
    ok: bool
    to: str
    message: str


class HighlightLine(_Message):
    """One highlight of an `annotate_result`."""

    title: str
    page_label: str
    quote: str
    state: str = Field(description='"would write" | "written" | "already" | "failed" | "pending"')


class SkippedLine(_Message):
    quote: str
    title: str = ""
    why: str


class AnnotateResult(_Message):
    """Answers `annotate`, shown under that answer: what would be (`dry_run`) or was written."""

    kind: Literal["annotate_result"] = "annotate_result"
    turn_id: str
    ok: bool
    dry_run: bool = False
    message: str = ""
    highlights: list[HighlightLine] = Field(default_factory=list)
    skipped: list[SkippedLine] = Field(default_factory=list)


class EventMessage(_Message):
    """One event of `zocrates_nb/events.py` as JSON, with its `type`, `session_id` and
    `turn_id`; a `final` event is the answered turn's `TurnView` (with `type: "final"`)."""

    kind: Literal["event"] = "event"
    event: dict[str, Any]


Outbound = (TurnStarted | EventMessage | History | SaveResult | NoteResult | AnnotateResult
            | TitleResults)  # fmt: skip
OUTBOUND: tuple[type[_Message], ...] = typing.get_args(Outbound)


def payload(message: Outbound) -> dict[str, Any]:
    """The JSON a model sends: the fields it was given (and its `kind`); the others absent."""
    return message.model_dump(mode="json", exclude_unset=True) | {"kind": message.kind}


# ---------------------------------------------------------------------------- the document
def _type(annotation: Any) -> str:
    """A field's type as the document spells it (`str`, `[str]`, `"a" | "b"`, `T | null`)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return _type(args[0])
    if origin is Literal:
        return " \\| ".join(f'"{a}"' for a in args)
    if origin in (Union, types.UnionType):
        return " \\| ".join("null" if a is type(None) else _type(a) for a in args)
    if origin is list:
        return f"[{_type(args[0])}]"
    if origin is dict:
        return "{}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation.__name__
    return {str: "str", int: "int", float: "float", bool: "bool"}.get(annotation, "any")


def _doc(model: type[BaseModel]) -> str:
    return " ".join((model.__doc__ or "").split())


def _fields(model: type[BaseModel], skip: tuple[str, ...] = ("kind",)) -> list[str]:
    rows = ["| field | type | meaning |", "| --- | --- | --- |"]
    for name, f in model.model_fields.items():
        if name not in skip:
            rows.append(f"| `{name}` | `{_type(f.annotation)}` | {f.description or ''} |")
    return rows


def inbound_section() -> str:
    """The table of what the front end sends."""
    rows = ["| message | fields | when, and what Python must do |", "| --- | --- | --- |"]
    for m in INBOUND:
        fields = ", ".join(f"`{n}: {_type(f.annotation)}`" for n, f in m.model_fields.items()
                           if n != "kind") or "—"  # fmt: skip
        rows.append(f"| `{_kind(m)}` | {fields} | {_doc(m)} |")
    return "\n".join(rows)


def outbound_section() -> str:
    """One heading per message Python sends, its fields, and the records they carry."""
    out: list[str] = []
    for m in OUTBOUND:
        out += [f'### `{{kind: "{_kind(m)}", …}}`', "", _doc(m), "", *_fields(m), ""]
    statuses = " \\| ".join(f'"{s}"' for s in TURN_STATUSES)
    out += [
        "### `TurnView` (a `history` turn, a `final` event)",
        "",
        _doc(TurnView),
        "",
        f"`status` is one of `{statuses}`: the words of `zocrates_nb/turn.py:TurnStatus`, "
        "end to end (the front end adds `pending`, a bubble waiting for its "
        "`turn_started`). Beside the fields of `TurnResult`:",
        "",
        *_fields(TurnView, skip=tuple(set(TurnView.model_fields) - _VIEW_ONLY)),
        "",
        "The fields of `TurnResult` (`zocrates_nb/turn.py`): "
        + ", ".join(f"`{n}`" for n in [*TurnResult.model_fields, *TurnResult.model_computed_fields])
        + ".",
        "",
    ]
    for record in (ScopeChips, ScopeItem, ScopeCollection, SourceView, CitationView,
                   CheckpointView, TitleItem, Unsaved, SaveFile):  # fmt: skip
        out += [f"`{record.__name__}`: {_doc(record)}", "", *_fields(record, skip=()), ""]
    return "\n".join(out).rstrip() + "\n"


_VIEW_ONLY = {"chips", "widen_chips", "retry_id", "thinking", "cited_sources", "other_sources",
              "elsewhere", "citations", "checkpoint"}  # fmt: skip
TEMPLATE = Path(__file__).resolve().parents[2] / "widgets" / "PROTOCOL.in.md"


def document(template: Path = TEMPLATE) -> str:
    """widgets/PROTOCOL.md: the template's prose with the generated message sections."""
    text = template.read_text("utf-8")
    return (text.replace("{{inbound}}", inbound_section())
            .replace("{{outbound}}", outbound_section()))  # fmt: skip


if __name__ == "__main__":
    sys.stdout.write(document())
