"""A plain folder of documents as a library: one item per file, sub-folders as collections.

For people without Zotero: PDFs, HTML pages, Markdown and text files are found
recursively (hidden files and folders skipped), and whatever metadata the files carry
(PDF document info, HTML citation meta tags, Markdown front matter) fills the items.
Keys are derived from relative paths, so re-reading a folder gives the same keys.

Symbolic links are followed only while they stay inside the folder (see `paths`); a link
leaving it, a broken link or a special file (FIFO, device) is listed in `Library.skipped`
with the reason, and each real folder is read once, so a link loop ends.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml
from bs4 import BeautifulSoup
from pypdf import PdfReader

from zocrates_nb.library.encoding import decode_text
from zocrates_nb.library.model import (
    Attachment,
    Collection,
    Creator,
    Item,
    Library,
    LibraryError,
    SkippedPath,
)
from zocrates_nb.library.paths import KEY_CHARS, inside, outside_reason, printable, real
from zocrates_nb.library.zotero_fields import clean_doi, year_of

CONTENT_TYPES = {
    ".pdf": "application/pdf",
    ".html": "text/html",
    ".htm": "text/html",
    ".xhtml": "application/xhtml+xml",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
}

_USELESS_TITLE = re.compile(
    r"^(microsoft\s+\w+\s+-\s|untitled\b|title$|document\d*$|slide\s*\d+$|presentation\d*$|"
    r"pii:|doi:|[a-z]:\\|/)",
    re.IGNORECASE,
)
# PDF /Author values that name an account, not a person.
_ACCOUNT = re.compile(r"^(?i:administrator|admin|user|owner|author|unknown)$|^[a-z0-9_.-]+$")
_FILE_LIKE = re.compile(r"\.(pdf|docx?|tex|dvi|ps|eps|indd|qxd|pptx?|odt|rtf|txt)$", re.IGNORECASE)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_ATX_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def folder_key(seed: str, used: set[str]) -> str:
    """8 characters from Zotero's key alphabet, stable for a seed, unique within `used`."""
    n = 0
    while True:
        seed_bytes = f"{seed}#{n}".encode("utf-8", "surrogateescape")  # undecodable names
        h = int.from_bytes(hashlib.sha256(seed_bytes).digest(), "big")
        key = "".join(KEY_CHARS[(h >> (5 * i)) % len(KEY_CHARS)] for i in range(8))
        if key not in used:
            used.add(key)
            return key
        n += 1


@dataclass
class FileMetadata:
    """What a file says about itself; empty strings where it says nothing."""

    title: str = ""
    creators: list[Creator] = field(default_factory=list)
    date: str = ""
    doi: str = ""
    abstract: str = ""
    venue: str = ""
    url: str = ""
    tags: list[str] = field(default_factory=list)


def useful_title(title: str) -> bool:
    """False for the junk PDF producers leave in /Title ('Microsoft Word - a.docx', 'untitled')."""
    t = " ".join(title.split())
    if len(t) < 4 or not re.search(r"[^\W\d_]{2}", t):
        return False
    return not (_USELESS_TITLE.search(t) or _FILE_LIKE.search(t))


def person(name: str) -> Creator:
    """'Ada Lovelace' or 'Lovelace, Ada' → Creator(last='Lovelace', first='Ada')."""
    name = " ".join(name.split())
    if "," in name:
        last, first = (p.strip() for p in name.split(",", 1))
        return Creator(last=last, first=first)
    parts = name.rsplit(" ", 1)
    return Creator(last=parts[-1], first=parts[0] if len(parts) == 2 else "")


def split_authors(value: str) -> list[Creator]:
    """Free-text authors: 'A. Smith; B. Jones', 'A Smith, B Jones and C Li', 'Smith, John'."""
    value = value.strip()
    if not value:
        return []
    if ";" in value:
        names = value.split(";")
    else:
        pieces = [p.strip() for p in re.split(r",|\band\b|&", value) if p.strip()]
        if "," in value and len(pieces) == 2 and all(len(p.split()) == 1 for p in pieces):
            names = [value]  # 'Smith, John': one person, last name first
        else:
            names = pieces
    return [person(n) for n in names if n.strip()]


def _as_text(value: Any) -> str:
    if isinstance(value, datetime | date):
        return value.isoformat()[:10]
    return "" if value is None else str(value).strip()


