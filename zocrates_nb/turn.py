"""The typed record of one turn, carried end to end.

`TurnResult` is what a turn leaves behind: stored as JSON in `sessions.db`, returned by
`App.turn`/`App.history`, carried by the stream's `Final` event, served by the HTTP API (its
OpenAPI schema is generated from these models), rendered by the widget, flattened by `frames`
and printed by the CLI. `AskOptions` is the one declaration of what a question may ask for
(scope, checkpoints, budgets, model); the CLI flags, the HTTP body and `App.ask` derive from it.

A base module: it imports pydantic and the standard library only, so every room may import it.
`Candidate`/`Discovery` (papers found beyond the library) live here too: a discovery turn
carries them.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, computed_field

TurnStatus = Literal["running", "answered", "checkpoint", "error", "cancelled"]
TURN_STATUSES: tuple[TurnStatus, ...] = ("running", "answered", "checkpoint", "error", "cancelled")
ScopeKind = Literal["library", "selection", "collection"]


# The kinds of passage a document is cut into (a search may ask for one).
CHUNK_TYPES = ("frontmatter", "abstract", "body", "figure", "table", "note")

class Record(BaseModel):
    """A typed record carried end to end and stored: read back leniently, copied strictly."""

    # Stored records are read back by later versions: unknown keys (and derived fields
    # serialised for readers) are ignored, never an error.
    model_config = ConfigDict(extra="ignore")

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update` applied and validated like a new record: a misspelt field or a
        value of the wrong type is an error here, not a record that breaks a reader later."""
        if not update:
            return super().model_copy(deep=deep)
        unknown = sorted(set(update) - set(type(self).model_fields))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no field {', '.join(unknown)}")
        data = {name: getattr(self, name) for name in type(self).model_fields}
        copied = type(self).model_validate({**data, **update})
        return copied.model_copy(deep=True) if deep else copied

    @classmethod
    def from_passage(cls, source: object, **own: Any) -> Self:
        """This record of a passage another holds (an index chunk, evidence, a row): the
        passage fields (`PASSAGE_FIELDS`) both carry are copied, `own` sets the others."""
        names = [n for n in cls.model_fields if n in PASSAGE_FIELDS and hasattr(source, n)]
        return cls.model_validate({**{n: getattr(source, n) for n in names}, **own})


class Scope(Record):
    """What a question searches: item keys, collections, or (neither) the whole library.

    Items and collections together mean the selected items within those collections.
    """

    items: list[str] = Field(default_factory=list)
    collections: list[str] = Field(default_factory=list)

    @property
    def kind(self) -> ScopeKind:
        if self.items:
            return "selection"
        return "collection" if self.collections else "library"


class AskOptions(BaseModel):
    """The options of one question (everything but the question and its session)."""

    model_config = ConfigDict(extra="forbid")

    items: list[str] | None = Field(None, description="Zotero item or attachment keys in scope.")
    collections: list[str] | None = Field(None, description="Collection names or keys in scope.")
    hitl: bool = Field(True, description="Pause at deep-research checkpoints (false: never).")
    budget: int | None = Field(
        None, ge=1, le=100, description="Retrieval tool calls for this turn's search run."
    )
    word_ceiling: int | None = Field(
        None, ge=100, le=200_000, description="Evidence words for this turn's search run."
    )
    model: str | None = Field(
        None, min_length=1, description="A model string for this turn (default: the config's)."
    )

    @property
    def scope(self) -> Scope:
        return Scope(items=list(self.items or []), collections=list(self.collections or []))

    def with_scope(self, scope: Scope) -> AskOptions:
        """These options searching `scope` (validated as any options are)."""
        return AskOptions.of(
            self, items=list(scope.items) or None, collections=list(scope.collections) or None
        )

    @classmethod
    def of(cls, options: AskOptions | None = None, **changes: Any) -> AskOptions:
        """These options (or the defaults) with `changes` applied, validated; a subclass
        instance (the HTTP body) is reduced to the options."""
        base = options.model_dump(include=set(cls.model_fields)) if options is not None else {}
        return cls.model_validate({**base, **changes})


# ---------------------------------------------------------------------------- an answer
class Source(Record):
    """One paper in the Sources block (tier 'cited' or 'other')."""

    n: int | None = None  # its first citation number when cited
    numbers: list[int] = Field(default_factory=list)  # every [n] that cites this paper
    item_key: str
    title: str
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    tier: Literal["cited", "other"] = "other"
    # The scholarly record's word on it: retracted or withdrawn, and the sentence that says so
    # ("this paper was retracted in 2021"; also an expression of concern, not retracted).
    retracted: bool = False
    notice: str = ""


