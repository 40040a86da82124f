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
    "onnx": "torch.onnx.export writes the question-time model with it (index/query_model.py)",
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


# Modules whose imports are an extra's (each says so to a user without it), and the rooms of a
# source checkout that the wheel leaves out.
OPTIONAL = {
    "zocrates_nb/agents/telemetry.py": "telemetry",
    "zocrates_nb/sample/__init__.py": "samples",
    "zocrates_nb/mcp_server/__init__.py": "mcp",
}
CHECKOUT_ONLY = ("zocrates_nb/bench/", "zocrates_nb/devtools/")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_every_package_import_is_a_declared_dependency() -> None:
    core = [p for p in PACKAGE
            if _rel(p) not in OPTIONAL and not _rel(p).startswith(CHECKOUT_ONLY)]  # fmt: skip
    assert undeclared(core, declared()) == []
    for path, extra in OPTIONAL.items():
        assert undeclared([ROOT / path], declared(extra)) == [], path
    checkout = [p for p in PACKAGE if _rel(p).startswith(CHECKOUT_ONLY)]
    assert undeclared(checkout, declared(*PYPROJECT["optional-dependencies"])) == []


def test_every_test_and_script_import_is_declared_with_the_extras() -> None:
    assert undeclared(TESTS_AND_SCRIPTS, declared(*PYPROJECT["optional-dependencies"])) == []


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


def test_setup_installs_every_extra_at_the_tested_versions() -> None:
    """`make lab`/`make test` set up through scripts/setup.sh: every extra, constrained to the
    tested set (constraints.txt), which pins every declared distribution."""
    setup = (ROOT / "scripts" / "setup.sh").read_text("utf-8")
    match = re.search(r'pip install -q -c constraints.txt -e "\.\[([^\]]*)\]"', setup)
    assert match, "scripts/setup.sh no longer installs the project editable with extras"
    assert set(match.group(1).split(",")) == set(PYPROJECT["optional-dependencies"])
    assert "pip install -q -c constraints.txt torch" in setup
    pinned = {canonical(line.split("==")[0]) for line in
              (ROOT / "constraints.txt").read_text("utf-8").splitlines()
              if "==" in line and not line.startswith("#")}  # fmt: skip
    assert declared(*PYPROJECT["optional-dependencies"]) - pinned == set()


def test_a_package_that_installs_beside_a_users_stack() -> None:
    """Ranges, not pins (a user's own torch and libraries are kept); a licence file; metadata
    and a description of its own (no `make` steps, no links relative to a checkout)."""
    exact = [s for s in PYPROJECT["dependencies"] if "==" in s]
    assert exact == [], f"exact pins in the runtime requirements: {exact}"
    torch = next(s for s in PYPROJECT["dependencies"] if s.startswith("torch"))
    assert "<" not in torch  # any later torch a user has (a CUDA build) satisfies it
    assert declared().isdisjoint({"reportlab", "opentelemetry-sdk",
                                  "opentelemetry-exporter-otlp-proto-grpc", "mcp"})  # fmt: skip
    assert "MIT License" in (ROOT / "LICENSE").read_text("utf-8")
    assert PYPROJECT["license"] == {"text": "MIT"}
    assert "License :: OSI Approved :: MIT License" in PYPROJECT["classifiers"]
    assert {"Source", "Documentation", "Issues"} <= set(PYPROJECT["urls"])
    description = (ROOT / PYPROJECT["readme"]).read_text("utf-8")
    assert PYPROJECT["readme"] != "README.md" and "make " not in description
    assert not re.search(r"\]\((?!https?://)", description), "a link relative to a checkout"
    assert ".ipynb_checkpoints/" in (ROOT / ".gitignore").read_text("utf-8").splitlines()
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    excluded = set(tool["packages"]["find"]["exclude"])
    assert {"zocrates_nb.bench*", "zocrates_nb.devtools*"} <= excluded
