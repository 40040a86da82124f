"""Markdown, plain-text, HTML-snapshot and Zotero-note converters, and `convert_file` dispatch."""

from __future__ import annotations

import codecs
import csv
import io
from pathlib import Path

import pytest
from reportlab.pdfgen import canvas

from zocrates_nb.ingest import (
    Bundle,
    ConversionError,
    convert_file,
    convert_note,
    plain_message,
    sniff,
)
from zocrates_nb.ingest.html import html_to_bundle
from zocrates_nb.ingest.toc import split_number
from zocrates_nb.library.encoding import decode_text

NOTE = (
    '<div class="zotero-note znv1"><div data-schema-version="9">'
    "<h1>Reading notes: the Transformer</h1>"
    "<p>Encoder-decoder built only from <strong>attention</strong>.</p>"
    "<h2>Key ideas</h2>"
    "<ul><li><p>Scaled dot-product attention</p></li><li><p>Multi-head attention</p></li></ul>"
    "<h3>Details</h3><p>Sinusoidal positions.</p>"
    "<h2>Results to remember</h2>"
    "<table><tbody><tr><th><p>Task</p></th><th><p>BLEU</p></th></tr>"
    "<tr><td><p>WMT 2014 EN-DE (big)</p></td><td><p>28.4</p></td></tr>"
    "<tr><td><p>WMT 2014 EN-FR (big)</p></td><td><p>41.8</p></td></tr></tbody></table>"
    '<p>See also <a href="https://arxiv.org/abs/1706.03762">arXiv:1706.03762</a>.</p>'
    "</div></div>"
)


def assert_well_formed(bundle: Bundle) -> None:
    """Sections s0..sN tile the document: contiguous, no overlap, ending at the last line."""
    secs = bundle.toc.sections
    assert secs[0].id == "s0" and secs[0].line_start == 1
    expected = 1
    for s in secs:
        assert s.line_start == expected, (s.id, s.line_start, expected)
        assert s.line_end >= s.line_start - 1
        expected = s.line_end + 1
    assert expected - 1 == len(bundle.lines) - (1 if bundle.markdown.endswith("\n") else 0)
    for s in secs[1:]:
        assert bundle.lines[s.line_start - 1].startswith("#"), s


def test_zotero_note_headings_lists_table_and_links() -> None:
    b = convert_note(NOTE)
    assert b.toc.title == "Reading notes: the Transformer"
    assert [(s.level, s.title) for s in b.toc.sections[1:]] == [
        (1, "Reading notes: the Transformer"),
        (2, "Key ideas"),
        (3, "Details"),
        (2, "Results to remember"),
    ]
    assert "- Scaled dot-product attention" in b.markdown
    assert "| WMT 2014 EN-DE (big) | 28.4 |" in b.markdown
    assert "arXiv:1706.03762" in b.markdown and "https://" not in b.markdown
    (table,) = b.toc.tables
    assert table.id == "t1"
    rows = list(csv.reader(io.StringIO(table.csv or "")))
    assert rows == [
        ["Task", "BLEU"],
        ["WMT 2014 EN-DE (big)", "28.4"],
        ["WMT 2014 EN-FR (big)", "41.8"],
    ]
    assert "28.4" in b.text(table.line_start, table.line_end)
    assert_well_formed(b)


def test_note_without_heading_takes_its_first_line_as_title() -> None:
    b = convert_note("<p>Short note: Raft splits <em>consensus</em>.</p><p>Second.</p>")
    assert b.toc.title == "Short note: Raft splits consensus."
    assert len(b.toc.sections) == 1 and b.toc.sections[0].line_end == 3
    assert convert_note("<p>x</p>", title="Given").toc.title == "Given"


def test_empty_note_is_a_conversion_error() -> None:
    with pytest.raises(ConversionError):
        convert_note("<div><p> </p></div>")