class CitedPlace(Record):
    """Where one occurrence of a `[n]` marker points: the page of the sentence it supports
    (and the page that sentence ends on, when it runs across two)."""

    page: int | None = None
    page_end: int | None = None


class Citation(Record):
    """What a `[n]` marker points at (for popovers).

    `page` is the page of the sentence the first `[n]` supports (else the passage's first
    page); `occurrences` gives each `[n]` of the answer, in order, its own page."""

    n: int
    chunk_id: str
    item_key: str
    title: str
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    section: str = ""
    page: int | None = None
    page_end: int | None = None
    occurrences: list[CitedPlace] = Field(default_factory=list)
    text: str = ""
    support: float | None = None  # verification support probability


class PassageFields(Record):
    """What every view of a passage carries (a search hit, a piece of evidence, a turn's row),
    declared once: a field added to a passage is added here (or to `PlacedPassage`)."""

    chunk_id: str  # index chunk id, or "{doc_key}:{asset}" / "{doc_key}:p{N}" for reads
    item_key: str  # parent item key
    title: str = ""
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    section: str = ""
    chunk_type: str = ""  # frontmatter | abstract | body | figure | table | note
    page: int | None = None
    page_end: int | None = None
    words: int = 0
    text: str = ""


class PlacedPassage(PassageFields):
    """A passage with its place in the document it came from."""

    attachment_key: str  # the document: attachment or note key
    section_id: str = ""  # "s3", "f1", "t2", "abstract", "p4"
    line_start: int | None = None  # 1-based inclusive range in the document's Markdown
    line_end: int | None = None


PASSAGE_FIELDS = frozenset(PlacedPassage.model_fields)


class EvidenceRow(PassageFields):
    """One passage a turn's search gathered: what the synthesizer saw (`ranked`, in order),
    then the other passages found. Every column of `frames.evidence_frame` comes from here."""

    tool: str = ""  # search_corpus | read_document
    retrieval_rank: int | None = None  # 1-based rank in the tool call that found it
    ranked: bool = False  # handed to the synthesizer after reranking
    rerank_rank: int | None = None  # 1-based position after reranking
    rerank_score: float | None = None
    rerank_method: str = ""
    cited: bool = False  # a verified citation of the answer points at it
    n: int | None = None  # its citation number
    support: float | None = None  # best verification support of its citations (0–1)
    unsupported: bool = False  # cited only by claims the verification did not support


class QuestionPart(Record):
    """One part of a compound or comparative question, searched and answered on its own."""

    text: str
    subject: str = ""  # the named thing it asks about
    heading: str = ""  # how the answer and the checkpoint card name it ("Raft: elect a leader")
    covered: bool | None = None  # evidence in scope bears on it (None: not judged)


# The model a role's usage names when the embedded offline engine played it.
OFFLINE_DISPLAY = "embedded offline engine (no language model)"


class RoleUsage(Record):
    """Requests, tokens and cost of one role over a turn (and its resumptions)."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # None: no priced model (the offline engine is free)
    model: str = ""
    unmetered: int = 0  # requests sent whose token counts no server reported (a cut stream too)


class Usage(Record):
    """Usage per role; the totals are derived, never stored."""

    roles: dict[str, RoleUsage] = Field(default_factory=dict)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def requests(self) -> int:
        return sum(r.requests for r in self.roles.values())

    @computed_field  # type: ignore[prop-decorator]
    @property
    def input_tokens(self) -> int:
        return sum(r.input_tokens for r in self.roles.values())

    @computed_field  # type: ignore[prop-decorator]
    @property
    def output_tokens(self) -> int:
        return sum(r.output_tokens for r in self.roles.values())

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unmetered(self) -> int:
        return sum(r.unmetered for r in self.roles.values())

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost_usd(self) -> float | None:
        costs = [r.cost_usd for r in self.roles.values() if r.cost_usd is not None]
        return round(sum(costs), 6) if costs else None

    def add(
        self,
        role: str,
        model: str,
        *,
        requests: int = 0,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: float | None = None,
        unmetered: int = 0,
    ) -> None:
        r = self.roles.setdefault(role, RoleUsage(model=model))
        r.model = model  # the model that ran last (a resume after a config edit runs the new one)
        r.requests += requests
        r.input_tokens += input_tokens
        r.output_tokens += output_tokens
        r.unmetered += unmetered
        if cost_usd is not None:
            r.cost_usd = round((r.cost_usd or 0.0) + cost_usd, 6)


class CheckpointInfo(Record):
    """What a paused search shows the researcher: its spending, what it covered and lacks."""

    interrupt_id: str  # `<turn_id>-ext<n>`: what a resume answers
    extension: int  # the extension this would grant: 1 or 2
    max_extensions: int = 2
    calls_used: int
    budget: int
    words_used: int
    word_ceiling: int
    covered_summary: str = ""
    missing_aspects: list[str] = Field(default_factory=list)
    cost_usd: float | None = None
    # Why it paused, so the card's words match its numbers: the call budget is used up, the
    # word ceiling is reached (or nearly: 80 %), or the agent asked for more.
    # (None: a record written before the reason was kept.)
    reason: Literal["budget", "word_ceiling", "word_ceiling_near", "agent"] | None = None
    headline: str = ""  # the reason as the card's title, e.g. "The search used 8 of 10 calls…"


class TrailStep(Record):
    """One visible step of a turn, kept for the panel's trail."""

    phase: str
    label: str
    detail: dict[str, Any] = Field(default_factory=dict)
    seconds: float | None = None


