"""Post-turn compaction of the coordinator's history.

Called by the agent layer after a turn has completed (never before the first token of the next
one): when the conversation is long, the oldest turns are replaced by ONE summary message and the
last `keep_last` turns stay verbatim. A later compaction rolls the previous summary and the newly
old turns into a fresh summary that replaces both, so there is never more than one. The summary
always holds one record per compacted turn (its question verbatim, the gist of its answer),
built without a model; a model summarizer's text is added after it as notes, never in its
place, so a lossy summarizer cannot drop a turn.

The summary is a `ModelRequest` holding a pydantic-ai `CompactionPart` whose text starts with
"Summary of earlier conversation:"; every pydantic-ai model sends it as framed user-voice text, and
a `FunctionModel` receives the part itself.

Messages must be appended with their `turn_id` (`SessionStore.append_messages(…, turn_id=…)`):
turn boundaries come from those ids, not from guessing at message shapes.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from zocrates_nb.sessions.records import COMPLETED_STATUSES
from zocrates_nb.sessions.state import CompactedTurn, CompactionInfo, SessionState
from zocrates_nb.sessions.store import SessionStore

SUMMARY_PREFIX = "Summary of earlier conversation: "
SUMMARY_MARK = "zocrates_summary"
CHARS_PER_TOKEN = 4
TOOL_RESULT_CHARS = 2000  # per tool result in the transcript given to the summarizer
OFFLINE_SUMMARY_CHARS = 4000
OFFLINE_ANSWER_CHARS = 400  # of each answer, in the offline summary

Summarizer = Callable[[str, str], Awaitable[str] | str]
"""`summarize(previous_summary, transcript) -> new summary` (sync or async).

`previous_summary` is "" on the first compaction; the result must cover both."""


# --- token accounting -----------------------------------------------------------------------
def _part_text(part: object) -> str:
    if isinstance(part, ToolCallPart):
        return f"{part.tool_name} {part.args_as_json_str()}"
    if isinstance(part, ToolReturnPart):
        return part.model_response_str()
    content = getattr(part, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(c for c in content if isinstance(c, str))
    return ""


def estimate_tokens(messages: Sequence[ModelMessage]) -> int:
    """A cheap size estimate: characters of the textual content / 4."""
    chars = sum(len(_part_text(p)) for m in messages for p in m.parts)
    return chars // CHARS_PER_TOKEN


def prompt_tokens(messages: Sequence[ModelMessage]) -> int:
    """The coordinator's prompt size for its next request: the last response's measured input +
    output tokens when the model reported usage, plus the estimate of what came after it (a
    tool's result, such as the answer of a search, arrives after the last response and is not
    in its usage); else the chars/4 estimate of the whole history.

    Measured usage includes instructions and tool schemas, which the estimate cannot see.
    """
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, ModelResponse):
            u = m.usage
            if u.input_tokens:
                return u.input_tokens + u.output_tokens + estimate_tokens(messages[i + 1 :])
            break
    return estimate_tokens(messages)


def should_compact(
    completed_turns: int,
    prompt_tokens: int,
    *,
    min_turns: int = 4,
    token_floor: int = 30_000,
    ceiling: int = 100_000,
    keep_last: int = 2,
) -> bool:
    """Whether to compact after a turn.

    - Compact when completed_turns ≥ min_turns AND prompt_tokens ≥ token_floor.
    - At prompt_tokens ≥ ceiling, compact regardless of the turn count (the hard brake).
    - Never when completed_turns ≤ keep_last: those turns stay verbatim, nothing older exists.
    - A min_turns ≤ keep_last would compact to nothing; it is clamped to keep_last + 1.
    - Boundaries are inclusive: exactly 4 turns and exactly 30,000 tokens compacts.
    """
    if completed_turns <= keep_last:
        return False
    if prompt_tokens >= ceiling:
        return True
    effective_min = max(min_turns, keep_last + 1)
    return completed_turns >= effective_min and prompt_tokens >= token_floor


# --- the summary message --------------------------------------------------------------------
def summary_message(text: str, system_parts: Sequence[SystemPromptPart] = ()) -> ModelRequest:
    """The one message that stands for the compacted turns (system prompt parts kept in front)."""
    return ModelRequest(
        parts=[
            *system_parts,
            CompactionPart(content=SUMMARY_PREFIX + text.strip(), metadata={SUMMARY_MARK: True}),
        ]
    )


def summary_of(messages: Sequence[ModelMessage]) -> str:
    """The summary text carried by compaction messages ("" when there is none)."""
    texts = []
    for m in messages:
        for p in m.parts:
            if isinstance(p, CompactionPart) and p.content:
                texts.append(p.content.removeprefix(SUMMARY_PREFIX).strip())
    return "\n\n".join(texts)


def render_transcript(messages: Sequence[ModelMessage]) -> str:
    """The conversation as plain text for a summarizer: `User:` / `Assistant:` lines, tool calls
    and (truncated) tool results in brackets. Thinking and system prompts are left out."""
    lines: list[str] = []
    for m in messages:
        for p in m.parts:
            if isinstance(p, UserPromptPart):
                lines.append(f"User: {_part_text(p).strip()}")
            elif isinstance(p, TextPart) and p.content.strip():
                lines.append(f"Assistant: {p.content.strip()}")
            elif isinstance(p, ToolCallPart):
                lines.append(f"[tool call {p.tool_name}: {p.args_as_json_str()}]")
            elif isinstance(p, ToolReturnPart):
                text = p.model_response_str().strip()
                if len(text) > TOOL_RESULT_CHARS:
                    text = text[:TOOL_RESULT_CHARS].rstrip() + " …"
                lines.append(f"[tool result {p.tool_name}: {text}]")
            elif isinstance(p, CompactionPart) and p.content:
                lines.append(f"[earlier summary: {p.content.removeprefix(SUMMARY_PREFIX)}]")
            elif isinstance(p, SystemPromptPart | ThinkingPart):
                continue
    return "\n".join(lines)


NOTES_HEAD = "Notes:"  # what a model summarizer wrote, after the turns' own record


def _notes_of(summary: str) -> str:
    """A previous summary's model-written notes (its per-turn record is rebuilt apart)."""
    head, sep, notes = summary.partition(f"\n{NOTES_HEAD}\n")
    return notes.strip() if sep else "\n".join(
        line for line in head.splitlines() if not line.strip().startswith("- Asked:")
    ).strip()


