"""Reading a document's assets for `read_document`: sections, figures, tables, the abstract,
a page or the full text, each read once per run and never past the run's word ceiling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from zocrates_nb.ingest.bundle import Bundle
from zocrates_nb.retrieval.assets import AssetRef, normalize_asset_ids, resolve_asset
from zocrates_nb.retrieval.results import ReadAsset, ReadResult, Refusal
from zocrates_nb.retrieval.state import Evidence, RunState

if TYPE_CHECKING:
    from zocrates_nb.index import Index

# What one read returns at most: a table's first rows up to TABLE_READ_WORDS (a 120-page
# table is searched, or read page by page, not swallowed whole), anything else up to the
# run's word ceiling and never more than READ_MAX_WORDS beyond it.
TABLE_READ_WORDS = 1_500
READ_MAX_WORDS = 7_500


@dataclass
class ResolvedDocument:
    """Which document a key names, and what else the agent should know about its siblings."""

    key: str  # as the agent wrote it (canonical spelling)
    doc_key: str  # attachment or note key whose bundle is read
    parent_key: str  # parent item key (== doc_key for standalone documents)
    kind: str
    title: str
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    notices: list[str] = field(default_factory=list)

    def names(self) -> dict[str, Any]:
        """The keys and title a result about this document starts with."""
        return {"item_key": self.key, "doc_key": self.doc_key, "parent_key": self.parent_key,
                "title": self.title}  # fmt: skip


def read_assets(
    index: Index,
    st: RunState,
    doc: ResolvedDocument,
    bundle: Bundle,
    asset_id: Any,
    page: int | None,
) -> ReadResult | Refusal:
    """One `read_document` call on a resolved document: the assets asked for, within the
    run's word ceiling, each read once per run, each added to the evidence."""
    toc, n_lines = bundle.toc, len(bundle.lines)
    wanted = normalize_asset_ids(asset_id)
    if page is not None:
        try:
            wanted.append(f"p{int(page)}")
        except (TypeError, ValueError):
            return Refusal(message=f"page must be a number, got {page!r}.")
    if not wanted:
        return Refusal(
            message="Give asset_id (e.g. 's2', 'f1', 't1', "
            "'abstract', 'full'; see get_document_toc) or page=N."
        )
    notices = list(doc.notices)
    full_key = f"{doc.doc_key}:full"
    refs: list[AssetRef] = []
    unresolved: list[str] = []
    read_full = False
    for token in wanted:
        ref = resolve_asset(toc, token, n_lines)
        if ref is None:
            unresolved.append(token)
        elif ref.kind == "full":
            full = _full_refs(st, toc, n_lines, bundle, full_key, notices)
            read_full = read_full or bool(full) or full_key in st.seen_assets
            refs.extend(full)
        else:
            refs.append(ref)
    already: list[str] = []
    todo: list[AssetRef] = []
    for ref in refs:
        canonical = f"{doc.doc_key}:{ref.id}"
        if canonical in st.seen_assets or (full_key in st.seen_assets and ref.kind != "abstract"):
            if ref.id not in already:
                already.append(ref.id)
        elif all(r.id != ref.id for r in todo):
            todo.append(ref)
    if unresolved:
        notices.append(
            f"[Unresolved asset id(s) for {doc.key}: {', '.join(unresolved)}. Valid ids are "
            "in the document outline (get_document_toc): s1…, f1…, t1…, abstract, full, "
            "or page=N.]"
        )
    assets: list[ReadAsset] = []
    skipped: list[str] = []
    for ref in todo:
        if assets and st.words >= st.word_ceiling:
            skipped.append(ref.id)
            continue
        assets.append(_read_asset(index, st, doc, bundle, ref, notices))
    if read_full and not skipped:
        st.mark_asset(full_key)
    if already and not todo:
        notices.append(
            f"[All requested assets for {doc.key} ({', '.join(already)}) were "
            "already retrieved in this session.]"
        )
    elif already:
        notices.append(f"[Already retrieved in this session, not repeated: {', '.join(already)}.]")
    if skipped:
        notices.append(f"[Word ceiling reached: not read {', '.join(skipped)}.]")
    out = ReadResult(
        **doc.names(), authors=doc.authors, year=doc.year, assets=assets,
        unresolved_asset_ids=unresolved,
    )  # fmt: skip
    out.add_notices(notices)
    return out


def _full_refs(
    st: RunState, toc: Any, n_lines: int, bundle: Bundle, full_key: str, notices: list[str]
) -> list[AssetRef]:
    """`full` as its top-level sections, unless it would blow the word ceiling."""
    words = len(bundle.markdown.split())
    if full_key not in st.seen_assets and st.words + words > st.word_ceiling:
        notices.append(
            f"[Full text refused: ~{words:,} words would exceed the evidence word ceiling "
            f"({st.words:,}/{st.word_ceiling:,} used). Read the sections you need instead "
            "(see get_document_toc), e.g. asset_id='s2, s3'.]"
        )
        return []
    refs = []
    top = min((s.level for s in toc.sections if s.level > 0), default=1)
    for s in toc.sections:
        if s.line_end < s.line_start or (s.level == 0 and not s.words):
            continue
        if s.level == 0 or s.level <= top:
            ref = resolve_asset(toc, s.id, n_lines)
            if ref is not None:
                refs.append(ref)
    return refs


