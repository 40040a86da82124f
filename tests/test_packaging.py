"""pyproject.toml declares what the code imports, so a fresh install has all of it.

Every third-party module imported anywhere under `zocrates_nb/` (top level, inside functions,
under TYPE_CHECKING) must come from a distribution in `dependencies`; tests and scripts may also
use the `dev` and `notebooks` extras. Conversely every declared distribution is imported or is
on a short list of tools and plugins used by name, so nothing arrives only by accident (as the
PDF converter's pypdfium2 once did, through an unused pdfplumber).
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
PACKAGE = sorted((ROOT / "zocrates_nb").rglob("*.py"))
TESTS_AND_SCRIPTS = sorted([*(ROOT / "tests").glob("*.py"), *(ROOT / "scripts").glob("*.py")])
# Our own modules: the package, the tests' helper modules, and the corpus's question checker
# that the eval scripts import from the corpus folder.
LOCAL = {"zocrates_nb", "verify_questions", *(p.stem for p in TESTS_AND_SCRIPTS)}
# Declared but used by name rather than imported.
USED_BY_NAME = {
    "jupyterlab": "the host the panel and the server extension run in",
    "ipywidgets": "anywidget's base: the widget is an ipywidgets model in the kernel",
    "pytest-timeout": "pytest plugin (timeout in [tool.pytest.ini_options])",
    "nbval": "pytest plugin that runs the notebooks (tests/test_notebooks.py)",
    "ruff": "linter (make lint)",
    "mypy": "type checker (make lint)",
    "types-tqdm": "stubs for mypy",
    "pandas-stubs": "stubs for mypy",
    "schemathesis": "HTTP API fuzzer run as a command (tests/test_server_api.py)",
    "matplotlib": "pandas' .plot in notebooks/03-evidence-and-audit.ipynb",
}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(*extras: str) -> set[str]:
    specs = list(PYPROJECT["dependencies"])
    for extra in extras:
        specs += PYPROJECT["optional-dependencies"][extra]
    return {canonical(re.split(r"[\s\[<>=!~;]", s, maxsplit=1)[0]) for s in specs}


def imported_modules(paths: list[Path]) -> dict[str, set[str]]:
    """Absolute imports (dotted; `from a import b` also as `a.b`) → files importing them."""
    out: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                out.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return out


@cache
def _packages() -> dict[str, list[str]]:
    return md.packages_distributions()


@cache
def _files(dist: str) -> tuple[str, ...]:
    return tuple(str(f) for f in md.distribution(dist).files or ())


def distributions_of(module: str) -> set[str]:
    """The installed distributions that provide `module` (empty: not installed).

    A namespace package (opentelemetry) spans several distributions: the one holding the
    deepest part of the dotted path is the provider.
    """
    parts = module.split(".")
    candidates = _packages().get(parts[0], [])
    if len(set(candidates)) <= 1:
        return {canonical(d) for d in candidates}
    for depth in range(len(parts), 1, -1):
        prefix = "/".join(parts[:depth])
        owners = {
            canonical(d)
            for d in candidates
            if any(f.startswith(prefix + "/") or f == prefix + ".py" for f in _files(d))
        }
        if owners:
            return owners
    return {canonical(d) for d in candidates}


def undeclared(paths: list[Path], allowed: set[str]) -> list[str]:
    problems = []
    for module, where in sorted(imported_modules(paths).items()):
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top in LOCAL:
            continue
        dists = distributions_of(module)
        if not dists:
            problems.append(f"{module} (in {', '.join(sorted(where))}) is not installed")
        elif not dists & allowed:
            problems.append(f"{module} (in {', '.join(sorted(where))}) comes from "
                            f"{' or '.join(sorted(dists))}, which pyproject.toml does not declare")
    return problems


def test_every_package_import_is_a_declared_dependency() -> None:
    assert undeclared(PACKAGE, declared()) == []


def test_every_test_and_script_import_is_declared_with_the_extras() -> None:
    assert undeclared(TESTS_AND_SCRIPTS, declared("dev", "notebooks")) == []


def test_every_declared_distribution_is_used() -> None:
    used = {
        dist
        for module in imported_modules(PACKAGE + TESTS_AND_SCRIPTS)
        for dist in distributions_of(module)
    }
    unused = declared(*PYPROJECT["optional-dependencies"]) - used - set(USED_BY_NAME)
    assert unused == set(), f"declared but never imported: {sorted(unused)}"


def test_the_pdf_converter_library_is_declared_and_the_notebook_extra_is_separate() -> None:
    assert "pypdfium2" in declared()
    assert "pdfplumber" not in declared(*PYPROJECT["optional-dependencies"])
    assert "matplotlib" not in declared() and "matplotlib" in declared("notebooks")


def test_setup_installs_every_extra() -> None:
    """`make test`/`make demo` set up through scripts/setup.sh: it installs all the extras."""
    setup = (ROOT / "scripts" / "setup.sh").read_text("utf-8")
    match = re.search(r'pip install -q -e "\.\[([^\]]*)\]"', setup)
    assert match, "scripts/setup.sh no longer installs the project editable with extras"
    assert set(match.group(1).split(",")) == set(PYPROJECT["optional-dependencies"])
