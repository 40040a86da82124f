"""A folder of malformed and hostile files, written by the tests (nothing binary is committed).

`build_kit(root, outside)` writes every kind into `root` (a library folder) and a few targets
into `outside` (a folder next to it that links point to). `KINDS` names each kind and the
file(s) it is made of; the tests assert what the user sees for each.
"""

from __future__ import annotations

import codecs
import os
import zlib
from pathlib import Path

from pypdf import PdfReader, PdfWriter
from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas

SECRET = "zxqv-outside-secret-token"  # only in files outside the library: must never be indexed
LONG_NAME = "a-very-long-file-name-" + "x" * 200 + ".md"
ODD_NAME = "odd\nname \u202eevil\u202c caf\u00e9 \u6587\u732e \U0001f4da.md"
BAD_BYTES_NAME = os.fsdecode(b"bad-bytes-\xff\xfe-name.md")

COLUMNS = [72, 150, 250, 330, 410, 490]  # x of each table column (wide gaps between cells)
ROWS_PER_PAGE = 25


def table_row(n: int) -> list[str]:
    """Row n (1-based) of the long table: unique sample ids, so any row can be searched."""
    return [f"S{n:05d}", f"Station{n % 37}", f"{(n * 7) % 500}.{n % 10}",
            f"{10 + (n % 17) * 0.5:.1f}", f"{34 + (n % 9) * 0.1:.2f}", f"cast{n % 5}"]


TABLE_HEADER = ["Sample", "Site", "Depth", "Temp", "Salinity", "Cast"]


def long_table_pdf(path: Path, pages: int = 120, continued: bool = False) -> Path:
    """One table over `pages` pages: caption on page 1, its header repeated on every page
    (under a "Table 1 (continued, part B)" line when `continued`)."""
    c = canvas.Canvas(str(path), pagesize=letter)
    n = 0
    for p in range(pages):
        y = 740.0
        if p and continued:
            c.setFont("Times-Roman", 9)
            c.drawString(72, y + 16, f"Table 1 (continued, part {chr(65 + p % 26)})")
        if p == 0:
            c.setFont("Helvetica-Bold", 18)
            c.drawString(72, y, "Ocean Survey Appendix")
            c.setFont("Times-Roman", 10)
            c.drawString(72, y - 24, "This appendix lists every sample taken during the survey.")
            c.drawString(72, y - 50, "Table 1: Every sample of the ocean survey.")
            y -= 68
        c.setFont("Times-Bold", 9)
        for x, text in zip(COLUMNS, TABLE_HEADER, strict=True):
            c.drawString(x, y, text)
        y -= 13
        c.setFont("Times-Roman", 9)
        rows = ROWS_PER_PAGE - (5 if p == 0 else 0)
        for _ in range(rows):
            n += 1
            for x, text in zip(COLUMNS, table_row(n), strict=True):
                c.drawString(x, y, text)
            y -= 13
        c.drawString(300, 30, str(p + 1))
        c.showPage()
    c.save()
    return path


def table_row_page(n: int) -> int:
    """The page row n of `long_table_pdf` is printed on."""
    first = ROWS_PER_PAGE - 5
    return 1 if n <= first else 2 + (n - first - 1) // ROWS_PER_PAGE


PROSE = (
    "The committee reviewed the drainage records of every parish in the district. "
    "Each record lists the date, the depth of the ditch and the name of the surveyor. "
)


CHAPTERS = ["Introduction", "Drainage Records", "Parish Surveys", "Ditch Depths", "Surveyors",
            "Methods", "Flood Events", "Maintenance", "Costs", "Comparisons", "Discussion",
            "Conclusions"]


def long_pdf(path: Path, pages: int = 600, lines: int = 4) -> Path:
    """A report of `pages` pages of `lines` lines: a numbered chapter every 50 pages, a marker
    sentence on the last page. Few lines by default: the page count is the point."""
    c = canvas.Canvas(str(path), pagesize=letter)
    for p in range(pages):
        y = 720.0
        if p == 0:
            c.setFont("Helvetica-Bold", 18)
            c.drawString(72, 745, "District Drainage Report")
        if p % 50 == 0:
            c.setFont("Times-Bold", 12)
            c.drawString(72, y, f"{p // 50 + 1} {CHAPTERS[p // 50 % len(CHAPTERS)]}")
            y -= 22
        c.setFont("Times-Roman", 10)
        for k in range(lines):
            text = PROSE[(p * 7 + k * 13) % 90 :][:90]
            c.drawString(72, y, text)
            y -= 13
        if p == pages - 1:
            c.drawString(72, y - 10, "The final page records the quetzal survey of the east bank.")
        c.drawString(300, 40, str(p + 1))
        c.showPage()
    c.save()
    return path


