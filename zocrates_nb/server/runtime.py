"""The one App a Jupyter server shares among its handlers, opened on first use.

Opening is lazy so that starting Jupyter never loads models; it happens once, on the first
request that needs it, in a worker thread so the server keeps answering meanwhile. The App works
over the data home's `sessions.db`, the same store the widget and the CLI use.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from tornado import web

from zocrates_nb.server.relay import TurnRegistry

if TYPE_CHECKING:
    from zocrates_nb.app import App

log = logging.getLogger(__name__)


class Runtime:
    def __init__(self, home: Path | None) -> None:
        self.home = home  # None: the App's default ($ZOCRATES_HOME or ~/.zocrates-nb)
        self.turns = TurnRegistry()
        self._app: App | None = None
        self._lock = asyncio.Lock()
        self._warm: asyncio.Task[None] | None = None

    async def app(self) -> App:
        async with self._lock:
            if self._app is None:
                from zocrates_nb.app import App

                try:
                    self._app = await asyncio.to_thread(App.open, self.home)
                except Exception as e:  # a bad config file: say so, and retry next request
                    from zocrates_nb.app.describe import describe_error

                    message = describe_error(e, doing="Opening the zocrates data home")
                    log.warning("zocrates: cannot open the data home: %s", message)
                    raise web.HTTPError(500, message) from e
                log.info("zocrates: opened the data home %s", self.home or "(default)")
                for notice in self._app.notices:
                    log.warning("zocrates: %s", notice)
            return self._app

    async def warm(self) -> None:
        """Load the App's models once, in a worker thread: turns need them, and loading them
        inside a turn would stall the whole Jupyter server meanwhile. A failure here is only
        logged; the turn itself then reports it as an error event."""
        if self._warm is None:
            app = await self.app()
            self._warm = asyncio.ensure_future(asyncio.to_thread(app.warm_up))
        await asyncio.shield(self._warm)

    async def close(self, timeout: float = 30.0) -> None:
        """Let running turns finish and save, then release the App."""
        await self.turns.drain(timeout)
        app, self._app = self._app, None
        close = getattr(app, "close", None)
        if callable(close):
            result = close()
            if asyncio.iscoroutine(result):
                await result