def _as_list(value: Any) -> list[str]:
    if isinstance(value, list):
        out = []
        for v in value:
            out.append(_as_text(v.get("name", "")) if isinstance(v, dict) else _as_text(v))
        return [v for v in out if v]
    text = _as_text(value)
    return [text] if text else []


def pdf_metadata(path: Path) -> FileMetadata:
    meta = FileMetadata()
    try:
        # pypdf logs parse problems itself; the converter reports them once, in the index report.
        logging.getLogger("pypdf").setLevel(logging.CRITICAL)
        info = PdfReader(path).metadata
    except Exception:  # any unreadable PDF: the file name will do
        return meta
    if info is None:
        return meta
    title = _as_text(info.title)
    meta.title = title if useful_title(title) else ""
    meta.creators = [c for c in split_authors(_as_text(info.author)) if not _ACCOUNT.match(c.name)]
    try:
        created = info.creation_date
    except Exception:  # malformed /CreationDate
        created = None
    if created is not None:
        meta.date = created.date().isoformat()
    return meta


def html_metadata(path: Path) -> FileMetadata:
    soup = BeautifulSoup(path.read_bytes(), "html.parser")

    def metas(*names: str) -> list[str]:
        for name in names:
            found = [
                _as_text(m.get("content"))
                for m in soup.find_all("meta")
                if _as_text(m.get("name") or m.get("property")).casefold() == name
            ]
            if any(found):
                return [f for f in found if f]
        return []

    head_title = _as_text(soup.title.get_text()) if soup.title else ""
    meta = FileMetadata(
        title=(metas("citation_title", "dc.title", "og:title") or [head_title])[0],
        creators=[person(a) for a in metas("citation_author", "dc.creator", "author")],
        date=(metas("citation_publication_date", "citation_date", "dc.date") or [""])[0],
        doi=clean_doi((metas("citation_doi", "dc.identifier") or [""])[0]),
        abstract=(metas("citation_abstract", "description", "og:description") or [""])[0],
        venue=(
            metas("citation_journal_title", "citation_conference_title", "citation_publisher")
            or [""]
        )[0],
        url=(metas("citation_public_url", "citation_abstract_html_url", "og:url") or [""])[0],
        tags=[t for k in metas("citation_keywords", "keywords") for t in re.split(r"[;,]", k)],
    )
    meta.tags = [t.strip() for t in meta.tags if t.strip()]
    if not useful_title(meta.title):
        meta.title = ""
    return meta


def markdown_metadata(path: Path) -> FileMetadata:
    text = decode_text(path.read_bytes()).text
    meta = FileMetadata()
    front: dict[str, Any] = {}
    m = _FRONT_MATTER.match(text)
    if m:
        try:
            loaded = yaml.safe_load(m.group(1))
        except yaml.YAMLError:
            loaded = None
        front = (
            {str(k).casefold(): v for k, v in loaded.items()} if isinstance(loaded, dict) else {}
        )
        text = text[m.end() :]
    meta.title = _as_text(front.get("title"))
    if not meta.title:
        heading = _ATX_H1.search(text)
        meta.title = heading.group(1).strip() if heading else ""
    authors = front.get("authors", front.get("author"))
    names = _as_list(authors)
    meta.creators = split_authors(names[0]) if len(names) == 1 else [person(n) for n in names]
    meta.date = _as_text(front.get("date") or front.get("year"))
    meta.doi = clean_doi(_as_text(front.get("doi")))
    meta.abstract = _as_text(
        front.get("abstract") or front.get("description") or front.get("summary")
    )
    meta.venue = _as_text(front.get("venue") or front.get("journal") or front.get("booktitle"))
    meta.url = _as_text(front.get("url"))
    meta.tags = _as_list(front.get("tags") or front.get("keywords"))
    return meta


def file_metadata(path: Path) -> FileMetadata:
    suffix = path.suffix.lower()
    try:
        if suffix == ".pdf":
            return pdf_metadata(path)
        if suffix in (".html", ".htm", ".xhtml"):
            return html_metadata(path)
        if suffix in (".md", ".markdown"):
            return markdown_metadata(path)
    except OSError:
        pass
    return FileMetadata()