def small_pdf(path: Path, text: str, pages: int = 1) -> Path:
    c = canvas.Canvas(str(path), pagesize=letter)
    for p in range(pages):
        c.setFont("Helvetica-Bold", 16)
        c.drawString(72, 720, f"Harbour Sediment Study part {p + 1}")
        c.setFont("Times-Roman", 10)
        for k in range(20):
            c.drawString(72, 690 - 13 * k, f"{text} Line {k} of the field notes was checked.")
        c.showPage()
    c.save()
    return path


def image_only_pdf(path: Path) -> Path:
    c = canvas.Canvas(str(path), pagesize=letter)
    for _ in range(2):
        c.rect(72, 72, 300, 400, fill=1)
        c.circle(300, 600, 50)
        c.showPage()
    c.save()
    return path


def encrypted_pdf(path: Path, plain: Path) -> Path:
    writer = PdfWriter(clone_from=PdfReader(plain))
    writer.encrypt(user_password="secret", owner_password="owner")
    with path.open("wb") as fh:
        writer.write(fh)
    return path


def deep_html(levels: int = 10_000) -> str:
    return (
        "<!doctype html><html><head><title>Nested Export</title></head><body>"
        "<p>The surface paragraph talks about cormorants.</p>"
        + "<div>" * levels
        + "<p>The deepest paragraph mentions the axolotl breeding programme.</p>"
        + "</div>" * levels
        + "</body></html>"
    )


LOGIN_PAGE = """<!DOCTYPE html>
<html><head><title>Sign in | Publisher Portal</title></head>
<body><h1>Sign in to continue</h1>
<form action="/login" method="post">
<label>Email <input type="email" name="email"></label>
<label>Password <input type="password" name="password"></label>
<button>Sign in</button></form>
<p>Access through your institution.</p></body></html>
"""

UTF16_NOTE = "# Windows Note\n\nThe albatross glides over the southern ocean for weeks.\n"


def good_markdown(title: str, sentence: str) -> str:
    body = " ".join([sentence] * 6)
    return f"# {title}\n\n## 1 Introduction\n\n{body}\n\n## 2 Results\n\n{body}\n"


