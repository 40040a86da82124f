"""PDF conversion on generated PDFs: structure from fonts, and every way a PDF can fail."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hostile_kit import ROWS_PER_PAGE, TABLE_HEADER, long_table_pdf, table_row, table_row_page
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
    with pytest.raises(ConversionError, match="damaged PDF"):
        convert_file(bad)


def test_encrypted_pdf_needs_a_password(tmp_path: Path) -> None:
    plain = make_paper(tmp_path / "plain.pdf", pages=1)
    writer = PdfWriter(clone_from=PdfReader(plain))
    writer.encrypt(user_password="secret", owner_password="owner")
    locked = tmp_path / "locked.pdf"
    with locked.open("wb") as fh:
        writer.write(fh)
    with pytest.raises(ConversionError) as err:
        convert_file(locked, "application/pdf")
    assert str(err.value) == (
        "encrypted PDF: open it in a PDF reader and save an unencrypted copy (or remove the "
        "password), then index again"
    )


def test_image_only_pdf_says_ocr_is_needed(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    c = canvas.Canvas(str(path), pagesize=letter)
    for _ in range(2):
        c.rect(72, 72, 300, 400, fill=1)
        c.circle(300, 600, 50)
        c.showPage()
    c.save()
    with pytest.raises(ConversionError) as err:
        convert_file(path)
    assert str(err.value) == (
        "no text layer (a scanned image, 2 pages): make it searchable with OCR (e.g. "
        "ocrmypdf, or your PDF reader's text recognition) and index again"
    )
    cache = tmp_path / "ft-cache.txt"
    cache.write_text("Scanned Paper\n\nText that Zotero extracted.\n", "utf-8")
    rescued = convert_file(path, fallback_text=cache)
    assert rescued.toc.converter == "zotero-ft-cache"
    assert "Text that Zotero extracted." in rescued.markdown


def test_too_many_pages_names_the_count_and_the_setting(tmp_path: Path) -> None:
    path = make_paper(tmp_path / "long.pdf", pages=3)
    cache = tmp_path / "ft-cache.txt"
    cache.write_text("Some text.\n", "utf-8")
    with pytest.raises(ConversionError) as err:
        convert_file(path, max_pages=2, fallback_text=cache)
    assert str(err.value) == (
        "PDF has 3 pages, more than the limit of 2; to index it, raise index.max_pages in "
        'zocrates_config.json (e.g. {"index": {"max_pages": 100}})'
    )
    seen: list[tuple[int, int]] = []
    assert convert_file(path, max_pages=3, progress=lambda *p: seen.append(p)).toc.pages == 3
    assert seen[:4] == [(0, 3), (1, 3), (2, 3), (3, 3)]  # before each page, then done
    assert set(seen[4:]) == {(3, 3)} and len(seen) >= 6  # heartbeats while it is assembled


def test_long_documents_are_within_the_default_page_limit() -> None:
    from zocrates_nb.config import Settings

    assert Settings().index.max_pages == 2000  # theses and reports, not just papers


@pytest.mark.parametrize("continued", [False, True])
def test_a_table_over_many_pages_is_one_table_with_each_row_on_its_page(
    tmp_path: Path, continued: bool
) -> None:
    pdf = long_table_pdf(tmp_path / "table.pdf", pages=12, continued=continued)
    b = convert_file(pdf, "application/pdf")
    assert "continued" not in b.markdown
    (table,) = b.toc.tables
    rows = list(csv.reader(io.StringIO(table.csv or "")))
    n = 12 * ROWS_PER_PAGE - 5
    assert rows[0] == TABLE_HEADER and len(rows) == n + 1  # the repeated headers dropped
    assert rows[1:] == [table_row(k) for k in range(1, n + 1)]
    for k in (1, 20, 21, 150, n):  # 20 rows on page 1, then ROWS_PER_PAGE a page
        line = next(i for i, text in enumerate(b.lines, 1) if f"| {table_row(k)[0]} |" in text)
        assert b.toc.page_of_line(line) == table_row_page(k)
    assert b.toc.page_starts == sorted(b.toc.page_starts) and len(set(b.toc.page_starts)) == 12


def test_text_without_sentence_ends_does_not_run_into_one_line(tmp_path: Path) -> None:
    """A list over pages with no full stop used to become one Markdown line (and joining it
    took time quadratic in its length)."""
    path = tmp_path / "list.pdf"
    c = canvas.Canvas(str(path), pagesize=letter)
    for p in range(6):
        for k in range(55):
            c.setFont("Times-Roman", 10)
            c.drawString(72, 740 - 12 * k, f"item {p}-{k} gravel sand silt clay and peat layers")
        c.showPage()
    c.save()
    b = convert_file(path, "application/pdf")
    assert all(f"item {p}-{k} gravel" in b.markdown for p in range(6) for k in range(55))
    longest = max(len(line.split()) for line in b.lines)
    assert longest <= 2 * 55 * 9  # at most about two pages' worth, not all six


# ----------------------------------------------------------------------------- layout cases

TEXT = (
    "replicas agree on the order of requests and the leader sends heartbeats to every "
    "follower while the log grows and entries commit once a majority stores them safely "
    "so that clients observe one consistent history even when some servers crash"
)
WORDS = TEXT.split(" ")


def _justified(c: canvas.Canvas, x: float, y: float, width: float, words: list[str],
               font: str = "Times-Roman", size: float = 10) -> None:
    """One line set flush left and right, the way a justified paragraph sets it."""
    c.setFont(font, size)
    natural = c.stringWidth(" ".join(words), font, size)
    t = c.beginText(x, y)
    t.setFont(font, size)
    t.setWordSpace(max(width - natural, 0) / max(len(words) - 1, 1))
    t.textLine(" ".join(words))
    c.drawText(t)


def _column(c: canvas.Canvas, x: float, y: float, width: float, n: int, start: int = 0) -> float:
    """`n` justified body lines, filled with as many words as fit (like a typesetter)."""
    k = start
    for _ in range(n):
        words: list[str] = []
        while c.stringWidth(" ".join([*words, WORDS[k % len(WORDS)]]), "Times-Roman", 10) < width:
            words.append(WORDS[k % len(WORDS)])
            k += 1
        _justified(c, x, y, width, words)
        y -= 12
    return y


def test_justified_heading_with_wide_word_gaps_stays_one_heading(tmp_path: Path) -> None:
    """A loose justified heading in a narrow column keeps its number and all its words,
    and the two columns of the page are still read one after the other."""
    path = tmp_path / "justified.pdf"
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setFont("Helvetica-Bold", 20)
    c.drawString(50, 740, "Replication in Two Columns")
    pieces = ["6.4  Client-driven", "or", "Server-driven"]  # the number keeps a wider space
    sizes = [c.stringWidth(p, "Times-Bold", 12) for p in pieces]
    gap = 30.0  # 2.5 em: wider than the 1.8 em at which the character reader cuts a line
    left, width = 50.0, sum(sizes) + 2 * gap
    right = left + width + 18
    y = _column(c, left, 700, width, 12)
    c.setFont("Times-Bold", 12)
    y -= 8
    x = left
    for p, w in zip(pieces, sizes, strict=True):
        c.drawString(x, y, p)
        x += w + gap
    c.drawString(left, y - 14, "Coordination")
    _column(c, left, y - 32, width, 14, start=3)
    _column(c, right, 700, width, 30, start=5)
    c.showPage()
    c.save()
    b = convert_file(path, "application/pdf")
    heads = [(s.number, s.title) for s in b.toc.sections[1:]]
    assert ("6.4", "Client-driven or Server-driven Coordination") in heads
    # Left column first, then the right one: the heading sits between left-column paragraphs.
    md = b.markdown
    assert md.index("# 6.4 Client-driven") < md.index("so that clients observe", md.index("6.4"))


def test_side_by_side_captions_are_read_whole(tmp_path: Path) -> None:
    """Two captions set next to each other, so close that their rows touch, come out as two
    complete captions, not as rows of one interleaved with the other."""
    path = tmp_path / "side.pdf"
    c = canvas.Canvas(str(path), pagesize=letter)
    y = _column(c, 72, 720, 468, 10)
    left = ["Figure 1: Training error for the three", "parameterizations of the network",
            "over all epochs of training."]
    right = ["Figure 2: Results without data", "augmentation on the test set."]
    y -= 200
    width = max(c.stringWidth(t, "Times-Roman", 10) for t in left)
    for k, text in enumerate(left):  # a justified block: every line but the last fills it
        _justified(c, 72, y - 11 * k, width if k < len(left) - 1 else 0, text.split())
    x2 = 72 + width + 4  # the blocks almost touch: their second rows read as one line
    c.setFont("Times-Roman", 10)
    for k, text in enumerate(right):
        c.drawString(x2, y - 11 * k, text)
    _column(c, 72, y - 50, 468, 8, start=2)
    c.showPage()
    c.save()
    figs = {f.label: f.caption for f in convert_file(path, "application/pdf").toc.figures}
    assert figs == {
        "Figure 1": "Training error for the three parameterizations of the network over all "
                    "epochs of training.",
        "Figure 2": "Results without data augmentation on the test set.",
    }


def test_bare_table_label_takes_the_centred_title_under_it(tmp_path: Path) -> None:
    path = tmp_path / "label.pdf"
    c = canvas.Canvas(str(path), pagesize=letter)
    y = _column(c, 72, 720, 468, 10)
    c.setFont("Times-Roman", 10)
    c.drawCentredString(306, y - 20, "TABLE I")
    c.setFont("Times-Roman", 8)
    c.drawCentredString(306, y - 31, "SUMMARY OF PERSISTENT VARIABLES")
    for k, (name, meaning) in enumerate([("f.p", "Last epoch proposal acknowledged"),
                                         ("f.a", "Last leader proposal acknowledged")]):
        c.drawString(150, y - 50 - 10 * k, name)
        c.drawString(250, y - 50 - 10 * k, meaning)
    _column(c, 72, y - 90, 468, 8, start=2)
    c.showPage()
    c.save()
    tables = convert_file(path, "application/pdf").toc.tables
    assert [(t.label, t.caption) for t in tables] == [
        ("TABLE I", "SUMMARY OF PERSISTENT VARIABLES")]


def _front_page(path: Path, bold_first_paragraph: bool) -> Path:
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setFont("Helvetica-Bold", 20)
    c.drawString(72, 720, "Assembling Genomes From Short Reads")
    c.setFont("Times-Roman", 12)
    c.drawString(72, 694, "Ada Lovelace and Alan Turing")
    y = 660.0
    for k in range(9):  # ~110 words
        words = [WORDS[(k * 11 + j) % len(WORDS)] for j in range(12)]
        if k == 8:
            words[-1] += "."
        _justified(c, 72, y, 468, words, "Times-Bold" if bold_first_paragraph else "Times-Roman")
        y -= 12
    c.setFont("Times-Bold", 12)
    c.drawString(72, y - 14, "1 Introduction")
    _column(c, 72, y - 32, 468, 20, start=4)
    c.showPage()
    c.save()
    return path


def test_unlabelled_abstract_is_the_distinct_first_paragraph(tmp_path: Path) -> None:
    toc = convert_file(_front_page(tmp_path / "a.pdf", True), "application/pdf").toc
    assert toc.abstract.startswith("replicas agree on the order")
    assert 100 <= len(toc.abstract.split()) <= 120 and toc.abstract_source == "document"
    # A paper that opens straight into body text has no abstract to find.
    plain = convert_file(_front_page(tmp_path / "b.pdf", False), "application/pdf").toc
    assert plain.abstract == ""
