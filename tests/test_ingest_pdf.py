"""PDF conversion on generated PDFs: structure from fonts, and every way a PDF can fail."""

from __future__ import annotations

from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter
from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas

from zocrates_nb.ingest import ConversionError, convert_file

BODY = (
    "Consensus algorithms allow a collection of machines to work as a coherent group "
    "that can survive the failures of some of its members."
)


def _paragraph(c: canvas.Canvas, y: float, text: str, lines: int = 4) -> float:
    c.setFont("Times-Roman", 10)
    for k in range(lines):
        c.drawString(72, y, f"{text[:88]} {k}")
        y -= 12
    return y - 6


def make_paper(path: Path, pages: int = 2) -> Path:
    """A small single-column paper: title, abstract, numbered bold headings, a caption."""
    c = canvas.Canvas(str(path), pagesize=letter)
    for p in range(pages):
        y = 720.0
        if p == 0:
            c.setFont("Helvetica-Bold", 20)
            c.drawString(72, y, "A Generated Paper About Consensus")
            c.setFont("Times-Roman", 12)
            c.drawString(72, y - 26, "Ada Lovelace and Alan Turing")
            c.drawString(72, y - 42, "Copyright 2019")
            y -= 80
            c.setFont("Times-Bold", 12)
            c.drawString(72, y, "Abstract")
            y = _paragraph(c, y - 16, "We study consensus. " + BODY)
        c.setFont("Times-Bold", 12)
        c.drawString(72, y, f"{p + 1} Section number {p + 1}")
        y = _paragraph(c, y - 16, BODY, 6)
        c.setFont("Times-Bold", 10)
        c.drawString(72, y, f"{p + 1}.1 A subsection")
        y = _paragraph(c, y - 14, BODY, 5)
        c.setFont("Times-Roman", 9)
        c.drawString(72, y - 100, f"Figure {p + 1}: A diagram of the protocol on page {p + 1}.")
        y = _paragraph(c, y - 130, "As shown in Figure 1 the leader replicates entries.", 3)
        if p == 0:
            c.setFont("Times-Roman", 9)
            c.drawString(72, y, "Table 1: Election timeouts per cluster size.")
            for k, (name, ms) in enumerate([("Servers", "Timeout"), ("3", "150 ms"),
                                            ("5", "300 ms")]):
                c.drawString(90, y - 16 - 11 * k, name)
                c.drawString(220, y - 16 - 11 * k, ms)
            y = _paragraph(c, y - 70, "The timeouts were chosen at random. " + BODY, 2)
        c.setFont("Times-Roman", 10)
        c.drawString(300, 40, str(p + 1))  # page number: furniture, not text
        c.showPage()
    c.save()
    return path


def test_generated_paper_structure(tmp_path: Path) -> None:
    b = convert_file(make_paper(tmp_path / "paper.pdf"), "application/pdf")
    toc = b.toc
    assert toc.converter.startswith("pypdfium2-")
    assert toc.pages == 2 and toc.title == "A Generated Paper About Consensus"
    assert toc.year == 2019
    assert "Ada Lovelace" in toc.authors and "Alan Turing" in toc.authors
    heads = [(s.level, s.number, s.title, s.page) for s in toc.sections[1:]]
    assert heads == [
        (1, None, "Abstract", 1),
        (1, "1", "Section number 1", 1),
        (2, "1.1", "A subsection", 1),
        (1, "2", "Section number 2", 2),
        (2, "2.1", "A subsection", 2),
    ]
    assert toc.abstract.startswith("We study consensus.")
    assert [(f.label, f.page) for f in toc.figures] == [("Figure 1", 1), ("Figure 2", 2)]
    assert toc.figures[0].caption.startswith("A diagram of the protocol")
    (table,) = toc.tables
    assert (table.label, table.page) == ("Table 1", 1)
    assert table.csv == "Servers,Timeout\n3,150 ms\n5,300 ms\n"
    assert "| 5 | 300 ms |" in b.text(table.line_start, table.line_end)
    # The in-text reference "As shown in Figure 1" is not a caption, and page numbers are gone.
    assert "\n1\n" not in b.markdown and "\n2\n" not in b.markdown
    assert toc.page_starts[0] == 1 and toc.page_starts == sorted(toc.page_starts)
    assert toc.page_of_line(toc.sections[4].line_start) == 2
    s0 = toc.sections[0]
    assert "A Generated Paper About Consensus" in b.text(s0.line_start, s0.line_end)


def test_corrupt_pdf_is_a_conversion_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 20)
    with pytest.raises(ConversionError, match="corrupt"):
        convert_file(bad)


def test_encrypted_pdf_needs_a_password(tmp_path: Path) -> None:
    plain = make_paper(tmp_path / "plain.pdf", pages=1)
    writer = PdfWriter(clone_from=PdfReader(plain))
    writer.encrypt(user_password="secret", owner_password="owner")
    locked = tmp_path / "locked.pdf"
    with locked.open("wb") as fh:
        writer.write(fh)
    with pytest.raises(ConversionError, match="encrypted"):
        convert_file(locked, "application/pdf")


def test_image_only_pdf_says_ocr_is_needed(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    c = canvas.Canvas(str(path), pagesize=letter)
    for _ in range(2):
        c.rect(72, 72, 300, 400, fill=1)
        c.circle(300, 600, 50)
        c.showPage()
    c.save()
    with pytest.raises(ConversionError, match="OCR"):
        convert_file(path)
    cache = tmp_path / "ft-cache.txt"
    cache.write_text("Scanned Paper\n\nText that Zotero extracted.\n", "utf-8")
    rescued = convert_file(path, fallback_text=cache)
    assert rescued.toc.converter == "zotero-ft-cache"
    assert "Text that Zotero extracted." in rescued.markdown


def test_too_many_pages_names_the_count_and_the_setting(tmp_path: Path) -> None:
    path = make_paper(tmp_path / "long.pdf", pages=3)
    cache = tmp_path / "ft-cache.txt"
    cache.write_text("Some text.\n", "utf-8")
    with pytest.raises(ConversionError, match=r"3 pages.*index\.max_pages"):
        convert_file(path, max_pages=2, fallback_text=cache)
    assert convert_file(path, max_pages=3).toc.pages == 3
