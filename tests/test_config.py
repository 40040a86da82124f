"""Settings: defaults, validation errors that name the key, overrides."""

import json
from pathlib import Path

import pytest

from zocrates_nb.config import ConfigError, default_home, load_settings


def write(home: Path, data: object) -> None:
    (home / "zocrates_config.json").write_text(json.dumps(data))


def test_defaults_without_a_file(tmp_path: Path) -> None:
    s = load_settings(tmp_path)
    assert s.index.embedding_model is None
    assert s.index.chroma.mode == "embedded"
    assert (s.retrieval.budget, s.retrieval.word_ceiling, s.retrieval.max_rerank_chunks) == (
        10,
        7500,
        15,
    )


def test_unknown_key_is_named(tmp_path: Path) -> None:
    write(tmp_path, {"index": {"chroma": {"prot": 9000}}})
    with pytest.raises(ConfigError, match=r"index\.chroma\.prot"):
        load_settings(tmp_path)


def test_bad_value_is_named(tmp_path: Path) -> None:
    write(tmp_path, {"retrieval": {"budget": "many"}})
    with pytest.raises(ConfigError, match=r"retrieval\.budget"):
        load_settings(tmp_path)


def test_broken_json_says_so(tmp_path: Path) -> None:
    (tmp_path / "zocrates_config.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_settings(tmp_path)


def test_overrides_win_over_file(tmp_path: Path) -> None:
    write(tmp_path, {"retrieval": {"budget": 4}})
    assert load_settings(tmp_path).retrieval.budget == 4
    assert load_settings(tmp_path, {"retrieval.budget": 7}).retrieval.budget == 7


def test_home_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ZOCRATES_HOME", str(tmp_path / "h"))
    assert default_home() == tmp_path / "h"
