"""The HTTP API as a Jupyter server extension, and a client for it (`client.py`).

Enabled by `jupyter-config/jupyter_server_config.d/zocrates_nb.json`, which `pip install` puts in
`<prefix>/etc/jupyter/jupyter_server_config.d/`. Jupyter imports only the function below at
start; the server modules load when the extension is linked, and the client needs none of them.
"""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from zocrates_nb.server.extension import ZocratesExtension

    return [{"module": "zocrates_nb.server", "app": ZocratesExtension}]
