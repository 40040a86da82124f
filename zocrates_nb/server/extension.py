"""The Jupyter server extension: the assistant's HTTP API under `<base_url>/zocrates/`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from jupyter_server.extension.application import ExtensionApp
from traitlets import Unicode

from zocrates_nb.config import ENV_HOME
from zocrates_nb.server.handlers import ROUTES
from zocrates_nb.server.runtime import Runtime

SETTINGS_KEY = "zocrates_runtime"
SWITCH_INTERVAL = 0.001  # seconds a thread holds the GIL before another may take it


class ZocratesExtension(ExtensionApp):
    """Serves `/zocrates/chat`, `/zocrates/chat/resume`, `/zocrates/sessions[/{id}]` and
    `/zocrates/openapi.json`, authenticated like every Jupyter API."""

    name = "zocrates"
    load_other_extensions = True

    home = Unicode(
        "",
        config=True,
        help=f"zocrates-nb data home (default: ${ENV_HOME} or ~/.zocrates-nb).",
    )

    def initialize_settings(self) -> None:
        # Turns compute in worker threads (the offline engine, embeddings); the event loop
        # that answers every request waits for the GIL behind them, 5 ms a time by default.
        # 1 ms keeps the light requests (listing sessions) fast under a full load of turns.
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
        home = self.home or os.environ.get(ENV_HOME) or None
        path = Path(home).expanduser().resolve() if home else None
        self.settings[SETTINGS_KEY] = Runtime(path)
        self.log.info("zocrates: HTTP API at %szocrates/ (data home %s)",
                      self.serverapp.base_url if self.serverapp else "/", path or "default")

    def initialize_handlers(self) -> None:
        self.handlers.extend(ROUTES)

    async def stop_extension(self) -> None:
        runtime: Runtime | None = self.settings.get(SETTINGS_KEY)
        if runtime is not None:
            await runtime.close()