def test_html_snapshot_drops_scripts_styles_and_navigation(tmp_path: Path) -> None:
    page = tmp_path / "snap.html"
    page.write_text(
        "<html><head><title>Raft explained</title><style>body{color:red}</style>"
        "<script>var secret = 'tracking';</script></head><body>"
        "<nav><a href='/'>Home</a> | <a href='/about'>About</a></nav>"
        "<article><h1>Raft explained</h1><p>" + "Leader election keeps one leader. " * 10 + "</p>"
        "<h2>2.1 Log replication</h2><p>Entries flow from the leader.</p>"
        "<figure><img src='x.png'><figcaption>Figure 3: Server states.</figcaption></figure>"
        "<table><caption>Table 1: Timeouts</caption><tr><th>Name</th><th>ms</th></tr>"
        "<tr><td>election</td><td>150</td></tr></table>"
        "<script>document.write('injected')</script></article></body></html>",
        "utf-8",
    )
    b = convert_file(page, "text/html")
    assert "tracking" not in b.markdown and "injected" not in b.markdown
    assert "color:red" not in b.markdown and "About" not in b.markdown
    assert b.toc.title == "Raft explained"
    sub = b.toc.sections[2]
    assert (sub.level, sub.number, sub.title) == (2, "2.1", "Log replication")
    assert [f.label for f in b.toc.figures] == ["Figure 3"]
    assert b.toc.figures[0].caption == "Server states."
    (t,) = b.toc.tables
    assert (t.label, t.caption) == ("Table 1", "Timeouts")
    assert t.csv == "Name,ms\nelection,150\n"
    assert "Table 1" in b.text(t.line_start, t.line_end)
    assert_well_formed(b)


def test_markdown_file_headings_numbers_captions_and_frontmatter(tmp_path: Path) -> None:
    md = tmp_path / "notes.md"
    md.write_text(
        "Paper notes\n===========\n\nBy me, 2021.\n\n## Abstract\n\nWe study ﬁles.\n\n"
        "## 3.2 Raft basics\n\nText.\n\n```\n# not a heading\n```\n\n### A.1 Proofs\n\n"
        "Table 2: Latency per op.\n\n| op | ms |\n|---|---|\n| get | 1 |\n",
        "utf-8",
    )
    b = convert_file(md)
    heads = [(s.level, s.number, s.title) for s in b.toc.sections[1:]]
    assert heads == [
        (1, None, "Paper notes"),
        (2, None, "Abstract"),
        (2, "3.2", "Raft basics"),
        (3, "A.1", "Proofs"),
    ]
    assert b.toc.abstract == "We study files."  # NFKC expands the ligature
    assert b.toc.abstract_source == "document"
    (t,) = b.toc.tables
    assert t.label == "Table 2" and t.csv == "op,ms\nget,1\n"
    assert_well_formed(b)


def test_plain_text_joins_wrapped_lines_and_finds_numbered_headings(tmp_path: Path) -> None:
    txt = tmp_path / "paper.txt"
    txt.write_text(
        "A Study of Things\n\nWe describe a distri-\nbuted system that\nworks.\n\n"
        "1 Introduction\n\nSystems fail.\n\n2 Design\n\nWe chose\nsimplicity.\n",
        "utf-8",
    )
    b = convert_file(txt)
    assert "We describe a distributed system that works." in b.markdown
    assert [(s.number, s.title) for s in b.toc.sections[1:]] == [("1", "Introduction"),
                                                                 ("2", "Design")]
    assert b.toc.sections[0].title == "" and b.toc.title == "A Study of Things"
    assert_well_formed(b)


def test_plain_text_without_headings_is_frontmatter_only(tmp_path: Path) -> None:
    txt = tmp_path / "memo.txt"
    txt.write_text("Just one paragraph\nof text.\n", "utf-8")
    b = convert_file(txt, "text/plain")
    assert b.markdown == "Just one paragraph of text.\n"
    assert len(b.toc.sections) == 1
    assert_well_formed(b)


def test_zero_byte_and_unknown_files_are_conversion_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    with pytest.raises(ConversionError, match="empty"):
        convert_file(empty, "application/pdf")
    blob = tmp_path / "data.bin"
    blob.write_bytes(b"\x00\x01\x02")
    with pytest.raises(ConversionError, match="unsupported"):
        convert_file(blob)


def test_fallback_text_rescues_an_unreadable_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.4\nthis is not really a pdf\n%%EOF")
    cache = tmp_path / ".zotero-ft-cache"
    cache.write_text("Recovered Title\n1 Introduction\nText from Zotero's index.\n", "utf-8")
    b = convert_file(bad, "application/pdf", fallback_text=cache)
    assert b.toc.converter == "zotero-ft-cache"
    assert "Text from Zotero's index." in b.markdown
    assert [s.title for s in b.toc.sections[1:]] == ["Introduction"]
    assert b.toc.warnings == [
        "damaged PDF: it cannot be opened (it may be truncated or only partly downloaded); "
        "download it again; indexed the text Zotero extracted instead"
    ]
    empty_cache = tmp_path / "empty-cache"
    empty_cache.write_text("  \n", "utf-8")
    with pytest.raises(ConversionError, match="damaged PDF"):
        convert_file(bad, "application/pdf", fallback_text=empty_cache)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3.2 Raft basics", ("3.2", "Raft basics")),
        ("3. Method", ("3", "Method")),
        ("A.1 Proofs", ("A.1", "Proofs")),
        ("IV. RESULTS", ("IV", "RESULTS")),
        ("Related work", (None, "Related work")),
        ("2013 was a year", (None, "2013 was a year")),
    ],
)
def test_split_number(text: str, expected: tuple[str | None, str]) -> None:
    assert split_number(text) == expected