_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.IGNORECASE)
_ARXIV_VERSION = re.compile(r"v\d+$")


class Candidate(Record):
    """A paper to consider adding; `id` is stable across sources and processes."""

    id: str = ""
    title: str
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    venue: str = ""
    doi: str | None = None
    arxiv_id: str | None = None
    url: str | None = None
    pdf_url: str | None = None  # open-access PDF when a source knows one
    isbn: str | None = None  # a book's or chapter's ISBN (digits, ISBN-13 when known)
    publisher: str = ""
    # Zotero's item type when a source's record says what it is (conferencePaper,
    # bookSection, thesis, report, book, preprint, journalArticle); "" when none did.
    item_type: str = ""
    # The identities of this paper's other versions (a preprint's published DOI, the published
    # version's preprint), as `identities` spells them: one paper, whichever version is found.
    versions: list[str] = Field(default_factory=list)
    abstract: str = ""
    in_library: bool = False
    library_key: str | None = None
    why: str = ""  # one sentence from its abstract that bears on the query
    sources: list[str] = Field(default_factory=list)  # which APIs reported it
    score: float = 0.0  # relevance to the query (higher first)
    retracted: bool = False  # a source reports it retracted or withdrawn
    notice: str = ""  # "this paper was retracted in 2021" (also an expression of concern)

    def model_post_init(self, _context: object) -> None:
        self.doi = clean_doi(self.doi)
        self.arxiv_id = clean_arxiv_id(self.arxiv_id)
        self.isbn = clean_isbn(self.isbn)
        if self.doi and not self.arxiv_id and (m := _ARXIV_DOI.match(self.doi)):
            self.arxiv_id = clean_arxiv_id(m.group(1))
        if not self.id:
            self.id = candidate_id(self)

    def identities(self) -> set[str]:
        """The identities this paper is known by, for de-duplication and library matching."""
        out = {f"title:{t}"} if (t := normalize_title(self.title)) else set()
        if self.doi:
            out.add(f"doi:{self.doi}")
        if self.arxiv_id:
            out.add(f"arxiv:{self.arxiv_id}")
        if self.isbn:
            out.add(f"isbn:{self.isbn}")
        return out | {v for v in self.versions if v.startswith(("doi:", "arxiv:"))}


def clean_doi(doi: str | None) -> str | None:
    """`https://doi.org/10.X/Y` and `doi:10.X/Y` → `10.x/y` (DOIs are case-insensitive)."""
    if not doi:
        return None
    text = re.sub(r"^(https?://(dx\.)?doi\.org/|doi:)", "", doi.strip(), flags=re.IGNORECASE)
    return text.lower() or None


def clean_arxiv_id(arxiv_id: str | None) -> str | None:
    """`http://arxiv.org/abs/2104.12255v1` → `2104.12255` (versions are one paper)."""
    if not arxiv_id:
        return None
    text = re.sub(r"^(https?://(export\.)?arxiv\.org/(abs|pdf)/|arxiv:)", "", arxiv_id.strip(),
                  flags=re.IGNORECASE)  # fmt: skip
    return _ARXIV_VERSION.sub("", text).lower() or None