def offline_summarize(previous: str, transcript: str) -> str:
    """An extractive summary for the offline engine (no language model): one line per question
    with the gist of its answer (the assistant's reply, or the answer a search returned), the
    previous summary's lines first. Every question keeps its line: beyond
    OFFLINE_SUMMARY_CHARS the older lines' answers grow shorter, none is dropped, so "what was
    my first question?" and what it found are answered right however long the conversation."""
    return render_turns([*parse_turns(previous), *turns_of(transcript)])


def parse_turns(summary: str) -> list[CompactedTurn]:
    """The per-turn records of a summary's text (a session compacted before they were kept)."""
    lines = [b for b in summary.splitlines() if b.strip().startswith("- Asked:")]
    return [CompactedTurn(question=q, answer=a) for q, a in map(_parse_line, lines)]


def turns_of(transcript: str) -> list[CompactedTurn]:
    """One record per question of a transcript: the question as asked, its answer's gist."""
    turns: list[CompactedTurn] = []
    question: str | None = None
    for kind, body in _transcript_blocks(transcript):
        if kind == "user":
            if question is not None:
                turns.append(CompactedTurn(question=question))
            question = " ".join(body.split())
        elif kind in ("assistant", "answer") and question is not None:
            gist = answer_gist(body, OFFLINE_ANSWER_CHARS)
            if gist:
                turns.append(CompactedTurn(question=question, answer=gist))
                question = None
    if question is not None:
        turns.append(CompactedTurn(question=question))
    return turns


def render_turns(turns: Sequence[CompactedTurn]) -> str:
    """The records as the summary's lines, the older ones shortened to fit."""
    return _fit([(t.question, t.answer) for t in turns], OFFLINE_SUMMARY_CHARS)


_LINE_RE = re.compile(r"^\s*-\s*Asked:\s*(.+?)(?:\s+—\s+answered:\s*(.*))?$")
# How far an older line shrinks: (question chars, answer chars). A question stays whole (up to
# QUESTION_CHARS); an answer shrinks to its first sentence (up to FIRST_SENTENCE_CHARS), never
# less: that is the fact a later turn refers to. Past that the summary grows instead.
QUESTION_CHARS = 1000  # a question as asked (a pasted paragraph is clipped here)
FIRST_SENTENCE_CHARS = 300
_SHORTER = ((QUESTION_CHARS, OFFLINE_ANSWER_CHARS), (QUESTION_CHARS, 0))
_KEEP_FULL = 4  # the latest lines keep their full form


