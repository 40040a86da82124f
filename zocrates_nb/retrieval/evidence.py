"""Evidence for the synthesizer as structured XML.

XML rather than Markdown envelopes: passages are themselves Markdown, and attributes keep the
attribution (title, authors, year, section, pages) next to the text without repeating it. No
internal keys, chunk ids, scores or ranking methods reach the prompt: the synthesizer must not
echo plumbing into an answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from xml.sax.saxutils import escape, quoteattr

from zocrates_nb.names import format_authors
from zocrates_nb.retrieval.state import Evidence

# XML 1.0 forbids most control characters even when escaped; PDFs do contain them.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _CONTROL.sub(" ", text)


def _attr(value: object) -> str:
    return quoteattr(_clean(str(value)))


def _pages(e: Evidence) -> str:
    if e.page is None:
        return ""
    if e.page_end and e.page_end != e.page:
        return f"{e.page}-{e.page_end}"
    return str(e.page)


def format_chunk(index: int, e: Evidence) -> str:
    attrs = [f"index={_attr(index)}", f"title={_attr(e.title or 'Untitled')}"]
    authors = format_authors(e.authors)
    if authors:
        attrs.append(f"authors={_attr(authors)}")
    attrs.append(f"year={_attr(e.year if e.year else 'n.d.')}")
    if e.section:
        attrs.append(f"section={_attr(e.section)}")
    pages = _pages(e)
    if pages:
        attrs.append(f"pages={_attr(pages)}")
    attrs.append(f"type={_attr(e.chunk_type)}")
    body = escape(_clean(e.text.strip()))
    if e.chunk_type == "figure" and e.caption:
        caption = escape(_clean(e.caption.strip()))
        figure = f"<figure label={_attr(e.label or 'Figure')}>{caption}</figure>"
        body = figure if caption in body else f"{figure}\n{body}".rstrip()
    elif e.chunk_type == "table" and e.csv:
        body = f"{body}\n<table_csv>\n{escape(_clean(e.csv.strip()))}\n</table_csv>"
    return f"<chunk {' '.join(attrs)}>\n{body}\n</chunk>"


def format_evidence(items: Sequence[Evidence]) -> str:
    """`<retrieved_evidence>` with one `<chunk>` per passage, numbered from 1."""
    if not items:
        return "<retrieved_evidence>\n</retrieved_evidence>"
    chunks = "\n".join(format_chunk(i, e) for i, e in enumerate(items, 1))
    return f"<retrieved_evidence>\n{chunks}\n</retrieved_evidence>"
