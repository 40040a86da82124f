"""Library sources: a Zotero data directory, Zotero's local/Web API, or a plain folder, read
into one `Library` record (`library.model`)."""

from __future__ import annotations

import os
from pathlib import Path

from zocrates_nb.library.folder import read_folder
from zocrates_nb.library.model import Item, Library, LibraryError
from zocrates_nb.library.zotero_api import read_zotero_api
from zocrates_nb.library.zotero_dir import find_zotero_dir, read_zotero_dir

API_KEY_ENV = "ZOTERO_API_KEY"
NOTHING_FOUND = (
    "no library given and no Zotero data directory at ~/Zotero; "
    "pass --zotero-dir, --zotero-local, --zotero-web or --folder"
)


def open_library(
    *,
    zotero_dir: Path | None = None,
    zotero_local: bool = False,
    zotero_web: str | None = None,
    group: bool = False,
    api_key: str | None = None,
    folder: Path | None = None,
    download_dir: Path | None = None,
    web_base_url: str | None = None,
) -> Library:
    """Read the one library source given; none given → the auto-detected Zotero data dir.

    `zotero_web` is a Web API library id (a group id when `group`); its key comes from
    `api_key` or $ZOTERO_API_KEY (public libraries need none). `download_dir` receives
    attachment files fetched through the APIs; `web_base_url` is the Web API's address.
    """
    given = [
        name
        for name, value in (
            ("--zotero-dir", zotero_dir),
            ("--zotero-local", zotero_local or None),
            ("--zotero-web", zotero_web),
            ("--folder", folder),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise LibraryError(f"give one library source, not {' and '.join(given)}")
    if zotero_dir is not None:
        return read_zotero_dir(Path(zotero_dir))
    if folder is not None:
        return read_folder(Path(folder))
    if zotero_local:
        return read_zotero_api("0", "user", local=True, download_dir=download_dir)
    if zotero_web is not None:
        return read_zotero_api(
            str(zotero_web),
            "group" if group else "user",
            api_key or os.environ.get(API_KEY_ENV) or None,
            download_dir=download_dir,
            base_url=web_base_url,
        )
    found = find_zotero_dir()
    if found is None:
        raise LibraryError(NOTHING_FOUND)
    return read_zotero_dir(found)


# The records' other types (attachments, notes, creators, collections) live in `library.model`.
__all__ = [
    "Item",
    "Library",
    "LibraryError",
    "Note",
    "find_zotero_dir",
    "open_library",
    "read_folder",
    "read_zotero_api",
    "read_zotero_dir",
]