def clean_isbn(isbn: str | None) -> str | None:
    """`978-0-262-03384-8` and `0262033844` → ISBN-13 digits (`9780262033848`); else None."""
    digits = re.sub(r"[\s-]", "", isbn or "").upper()
    if re.fullmatch(r"\d{9}[\dX]", digits):
        if sum((10 - n) * (10 if d == "X" else int(d)) for n, d in enumerate(digits)) % 11:
            return None  # a mistyped ISBN-10 (its check digit disagrees)
        core = "978" + digits[:9]
    elif re.fullmatch(r"97[89]\d{10}", digits):
        core = digits[:12]
    else:
        return None
    check = (10 - sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(core)) % 10) % 10
    if len(digits) == 13 and digits[12] != str(check):
        return None  # a mistyped ISBN-13 (its check digit disagrees)
    return core + str(check)


def normalize_title(title: str | None) -> str:
    """Letters and digits of any script, case-folded, accents folded: the same paper's titles
    agree, and two titles in Chinese, Russian, Greek or Arabic stay two."""
    text = unicodedata.normalize("NFKD", title or "")
    text = unicodedata.normalize("NFC", "".join(c for c in text if not unicodedata.combining(c)))
    return " ".join(re.findall(r"[^\W_]+", text.casefold()))


def candidate_id(c: Candidate) -> str:
    """Short and stable: from the DOI, else the arXiv id, else the ISBN, else the normalised
    title with its first author's name and the year (two papers may share a title)."""
    if c.doi or c.arxiv_id or c.isbn:
        key = (f"doi:{c.doi}" if c.doi else f"arxiv:{c.arxiv_id}" if c.arxiv_id
               else f"isbn:{c.isbn}")  # fmt: skip
    else:
        first = normalize_title(c.authors[0]) if c.authors else ""
        key = f"title:{normalize_title(c.title)}|{first}|{c.year or ''}"
    return "c" + hashlib.sha1(key.encode()).hexdigest()[:9]


class Discovery(Record):
    """What one discovery run found: recommendations first, then papers the library holds."""

    query: str
    candidates: list[Candidate] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)  # a source that failed: one plain line each


class TurnResult(Record):
    """One question and what became of it."""

    turn_id: str
    session_id: str
    index: int = 0  # 1, 2, … within its session
    prompt: str = ""
    options: AskOptions = Field(default_factory=AskOptions)
    status: TurnStatus = "running"
    answer: str = ""
    cited_sources: list[Source] = Field(default_factory=list)
    other_sources: list[Source] = Field(default_factory=list)
    citations: list[Citation] = Field(default_factory=list)
    # Sentences whose citations all failed verification (marked `[unsupported]` in the answer).
    unsupported_claims: list[str] = Field(default_factory=list)
    # Whether the citations were checked: None when there were none, False when the check failed.
    citations_verified: bool | None = None
    evidence: list[EvidenceRow] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    timings: dict[str, float] = Field(default_factory=dict)  # phase → seconds
    seconds: float = 0.0  # wall time, over all its resumptions
    model: str = ""  # which model answered
    search_goal: str = ""  # the standalone goal the coordinator gave the search ("": none)
    parts: list[QuestionPart] = Field(default_factory=list)  # a compound question's parts
    # Papers outside a narrower scope that bear on what the scope lacks (their text never
    # enters the answer), and the scope that would include them: what a "widen" offer uses.
    elsewhere: list[Source] = Field(default_factory=list)
    widen_scope: Scope | None = None
    # A "find papers on X" turn: the candidates found beyond the library (None: not one).
    discovery: Discovery | None = None
    tool_calls: int = 0  # retrieval tool calls the search used
    extensions: int = 0  # deep-research extensions granted
    checkpoint: CheckpointInfo | None = None  # only while the turn waits at one
    error: str | None = None
    # What the model edge repaired in the models' replies: invalid characters replaced, an
    # answer or argument cut at its limit (one plain line each).
    warnings: list[str] = Field(default_factory=list)
    steps: list[TrailStep] = Field(default_factory=list)
    created: datetime | None = None
    updated: datetime | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def scope(self) -> Scope:
        return self.options.scope

    @property
    def evidence_words(self) -> int:
        return sum(e.words for e in self.evidence)

    @property
    def cited_chunk_ids(self) -> set[str]:
        return {c.chunk_id for c in self.citations} | {e.chunk_id for e in self.evidence if e.cited}


# ---------------------------------------------------------------------------- one turn view
class ScopeItem(Record):
    """A paper in a scope, named for its chip."""

    key: str = Field(min_length=1)
    title: str = ""
    year: int | None = None