# ----------------------------------------------------------------------------- odd input


@pytest.mark.parametrize(
    ("data", "text", "encoding", "warnings"),
    [
        (codecs.BOM_UTF16_LE + "# Nota\n\nUn café.\n".encode("utf-16-le"),
         "# Nota\n\nUn café.\n", "UTF-16", []),
        (codecs.BOM_UTF16_BE + "Näher\n".encode("utf-16-be"), "Näher\n", "UTF-16", []),
        (codecs.BOM_UTF32_LE + "Größe\n".encode("utf-32-le"), "Größe\n", "UTF-32", []),
        (codecs.BOM_UTF8 + b"Fjord\n", "Fjord\n", "UTF-8", []),
        ("plain ünïcödé\n".encode(), "plain ünïcödé\n", "UTF-8", []),
        ("Tromsø ".encode() + b"\xff\xfe and on", "Tromsø �� and on", "UTF-8",
         ["2 invalid UTF-8 byte sequences replaced with �"]),
        ("crème brûlée".encode("latin-1"), "crème brûlée", "Windows-1252",
         ["not UTF-8: read as Windows-1252 (Latin-1); save the file as UTF-8 if accented "
          "letters look wrong"]),
        (b"a\x00b\x00c d\x07", "abc d", "UTF-8", ["3 control characters (NUL…) removed"]),
        ("# Sans BOM\n\nWindows wrote this without a byte-order mark.\n".encode("utf-16-le"),
         "# Sans BOM\n\nWindows wrote this without a byte-order mark.\n", "UTF-16", []),
    ],
)
def test_text_is_decoded_by_its_bom_else_as_utf8_with_a_warning(
    data: bytes, text: str, encoding: str, warnings: list[str]
) -> None:
    decoded = decode_text(data)
    assert (decoded.text, decoded.encoding, decoded.warnings) == (text, encoding, warnings)


def test_a_utf16_markdown_note_is_searchable_text_not_mojibake(tmp_path: Path) -> None:
    path = tmp_path / "windows.md"
    path.write_bytes(codecs.BOM_UTF16_LE
                     + "# Windows Note\n\nThe albatross glides.\n".encode("utf-16-le"))
    b = convert_file(path)
    assert "\x00" not in b.markdown and "The albatross glides." in b.markdown
    assert b.toc.title == "Windows Note" and b.toc.warnings == []
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"# Notes\n\nbroken \xff byte\n")
    assert convert_file(bad).toc.warnings == ["1 invalid UTF-8 byte sequence replaced with �"]


def test_deeply_nested_html_keeps_its_text_and_says_what_was_flattened() -> None:
    levels = 10_000
    html = ("<html><body><p>Surface text about cormorants.</p>" + "<div>" * levels
            + "<p>Deep text about the axolotl.</p><p>Second deep paragraph.</p>"
            + "</div>" * levels + "</body></html>")
    b = html_to_bundle(html)
    assert "Surface text about cormorants." in b.markdown
    assert "Deep text about the axolotl.\n\nSecond deep paragraph." in b.markdown
    assert b.toc.warnings == [
        f"deeply nested HTML ({levels + 3:,} levels): below level 120 the text was kept as "
        "plain paragraphs, without its formatting"
    ]
    shallow = html_to_bundle("<html><body>" + "<div>" * 50 + "<p>x y z</p>" + "</div>" * 50)
    assert shallow.toc.warnings == []


def test_a_deeply_nested_zotero_note_converts() -> None:
    b = convert_note("<div>" * 5000 + "<p>Note text kept.</p>" + "</div>" * 5000, "Deep")
    assert "Note text kept." in b.markdown and "deeply nested HTML" in b.toc.warnings[0]


