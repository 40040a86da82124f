"""open_library: one source, or the Zotero data directory found on this machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import corpus_path

from zocrates_nb.library import LibraryError, find_zotero_dir, open_library
from zocrates_nb.library.zotero_dir import read_prefs


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty home directory: no ~/Zotero, no Zotero profile."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("APPDATA", raising=False)
    return home


def data_dir_at(path: Path) -> Path:
    """A Zotero data directory at `path` whose files are the corpus library's (symlinks)."""
    zotero_db = corpus_path("zotero-library", "zotero.sqlite")
    path.mkdir(parents=True)
    (path / "zotero.sqlite").symlink_to(zotero_db)
    (path / "storage").symlink_to(zotero_db.parent / "storage")
    return path


def write_profile(home: Path, prefs: dict[str, object]) -> Path:
    profile = home / ".zotero" / "zotero" / "k3j4h5.default"
    profile.mkdir(parents=True)
    lines = [f"user_pref({json.dumps(k)}, {json.dumps(v)});" for k, v in prefs.items()]
    (profile / "prefs.js").write_text("// Mozilla User Preferences\n" + "\n".join(lines) + "\n")
    return profile / "prefs.js"


def test_nothing_found_is_a_clear_error(home: Path) -> None:
    assert find_zotero_dir() is None
    with pytest.raises(LibraryError) as err:
        open_library()
    assert str(err.value) == (
        "no library given and no Zotero data directory at ~/Zotero; "
        "pass --zotero-dir, --zotero-local, --zotero-web or --folder"
    )


def test_default_data_dir_is_home_zotero(home: Path) -> None:
    data_dir_at(home / "Zotero")
    assert find_zotero_dir() == home / "Zotero"
    lib = open_library()
    assert len(lib.items) == 37 and lib.source == f"zotero-dir:{home / 'Zotero'}"


def test_custom_data_dir_from_the_profile_prefs(home: Path, tmp_path: Path) -> None:
    custom = data_dir_at(tmp_path / "elsewhere" / "Zotero Data")
    data_dir_at(home / "Zotero")  # the profile's choice wins over the default
    prefs = write_profile(
        home,
        {"extensions.zotero.dataDir": str(custom), "extensions.zotero.useDataDir": True},
    )
    assert read_prefs(prefs)["extensions.zotero.dataDir"] == str(custom)
    assert find_zotero_dir() == custom
    prefs.write_text(prefs.read_text().replace("true", "false"))  # custom dir switched off
    assert find_zotero_dir() == home / "Zotero"


def test_exactly_one_source(home: Path, tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A note\n", encoding="utf-8")
    lib = open_library(folder=tmp_path / "docs")
    assert [i.title for i in lib.items.values()] == ["A note"]
    with pytest.raises(LibraryError, match="give one library source"):
        open_library(folder=tmp_path / "docs", zotero_dir=tmp_path)
    with pytest.raises(LibraryError, match="--zotero-local and --zotero-web"):
        open_library(zotero_local=True, zotero_web="123")


def test_zotero_dir_source() -> None:
    lib = open_library(zotero_dir=corpus_path("zotero-library", "zotero.sqlite").parent)
    assert len(lib.items) == 37 and len(lib.collections) == 7
