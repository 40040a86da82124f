"""The one App a Jupyter server shares among its handlers, opened on first use.

Opening is lazy so that starting Jupyter never loads models; it happens once, on the first
request that needs it, in a worker thread so the server keeps answering meanwhile. The App works
over the data home's `sessions.db`, the same store the widget and the CLI use.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tornado import web

from zocrates_nb.config import ConfigError, ConfigWatcher, LimitsSettings, default_home
from zocrates_nb.server.relay import TurnRegistry

if TYPE_CHECKING:
    from zocrates_nb.app import App

log = logging.getLogger(__name__)
_T = TypeVar("_T")


class Runtime:
    def __init__(self, home: Path | None) -> None:
        self.home = home  # None: the App's default ($ZOCRATES_HOME or ~/.zocrates-nb)
        self.turns = TurnRegistry()
        self._app: App | None = None
        self._lock = asyncio.Lock()
        self._warm: asyncio.Task[None] | None = None
        self._config = ConfigWatcher(home or default_home())
        # Light requests (listing sessions, a turn's record) get threads of their own: turns
        # fill the default executor's threads, and a list must never wait behind them.
        self._light = ThreadPoolExecutor(max_workers=2, thread_name_prefix="zocrates-light")

    def limits(self) -> LimitsSettings:
        """The limits in force (an edited config file counts at the next request; an invalid
        one keeps the defaults here: opening the App then says what is wrong)."""
        try:
            return self._config.current().limits
        except ConfigError:
            return LimitsSettings()

    async def light(self, fn: Callable[..., _T], *args: Any) -> _T:
        """A short blocking call (a SQLite read) on the light requests' own threads."""
        return await asyncio.get_running_loop().run_in_executor(self._light, fn, *args)

    async def app(self) -> App:
        async with self._lock:
            if self._app is None:
                from zocrates_nb.app import App

                try:
                    self._app = await asyncio.to_thread(App.open, self.home)
                except Exception as e:  # a bad config file: say so, and retry next request
                    from zocrates_nb.app import describe_error

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

    async def close(self, grace: float | None = None) -> None:
        """Let running turns finish (`limits.shutdown_grace_seconds`), cancel the rest (each is
        saved as cancelled), then release the App."""
        await self.turns.drain(self.limits().shutdown_grace_seconds if grace is None else grace)
        self._light.shutdown(wait=False, cancel_futures=True)
        app, self._app = self._app, None
        close = getattr(app, "close", None)
        if callable(close):
            result = close()
            if asyncio.iscoroutine(result):
                await result
