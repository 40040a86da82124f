"""Read a Zotero data directory (`zotero.sqlite` + `storage/`) without ever writing to it.

Zotero keeps its database exclusively locked while it runs, so a normal SQLite
connection would fail or wait. We read a snapshot instead (see `open_snapshot`), and
join on item-type, field and creator-type *names*: libraries created before Zotero
5.0.8x number their types differently from fresh ones.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zocrates_nb.library.model import (
    LINK_MODES,
    Attachment,
    Collection,
    Creator,
    Item,
    Library,
    LibraryError,
    Note,
    SkippedPath,
)
from zocrates_nb.library.paths import (
    bad_key,
    escape_reason,
    printable,
    real,
    system_file,
    zotero_key,
)
from zocrates_nb.library.zotero_fields import build_item, change_marker, note_title

DB_NAME = "zotero.sqlite"
FT_CACHE = ".zotero-ft-cache"
NON_REGULAR_TYPES = frozenset({"note", "attachment", "annotation"})
LINK_ONLY_REASON = "link-only URL attachment (no file)"
STORAGE = "Zotero's storage folder"


# ---------------------------------------------------------------------------------------------
# Snapshot: never write next to the user's database.


def _side_files(db: Path) -> list[Path]:
    return [db.with_name(db.name + suffix) for suffix in ("-wal", "-journal")]


def _has_pending_changes(db: Path) -> bool:
    """A non-empty -wal (committed frames not yet in the main file) or hot -journal."""
    return any(p.is_file() and p.stat().st_size > 0 for p in _side_files(db))


def _open_immutable(db: Path) -> sqlite3.Connection | None:
    # immutable=1: no locks, no -shm/-journal created, works on read-only media and
    # while Zotero holds its exclusive lock. It ignores any -wal, hence the check above.
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return None
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        conn.close()
        return None
    return conn


@contextmanager
def open_snapshot(db: Path, *, copy: bool = False) -> Iterator[sqlite3.Connection]:
    """A read-only view of the database as Zotero last committed it.

    Without pending side files: the file itself, opened immutable. With a -wal or hot
    -journal (or `copy`): a copy of db + side files in a temp dir, opened normally, so
    SQLite replays the WAL (or rolls back the journal) on the copy, not next to the original.
    """
    if not copy and not _has_pending_changes(db):
        conn = _open_immutable(db)
        if conn is not None:
            try:
                yield conn
            finally:
                conn.close()
            return
    with tempfile.TemporaryDirectory(prefix="zocrates-zotero-") as tmp:
        snapshot = Path(tmp) / db.name
        try:
            shutil.copyfile(db, snapshot)
            for side in _side_files(db):
                if side.is_file():
                    shutil.copyfile(side, Path(tmp) / side.name)
            conn = sqlite3.connect(snapshot)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except (OSError, sqlite3.Error) as e:
            raise LibraryError(f"cannot read {db}: {e}") from e
        try:
            yield conn
        finally:
            conn.close()


# ---------------------------------------------------------------------------------------------
# Zotero profile prefs (data dir location, linked-attachment base directory).


_PREF = re.compile(r'^\s*user_pref\(\s*"([^"]+)"\s*,\s*(.*?)\s*\)\s*;\s*$')


def profile_prefs_files() -> list[Path]:
    """prefs.js of every Zotero profile on this machine (Linux, macOS, Windows layouts)."""
    home = Path.home()
    roots = [
        home / ".zotero" / "zotero",
        home / "Library" / "Application Support" / "Zotero" / "Profiles",
    ]
    appdata = os.environ.get("APPDATA")
    if appdata:
        roots.append(Path(appdata) / "Zotero" / "Zotero" / "Profiles")
    return sorted(p for root in roots if root.is_dir() for p in root.glob("*/prefs.js"))


def read_prefs(path: Path) -> dict[str, object]:
    """user_pref("name", value); lines of a Mozilla prefs.js (values are JSON literals)."""
    prefs: dict[str, object] = {}
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return prefs
    for line in lines:
        m = _PREF.match(line)
        if not m:
            continue
        try:
            prefs[m.group(1)] = json.loads(m.group(2))
        except json.JSONDecodeError:
            prefs[m.group(1)] = m.group(2)
    return prefs


def _custom_data_dir(prefs: dict[str, object]) -> Path | None:
    data_dir = prefs.get("extensions.zotero.dataDir")
    if isinstance(data_dir, str) and data_dir and prefs.get("extensions.zotero.useDataDir", True):
        return Path(data_dir).expanduser()
    return None


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def find_zotero_dir() -> Path | None:
    """Zotero's data directory: the one a profile's prefs.js names, else ~/Zotero."""
    candidates = [d for p in profile_prefs_files() if (d := _custom_data_dir(read_prefs(p)))]
    candidates.append(Path.home() / "Zotero")
    for candidate in candidates:
        if (candidate / DB_NAME).is_file():
            return candidate
    return None


def linked_attachment_base(data_dir: Path) -> Path | None:
    """The 'Linked Attachment Base Directory' of the profile that uses `data_dir`."""
    profiles = [read_prefs(p) for p in profile_prefs_files()]
    default = Path.home() / "Zotero"
    matching = [p for p in profiles if _same_dir(_custom_data_dir(p) or default, data_dir)] or (
        profiles if len(profiles) == 1 else []
    )
    for prefs in matching:
        base = prefs.get("extensions.zotero.baseAttachmentPath")
        if isinstance(base, str) and base:
            return Path(base).expanduser()
    return None


# ---------------------------------------------------------------------------------------------
# Reader


@dataclass
class _Row:
    item_id: int
    key: str
    type_name: str
    date_added: str
    date_modified: str
    version: int


class _Reader:
    """One pass over one library of a snapshot; bulk queries, joined on names."""

    def __init__(self, conn: sqlite3.Connection, data_dir: Path, base_dir: Path | None):
        self.conn = conn
        self.data_dir = data_dir
        self.base_dir = base_dir
        self.tables = {
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        # The *Combined tables (Zotero 7) add custom types/fields; older DBs have only the base.
        self.types = "itemTypesCombined" if "itemTypesCombined" in self.tables else "itemTypes"
        self.fields_table = "fieldsCombined" if "fieldsCombined" in self.tables else "fields"

    def _rows(self, sql: str, *args: object) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, args).fetchall()

    def library_id(self, group_id: int | None) -> int:
        if group_id is not None:
            found = self._rows("SELECT libraryID FROM groups WHERE groupID = ?", group_id)
            if not found:
                raise LibraryError(f"no group {group_id} in {self.data_dir / DB_NAME}")
        else:
            found = self._rows(
                "SELECT libraryID FROM libraries WHERE type = 'user' ORDER BY libraryID LIMIT 1"
            )
            if not found:
                raise LibraryError(f"no user library in {self.data_dir / DB_NAME}")
        return int(found[0][0])

    def read(self, group_id: int | None) -> Library:
        lib_id = self.library_id(group_id)
        source = f"zotero-dir:{self.data_dir}" + (f"#group:{group_id}" if group_id else "")
        library = Library(source=source)

        rows = {
            int(r[0]): _Row(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), int(r[5] or 0))
            for r in self._rows(
                f"""SELECT i.itemID, i.key, t.typeName, i.dateAdded, i.dateModified, i.version
                    FROM items i JOIN {self.types} t ON t.itemTypeID = i.itemTypeID
                    WHERE i.libraryID = ? ORDER BY i.itemID""",
                lib_id,
            )
        }
        deleted = (
            self._id_set("SELECT itemID FROM deletedItems")
            if "deletedItems" in self.tables
            else set()
        )
        # A key names folders (storage/<KEY>/, the index's documents/<KEY>/): one that is not a
        # Zotero key is reported and its item read as if trashed, children and all.
        for row in rows.values():
            if not zotero_key(row.key):
                what = {"note": "note", "attachment": "attachment"}.get(row.type_name, "item")
                library.skipped.append(SkippedPath(printable(row.key), bad_key(row.key, what)))
                deleted.add(row.item_id)

        fields: dict[int, dict[str, str]] = defaultdict(dict)
        for item_id, name, value in self._rows(
            f"""SELECT d.itemID, f.fieldName, v.value
                FROM itemData d JOIN items i ON i.itemID = d.itemID
                JOIN {self.fields_table} f ON f.fieldID = d.fieldID
                JOIN itemDataValues v ON v.valueID = d.valueID
                WHERE i.libraryID = ?""",
            lib_id,
        ):
            fields[int(item_id)][str(name)] = "" if value is None else str(value)

        creators: dict[int, list[Creator]] = defaultdict(list)
        for item_id, first, last, field_mode, ctype in self._rows(
            """SELECT ic.itemID, c.firstName, c.lastName, c.fieldMode, ct.creatorType
               FROM itemCreators ic JOIN items i ON i.itemID = ic.itemID
               JOIN creators c ON c.creatorID = ic.creatorID
               JOIN creatorTypes ct ON ct.creatorTypeID = ic.creatorTypeID
               WHERE i.libraryID = ? ORDER BY ic.itemID, ic.orderIndex""",
            lib_id,
        ):
            single = field_mode == 1  # one-field name ("World Health Organization")
            creators[int(item_id)].append(
                Creator(
                    last=str(last or ""),
                    first="" if single else str(first or ""),
                    creator_type=str(ctype),
                )
            )

        tags: dict[int, list[str]] = defaultdict(list)
        for item_id, name in self._rows(
            """SELECT it.itemID, t.name FROM itemTags it JOIN tags t ON t.tagID = it.tagID
               JOIN items i ON i.itemID = it.itemID WHERE i.libraryID = ?
               ORDER BY it.itemID, t.name COLLATE NOCASE""",
            lib_id,
        ):
            tags[int(item_id)].append(str(name))

        live_collections = self._collections(library, lib_id)
        in_collections: dict[int, list[str]] = defaultdict(list)
        for item_id, coll_id in self._rows(
            """SELECT ci.itemID, ci.collectionID FROM collectionItems ci
               JOIN collections c ON c.collectionID = ci.collectionID
               WHERE c.libraryID = ? ORDER BY ci.itemID, c.collectionID""",
            lib_id,
        ):
            key = live_collections.get(int(coll_id))
            if key:
                in_collections[int(item_id)].append(key)

        for row in rows.values():
            if row.type_name in NON_REGULAR_TYPES or row.item_id in deleted:
                continue
            library.items[row.key] = build_item(
                row.key,
                row.type_name,
                fields.get(row.item_id, {}),
                creators=creators.get(row.item_id, []),
                tags=tags.get(row.item_id, []),
                collections=in_collections.get(row.item_id, []),
                version=change_marker(row.version, row.date_modified),
                date_added=row.date_added,
                date_modified=row.date_modified,
            )
        key_of = {row.item_id: row.key for row in rows.values()}

        def parent_of(parent_id: Any) -> tuple[Item | None, bool]:
            """(parent Item or None, whether the child is trashed with its parent)."""
            if parent_id is None:
                return None, False
            pid = int(parent_id)
            return library.items.get(key_of.get(pid, "")), pid in deleted

        for item_id, parent_id, html, title in self._rows(
            """SELECT n.itemID, n.parentItemID, n.note, n.title FROM itemNotes n
               JOIN items i ON i.itemID = n.itemID WHERE i.libraryID = ? ORDER BY n.itemID""",
            lib_id,
        ):
            nid = int(item_id)
            row = rows[nid]
            parent, parent_trashed = parent_of(parent_id)
            if nid in deleted or parent_trashed or row.type_name != "note":
                continue
            note = Note(
                key=row.key,
                parent_key=parent.key if parent else None,
                title=str(title or "") or note_title(str(html or "")),
                html=str(html or ""),
                version=change_marker(row.version, row.date_modified),
                collections=in_collections.get(nid, []),
            )
            (parent.notes if parent else library.standalone_notes).append(note)

        for item_id, parent_id, link_mode, content_type, path in self._rows(
            """SELECT a.itemID, a.parentItemID, a.linkMode, a.contentType, a.path
               FROM itemAttachments a JOIN items i ON i.itemID = a.itemID
               WHERE i.libraryID = ? ORDER BY a.itemID""",
            lib_id,
        ):
            aid = int(item_id)
            row = rows[aid]
            parent, parent_trashed = parent_of(parent_id)
            mode = int(link_mode) if link_mode is not None else -1
            if aid in deleted or parent_trashed or not 0 <= mode < len(LINK_MODES):
                continue
            if LINK_MODES[mode] == "embedded_image":  # images inside notes, not documents
                continue
            if parent_id is not None and parent is None:
                # child of a note/attachment/unknown item: not something we index
                continue
            att = self._attachment(
                row, LINK_MODES[mode], str(content_type or ""), path, fields.get(aid, {})
            )
            att.parent_key = parent.key if parent else None
            (parent.attachments if parent else library.standalone_attachments).append(att)
        return library

    def _id_set(self, sql: str) -> set[int]:
        return {int(r[0]) for r in self._rows(sql)}

    def _collections(self, library: Library, lib_id: int) -> dict[int, str]:
        """Fill library.collections; return collectionID → key for collections not in the trash."""
        rows = self._rows(
            """SELECT collectionID, key, collectionName, parentCollectionID FROM collections
               WHERE libraryID = ? ORDER BY collectionID""",
            lib_id,
        )
        trashed = (
            self._id_set("SELECT collectionID FROM deletedCollections")
            if "deletedCollections" in self.tables
            else set()
        )
        parent_id = {int(r[0]): r[3] for r in rows}

        def in_trash(cid: int) -> bool:  # a sub-collection of a trashed collection is gone too
            seen: set[int] = set()
            cur: Any = cid
            while cur is not None and int(cur) not in seen:
                c = int(cur)
                if c in trashed:
                    return True
                seen.add(c)
                cur = parent_id.get(c)
            return False

        keys = {int(r[0]): str(r[1]) for r in rows}
        live: dict[int, str] = {}
        for cid_obj, key, name, parent in rows:
            cid = int(cid_obj)
            if in_trash(cid):
                continue
            live[cid] = str(key)
            library.collections[str(key)] = Collection(
                key=str(key),
                name=str(name),
                parent_key=keys.get(int(parent)) if parent is not None else None,
            )
        return live

    def _attachment(
        self, row: _Row, link_mode: str, content_type: str, raw_path: object, fields: dict[str, str]
    ) -> Attachment:
        storage = self.data_dir / "storage" / row.key  # row.key is a Zotero key (see read)
        path_value = str(raw_path) if raw_path is not None else ""
        file: Path | None = None
        skip: str | None = None
        filename = ""
        # Where the file must stay, `..` and links resolved: Zotero's storage folder, or the
        # Linked Attachment Base Directory. A linked file with an absolute path is wherever
        # the user put it (Zotero opens it there too), so only its link chain is resolved.
        root: tuple[Path, str] | None = None
        if link_mode == "linked_url":
            skip = LINK_ONLY_REASON
        elif path_value.startswith("storage:"):
            filename = path_value[len("storage:") :]
            file = storage / filename
            root = (self.data_dir / "storage", STORAGE)
        elif link_mode in ("imported_file", "imported_url") and path_value:
            # Zotero keeps an imported file in its storage folder and records `storage:<name>`.
            skip = (f"an imported attachment whose recorded path {printable(path_value)} is not "
                    f"in {STORAGE}: not read")  # fmt: skip
        elif path_value.startswith("attachments:"):
            rel = path_value[len("attachments:") :]
            filename = Path(rel).name
            if self.base_dir is None:
                skip = (
                    "linked file relative to Zotero's Linked Attachment Base Directory, "
                    f"which was not found in any Zotero profile's prefs.js: {printable(rel)}"
                )
            else:
                file = self.base_dir / rel
                root = (self.base_dir, "the Linked Attachment Base Directory")
        elif path_value and not Path(path_value).is_absolute():
            skip = (f"a linked file whose recorded path {printable(path_value)} is not absolute: "
                    "not read")  # fmt: skip
        elif path_value:
            file = Path(path_value)
            filename = file.name
        else:
            skip = "file not found: no file recorded for this attachment"
        if file is not None:
            skip, file = checked_file(file, root)
        version = change_marker(row.version, row.date_modified)
        if file is not None:
            st = file.stat()
            version += f"|file:{st.st_size}:{st.st_mtime_ns}"
        cache = storage / FT_CACHE
        storage_root = self.data_dir / "storage"
        readable = cache.is_file() and escape_reason(cache, storage_root, STORAGE) is None
        return Attachment(
            key=row.key,
            parent_key=None,
            title=fields.get("title", "") or printable(filename),
            content_type=content_type,
            link_mode=link_mode,
            path=file,
            url=fields.get("url", ""),
            filename=filename,
            version=version,
            fulltext_cache=cache if readable else None,
            skip_reason=skip,
        )


def checked_file(file: Path, root: tuple[Path, str] | None) -> tuple[str | None, Path | None]:
    """(why not, None) or (None, the resolved file) for a path recorded in the database."""
    if root is not None and (reason := escape_reason(file, *root)) is not None:
        return reason, None
    target = real(file)
    if system_file(target):
        return f"a system file ({printable(file)}), not a document: not read", None
    if target.is_dir():
        return f"a folder, not a file: {printable(file)}", None
    if target.exists() and not target.is_file():
        return f"not a regular file (a pipe, socket or device): {printable(file)}", None
    if not target.is_file():
        return f"file not found: {printable(file)}", None
    return None, target  # read what was checked, even if the link changes later


def read_zotero_dir(
    data_dir: Path, *, group_id: int | None = None, base_dir: Path | None = None
) -> Library:
    """Read the user library (or the group `group_id`) of a Zotero data directory.

    `base_dir` is the Linked Attachment Base Directory for `attachments:` paths; by
    default it is taken from the Zotero profile that uses `data_dir`.
    """
    data_dir = Path(data_dir).expanduser()
    db = data_dir / DB_NAME
    if not db.is_file():
        raise LibraryError(
            f"no {DB_NAME} in {data_dir}: not a Zotero data directory "
            "(Zotero shows its location in Settings → Advanced → Files and Folders)"
        )
    if base_dir is None:
        base_dir = linked_attachment_base(data_dir)
    error: sqlite3.DatabaseError | None = None
    # An immutable read can meet a page Zotero is rewriting right now; a copy is the retry.
    for copy in (False, True):
        try:
            with open_snapshot(db, copy=copy) as conn:
                return _Reader(conn, data_dir, base_dir).read(group_id)
        except sqlite3.DatabaseError as e:
            error = e
    raise LibraryError(f"{db} is not a readable Zotero database: {error}") from error