def _parse_line(line: str) -> tuple[str, str]:
    m = _LINE_RE.match(line)
    return (m.group(1).strip(), (m.group(2) or "").strip()) if m else (line.strip(" -"), "")


def _line(question: str, answer: str, q_chars: int, a_chars: int) -> str:
    """One turn's record; `a_chars` 0: its answer's first sentence alone."""
    out = f"- Asked: {_clip(question, q_chars)}"
    gist = _first_sentences(answer, a_chars or 1, limit=FIRST_SENTENCE_CHARS) if answer else ""
    return out + (f" — answered: {gist}" if gist else "")


def _fit(turns: list[tuple[str, str]], cap: int) -> str:
    """Every turn's line, the older ones shortened (oldest first) until the whole fits."""
    level = [0] * len(turns)

    def text() -> str:
        return "\n".join(
            _line(q, a, *_SHORTER[lv]) for (q, a), lv in zip(turns, level, strict=True)
        )

    for step in range(1, len(_SHORTER)):
        for i in range(max(len(turns) - _KEEP_FULL, 0)):
            if len(text()) <= cap:
                return text()
            level[i] = step
    return text()


_BLOCK_RE = re.compile(
    r"^(User: |Assistant: |\[tool call [^:\]]+: |\[tool result ([^:\]]+): |"
    r"\[earlier summary: )"
)


def _transcript_blocks(transcript: str) -> list[tuple[str, str]]:
    """`render_transcript`'s lines grouped back into blocks (a tool result spans many lines):
    ("user" | "assistant" | "answer" | "other", text). A search's result is the answer."""
    blocks: list[tuple[str, list[str]]] = []
    for line in transcript.splitlines():
        m = _BLOCK_RE.match(line)
        if m is None:
            if blocks:
                blocks[-1][1].append(line)
            continue
        head = m.group(1)
        body = line[m.end() :]
        if head == "User: ":
            kind = "user"
        elif head == "Assistant: ":
            kind = "assistant"
        elif head.startswith("[tool result") and m.group(2) == "search_library":
            kind = "answer"
        else:
            kind = "other"
        blocks.append((kind, [body]))
    out = []
    for kind, lines in blocks:
        text = "\n".join(lines)
        if kind in ("answer", "other") and text.endswith("]"):
            text = text[:-1]
        out.append((kind, text))
    return out


def answer_gist(text: str, n: int) -> str:
    """The start of an answer without its framing: headings that only introduce ("… say, in
    their own words:"), italic notes about how it was made, citation markers."""
    lines = []
    for line in text.splitlines():
        s = line.strip()
        if not s or (s.startswith("_") and s.endswith("_")) or s.endswith(":"):
            continue
        s = re.sub(r"_\(§[^)]*\)_", "", s)
        s = re.sub(r"^[-*]\s+", "", s)
        lines.append(s.replace("**", ""))
    flat = re.sub(r"\s*\[\d+(?:\s*[,–-]\s*\d+)*\]", "", " ".join(lines))
    return _first_sentences(flat, n)


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _first_sentences(text: str, n: int, limit: int | None = None) -> str:
    """The sentences of `text` that fit in `n` characters; the first one always (clipped at
    `limit`, else at `n`)."""
    text = " ".join(text.split())
    out = ""
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if out and len(out) + len(sentence) + 1 > n:
            break
        out = f"{out} {sentence}".strip()
    return _clip(out, max(n, limit or n))


# --- compaction -----------------------------------------------------------------------------
@dataclass(frozen=True)
class CompactionResult:
    summary: str
    compacted_turns: int  # turns newly folded into the summary
    kept_turns: int  # turns left verbatim after it
    tokens_before: int
    tokens_after: int


