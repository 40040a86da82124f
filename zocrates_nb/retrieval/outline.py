"""A compact outline of one document (about 150 words) for the search agent to navigate.

The header bridges both keys the agent may hold, so either works with `read_document`:
`### [Key: ATTACHMENT, Parent Key: PARENT] "Title"`.
"""

from __future__ import annotations

from zocrates_nb.ingest.bundle import Asset, Toc
from zocrates_nb.retrieval.assets import abstract_section, section_heading, section_words

MAX_SECTIONS = 15  # more than this: fold to level <= 2
FOLD_LEVEL = 2
MAX_FIGURES = 8  # more than this: one range line
MAX_TABLES = 6
CAPTION_WORDS = 6


def header(doc_key: str, parent_key: str | None, title: str) -> str:
    keys = f"Key: {doc_key}"
    if parent_key and parent_key != doc_key:
        keys += f", Parent Key: {parent_key}"
    return f'### [{keys}] "{title}"'


def _caption_line(a: Asset) -> str:
    """`[f1] The Transformer - model architecture`: the caption's first words, or the label."""
    words = a.caption.split()
    short = " ".join(words[:CAPTION_WORDS]).rstrip(".,;:") + (
        "…" if len(words) > CAPTION_WORDS else ""
    )
    return f"[{a.id}] {short or a.label}"


def _asset_block(name: str, assets: list[Asset], limit: int) -> list[str]:
    if not assets:
        return []
    if len(assets) > limit:
        return [
            f"- {name}: {len(assets)} {name.lower()} present ([{assets[0].id}] to "
            f"[{assets[-1].id}])"
        ]
    return [f"- {name}:", *(f"  - {_caption_line(a)}" for a in assets)]


def compact_outline(toc: Toc, doc_key: str, parent_key: str | None, title: str = "") -> str:
    """Header, `[abstract]` when only the metadata holds it, sections, figures, tables."""
    lines = [header(doc_key, parent_key, title or toc.title or "Untitled")]
    if toc.abstract.strip() and abstract_section(toc) is None:
        lines.append(f"- [abstract] Abstract / Summary (~{len(toc.abstract.split())} words)")
    body = [s for s in toc.sections if s.id != "s0"]
    folded = len(body) > MAX_SECTIONS
    top = min((s.level for s in body), default=1)
    for s in toc.sections:
        if s.id == "s0":
            if s.words:
                lines.append(f"- [s0] {section_heading(s)} (~{s.words} words)")
            continue
        depth = max(s.level - top, 0)
        if folded and s.level > max(FOLD_LEVEL, top):
            continue
        lines.append(
            f"{'  ' * depth}- [{s.id}] {section_heading(s)} (~{section_words(toc, s)} words)"
        )
    if folded:
        lines.append("(Deeper headings folded: a section is read with its subsections.)")
    lines += _asset_block("Figures", toc.figures, MAX_FIGURES)
    lines += _asset_block("Tables", toc.tables, MAX_TABLES)
    if toc.page_starts:
        lines.append(f"- Pages: {len(toc.page_starts)} (page=N reads one)")
    return "\n".join(lines)
