"""No two modules of zocrates_nb import each other, directly or round a circle: read from the
source (imports at any level, inside functions and under TYPE_CHECKING too), so a circle
hidden behind a lazy or typing-only import still counts."""

from __future__ import annotations

from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest
from test_architecture import imported_modules

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, package: str = "zocrates_nb") -> dict[str, set[str]]:
    """Module → the package's modules it imports. A package's own ancestors are left out:
    Python has initialised them before the module runs, whatever it imports."""
    files = {module_name(p, root): p for p in (root / package).rglob("*.py")}
    return {
        name: {m for m in imported_modules(path, root)
               if m in files and m != name and not name.startswith(f"{m}.")}
        for name, path in files.items()
    }  # fmt: skip


def circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports (its first module repeated at the end), or None."""
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as e:
        return list(reversed(e.args[1]))
    return None


def sentence(found: list[str]) -> str:
    steps = " → ".join(found)
    return (f"these modules import each other in a circle: {steps}. Move what they share to "
            "the lower one, or pass it in, so imports run one way.")  # fmt: skip


def test_no_module_of_the_package_imports_itself_round_a_circle() -> None:
    found = circle(import_graph(ROOT))
    assert found is None, sentence(found)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "import zocrates_nb.pkg.b\n",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from zocrates_nb.pkg.a import X\n",
        ),
        ("def f():\n    from .b import g\n", "from . import a\n"),
    ],
)
def test_the_checker_sees_lazy_relative_and_typing_only_imports(
    tmp_path: Path, a: str, b: str
) -> None:
    pkg = tmp_path / "zocrates_nb" / "pkg"
    pkg.mkdir(parents=True)
    for name, text in {"__init__": "", "a": a, "b": b}.items():
        (pkg / f"{name}.py").write_text(text)
    (tmp_path / "zocrates_nb" / "__init__.py").write_text("from zocrates_nb.pkg import a\n")
    found = circle(import_graph(tmp_path))
    assert found is not None and set(found) == {"zocrates_nb.pkg.a", "zocrates_nb.pkg.b"}
    assert "zocrates_nb.pkg.a → zocrates_nb.pkg.b" in sentence(found) or (
        "zocrates_nb.pkg.b → zocrates_nb.pkg.a" in sentence(found)
    )
