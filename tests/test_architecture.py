"""Imports flow one way, through every room: base modules → library → ingest → index →
retrieval → online → writeback → sessions → agents → app → surfaces. A room imports only the
rooms below it; a surface (the CLI, the server, the panel, frames, the examples and the
notebooks) uses the `App` facade and the base modules only. Modules stay short and say what
they are for."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "zocrates_nb"
# Root modules every room may use; they import only each other (turn and errors: nothing).
BASE = ("__init__", "turn", "errors", "events", "text", "config", "redaction", "citelinks", "names",
        "sample")  # fmt: skip
# The rooms from the bottom up: each may import those before it (and the base modules).
ROOMS = ("library", "ingest", "index", "retrieval", "online", "writeback", "sessions", "agents",
         "app")  # fmt: skip
# The surfaces: they use each other (the CLI runs a benchmark, the panel shows frames), the App,
# the base modules and `devtools` (scripted model and embedding servers for benchmarks and tests).
SURFACES = ("cli", "server", "widget", "frames", "examples", "mcp_server", "magic")  # fmt: skip
TOOLS = ("devtools",)
# The benchmarks measure the rooms themselves (the index, the retriever, the panel's comm), so
# they may import any of them; only the CLI (`zocrates-nb bench …`) imports them.
HARNESS = ("bench",)
FACADE = "zocrates_nb.app"
BASE_NAMES = ", ".join("zocrates_nb" if b == "__init__" else b for b in BASE)
MAX_LINES = 600
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def module_name(path: Path, root: Path = PACKAGE.parent) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(dotted: str, root: Path) -> str:
    """The deepest project module `dotted` names (`zocrates_nb.app.App` → `zocrates_nb.app`)."""
    parts = dotted.split(".")
    while parts:
        base = root.joinpath(*parts)
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return ".".join(parts)
        parts = parts[:-1]
    return dotted


def imports_of(source: str, package: str, root: Path) -> list[tuple[str, int]]:
    """The project modules a piece of code imports, at the top or inside functions, relative
    ones resolved, each with its line: `from zocrates_nb.app import App` is `zocrates_nb.app`,
    `from zocrates_nb import sessions` is `zocrates_nb.sessions`."""
    out: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names = [f"{base}.{alias.name}" for alias in node.names]
        out += [(_resolve(n, root), node.lineno) for n in names if n.startswith("zocrates_nb")]
    return out


def package_of(path: Path, root: Path = PACKAGE.parent) -> str:
    """The package a file's relative imports start from."""
    name = module_name(path, root)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def imported_modules(path: Path, root: Path = PACKAGE.parent) -> set[str]:
    """Every project module a file imports (see `imports_of`)."""
    return {m for m, _ in imports_of(path.read_text("utf-8"), package_of(path, root), root)}