class ScopeCollection(Record):
    """A collection in a scope, named for its chip."""

    key: str = Field(min_length=1)
    name: str = ""


class ScopeChips(Record):
    """A scope as the panel's chips show it: the `scope` trait, the `set_scope` message and a
    turn's `chips`. The keys are the `Scope`; titles and names are for reading only."""

    mode: Literal["library", "items", "collections"] = "library"
    items: list[ScopeItem] = Field(default_factory=list)
    collections: list[ScopeCollection] = Field(default_factory=list)

    @classmethod
    def of(cls, scope: Scope) -> ScopeChips:
        """The chips of a scope, each named by its key until a surface looks the names up."""
        if scope.items:
            return cls(mode="items", items=[ScopeItem(key=k, title=k) for k in scope.items])
        if scope.collections:
            named = [ScopeCollection(key=c, name=c) for c in scope.collections]
            return cls(mode="collections", collections=named)
        return cls()

    @property
    def scope(self) -> Scope:
        """The keys the chips select (the one place chips become a `Scope`)."""
        if self.mode == "items":
            return Scope(items=[i.key for i in self.items])
        if self.mode == "collections":
            return Scope(collections=[c.key for c in self.collections])
        return Scope()


class SourceView(Source):
    """A source as shown: `links` (zotero:// `select`, `pdf`) for an item of a Zotero library,
    `href` (its DOI, else its https page) for copied and inserted Markdown."""

    links: dict[str, str] = Field(default_factory=dict)
    href: str = ""


class CitationView(Citation):
    """A citation as shown: `links` (`select`, and `pdf` opening the PDF at the cited page);
    `occurrence_links`, each `[n]`'s own `pdf` link (its sentence's page), in order."""

    links: dict[str, str] = Field(default_factory=dict)
    occurrence_links: list[str] = Field(default_factory=list)


class CheckpointView(CheckpointInfo):
    """A checkpoint card: the pause, and the titles of the papers covered so far."""

    papers: list[str] = Field(default_factory=list)


class TurnView(TurnResult):
    """One turn as every surface receives it (the panel, the HTTP API, the CLI): the record
    itself plus what a reader needs beside it. A field added to `TurnResult` reaches them all.

    `chips` and `widen_chips` name the scope and the wider scope for display; `retry_id` is
    the interrupt a failed answer can be retried with; `thinking` what a running turn's models
    thought so far (the panel's live turn)."""

    cited_sources: list[SourceView] = Field(
        default_factory=list, description="with `links`, `href`"
    )  # type: ignore[assignment]
    other_sources: list[SourceView] = Field(default_factory=list, description="as cited_sources")  # type: ignore[assignment]
    elsewhere: list[SourceView] = Field(default_factory=list, description="as cited_sources")  # type: ignore[assignment]
    citations: list[CitationView] = Field(
        default_factory=list, description="with `links` (`pdf` opens the cited page)"
    )  # type: ignore[assignment]
    checkpoint: CheckpointView | None = Field(
        None, description="the card, with `papers` (titles covered so far)"
    )
    chips: ScopeChips = Field(default_factory=ScopeChips, description="the scope, named")
    widen_chips: ScopeChips | None = Field(None, description="a wider scope that answers better")
    retry_id: str | None = Field(None, description="an error whose search was kept: “Retry”")
    thinking: str = Field("", description="a running turn's thinking so far")

    @classmethod
    def of(cls, turn: TurnResult, **changes: Any) -> TurnView:
        """The view of a record, with `changes` (looked-up names, links) applied; a record
        waiting at a checkpoint it no longer holds is shown as cancelled (nothing to resume)."""
        wider = ScopeChips.of(turn.widen_scope) if turn.widen_scope is not None else None
        # A view's own chips (named already) are kept; a record's are named by their keys.
        view = cls.model_validate({"chips": ScopeChips.of(turn.scope), "widen_chips": wider,
                                   **turn.model_dump(exclude={"scope"}), **changes})  # fmt: skip
        if view.status == "checkpoint" and view.checkpoint is None:
            view.status = "cancelled"
        return view


class SessionSummary(Record):
    """A session in a list: its title, size and whether a checkpoint waits."""

    session_id: str
    title: str
    turns: int
    created: datetime
    updated: datetime
    pending_checkpoint: str | None = Field(
        None, description="The interrupt id of the checkpoint awaiting a decision, if any."
    )

