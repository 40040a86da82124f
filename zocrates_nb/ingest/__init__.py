"""Ingest: turn attachments and notes into bundles (`document.md` + `toc.json`).

Public entry points (signatures are a contract with the indexer):
- `convert_file(path, content_type="", *, fallback_text=None, max_pages=DEFAULT_MAX_PAGES,
  progress=None) -> Bundle`
- `convert_note(html, title="") -> Bundle`
Both raise only `ConversionError`, whose message is one plain line for the index report
(`problems.plain_message`); what the reader should know about a successful conversion is in
`bundle.toc.warnings`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from zocrates_nb.config import DEFAULT_MAX_PAGES
from zocrates_nb.ingest.bundle import Asset, Bundle, ConversionError, Section, Toc
from zocrates_nb.ingest.html import convert_html_file, convert_note, html_to_bundle, read_html
from zocrates_nb.ingest.problems import plain_message
from zocrates_nb.ingest.text import (
    convert_markdown_file,
    convert_text_file,
    read_text,
    text_to_bundle,
)

__all__ = ["Asset", "Bundle", "ConversionError", "Progress", "Section", "Toc", "convert_file",
           "convert_note", "document_kind", "plain_message", "sniff"]

FALLBACK_CONVERTER = "zotero-ft-cache"
PDFIUM_TEXT_CONVERTER = "pypdfium2-text"
# An HTML page saved as .pdf with fewer words than this holds no paper (a login, cookie or
# error page); a longer one is indexed as the web page it is.
MIN_PAGE_WORDS = 300

Progress = Callable[[int, int], None]  # (pages done, pages in all)

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
_MAGIC = (  # (leading bytes, what the file is) for files that claim to be a PDF
    (b"\x89PNG", "an image (PNG)"),
    (b"\xff\xd8\xff", "an image (JPEG)"),
    (b"GIF8", "an image (GIF)"),
    (b"PK\x03\x04", "a ZIP archive (a Word document or an EPUB?)"),
    (b"\xd0\xcf\x11\xe0", "an old Microsoft Office document"),
    (b"{\\rtf", "an RTF document"),
)
_PASSWORD = re.compile(r"<input[^>]+type\s*=\s*[\"']?password", re.IGNORECASE)


def sniff(head: bytes) -> str | None:
    """What the first bytes of a file say it is: "pdf", "html", or None (no telling)."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith(b"%pdf-"):
        return "pdf"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        codec = "utf-16-le" if head[0] == 0xFF else "utf-16-be"
        text = head[2:].decode(codec, "ignore").strip().lower().encode("ascii", "ignore")
    if text.startswith((b"<!doctype html", b"<html")) or any(
        tag in text[:1024] for tag in (b"<html", b"<head>", b"<body")
    ):
        return "html"
    return None


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
            return sniff(fh.read(1024))
    except OSError:
        return None


def _fallback(fallback_text: Path | None, reason: str) -> Bundle | None:
    """A bundle from Zotero's full-text cache, when there is one with text in it."""
    if fallback_text is None or not fallback_text.is_file():
        return None
    try:
        decoded = read_text(fallback_text)
        bundle = text_to_bundle(decoded.text, converter=FALLBACK_CONVERTER)
    except (ConversionError, OSError):
        return None
    bundle.toc.warnings.append(f"{reason}; indexed the text Zotero extracted instead")
    return bundle


def _pdfium_text(path: Path) -> Bundle | None:
    """A PDF whose layout reading gave no text (a damaged page tree, text drawn oddly) read as
    pdfium's plain text, page by page, saying so; None when that holds no text either."""
    try:
        import pypdfium2 as pdfium

        pdf = pdfium.PdfDocument(str(path))
        try:
            text = "\n\n".join(pdf[i].get_textpage().get_text_range() for i in range(len(pdf)))
        finally:
            pdf.close()
        if not text.split():
            return None
        bundle = text_to_bundle(text, converter=PDFIUM_TEXT_CONVERTER)
    except Exception:
        return None
    bundle.toc.warnings.append("the PDF's layout gave no text; indexed pdfium's plain text")
    return bundle


def _no_text(bundle: Bundle) -> NoReturn:
    """A document that holds no words: an error with its reason (Zotero's cache may rescue
    it), never a document indexed as done with nothing in it."""
    raise ConversionError("no text: the file converted to no words (nothing to search)")