def test_an_html_page_saved_as_pdf_is_recognised(tmp_path: Path) -> None:
    login = tmp_path / "paper.pdf"
    login.write_text(
        "<!DOCTYPE html><html><head><title>Sign in</title></head><body><form>"
        '<input type="password" name="pw"></form><p>Access through your institution.</p>'
        "</body></html>", "utf-8")
    with pytest.raises(ConversionError) as err:
        convert_file(login, "application/pdf")
    assert str(err.value) == (
        "not a PDF: an HTML page (a login page) saved with a .pdf name, with no paper in it; "
        "download the PDF again (in Zotero: Find Available PDF)")
    article = tmp_path / "article.pdf"
    body = " ".join(["Seagrass meadows store carbon in their sediments."] * 60)
    article.write_text(f"<html><head><title>Seagrass</title></head><body><article><h1>Seagrass"
                       f"</h1><p>{body}</p></article></body></html>", "utf-8")
    b = convert_file(article, "application/pdf")
    assert "Seagrass meadows store carbon" in b.markdown
    assert b.toc.warnings == [
        "not a PDF: an HTML page saved with a .pdf name; indexed as a web page"]
    small = tmp_path / "small.pdf"
    c = canvas.Canvas(str(small))
    c.drawString(72, 720, "A real PDF with enough text on its single page to count.")
    c.showPage()
    c.save()
    png = tmp_path / "figure.pdf"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    with pytest.raises(ConversionError, match=r"^not a PDF: an image \(PNG\) saved with a \.pdf"):
        convert_file(png, "application/pdf")
    assert sniff(b"\xef\xbb\xbf  <!doctype html><html>") == "html"
    assert sniff(codecs.BOM_UTF16_LE + "<html><body>".encode("utf-16-le")) == "html"
    assert sniff(b"\n%PDF-1.7\n") == "pdf" and sniff(b"# Markdown") is None
    assert sniff(b"# Notes on the format\n\nA file starts with %PDF-1.7.") is None
    junk = tmp_path / "junk-first.pdf"  # PDF readers accept a few bytes before the header
    junk.write_bytes(b"\r\n\x00junk" + small.read_bytes())
    assert convert_file(junk, "application/pdf").toc.pages == 1
    named_md = tmp_path / "really-a-pdf.md"
    named_md.write_bytes(small.read_bytes())
    assert convert_file(named_md).toc.warnings == ["a PDF saved as markdown: read as a PDF"]


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (RecursionError("maximum recursion depth exceeded"),
         "too deeply nested to read (markup thousands of levels deep)"),
        (MemoryError(), "too large to convert in the memory available"),
        (PermissionError(13, "Permission denied", "/x/y.pdf"),
         "cannot read the file: permission denied (check the file's permissions)"),
        (OSError(5, "Input/output error"), "cannot read the file: input/output error"),
        (KeyError("/Root"), "the converter stopped on this file (an internal problem; please "
                            "report it)"),
        (ConversionError("ValueError: bad\n  thing"), "bad thing"),
        (ConversionError('Traceback (most recent call last):\n  File "x.py", line 1'),
         "the converter stopped on this file (an internal problem; please report it)"),
    ],
)
def test_every_failure_is_one_plain_line(error: BaseException, message: str) -> None:
    assert plain_message(error) == message


def test_convert_file_raises_only_plain_conversion_errors(tmp_path: Path) -> None:
    folder = tmp_path / "x.pdf"
    folder.mkdir()
    with pytest.raises(ConversionError, match=r"^a folder, not a file$"):
        convert_file(folder)
    blank = tmp_path / "blank.md"
    blank.write_bytes(b" \n\t\n")
    with pytest.raises(ConversionError, match=r"^empty file \(only white space, 4 bytes\)$"):
        convert_file(blank)
    nuls = tmp_path / "nuls.txt"
    nuls.write_bytes(b"\x00" * 40)
    with pytest.raises(ConversionError, match=r"^no text in the file"):
        convert_file(nuls)


def test_a_word_broken_at_a_line_end_is_joined_as_the_document_writes_it() -> None:
    """'proof-' + 'of-work' was 'proofof-work' and 'Append-' + 'Entries' 'Append- Entries':
    the document's own spelling elsewhere decides; without one, a lower-case half joins the
    word and a capitalised one keeps its hyphen ('non-Gaussian')."""
    from zocrates_nb.ingest.text import join_lines, word_forms

    forms = word_forms(["a chain of proof-of-work blocks", "the AppendEntries RPC"])
    assert join_lines(["each block holds a proof-", "of-work for its hash"], forms) == (
        "each block holds a proof-of-work for its hash")  # fmt: skip
    assert join_lines(["the leader retries Append-", "Entries RPCs"], forms) == (
        "the leader retries AppendEntries RPCs")  # fmt: skip
    assert join_lines(["a distri-", "buted system"], forms) == "a distributed system"
    assert join_lines(["globally-", "distributed"], forms) == "globally-distributed"
    assert join_lines(["a non-", "Gaussian prior"], forms) == "a non-Gaussian prior"