async def compact(
    store: SessionStore,
    session_id: str,
    summarize: Summarizer,
    keep_last: int = 2,
) -> CompactionResult | None:
    """Replace everything before the last `keep_last` completed turns by one rolling summary.

    Returns None when there is nothing to compact, a checkpoint is pending (its run must resume
    on the exact history), or another process compacted meanwhile. The summarizer runs outside
    any transaction; the replacement itself is atomic.
    """
    # Every store call in a worker thread: a locked sessions.db must not stall the event loop.
    if await asyncio.to_thread(store.pending_checkpoint, session_id) is not None:
        return None
    turns = await asyncio.to_thread(store.turns, session_id)
    completed = [t for t in turns if t.status in COMPLETED_STATUSES]
    if len(completed) <= keep_last:
        return None
    kept_ids = {t.turn_id for t in completed[-keep_last:]}
    kept_ids |= {t.turn_id for t in turns if t.status not in COMPLETED_STATUSES}
    blocks = await asyncio.to_thread(store.message_blocks, session_id)
    boundary = next((i for i, b in enumerate(blocks) if b.turn_id in kept_ids), None)
    if boundary is None:
        return None  # the kept turns' messages are not tagged: nothing is safely compactable
    old = blocks[:boundary]
    new_blocks = [b for b in old if b.kind != "summary"]
    if not new_blocks:
        return None
    previous = summary_of([m for b in old if b.kind == "summary" for m in b.messages])
    fresh = [m for b in new_blocks for m in b.messages]
    transcript = render_transcript(fresh)

    # Every turn keeps its record (its question verbatim, the gist of its answer), whatever
    # a model summarizer leaves out; a model's summary is added to it, never in its place.
    prior_info = (await asyncio.to_thread(store.get_state, session_id)).compaction
    kept = list(prior_info.turns) if prior_info and prior_info.turns and previous else []
    records = [*(kept or parse_turns(previous)), *turns_of(transcript)]
    turns_record = render_turns(records)
    if summarize is offline_summarize:
        text = turns_record
    else:
        result = summarize(_notes_of(previous), transcript)
        notes = await result if inspect.isawaitable(result) else result
        if not isinstance(notes, str) or not notes.strip():
            raise ValueError("the summarizer returned no summary")
        text = f"{turns_record}\n\n{NOTES_HEAD}\n{notes.strip()}"

    first = old[0].messages[0] if old[0].messages else None
    system_parts: list[SystemPromptPart] = []
    if isinstance(first, ModelRequest):
        for part in first.parts:
            if not isinstance(part, SystemPromptPart):
                break
            system_parts.append(part)
    message = summary_message(text, system_parts)

    newly = len({b.turn_id for b in new_blocks if b.turn_id})
    by_id = {t.turn_id: t.index for t in turns}
    through = max((by_id.get(b.turn_id or "", 0) for b in new_blocks), default=0)

    def record(state: SessionState) -> None:
        prior = state.compaction
        state.compaction = CompactionInfo(
            summary=text.strip(),
            turns=records,
            compacted_turns=(prior.compacted_turns if prior and previous else 0) + newly,
            through_turn_index=max(through, prior.through_turn_index if prior else 0),
            times=(prior.times + 1) if prior and previous else 1,
        )

    all_before = [m for b in blocks for m in b.messages]
    applied = await asyncio.to_thread(
        functools.partial(
            store.replace_messages, session_id, [message], seqs=[b.seq for b in old],
            state_fn=record,
        )
    )
    if not applied:
        return None
    after: list[ModelMessage] = [message, *(m for b in blocks[boundary:] for m in b.messages)]
    return CompactionResult(
        summary=text.strip(),
        compacted_turns=newly,
        kept_turns=len({b.turn_id for b in blocks[boundary:] if b.turn_id}),
        tokens_before=estimate_tokens(all_before),
        tokens_after=estimate_tokens(after),
    )


async def maybe_compact(
    store: SessionStore,
    session_id: str,
    summarize: Summarizer,
    *,
    min_turns: int = 4,
    token_floor: int = 30_000,
    ceiling: int = 100_000,
    keep_last: int = 2,
    tokens: int | None = None,
) -> CompactionResult | None:
    """`should_compact` on the stored session, then `compact` if it says so.

    `tokens` is the coordinator's measured prompt size when the caller knows it; otherwise it is
    taken from the stored history (`prompt_tokens`).
    """
    turns = await asyncio.to_thread(store.turns, session_id)
    completed = sum(t.status in COMPLETED_STATUSES for t in turns)
    if tokens is None:
        tokens = prompt_tokens(await asyncio.to_thread(store.load_messages, session_id))
    if not should_compact(
        completed,
        tokens,
        min_turns=min_turns,
        token_floor=token_floor,
        ceiling=ceiling,
        keep_last=keep_last,
    ):
        return None
    return await compact(store, session_id, summarize, keep_last=keep_last)


def is_summary_request(part: ModelRequestPart) -> bool:
    """True for the CompactionPart this module writes."""
    return isinstance(part, CompactionPart) and bool((part.metadata or {}).get(SUMMARY_MARK))
