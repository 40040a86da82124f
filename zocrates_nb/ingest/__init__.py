"""Ingest: turn attachments and notes into bundles (`document.md` + `toc.json`).

Public entry points (signatures are a contract with the indexer):
- `convert_file(path, content_type="", *, fallback_text=None, max_pages=400) -> Bundle`
- `convert_note(html, title="") -> Bundle`
Both raise `ConversionError` with a one-line reason for documents that cannot be converted.
"""

from __future__ import annotations

from pathlib import Path

from zocrates_nb.ingest.bundle import Asset, Bundle, ConversionError, Section, Toc
from zocrates_nb.ingest.html import convert_html_file, convert_note
from zocrates_nb.ingest.text import (
    convert_markdown_file,
    convert_text_file,
    read_text,
    text_to_bundle,
)

__all__ = ["Asset", "Bundle", "ConversionError", "Section", "Toc", "convert_file", "convert_note",
           "document_kind"]

FALLBACK_CONVERTER = "zotero-ft-cache"

_KINDS = {
    "application/pdf": "pdf",
    "application/x-pdf": "pdf",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/plain": "text",
}
_EXTENSIONS = {".pdf": "pdf", ".html": "html", ".htm": "html", ".xhtml": "html",
               ".md": "markdown", ".markdown": "markdown", ".txt": "text", ".text": "text"}


def document_kind(path: Path | None, content_type: str) -> str | None:
    """pdf | html | markdown | text from the MIME type, the suffix, or the first bytes."""
    kind = _KINDS.get(content_type.split(";")[0].strip().lower())
    if kind or path is None:
        return kind
    kind = _EXTENSIONS.get(path.suffix.lower())
    if kind:
        return kind
    try:
        with open(path, "rb") as fh:
            head = fh.read(1024)
    except OSError:
        return None
    if head.startswith(b"%PDF"):
        return "pdf"
    if b"<html" in head.lower() or b"<!doctype html" in head.lower():
        return "html"
    return None


def _fallback(fallback_text: Path | None) -> Bundle | None:
    """A bundle from Zotero's full-text cache, when there is one with text in it."""
    if fallback_text is None or not fallback_text.is_file():
        return None
    try:
        text = read_text(fallback_text)
        return text_to_bundle(text, converter=FALLBACK_CONVERTER)
    except ConversionError:
        return None


def convert_file(
    path: Path,
    content_type: str = "",
    *,
    fallback_text: Path | None = None,
    max_pages: int = 400,
) -> Bundle:
    """Convert a PDF, HTML snapshot, Markdown or plain-text file into a bundle.

    When the file cannot be read or has no text layer, Zotero's `.zotero-ft-cache`
    (`fallback_text`) is used instead if it has text; otherwise `ConversionError`.
    Too many pages is never rescued by the fallback: the limit is the user's choice.
    """
    from zocrates_nb.ingest.pdf import TooManyPagesError, convert_pdf

    path = Path(path)
    try:
        if not path.is_file():
            raise ConversionError(f"file not found: {path.name}")
        if path.stat().st_size == 0:
            raise ConversionError("empty file (0 bytes)")
        kind = document_kind(path, content_type)
        if kind == "pdf":
            return convert_pdf(path, max_pages=max_pages)
        if kind == "html":
            return convert_html_file(path)
        if kind == "markdown":
            return convert_markdown_file(path)
        if kind == "text":
            return convert_text_file(path)
        raise ConversionError(f"unsupported file type: {content_type or path.suffix or 'unknown'}")
    except TooManyPagesError:
        raise
    except ConversionError:
        bundle = _fallback(fallback_text)
        if bundle is None:
            raise
        return bundle
