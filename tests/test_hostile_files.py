"""A folder of hostile and malformed files through the real folder reader and indexer.

The kit (tests/hostile_kit.py) is written by the test. For every kind of bad input the test
states what the user sees in the index report, word for word; that every message is plain
(no exception class names, tracebacks or library error texts); that nothing outside the
library folder is read; and that the rest of the batch is indexed and searchable.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hostile_kit import (
    BAD_BYTES_NAME,
    CHAPTERS,
    LONG_NAME,
    ODD_NAME,
    ROWS_PER_PAGE,
    SECRET,
    build_kit,
    table_row,
    table_row_page,
)

from zocrates_nb.config import RetrievalSettings, Settings
from zocrates_nb.index import Index, IndexReport, index_library
from zocrates_nb.library import Library, read_folder
from zocrates_nb.library.paths import printable
from zocrates_nb.retrieval import RunState, Toolkit
from zocrates_nb.retrieval.reading import TABLE_READ_WORDS

# One module fixture indexes the whole kit (~250 passages to embed): minutes on a busy machine.
pytestmark = pytest.mark.timeout(2400)

AS_ROOT = os.geteuid() == 0  # root reads files whatever their permissions
NOT_PLAIN = re.compile(
    r"Traceback|\b[A-Z]\w*(?:Error|Exception)\b|Errno|\bFile \"|PDFium|pdfium|pypdf|"
    r"Failed to load|bs4|markdownify|NoneType|<class"
)


@dataclass
class Kit:
    root: Path
    files: dict[str, Path]
    library: Library
    index: Index
    report: IndexReport
    home: Path


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kit]:
    base = tmp_path_factory.mktemp("hostile")
    files = build_kit(base / "library", base / "outside")
    library = read_folder(base / "library")
    index = Index.open(base / "home", Settings())
    report = index_library(library, index, progress=False)
    yield Kit(base / "library", files, library, index, report, base / "home")
    index.close()
    files["unreadable file"].chmod(0o644)  # let pytest clean up


def _by_file(report: IndexReport) -> dict[str, tuple[str, str]]:
    """file name → (what happened, the message), for every line of the report."""
    out: dict[str, tuple[str, str]] = {}
    for kind, key, rows in (("error", "error", report.errors),
                            ("skipped", "reason", report.skipped),
                            ("warning", "warning", report.warnings)):
        for row in rows:
            name = row["file"].rsplit("/", 1)[-1]
            assert name not in out, f"two report lines for {name}"
            out[name] = (kind, row[key])
    return out


def _search_titles(index: Index, query: str) -> list[str]:
    return [h.chunk.title for h in index.search(query, mode="bm25", limit=5)]


EXPECTED: dict[str, tuple[str, str, str]] = {  # kind → (file name, what, exact message)
    "symbol link out": ("link-out.md", "skipped", "a symbolic link to {outside}/secret.md, "
                        "outside the library folder: not followed"),
    "folder link out": ("linked-dir", "skipped", "a symbolic link to {outside}/dir, outside "
                        "the library folder: not followed"),
    "broken symlink": ("dangling.md", "skipped", "a broken symbolic link"),
    "named pipe": ("pipe.md", "skipped", "not a regular file (a pipe, socket or device): not read"),
    "invalid UTF-8": ("invalid-utf8.md", "warning",
                      "3 invalid UTF-8 byte sequences replaced with �"),
    "Latin-1": ("legacy.txt", "warning", "not UTF-8: read as Windows-1252 (Latin-1); save the "
                "file as UTF-8 if accented letters look wrong"),
    "NUL bytes": ("nul.md", "warning", "2 control characters (NUL…) removed"),
    "deep HTML": ("nested.html", "warning", "deeply nested HTML (10,003 levels): below level "
                  "120 the text was kept as plain paragraphs, without its formatting"),
    "login page": ("paper-login.pdf", "error", "not a PDF: an HTML page (a login page) saved "
                   "with a .pdf name, with no paper in it; download the PDF again (in Zotero: "
                   "Find Available PDF)"),
    "empty file": ("empty.md", "error", "empty file (0 bytes)"),
    "zero-byte PDF": ("zero.pdf", "error", "empty file (0 bytes)"),
    "truncated PDF": ("truncated.pdf", "error", "damaged PDF: it cannot be opened (it may be "
                      "truncated or only partly downloaded); download it again"),
    "encrypted PDF": ("encrypted.pdf", "error", "encrypted PDF: open it in a PDF reader and "
                      "save an unencrypted copy (or remove the password), then index again"),
    "no text layer": ("scan.pdf", "error", "no text layer (a scanned image, 2 pages): make it "
                      "searchable with OCR (e.g. ocrmypdf, or your PDF reader's text "
                      "recognition) and index again"),
}
if not AS_ROOT:
    EXPECTED["unreadable file"] = ("locked.md", "skipped", "cannot read the file: permission "
                                   "denied (check the file's permissions)")


def test_every_kind_of_bad_file_gets_one_plain_message(kit: Kit) -> None:
    seen = _by_file(kit.report)
    outside = str(kit.root.parent / "outside")
    for what, (name, kind, message) in EXPECTED.items():
        assert seen.get(name) == (kind, message.format(outside=outside)), what
    # Nothing else is reported: every other file is indexed without a word.
    assert set(seen) == {name for name, _, _ in EXPECTED.values()}
    for line in (*kit.report.errors, *kit.report.skipped, *kit.report.warnings):
        for value in line.values():
            assert "\n" not in value and not NOT_PLAIN.search(value), line
    # The catalogue keeps the same plain lines (doctor and status show them).
    for doc in kit.index.documents():
        assert not doc.error or not NOT_PLAIN.search(doc.error), doc


def test_the_rest_of_the_batch_is_indexed_and_searchable(kit: Kit) -> None:
    status = {d.title: d.status for d in kit.index.documents()}
    failed = {name for name, kind, _ in EXPECTED.values() if kind == "error"}
    done = [d for d in kit.index.documents() if d.status == "done"]
    assert len(done) == len(kit.library.items) - len(failed) - (0 if AS_ROOT else 1), status
    for query, title in [
        ("kelp forests juvenile rockfish", "Kelp Forests"),
        ("sediment cores microplastics", "good-study"),
        ("pangolin archive", "Hidden Store"),  # a link inside the folder is followed
        ("albatross southern ocean", "Windows Note"),  # UTF-16 LE with a BOM
        ("petrel southern ocean", "windows-be"),  # UTF-16 BE with a BOM
        ("fjord deep", "Fjord Notes"),  # UTF-8 with a BOM: no \ufeff in the title
        ("narwhal lagoon", "Lagoon Notes"),
        ("crème marées café", "legacy"),
        ("dune moves north", "Dune Notes"),
        ("lonely wombat", "one-line"),
        ("axolotl breeding programme", "Nested Export"),
        ("cormorants surface", "Nested Export"),
        ("okapi forest", "Odd Name"),
        ("tapir swims", "Long Name"),
        ("dugong seagrass", "Bad Bytes Name"),
        ("bittern folder note", "Inside a Folder"),
        ("quetzal survey east bank", "report-600"),
    ]:
        assert _search_titles(kit.index, query)[:1] == [title], query
    if AS_ROOT:
        assert _search_titles(kit.index, "ibex climbs")[:1] == ["Locked"]


def test_nothing_outside_the_library_folder_is_read(kit: Kit) -> None:
    assert kit.index.search(SECRET, mode="bm25") == []
    for doc in kit.index.documents():
        if doc.status == "done":
            assert SECRET not in kit.index.bundle(doc.doc_key).markdown
    paths = {item.fields["path"] for item in kit.library.items.values()}
    assert not any(p.startswith(("link-out", "linked-dir", "loop/up")) for p in paths)
    # The loop (loop/up → ..) was read once: every file has exactly one item.
    assert len(paths) == len(kit.library.items)
    assert {kit.library.collections[k].name for k in kit.library.collections} == {"x.pdf"}


def test_decoded_text_is_clean(kit: Kit) -> None:
    def bundle_of(name: str) -> Any:
        doc = next(d for d in kit.index.documents() if d.file.endswith("/" + name))
        return kit.index.bundle(doc.doc_key)

    le = bundle_of("windows-le.md")
    assert "\x00" not in le.markdown and le.toc.title == "Windows Note"
    assert bundle_of("bom.md").lines[0] == "# Fjord Notes"
    assert "Tromsø has brackish water ��� and a narwhal" in bundle_of("invalid-utf8.md").markdown
    assert "Le café du port ferme tôt." in bundle_of("legacy.txt").markdown
    assert "The dune moves north" in bundle_of("nul.md").markdown


def test_odd_file_names_are_shown_printably(kit: Kit) -> None:
    titles = {item.fields["path"]: item.title for item in kit.library.items.values()}
    assert titles[printable(ODD_NAME)] == "Odd Name"
    assert printable(ODD_NAME) == "odd\\nname \\u202eevil\\u202c café 文献 📚.md"
    assert titles[printable(BAD_BYTES_NAME)] == "Bad Bytes Name"
    assert titles[LONG_NAME] == "Long Name"
    files = [d.file for d in kit.index.documents()]
    assert all("\n" not in f and "\u202e" not in f for f in files)
    assert any(f.endswith("bad-bytes-��-name.md") for f in files)


def test_a_120_page_table_is_one_table_chunked_by_its_rows(kit: Kit) -> None:
    doc = next(d for d in kit.index.documents() if d.file.endswith("/long-table.pdf"))
    bundle = kit.index.bundle(doc.doc_key)
    assert doc.status == "done" and bundle.toc.pages == 120
    (table,) = bundle.toc.tables
    rows = list(csv.reader(io.StringIO(table.csv or "")))
    n = 120 * ROWS_PER_PAGE - 5
    assert len(rows) == n + 1 and rows[-1] == table_row(n)
    # A row far into the table is found, and its passage points at the page it is printed on.
    for k in (1500, 2900):
        hit = kit.index.search(table_row(k)[0], mode="bm25", limit=3)[0].chunk
        assert hit.attachment_key == doc.doc_key and table_row(k)[0] in hit.text
        assert hit.page is not None and hit.page <= table_row_page(k) <= (hit.page_end or 0)
        # Its pages are the few its rows are printed on, never the whole table's 120: the
        # body chunk holding the same rows may be the hit (twins merge into the larger one).
        rows_held = hit.line_end - hit.line_start + 1
        assert (hit.page_end or 0) - hit.page <= rows_held // ROWS_PER_PAGE + 1


def test_reading_a_giant_table_returns_its_first_rows_and_says_how_to_get_more(kit: Kit) -> None:
    doc = next(d for d in kit.index.documents() if d.file.endswith("/long-table.pdf"))
    kit_ = Toolkit(kit.index, RunState.new(RetrievalSettings()))
    out = kit_.read_document(doc.doc_key, "t1")
    (asset,) = out.assets
    assert TABLE_READ_WORDS // 2 < asset.words <= TABLE_READ_WORDS
    shown = asset.text.count("\n| S0")  # data rows, not the header
    csv_rows = asset.csv.splitlines()
    assert csv_rows[0] == "Sample,Site,Depth,Temp,Salinity,Cast" and len(csv_rows) == shown + 1
    n = 120 * ROWS_PER_PAGE - 5
    assert f"Table 1 is long ({n:,} rows, ~" in out.notice
    assert f"showing rows 1–{shown:,}. Find particular rows with search_corpus, or read one page" \
        in out.notice
    assert kit_.state.words == asset.words
    page = kit_.read_document(doc.doc_key, page=87).assets[0]
    first_on_87 = ROWS_PER_PAGE - 5 + 85 * ROWS_PER_PAGE + 1
    assert f"| {table_row(first_on_87)[0]} |" in page.text


def test_a_600_page_report_is_indexed_with_the_default_limit(kit: Kit) -> None:
    doc = next(d for d in kit.index.documents() if d.file.endswith("/report-600.pdf"))
    toc = kit.index.bundle(doc.doc_key).toc
    assert doc.status == "done" and toc.pages == 600
    assert [s.title for s in toc.sections if s.level == 1] == CHAPTERS
    assert toc.page_of_line(toc.sections[-1].line_start) == 551


def test_a_page_limit_refusal_says_how_to_raise_it(kit: Kit) -> None:
    item = next(i for i in kit.library.items.values() if i.fields["path"] == "report-600.pdf")
    one = Library(source="test", items={item.key: item})
    with Index.open(kit.home.parent / "home-limit", Settings()) as index:
        report = index_library(one, index, progress=False, max_pages=500)
    assert [e["error"] for e in report.errors] == [
        "PDF has 600 pages, more than the limit of 500; to index it, raise index.max_pages in "
        'zocrates_config.json (e.g. {"index": {"max_pages": 700}})'
    ]


def test_a_long_document_shows_its_pages_as_it_converts(
    kit: Kit, capsys: pytest.CaptureFixture[str]
) -> None:
    item = next(i for i in kit.library.items.values() if i.fields["path"] == "report-600.pdf")
    one = Library(source="test", items={item.key: item})
    with Index.open(kit.home.parent / "home-progress", Settings()) as index:
        report = index_library(one, index, progress=True)
    assert report.errors == [] and report.converted == 1
    err = capsys.readouterr().err
    pages = [int(m.replace(",", "")) for m in re.findall(r"page ([\d,]+)/600", err)]
    assert pages and pages == sorted(pages) and max(pages) <= 600
