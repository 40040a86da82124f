"""Imports flow one way (config → library → ingest → index → retrieval → sessions → agents →
app → surfaces): no room below the app imports the app or a surface, and the base modules
(the typed turn record, the error base) import nothing of the project."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "zocrates_nb"
LOWER_ROOMS = ("library", "ingest", "index", "retrieval", "sessions", "agents")
UPPER = ("cli", "app", "widget", "frames", "server", "bench", "bench_ui",
         "bench_retrieval", "bench_server", "bench_offline")  # fmt: skip


def imported_modules(path: Path, root: Path = PACKAGE.parent) -> set[str]:
    """Every module a file imports, at the top or inside functions, relative ones resolved."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return out


def _upper(module: str) -> bool:
    return any(module == f"zocrates_nb.{u}" or module.startswith(f"zocrates_nb.{u}.")
               for u in UPPER)  # fmt: skip


@pytest.mark.parametrize("room", LOWER_ROOMS)
def test_no_room_below_the_app_imports_the_app_or_a_surface(room: str) -> None:
    files = sorted((PACKAGE / room).rglob("*.py"))
    assert files
    offenders = {
        f"{path.relative_to(PACKAGE)}: {m}"
        for path in files
        for m in imported_modules(path)
        if _upper(m)
    }
    assert not offenders


@pytest.mark.parametrize("name", ["turn.py", "errors.py"])
def test_base_modules_import_nothing_of_the_project(name: str) -> None:
    modules = imported_modules(PACKAGE / name)
    assert not {m for m in modules if m.startswith("zocrates_nb")}
    assert {m.split(".")[0] for m in modules} <= {
        "__future__",
        "datetime",
        "typing",
        "pydantic",
        "hashlib",
        "re",
        "unicodedata",
    }


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    """The check must catch the lazy import it exists for (the old upward import was one)."""
    probe = tmp_path / "zocrates_nb" / "retrieval" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("def f():\n    from zocrates_nb.cli import main\n    from ..app import App\n")
    found = imported_modules(probe, tmp_path)
    assert {"zocrates_nb.cli", "zocrates_nb.app"} <= found and all(map(_upper, found))
