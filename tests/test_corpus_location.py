"""The test corpus is located in one place, and its absence skips tests instead of failing them.

A test that builds its own `../shared/corpus` path passes on a machine that has the corpus and
fails in a user's clone that has not (one did: it read bitcoin.pdf unguarded). `.ci/run` runs the
suite with the corpus hidden; this keeps a new test from sidestepping `ZOCRATES_TEST_CORPUS`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import CORPUS_ENV, corpus_path

ROOT = Path(__file__).resolve().parents[1]
# Where the location is decided (the tests' conftest, the evaluation scripts' helper) and this.
EXEMPT = {ROOT / "tests" / "conftest.py", ROOT / "scripts" / "corpus_dir.py", Path(__file__)}


def test_only_conftest_and_the_scripts_helper_spell_the_corpus_location() -> None:
    offenders = []
    for path in sorted([*(ROOT / "tests").glob("*.py"), *(ROOT / "scripts").glob("*.py")]):
        if path.resolve() in EXEMPT:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Constant) and node.value in ("shared", CORPUS_ENV):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == [], "use conftest.corpus_path (tests) or scripts/corpus_dir.py"


def test_a_missing_corpus_file_skips_with_where_it_was_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import conftest

    monkeypatch.setattr(conftest, "CORPUS", tmp_path / "no-corpus")
    with pytest.raises(pytest.skip.Exception) as skipped:
        corpus_path("papers", "bitcoin.pdf")
    assert str(tmp_path / "no-corpus" / "papers" / "bitcoin.pdf") in str(skipped.value)
    assert CORPUS_ENV in str(skipped.value)
    (tmp_path / "no-corpus" / "papers").mkdir(parents=True)
    (tmp_path / "no-corpus" / "papers" / "bitcoin.pdf").write_bytes(b"%PDF-1.4")
    assert corpus_path("papers", "bitcoin.pdf") == tmp_path / "no-corpus" / "papers" / "bitcoin.pdf"
