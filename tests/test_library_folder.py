"""A plain folder as a library: real PDF (reportlab), HTML with citation meta, Markdown."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from reportlab.pdfgen import canvas

from zocrates_nb.library import Item, Library, LibraryError, read_folder

KEY = re.compile(r"^[23456789ABCDEFGHIJKLMNPQRSTUVWXYZ]{8}$")

HTML = """<!doctype html>
<html><head>
<title>Lease-based locks | Some Journal</title>
<meta name="citation_title" content="Leases: An Efficient Fault-Tolerant Mechanism">
<meta name="citation_author" content="Gray, Cary">
<meta name="citation_author" content="Cheriton, David">
<meta name="citation_publication_date" content="1989/12/01">
<meta name="citation_journal_title" content="ACM SIGOPS Operating Systems Review">
<meta name="citation_doi" content="10.1145/74851.74870">
<meta name="description" content="Caching introduces the overhead of maintaining consistency.">
</head><body><p>Body text.</p></body></html>
"""

MARKDOWN = """---
title: "Notes on Chain Replication"
authors:
  - Robbert van Renesse
  - Fred B. Schneider
year: 2004
tags: [replication, storage]
---

# A heading that is not the title

Chain replication keeps a chain of servers.
"""


def make_pdf(path: Path, title: str, author: str, text: str) -> None:
    c = canvas.Canvas(str(path))
    c.setTitle(title)
    c.setAuthor(author)
    c.drawString(72, 720, text)
    c.showPage()
    c.save()


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "papers"
    (root / "systems" / "consensus").mkdir(parents=True)
    (root / ".git").mkdir()
    make_pdf(
        root / "raft-paper.pdf",
        "In Search of an Understandable Consensus Algorithm",
        "Diego Ongaro; John Ousterhout",
        "Raft is a consensus algorithm for managing a replicated log.",
    )
    make_pdf(root / "draft.pdf", "Microsoft Word - draft.docx", "jdoe", "A draft.")
    (root / "systems" / "leases.html").write_text(HTML, encoding="utf-8")
    (root / "systems" / "consensus" / "chain.md").write_text(MARKDOWN, encoding="utf-8")
    (root / "systems" / "plain.md").write_text("# Paxos, briefly\n\nText.\n", encoding="utf-8")
    (root / "todo.txt").write_text("read more\n", encoding="utf-8")
    (root / "figure.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # not a document
    (root / ".hidden.pdf").write_bytes(b"%PDF-1.4\n")
    (root / ".git" / "notes.md").write_text("# not mine\n", encoding="utf-8")
    return root


def by_file(lib: Library, rel: str) -> Item:
    return next(i for i in lib.items.values() if i.fields["path"] == rel)


def test_one_item_per_document_file(folder: Path) -> None:
    lib = read_folder(folder)
    assert lib.source == f"folder:{folder.resolve()}"
    assert sorted(i.fields["path"] for i in lib.items.values()) == [
        "draft.pdf",
        "raft-paper.pdf",
        "systems/consensus/chain.md",
        "systems/leases.html",
        "systems/plain.md",
        "todo.txt",
    ]
    for item in lib.items.values():
        [att] = item.attachments
        assert KEY.match(item.key) and KEY.match(att.key) and item.key != att.key
        assert att.parent_key == item.key and att.link_mode == "linked_file"
        assert att.path is not None and att.path.is_file() and att.skip_reason is None
        st = att.path.stat()
        assert item.version == att.version == f"{st.st_mtime_ns}:{st.st_size}"
    types = {i.fields["path"]: i.attachments[0].content_type for i in lib.items.values()}
    assert types["raft-paper.pdf"] == "application/pdf"
    assert types["systems/leases.html"] == "text/html"
    assert types["systems/plain.md"] == "text/markdown"
    assert types["todo.txt"] == "text/plain"


def test_metadata_from_the_files(folder: Path) -> None:
    lib = read_folder(folder)
    raft = by_file(lib, "raft-paper.pdf")
    assert raft.title == "In Search of an Understandable Consensus Algorithm"
    assert raft.authors == ["Diego Ongaro", "John Ousterhout"]
    assert raft.year is not None and raft.item_type == "document"

    draft = by_file(lib, "draft.pdf")  # useless /Title and an account name as /Author
    assert draft.title == "draft" and draft.creators == []

    leases = by_file(lib, "systems/leases.html")
    assert leases.item_type == "webpage"
    assert leases.title == "Leases: An Efficient Fault-Tolerant Mechanism"
    assert leases.authors == ["Cary Gray", "David Cheriton"]
    assert (leases.year, leases.doi) == (1989, "10.1145/74851.74870")
    assert leases.venue == "ACM SIGOPS Operating Systems Review"
    assert leases.abstract.startswith("Caching introduces")

    chain = by_file(lib, "systems/consensus/chain.md")
    assert chain.title == "Notes on Chain Replication"
    assert chain.authors == ["Robbert van Renesse", "Fred B. Schneider"]
    assert chain.year == 2004 and chain.tags == ["replication", "storage"]

    assert by_file(lib, "systems/plain.md").title == "Paxos, briefly"  # first '#' heading
    assert by_file(lib, "todo.txt").title == "todo"  # the file stem


def test_sub_folders_become_nested_collections(folder: Path) -> None:
    lib = read_folder(folder)
    assert sorted(lib.collection_path(k) for k in lib.collections) == [
        "systems",
        "systems/consensus",
    ]
    [consensus] = lib.find_collections("systems/consensus")
    assert by_file(lib, "systems/consensus/chain.md").collections == [consensus]
    assert by_file(lib, "raft-paper.pdf").collections == []
    [systems] = lib.find_collections("systems")
    subtree = lib.collection_descendants(systems)
    assert len([i for i in lib.items.values() if set(i.collections) & subtree]) == 3


def test_keys_are_stable_and_versions_follow_the_file(folder: Path) -> None:
    first = read_folder(folder)
    second = read_folder(folder)
    assert list(first.items) == list(second.items)
    assert [a.key for a in first.attachments()] == [a.key for a in second.attachments()]
    todo = folder / "todo.txt"
    todo.write_text("read much more\n", encoding="utf-8")
    os.utime(todo, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    changed = read_folder(folder)
    before, after = by_file(first, "todo.txt"), by_file(changed, "todo.txt")
    assert after.key == before.key
    assert after.version == f"1700000000000000000:{todo.stat().st_size}" == "1700000000000000000:15"
    assert after.version != before.version


def test_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(LibraryError, match="not a folder"):
        read_folder(tmp_path / "missing")


# ----------------------------------------------------------------------------- links


def test_links_stay_inside_the_folder(tmp_path: Path) -> None:
    root, outside = tmp_path / "papers", tmp_path / "elsewhere"
    (root / "topics").mkdir(parents=True)
    (root / ".archive").mkdir()
    outside.mkdir()
    (outside / "private.md").write_text("# Private\n\nnot yours\n", encoding="utf-8")
    (root / ".archive" / "kept.md").write_text("# Kept\n\nkept text\n", encoding="utf-8")
    (root / "topics" / "real.md").write_text("# Real\n\nreal text\n", encoding="utf-8")
    (root / "out.md").symlink_to(outside / "private.md")
    (root / "out-dir").symlink_to(outside, target_is_directory=True)
    (root / "passwd.txt").symlink_to("/etc/passwd")
    (root / "in.md").symlink_to(root / ".archive" / "kept.md")  # a link inside: followed
    (root / "same.md").symlink_to(root / "topics" / "real.md")  # the same file again
    (root / "topics" / "up").symlink_to("..", target_is_directory=True)  # a loop
    (root / "shortcut").symlink_to(root / "topics", target_is_directory=True)
    (root / "dangling.md").symlink_to(root / "gone.md")
    lib = read_folder(root)
    assert sorted(i.fields["path"] for i in lib.items.values()) == ["in.md", "topics/real.md"]
    inside = by_file(lib, "in.md").attachments[0]
    assert inside.path == (root / ".archive" / "kept.md").resolve()  # the checked target
    assert inside.title == "in.md" and by_file(lib, "in.md").title == "Kept"
    assert sorted((Path(s.path).name, s.reason) for s in lib.skipped) == [
        ("dangling.md", "a broken symbolic link"),
        ("out-dir", f"a symbolic link to {outside.resolve()}, outside the library folder: "
                    "not followed"),
        ("out.md", f"a symbolic link to {(outside / 'private.md').resolve()}, outside the "
                   "library folder: not followed"),
        ("passwd.txt", f"a symbolic link to {Path('/etc/passwd').resolve()}, outside the "
                       "library folder: not followed"),
    ]
    assert sorted(lib.collection_path(k) for k in lib.collections) == ["topics"]


def test_odd_names_and_special_files(tmp_path: Path) -> None:
    root = tmp_path / "papers"
    root.mkdir()
    odd = root / "two\nlines \u202etxt.md"
    odd.write_text("plain body\n", encoding="utf-8")
    undecodable = root / os.fsdecode(b"caf\xe9.md")  # a Latin-1 name on a UTF-8 system
    undecodable.write_text("# Caf\n\nbody\n", encoding="utf-8")
    (root / "dir.pdf").mkdir()  # a folder named like a file is a folder
    (root / "dir.pdf" / "in.md").write_text("# In\n\nbody\n", encoding="utf-8")
    os.mkfifo(root / "pipe.md")
    lib = read_folder(root)  # a FIFO would block a reader that opened it
    paths = sorted(i.fields["path"] for i in lib.items.values())
    assert paths == ["caf�.md", "dir.pdf/in.md", "two\\nlines \\u202etxt.md"]
    assert by_file(lib, "two\\nlines \\u202etxt.md").title == "two\\nlines \\u202etxt"
    att = by_file(lib, "caf�.md").attachments[0]
    assert att.path is not None and att.path.read_text(encoding="utf-8").startswith("# Caf")
    assert [(Path(s.path).name, s.reason) for s in lib.skipped] == [
        ("pipe.md", "not a regular file (a pipe, socket or device): not read")]


def test_front_matter_of_a_utf16_file_is_read(tmp_path: Path) -> None:
    root = tmp_path / "papers"
    root.mkdir()
    (root / "win.md").write_bytes(
        b"\xff\xfe" + "---\ntitle: Notes de Windows\n---\n\n# Heading\n".encode("utf-16-le"))
    assert by_file(read_folder(root), "win.md").title == "Notes de Windows"