def room_of(module: str) -> str:
    """The room a project module lives in: its first name under the package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _imports(path: Path) -> list[tuple[str, int]]:
    return imports_of(path.read_text("utf-8"), package_of(path), PACKAGE.parent)


def layering_breaches(room: str) -> list[str]:
    """Sentences naming each import by which a room reaches a room at or above its own."""
    allowed = set(BASE) | set(ROOMS[: ROOMS.index(room) + 1])
    out: list[str] = []
    for path in _files():
        if room_of(module_name(path)) != room:
            continue
        for module, line in dict.fromkeys(_imports(path)):
            if room_of(module) not in allowed:
                above = "a surface" if room_of(module) in SURFACES else "a room above it"
                out.append(f"{_rel(path)}:{line} imports {module}: {room}/ may use only the "
                           f"rooms below it ({', '.join(ROOMS[: ROOMS.index(room)]) or 'none'}) "
                           f"and the base modules, and {room_of(module)} is {above}")  # fmt: skip
    return out


def surface_breaches(sources: list[tuple[str, str, str]]) -> list[str]:
    """Sentences naming each import by which a surface reaches past the App; `sources` are
    (where, package, code)."""
    out: list[str] = []
    for where, package, code in sources:
        for module, line in dict.fromkeys(imports_of(code, package, PACKAGE.parent)):
            room = room_of(module)
            if module == FACADE or room in BASE or room in SURFACES or room in TOOLS + HARNESS:
                continue
            out.append(f"{where}:{line} imports {module}: a surface may use only App "
                       f"({FACADE}) and the base modules ({BASE_NAMES}), not {room}/")  # fmt: skip
    return out


def _surface_sources() -> list[tuple[str, str, str]]:
    sources = []
    for path in _files():
        if room_of(module_name(path)) in SURFACES:
            sources.append((_rel(path), package_of(path), path.read_text("utf-8")))
    for nb in NOTEBOOKS:
        cells = json.loads(nb.read_text("utf-8"))["cells"]
        for n, cell in enumerate(cells):
            if cell["cell_type"] == "code":
                code = "".join(cell["source"])
                code = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln
                                 for ln in code.splitlines())  # fmt: skip
                sources.append((f"{_rel(nb)} cell {n}", "", code))
    return sources


def test_every_module_lives_in_a_known_room() -> None:
    """A new root module or folder is placed in the layering before it can pass unchecked."""
    known = set(BASE) | set(ROOMS) | set(SURFACES) | set(TOOLS) | set(HARNESS)
    unplaced = sorted({_rel(p) for p in _files() if room_of(module_name(p)) not in known})
    assert not unplaced, f"not in any room of tests/test_architecture.py: {unplaced}"


@pytest.mark.parametrize("room", ROOMS)
def test_a_room_imports_only_the_rooms_below_it(room: str) -> None:
    assert any(room_of(module_name(p)) == room for p in _files())
    breaches = layering_breaches(room)
    assert not breaches, "\n".join(breaches)


def test_tools_import_no_surface_and_not_the_app() -> None:
    breaches = [f"{_rel(p)}:{line} imports {m}: devtools/ may use the rooms below the app only"
                for p in _files() if room_of(module_name(p)) in TOOLS
                for m, line in _imports(p)
                if room_of(m) in SURFACES or room_of(m) == "app"]  # fmt: skip
    assert not breaches, "\n".join(breaches)


def test_only_the_cli_runs_the_benchmarks() -> None:
    """The benchmarks may reach any room (they measure them); nothing but the CLI reaches them."""
    breaches = [f"{_rel(p)}:{line} imports {m}: only the CLI (zocrates-nb bench) may use bench/"
                for p in _files() if room_of(module_name(p)) not in ("cli", *HARNESS)
                for m, line in _imports(p) if room_of(m) in HARNESS]  # fmt: skip
    assert not breaches, "\n".join(breaches)


def test_base_modules_import_only_base_modules() -> None:
    """The package's own `__init__` is the entrance, not a base: it hands out App, the panel
    and the magics (`%load_ext zocrates_nb`), lazily, so `import zocrates_nb` stays cheap."""
    base = [p for p in _files() if room_of(module_name(p)) in BASE and p != PACKAGE / "__init__.py"]
    breaches = [f"{_rel(p)}:{line} imports {m}: a base module may use only base modules"
                for p in base for m, line in _imports(p) if room_of(m) not in BASE]  # fmt: skip
    assert not breaches, "\n".join(breaches)
    entrance = {room_of(m) for m in imported_modules(PACKAGE / "__init__.py")}
    assert entrance <= {"app", "widget", "widgets", "magic"}


@pytest.mark.parametrize("name", ["turn.py", "errors.py"])
def test_base_modules_import_nothing_of_the_project(name: str) -> None:
    modules = imported_modules(PACKAGE / name)
    assert not {m for m in modules if m.startswith("zocrates_nb")}
    tree = ast.parse((PACKAGE / name).read_text("utf-8"))
    roots = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
             for a in n.names}  # fmt: skip
    roots |= {(n.module or "").split(".")[0] for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom)}  # fmt: skip
    assert roots <= {"__future__", "collections", "datetime", "typing", "pydantic", "hashlib", "re",
                     "unicodedata"}  # fmt: skip


def test_surfaces_use_only_the_app_and_the_base_modules() -> None:
    breaches = surface_breaches(_surface_sources())
    assert not breaches, "\n".join(breaches)


def test_notebooks_are_checked_as_surfaces() -> None:
    """The notebooks' imports are read (the rule above would otherwise pass on nothing)."""
    found = {m for where, package, code in _surface_sources() if where.startswith("notebooks")
             for m, _ in imports_of(code, package, PACKAGE.parent)}  # fmt: skip
    assert NOTEBOOKS and {"zocrates_nb", "zocrates_nb.frames", "zocrates_nb.examples"} <= found


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    """The check must catch the lazy import it exists for (the old upward import was one)."""
    probe = tmp_path / "zocrates_nb" / "retrieval" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("def f():\n    from zocrates_nb.cli import main\n    from ..app import App\n")
    found = imported_modules(probe, tmp_path)
    assert {"zocrates_nb.cli.main", "zocrates_nb.app.App"} <= found
    assert {room_of(m) for m in found} == {"cli", "app"}


def test_a_breach_is_a_sentence_naming_the_file_and_the_import() -> None:
    code = (
        "from zocrates_nb.agents.prompts import ActiveItemView\nfrom zocrates_nb.app import App\n"
    )
    (breach,) = surface_breaches([("zocrates_nb/cli/printer.py", "zocrates_nb.cli", code)])
    assert breach.startswith("zocrates_nb/cli/printer.py:1 imports zocrates_nb.agents.prompts: "
                             "a surface may use only App (zocrates_nb.app)")  # fmt: skip
    assert breach.endswith("not agents/")


def test_no_module_is_longer_than_600_lines() -> None:
    long = {
        _rel(p): n for p in _files() if (n := len(p.read_text("utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines (split them along their concerns): {long}"


def test_every_module_says_first_what_it_is_for() -> None:
    docs = {_rel(p): ast.get_docstring(ast.parse(p.read_text("utf-8"))) or "" for p in _files()}
    silent = [path for path, doc in docs.items() if not doc.strip()]
    assert not silent, f"modules without a docstring saying first what they are for: {silent}"
