"""One turn on the terminal: progress while it runs, then its record as text or as one JSON
object, the turn's `TurnView` (`session_id`, `turn_id`, `status`, `answer`, its sources cut to
`SOURCE_KEYS`, `evidence`, `checkpoint`, `usage`, `error`, … every field of `TurnResult`; a
batch line adds its `id`). A discovery turn prints its candidates as a short list with their
ids, for `stage add ID`."""

from __future__ import annotations

import json
import sys
import time
from typing import Any, TextIO

from zocrates_nb.citelinks import pages_label
from zocrates_nb.cli.client import Client
from zocrates_nb.events import CheckpointEvent, ErrorEvent, Event, Final, Step, Thinking
from zocrates_nb.names import format_authors
from zocrates_nb.turn import OFFLINE_DISPLAY, CheckpointView, Discovery, TurnResult, TurnView, Usage

SOURCE_KEYS = {"n", "item_key", "title", "authors", "year", "retracted", "notice"}  # in `--json`
PANEL_ONLY = {"chips", "widen_chips", "retry_id", "thinking"}  # the panel's display fields
_JSON_SHAPE: dict[str, Any] = {
    **{f: True for f in [*TurnView.model_fields, *TurnView.model_computed_fields]
       if f not in PANEL_ONLY},
    **{f: {"__all__": SOURCE_KEYS} for f in ("cited_sources", "other_sources", "elsewhere")},
}  # fmt: skip


class TurnPrinter:
    """Collects one turn's events; prints progress for humans and the turn at its end."""

    def __init__(
        self,
        client: Client,
        *,
        json_mode: bool,
        verbose: bool,
        out: TextIO | None = None,
        err: TextIO | None = None,
    ) -> None:
        self.client = client
        self.json_mode = json_mode
        self.verbose = verbose
        # The streams of the moment, not of import time (a redirected stdout must be honoured).
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self.session_id = ""
        self.turn_id = ""
        self.final: Final | None = None
        self.checkpoint: CheckpointEvent | None = None
        self.error: ErrorEvent | None = None
        self.streamed = False
        self.t0 = time.monotonic()

    async def run(self, events: Any) -> None:
        async for event in events:
            self.feed(event)

    def feed(self, ev: Event) -> None:
        self.session_id = ev.session_id or self.session_id
        self.turn_id = ev.turn_id or self.turn_id
        if isinstance(ev, Step):
            if self.verbose or not self.json_mode:
                print(f"  · {ev.label}", file=self.err, flush=True)
        elif isinstance(ev, Thinking):
            if self.verbose:
                print(f"  ~ {ev.role}: {ev.text}", file=self.err, end="", flush=True)
        elif ev.type == "text_delta":
            # The draft streams; what is printed is the verified answer (citations pruned and
            # renumbered), so the terminal only notes that writing has started.
            if not self.streamed and not self.json_mode:
                print("  · writing…", file=self.err, flush=True)
            self.streamed = True
        elif isinstance(ev, Final):
            self.final = ev
        elif isinstance(ev, CheckpointEvent):
            self.checkpoint = ev
        elif isinstance(ev, ErrorEvent):
            self.error = ev

    @property
    def status(self) -> str:
        if self.final is not None:
            return "answered"
        return "checkpoint" if self.checkpoint is not None else "error"

    def record(self) -> TurnResult | None:
        """The turn's record: the answer's own, or the paused turn's as stored."""
        if self.final is not None:
            return self.final
        if (self.checkpoint is not None or self.error is not None) and self.turn_id:
            try:  # a failed turn's record keeps what it spent (and the search it kept)
                return self.client.turn(self.turn_id, session_id=self.session_id or None)
            except Exception:
                return None
        return None

    def view(self) -> TurnView:
        """The turn as every surface receives it (`TurnView`), its status as the stream ended."""
        r = self.record()
        if r is None:
            r = TurnResult(session_id=self.session_id, turn_id=self.turn_id,
                           seconds=round(time.monotonic() - self.t0, 3))  # fmt: skip
        # The one view every surface receives (a printer without a client: the record's own).
        view = self.client.view(r) if self.client is not None else TurnView.of(r)
        paused = None
        if self.checkpoint is not None:  # the stored card, else the event's own
            paused = view.checkpoint or CheckpointView(**self.checkpoint.model_dump())
        changes = {"session_id": self.session_id or view.session_id,
                   "turn_id": self.turn_id or view.turn_id, "status": self.status,
                   "answer": self.final.answer if self.final else "", "checkpoint": paused,
                   "error": self.error.message if self.error else view.error}  # fmt: skip
        return view.model_copy(update=changes)

    def result(self) -> dict[str, Any]:
        """The turn as one JSON object: its `TurnView` without the panel's display fields,
        each source cut to `SOURCE_KEYS`."""
        return self.view().model_dump(mode="json", include=_JSON_SHAPE)

    def print_human(self) -> None:
        o = self.out
        if self.final is not None:
            f = self.view()
            print("─" * 72, file=o)
            if f.discovery is None or not f.discovery.candidates:
                print(f.answer, file=o)
            else:
                print_discovery(f.discovery, self.session_id, o)
            if f.cited_sources:
                print("\nSources", file=o)
                pages = {c.n: pages_label([o.page for o in c.occurrences] or [c.page])
                         for c in f.citations}  # fmt: skip
                for s in f.cited_sources:
                    who = format_authors(s.authors)
                    numbers = s.numbers or ([s.n] if s.n is not None else [])
                    marks = ", ".join(map(str, numbers))
                    where = "; ".join(f"[{n}] {pages[n]}" for n in numbers if pages.get(n))
                    print(f"  [{marks}] {s.title} ({who}{', ' if who else ''}{s.year or 'n.d.'})"
                          + (f" — {where}" if where else "")
                          + (f" — ⚠ {s.notice}" if s.notice else ""), file=o)  # fmt: skip
            if f.other_sources:
                print("\nOther considered", file=o)
                for s in f.other_sources:
                    print(f"  - {s.title} ({s.year or 'n.d.'})"
                          + (f" — ⚠ {s.notice}" if s.notice else ""), file=o)  # fmt: skip
            if f.elsewhere:
                print("\nElsewhere in your library (outside the scope; widen it to search them)",
                      file=o)  # fmt: skip
                for s in f.elsewhere:
                    print(f"  - {s.title} ({s.year or 'n.d.'})", file=o)
            for w in f.warnings:
                print(f"\nNote: {w}", file=o)
            spent = usage_line(f.usage)
            # A read-only home answers through a copy that is removed: no session to go back to.
            kept = getattr(self.client, "read_only_home", None) is None
            where = f"session {self.session_id}" if kept else "not saved: the home is read-only"
            print(f"\n[{f.seconds:.1f} s · {f.model}{spent} · {where}]", file=o)
        elif self.checkpoint is not None:
            c = self.checkpoint
            print("\n" + "─" * 72, file=o)
            print(f"Deep research checkpoint (extension {c.extension} of {c.max_extensions})",
                  file=o)  # fmt: skip
            if c.headline:
                print(f"  {c.headline}", file=o)
            print(
                f"  used {c.calls_used}/{c.budget} retrieval calls, "
                f"{c.words_used:,}/{c.word_ceiling:,} words"
                + (f", ${c.cost_usd:.4f} so far" if c.cost_usd is not None else ""),
                file=o,
            )
            r = self.record()
            if r is not None and usage_line(r.usage):
                print(f"  spent so far{usage_line(r.usage)}", file=o)
            if c.covered_summary:
                print(f"  covered: {c.covered_summary}", file=o)
            for m in c.missing_aspects:
                print(f"  missing: {m}", file=o)
            print(
                f"\nContinue with:\n  zocrates-nb resume --session {self.session_id} "
                "--action extend_budget [--guidance TEXT]\n"
                f"  zocrates-nb resume --session {self.session_id} --action synthesize",
                file=o,
            )
        elif self.error is not None:
            print(f"\nzocrates-nb: error: {self.error.message}", file=self.err)
            r = self.record()
            for w in r.warnings if r is not None else []:
                print(f"Note: {w}", file=self.err)
            if r is not None and usage_line(r.usage):
                print(f"[spent{usage_line(r.usage)} · session {self.session_id}]", file=self.err)

    def finish(self) -> int:
        """Print the turn (one JSON object, or text for a human); the exit status."""
        if self.json_mode:
            print(json.dumps(self.result(), ensure_ascii=False, indent=1), file=self.out)
        else:
            self.print_human()
        return 0 if self.status != "error" else 1

    def batch_line(self, line_id: Any) -> bool:
        """Print this turn as one line of a batch run; True when it failed."""
        result = {"id": line_id, **self.result()}
        print(json.dumps(result, ensure_ascii=False), file=self.out, flush=True)
        return bool(result["status"] == "error")