def build_kit(root: Path, outside: Path) -> dict[str, Path]:
    """Write the hostile folder; returns the path of each kind's main file."""
    root.mkdir(parents=True)
    outside.mkdir(parents=True)
    k: dict[str, Path] = {}

    # Good files: the rest of the batch must be indexed whatever happens to the others.
    k["good markdown"] = root / "good-paper.md"
    k["good markdown"].write_text(
        good_markdown("Kelp Forests", "Kelp forests shelter juvenile rockfish."), "utf-8"
    )
    k["good pdf"] = small_pdf(root / "good-study.pdf", "Sediment cores hold microplastics.")

    # Links.
    (outside / "secret.md").write_text(f"# Private\n\n{SECRET} lives here.\n", "utf-8")
    (outside / "dir").mkdir()
    (outside / "dir" / "also-secret.md").write_text(f"# Private\n\n{SECRET} too.\n", "utf-8")
    k["symlink out of the root"] = root / "link-out.md"
    k["symlink out of the root"].symlink_to(outside / "secret.md")
    k["folder symlink out of the root"] = root / "linked-dir"
    k["folder symlink out of the root"].symlink_to(outside / "dir", target_is_directory=True)
    (root / ".store").mkdir()
    (root / ".store" / "kept.md").write_text(
        good_markdown("Hidden Store", "The pangolin archive is kept in a hidden folder."), "utf-8"
    )
    k["symlink inside the root"] = root / "inside-link.md"
    k["symlink inside the root"].symlink_to(root / ".store" / "kept.md")
    (root / "loop").mkdir()
    k["symlink loop"] = root / "loop" / "up"
    k["symlink loop"].symlink_to("..", target_is_directory=True)
    k["broken symlink"] = root / "dangling.md"
    k["broken symlink"].symlink_to(root / "nowhere.md")

    # Encodings.
    k["UTF-16 LE with BOM"] = root / "windows-le.md"
    k["UTF-16 LE with BOM"].write_bytes(codecs.BOM_UTF16_LE + UTF16_NOTE.encode("utf-16-le"))
    k["UTF-16 BE with BOM"] = root / "windows-be.txt"
    k["UTF-16 BE with BOM"].write_bytes(
        codecs.BOM_UTF16_BE + UTF16_NOTE.replace("albatross", "petrel").encode("utf-16-be")
    )
    k["UTF-8 with BOM"] = root / "bom.md"
    k["UTF-8 with BOM"].write_bytes(
        codecs.BOM_UTF8 + b"# Fjord Notes\n\nThe fjord is 300 m deep.\n"
    )
    k["invalid UTF-8"] = root / "invalid-utf8.md"
    k["invalid UTF-8"].write_bytes(
        "# Lagoon Notes\n\nThe lagoon near Tromsø has brackish water ".encode()
        + b"\xff\xfe\xc3 "
        + b"and a narwhal was seen.\n"
    )
    k["Latin-1 legacy text"] = root / "legacy.txt"
    k["Latin-1 legacy text"].write_bytes(
        "Mémoire sur la crème des marées\n\nLe café du port ferme tôt.\n".encode("latin-1")
    )
    k["Markdown with NUL bytes"] = root / "nul.md"
    k["Markdown with NUL bytes"].write_bytes(
        b"# Dune Notes\n\nThe dune\x00 moves\x00 north with the wind.\n"
    )
    k["1 MB single line"] = root / "one-line.txt"
    k["1 MB single line"].write_text(
        ("sedimentcore" * 5 + " ") * 16_500 + "and a lonely wombat at the end", "utf-8"
    )

    # PDFs.
    k["120-page PDF with one long table"] = long_table_pdf(root / "long-table.pdf")
    k["600-page PDF"] = long_pdf(root / "report-600.pdf")
    k["zero-byte PDF"] = root / "zero.pdf"
    k["zero-byte PDF"].write_bytes(b"")
    plain = small_pdf(outside / "plain.pdf", "Encrypted content.")
    k["truncated PDF"] = root / "truncated.pdf"
    k["truncated PDF"].write_bytes(plain.read_bytes()[: plain.stat().st_size // 2])
    k["encrypted PDF"] = encrypted_pdf(root / "encrypted.pdf", plain)
    k["PDF with no text layer"] = image_only_pdf(root / "scan.pdf")
    k["HTML login page named .pdf"] = root / "paper-login.pdf"
    k["HTML login page named .pdf"].write_text(LOGIN_PAGE, "utf-8")

    # HTML and odd files.
    k["deeply nested HTML"] = root / "nested.html"
    k["deeply nested HTML"].write_text(deep_html(), "utf-8")
    k["empty file"] = root / "empty.md"
    k["empty file"].write_bytes(b"")
    k["odd unicode and newline in the name"] = root / ODD_NAME
    k["odd unicode and newline in the name"].write_text(
        good_markdown("Odd Name", "The okapi hides in the forest."), "utf-8"
    )
    k["very long file name"] = root / LONG_NAME
    k["very long file name"].write_text(
        good_markdown("Long Name", "The tapir swims well."), "utf-8"
    )
    k["undecodable bytes in the name"] = root / BAD_BYTES_NAME
    k["undecodable bytes in the name"].write_text(
        good_markdown("Bad Bytes Name", "The dugong grazes seagrass."), "utf-8"
    )
    k["unreadable file"] = root / "locked.md"
    k["unreadable file"].write_text(good_markdown("Locked", "The ibex climbs."), "utf-8")
    k["unreadable file"].chmod(0)
    k["directory named like a file"] = root / "x.pdf"
    k["directory named like a file"].mkdir()
    (root / "x.pdf" / "inside.md").write_text(
        good_markdown("Inside a Folder", "The folder note describes the bittern."), "utf-8"
    )
    k["named pipe"] = root / "pipe.md"
    os.mkfifo(k["named pipe"])
    return k


def inflating_pdf(path: Path, megabytes: int) -> Path:
    """One page whose content stream is small on disk and inflates to `megabytes` MB of
    text operators (~0.3 % of that on disk): what a "PDF bomb" does to a converter's memory."""
    unit = b"BT /F1 12 Tf 72 720 Td (inflated inflated inflated) Tj ET\n"
    block = unit * ((1 << 20) // len(unit))
    packer = zlib.compressobj(9)
    stream = b"".join(packer.compress(block) for _ in range(megabytes)) + packer.flush()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    pdf = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(pdf))
        pdf += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(pdf)
    pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    pdf += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    pdf += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    path.write_bytes(bytes(pdf))
    return path