def _document_files(folder: Path) -> tuple[list[tuple[Path, Path]], list[SkippedPath]]:
    """(path as found, real path) of the supported files under `folder` in a stable order,
    and what was passed over. Hidden files and folders are skipped; links are followed
    while they stay inside `folder`; a real folder or file is taken once."""
    root = real(folder)
    found: list[tuple[Path, Path]] = []
    skipped: list[SkippedPath] = []
    seen_dirs = {root}
    stack = [folder]
    linked: list[Path] = []  # folders reached through links: read after the real ones
    while stack or linked:
        if not stack:
            link = linked.pop(0)
            if real(link) not in seen_dirs:  # else a loop, or a folder already read
                seen_dirs.add(real(link))
                stack.append(link)
            continue
        directory = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as e:
            reason = "permission denied" if isinstance(e, PermissionError) else "unreadable"
            skipped.append(SkippedPath(printable(directory), f"folder cannot be read: {reason}"))
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            target = real(path)
            is_link = entry.is_symlink()
            if is_link and not inside(target, root):
                reason = outside_reason(target, "the library folder")
                skipped.append(SkippedPath(printable(path), reason))
                continue
            try:
                is_dir = entry.is_dir()
                is_file = entry.is_file()
            except OSError:
                is_dir = is_file = False
            if is_dir:
                if is_link:
                    linked.append(path)
                elif target not in seen_dirs:
                    seen_dirs.add(target)
                    stack.append(path)
            elif Path(entry.name).suffix.lower() not in CONTENT_TYPES:
                continue
            elif is_file:
                found.append((path, target))
            elif is_link and not os.path.exists(path):
                skipped.append(SkippedPath(printable(path), "a broken symbolic link"))
            else:
                skipped.append(SkippedPath(
                    printable(path), "not a regular file (a pipe, socket or device): not read"
                ))
    found.sort(key=lambda pair: (pair[0].relative_to(folder).as_posix(), pair[0].is_symlink()))
    # One item per real file: a link to a file found directly too adds nothing.
    by_target: dict[Path, tuple[Path, Path]] = {}
    for path, target in found:
        kept = by_target.get(target)
        if kept is None or (kept[0].is_symlink() and not path.is_symlink()):
            by_target[target] = (path, target)
    unique = set(by_target.values())
    return [pair for pair in found if pair in unique], skipped


def read_folder(folder: Path) -> Library:
    """One item (with one linked-file attachment) per document file in `folder`."""
    folder = Path(folder).expanduser().resolve()
    if not folder.is_dir():
        raise LibraryError(f"not a folder: {folder}")
    library = Library(source=f"folder:{folder}")
    used: set[str] = set()
    collection_keys: dict[str, str] = {}

    def collection_for(rel_dir: Path) -> str | None:
        parent: str | None = None
        for i in range(len(rel_dir.parts)):
            rel = "/".join(rel_dir.parts[: i + 1])
            if rel not in collection_keys:
                key = folder_key(f"collection:{rel}", used)
                collection_keys[rel] = key
                library.collections[key] = Collection(key, printable(rel_dir.parts[i]), parent)
            parent = collection_keys[rel]
        return parent

    files, library.skipped = _document_files(folder)
    for found, path in files:  # as found under the folder, and its real location
        rel = found.relative_to(folder)
        rel_posix = rel.as_posix()
        try:
            st = path.stat()
        except OSError:
            library.skipped.append(SkippedPath(printable(found), "cannot be read"))
            continue
        version = f"{st.st_mtime_ns}:{st.st_size}"
        meta = file_metadata(path)
        coll = collection_for(rel.parent) if rel.parent.parts else None
        item_key = folder_key(f"item:{rel_posix}", used)
        suffix = found.suffix.lower()
        item = Item(
            key=item_key,
            item_type="webpage" if suffix in (".html", ".htm", ".xhtml") else "document",
            title=meta.title.strip() or " ".join(printable(found.stem).split()),
            creators=meta.creators,
            date=meta.date,
            year=year_of(meta.date) if meta.date else None,
            doi=meta.doi,
            abstract=meta.abstract,
            venue=meta.venue,
            url=meta.url,
            tags=meta.tags,
            collections=[coll] if coll else [],
            version=version,
            fields={"path": printable(rel_posix)},
        )
        item.attachments.append(
            Attachment(
                key=folder_key(f"attachment:{rel_posix}", used),
                parent_key=item_key,
                title=printable(found.name),
                content_type=CONTENT_TYPES[suffix],
                link_mode="linked_file",
                path=path,
                filename=printable(found.name),
                version=version,
            )
        )
        library.items[item_key] = item
    return library