def print_discovery(d: Discovery, session_id: str, o: TextIO) -> None:
    """Recommendations with their ids (what `stage add` takes), the papers the library already
    holds, and the sources that failed."""
    recommended = [c for c in d.candidates if not c.in_library]
    held = [c for c in d.candidates if c.in_library]
    if recommended:
        print(f"Papers beyond your library on “{d.query}”:", file=o)
        for c in recommended:
            meta = ", ".join(str(p) for p in (c.year, c.venue[:60]) if p)
            print(f"  {c.id}  {c.title}" + (f" ({meta})" if meta else ""), file=o)
            if c.why:
                print(f"{'':14}why: {c.why}", file=o)
    if held:
        print("Already in your library (not recommended again):", file=o)
        for c in held:
            print(f"  - {c.title}" + (f" ({c.year})" if c.year else ""), file=o)
    if d.errors:
        print("Sources that could not be searched:", file=o)
        for e in d.errors:
            print(f"  - {e}", file=o)
    if recommended:
        print(f"\nStage one with: zocrates-nb stage add ID --session {session_id}", file=o)


def usage_line(usage: Usage) -> str:
    """' · 1,234 tokens in, 567 out · $0.0123' when a language model was used, else ''."""
    if all(r.model == OFFLINE_DISPLAY for r in usage.roles.values()):
        return ""
    cost = f" · ${usage.cost_usd:.4f}" if usage.cost_usd is not None else " · cost unknown"
    n = usage.unmetered
    unmetered = f" ({n} request{'' if n == 1 else 's'} without token counts)" if n else ""
    return f" · {usage.input_tokens:,} tokens in, {usage.output_tokens:,} out{unmetered}{cost}"