def _read_asset(
    index: Index,
    st: RunState,
    doc: ResolvedDocument,
    bundle: Bundle,
    ref: AssetRef,
    notices: list[str],
) -> ReadAsset:
    toc = bundle.toc
    csv = ref.csv
    # Never past the word ceiling: a read that would overshoot is cut at what is left.
    left = max(st.word_ceiling - st.words, 1)
    if ref.text is None and ref.line_start is not None and ref.line_end is not None:
        table = ref.kind == "table"
        limit = min(TABLE_READ_WORDS if table else READ_MAX_WORDS, left)
        cut = _cut_to_words(bundle, ref.line_start, ref.line_end, limit, rows=table)
        if cut is not None:
            end, words, shown_rows, total_rows = cut
            if table and csv is not None:
                csv = "".join(csv.splitlines(keepends=True)[: shown_rows + 1])
                notices.append(
                    f"[{ref.label or ref.id} is long ({total_rows:,} rows, ~{words:,} "
                    f"words): showing rows 1–{shown_rows:,}. Find particular rows with "
                    "search_corpus, or read one page of it with page=N.]"
                )
            else:
                why = " (what the word ceiling leaves)" if limit == left else ""
                notices.append(
                    f"[{ref.heading or ref.id} is long (~{words:,} words): showing its "
                    f"first ~{limit:,} words{why}. Read its subsections or pages (page=N) "
                    "for the rest.]"
                )
            if limit == left and not table:  # fill up to the ceiling exactly (cut below)
                end = min(end + 1, ref.line_end)
            ref = replace(ref, line_end=end, csv=csv)
    if ref.text is not None:  # the abstract lives only in metadata
        text = _fit_words(ref.text, left)
        seen = [
            c.chunk_id
            for c in index.chunks_of(doc.doc_key)
            if c.chunk_type in ("frontmatter", "abstract")
        ]
        a = b = None
    else:
        assert ref.line_start is not None and ref.line_end is not None
        a, b = ref.line_start, ref.line_end
        text = _fit_words(bundle.text(a, b).strip(), min(left, READ_MAX_WORDS))
        seen = index.chunks_intersecting(doc.doc_key, a, b)
        if ref.kind in ("section", "page"):  # passages this read now holds in full
            st.drop_evidence(
                {
                    e.chunk_id
                    for e in st.evidence
                    if e.attachment_key == doc.doc_key
                    and e.tool == "search_corpus"
                    and e.line_start is not None
                    and e.line_end is not None
                    and a <= e.line_start
                    and e.line_end <= b
                }
            )
    st.mark_seen(seen)
    for sid in ref.covers or [ref.id]:
        st.mark_asset(f"{doc.doc_key}:{sid}")
    chunk_type = {"figure": "figure", "table": "table", "abstract": "abstract"}.get(
        ref.kind, "body"
    )
    if doc.kind == "note":
        chunk_type = "note"
    elif ref.kind == "section" and ref.heading.lower().strip(" .:") in ("abstract", "summary"):
        chunk_type = "abstract"
    first, last = toc.page_span(a, b) if a and b else (None, None)
    page = ref.page if ref.page is not None else first
    page_end = last
    ev = Evidence(
        chunk_id=f"{doc.doc_key}:{ref.id}", item_key=doc.parent_key, attachment_key=doc.doc_key,
        title=doc.title, authors=doc.authors, year=doc.year, section=ref.heading,
        section_id=ref.id, chunk_type=chunk_type, text=text, words=len(text.split()),
        line_start=a, line_end=b, page=page, page_end=page_end, csv=ref.csv,
        caption=ref.caption, label=ref.label, tool="read_document",
    )  # fmt: skip
    st.add_evidence([ev])
    return ReadAsset(
        asset_id=ref.id, type=ref.kind, heading=ref.heading, title=doc.title, page=page,
        words=ev.words, text=text, caption=ref.caption or None, csv=ref.csv or None,
    )  # fmt: skip


def _cut_to_words(
    bundle: Bundle, start: int, end: int, limit: int, *, rows: bool
) -> tuple[int, int, int, int] | None:
    """Where to end a read of lines start..end so it holds about `limit` words: (last line,
    words in the whole asset, table rows shown, table rows in all); None when it fits."""
    lines = bundle.lines[start - 1 : end]
    counts = [len(line.split()) for line in lines]
    total = sum(counts)
    if total <= limit:
        return None
    used, last = 0, start
    for k, n in enumerate(counts):
        if used + n > limit and k > 0:
            break
        used += n
        last = start + k
    if not rows:
        return last, total, 0, 0
    table = [line for line in lines if line.lstrip().startswith("|")]
    shown = sum(1 for line in lines[: last - start + 1] if line.lstrip().startswith("|"))
    return last, total, max(shown - 2, 0), max(len(table) - 2, 0)  # minus header, separator


def _fit_words(text: str, limit: int) -> str:
    """`text` cut to at most `limit` words as evidence counts them (whitespace-separated), the
    last of them a visible "…" when it was cut."""
    if len(text.split()) <= limit:
        return text
    ends = [m.end() for m in re.finditer(r"\S+", text)]
    if limit <= 1:  # one word left: the word itself carries the mark ("word…" is one word)
        return text[: ends[0]] + "…"
    return text[: ends[limit - 2]] + " …"
