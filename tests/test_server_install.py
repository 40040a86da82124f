"""The extension is enabled by installing the package, and its OpenAPI document is current."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import pytest

from zocrates_nb.server import openapi

ROOT = Path(__file__).resolve().parents[1]
CONFIG_NAME = "jupyter_server_config.d/zocrates_nb.json"


def _jupyter_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
        env[name] = str(tmp_path / name.lower())  # nothing from the user's own Jupyter
    env.pop("JUPYTER_CONFIG_PATH", None)
    env.update(extra)
    return env


def _extension_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if "zocrates_nb" in line]


def _without_prose(doc: Any) -> Any:
    """The document minus `description`s: prose may lag a docstring edit, structure may not."""
    if isinstance(doc, dict):
        return {k: _without_prose(v) for k, v in doc.items() if k != "description"}
    if isinstance(doc, list):
        return [_without_prose(v) for v in doc]
    return doc


def test_checked_in_openapi_document_matches_the_models() -> None:
    on_disk = json.loads(openapi.PATH.read_text("utf-8"))
    assert _without_prose(on_disk) == _without_prose(openapi.build()), (
        "regenerate: python -m zocrates_nb.server.openapi > " + str(openapi.PATH.relative_to(ROOT))
    )
    assert set(on_disk["paths"]) == {
        "/zocrates/chat", "/zocrates/chat/resume", "/zocrates/sessions",
        "/zocrates/sessions/{session_id}", "/zocrates/sessions/{session_id}/turns/{turn_id}",
        "/zocrates/sessions/{session_id}/cancel", "/zocrates/discover", "/zocrates/staging",
        "/zocrates/staging/remove", "/zocrates/staging/save", "/zocrates/notes",
        "/zocrates/openapi.json",
    }  # fmt: skip


def test_jupyter_lists_the_extension_enabled_in_this_environment(tmp_path: Path) -> None:
    """This environment's install put the config file in `<prefix>/etc/jupyter`, so a plain
    `jupyter server` loads the extension."""
    config = Path(sys.prefix) / "etc/jupyter" / CONFIG_NAME
    assert config.is_file(), (
        f"{config} missing: the install did not enable the extension (setuptools' editable "
        "installs skip data-files, so scripts/setup.sh copies jupyter-config/ there)"
    )
    jupyter = Path(sysconfig.get_path("scripts")) / "jupyter"
    out = subprocess.run(
        [str(jupyter), "server", "extension", "list"],
        env=_jupyter_env(tmp_path), capture_output=True, text=True, timeout=120, check=True,
    )
    lines = _extension_lines(out.stdout + out.stderr)
    assert any("zocrates_nb.server" in ln and "enabled" in ln for ln in lines), lines
    assert any("zocrates_nb.server" in ln and "OK" in ln for ln in lines), lines


@pytest.mark.slow
def test_a_plain_pip_install_enables_the_extension(tmp_path: Path) -> None:
    """Build the wheel, `pip install` it into a fresh virtual environment (its own pip, so this
    environment is never touched), and ask that environment's Jupyter."""
    wheels, venv = tmp_path / "wheels", tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
         "-q", "-w", str(wheels)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = wheels.glob("zocrates_nb-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert any(n.endswith("data/etc/jupyter/" + CONFIG_NAME) for n in zf.namelist())
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, capture_output=True, timeout=300,
    )
    installed = venv / "etc/jupyter" / CONFIG_NAME
    assert json.loads(installed.read_text("utf-8")) == {
        "ServerApp": {"jpserver_extensions": {"zocrates_nb.server": True}}
    }
    # Dependencies (Jupyter itself) come from this environment, after the installed package.
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    Path(site, "zz_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    out = subprocess.run(
        [str(python), "-m", "jupyter_server", "extension", "list"], cwd=tmp_path,
        env=_jupyter_env(tmp_path), capture_output=True, text=True, timeout=120, check=True,
    )
    text = out.stdout + out.stderr
    section = text.split(f"Config dir: {venv / 'etc/jupyter'}", 1)
    assert len(section) == 2, text
    lines = _extension_lines(section[1].split("Config dir:", 1)[0])
    assert any("zocrates_nb.server" in ln and "enabled" in ln for ln in lines), text
    assert any("zocrates_nb.server" in ln and "OK" in ln for ln in lines), text
    where = subprocess.run(
        [str(python), "-c", "import zocrates_nb.server as m; print(m.__file__)"], cwd=tmp_path,
        check=True, capture_output=True, text=True,
    ).stdout
    assert where.startswith(str(venv)), where  # validated from the wheel, not the checkout


def test_every_route_in_the_table_is_served_by_the_methods_it_documents() -> None:
    """The one route table: what the server registers is what the document describes."""
    from zocrates_nb.server.handlers import API, ROUTES, ZocratesHandler

    assert [handler for _, handler in ROUTES] == [r.handler for r in API]
    for route in API:
        served = {m for m in ("get", "post", "put", "delete", "patch")
                  if getattr(route.handler, m) is not getattr(ZocratesHandler, m)}  # fmt: skip
        assert served == {op.method for op in route.ops}, route.path
    assert ROUTES[4][0] == r"/zocrates/sessions/(?P<session_id>[^/]+)/turns/(?P<turn_id>[^/]+)"