def convert_file(
    path: Path,
    content_type: str = "",
    *,
    fallback_text: Path | None = None,
    max_pages: int = DEFAULT_MAX_PAGES,
    progress: Progress | None = None,
) -> Bundle:
    """Convert a PDF, HTML snapshot, Markdown or plain-text file into a bundle.

    The file's first bytes win over its name and MIME type (a login page saved as .pdf is
    an HTML page). When the file cannot be read or has no text layer, Zotero's
    `.zotero-ft-cache` (`fallback_text`) is used instead if it has text; otherwise
    `ConversionError`. Too many pages is never rescued by the fallback: the limit is the
    user's choice. `progress(done, total)` is called as PDF pages are read.
    """
    from zocrates_nb.ingest.pdf import TooManyPagesError

    path = Path(path)
    try:
        bundle = _convert(path, content_type, max_pages, progress)
        if not bundle.markdown.split():  # never "done" with no text and no word said
            return _pdfium_text(path) or _no_text(bundle)
        return bundle
    except TooManyPagesError:
        raise
    except Exception as e:  # any failure is one plain line, and the fallback may rescue it
        reason = plain_message(e)
        rescued = _fallback(fallback_text, reason)
        if rescued is None:
            raise ConversionError(reason) from e
        return rescued


def _convert(path: Path, content_type: str, max_pages: int, progress: Progress | None) -> Bundle:
    from zocrates_nb.ingest.pdf import convert_pdf

    if path.is_dir():
        raise ConversionError("a folder, not a file")
    if not path.is_file():
        raise ConversionError(f"file not found: {path.name}")
    if path.stat().st_size == 0:
        raise ConversionError("empty file (0 bytes)")
    kind = document_kind(path, content_type)
    with open(path, "rb") as fh:
        head = fh.read(1024)
    actual = sniff(head)
    if kind == "pdf" and b"%PDF-" in head:  # PDF readers accept junk before the header
        actual = "pdf"
    if kind == "pdf" and actual != "pdf":
        if actual == "html":
            return _html_named_pdf(path)
        what = next((name for magic, name in _MAGIC if head.startswith(magic)), None)
        raise ConversionError(
            f"not a PDF: {what} saved with a .pdf name" if what
            else "not a PDF: the file has no PDF header (damaged, or another kind of file)"
        )
    if actual == "pdf" and kind != "pdf":
        bundle = convert_pdf(path, max_pages=max_pages, progress=progress)
        bundle.toc.warnings.insert(0, f"a PDF saved as {kind or 'another type'}: read as a PDF")
        return bundle
    if kind == "pdf":
        return convert_pdf(path, max_pages=max_pages, progress=progress)
    if kind == "html":
        return convert_html_file(path)
    if kind == "markdown":
        return convert_markdown_file(path)
    if kind == "text":
        return convert_text_file(path)
    raise ConversionError(f"unsupported file type: {content_type or path.suffix or 'unknown'}")


def _html_named_pdf(path: Path) -> Bundle:
    """A web page saved as .pdf: indexed as a page when it holds an article, else refused.

    Zotero saves whatever the publisher served as the "PDF": often a login, cookie or
    paywall page. Such a page has no paper in it, and indexing its boilerplate would only
    put noise into answers, so it is an error that says how to get the real PDF. A page with
    real text (some publishers serve the full article as HTML) is indexed, with a warning.
    """
    html, warnings = read_html(path)
    login = bool(_PASSWORD.search(html))
    try:
        bundle: Bundle | None = html_to_bundle(html)
    except ConversionError:
        bundle = None
    words = len(bundle.markdown.split()) if bundle is not None else 0
    if bundle is None or login or words < MIN_PAGE_WORDS:
        what = "a login page" if login else f"a web page with {words} words of text"
        raise ConversionError(
            f"not a PDF: an HTML page ({what}) saved with a .pdf name, with no paper in it; "
            "download the PDF again (in Zotero: Find Available PDF)"
        )
    bundle.toc.warnings[:0] = [
        "not a PDF: an HTML page saved with a .pdf name; indexed as a web page", *warnings
    ]
    return bundle
