"""zocrates-nb: answers research questions over your own Zotero library, with verified citations.

Importing it changes nothing in the process's environment: what must stay offline says so where
it loads (the embedding model local-only, litellm's price map from its packaged copy).
"""

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zocrates_nb.app import App as App
    from zocrates_nb.app import open_app as open_app
    from zocrates_nb.widget import ChatWidget

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`App` and `open_app` (the public API), imported on first use: `import zocrates_nb` stays
    cheap (the indexer's worker processes import this package)."""
    if name in ("App", "open_app"):
        from zocrates_nb import app

        return getattr(app, name)
    raise AttributeError(f"module 'zocrates_nb' has no attribute {name!r}")


def chat(home: "App | str | os.PathLike[str] | None" = None, **kwargs: object) -> "ChatWidget":
    """Open the chat panel in a notebook: `zocrates_nb.chat()` (see `zocrates_nb.widget.chat`)."""
    from zocrates_nb.widget import chat as _chat

    return _chat(home, **kwargs)


def load_ipython_extension(ipython: object) -> None:
    """`%load_ext zocrates_nb`: the `%zocrates` / `%%zocrates` magics (`zocrates_nb.magic`)."""
    from zocrates_nb.magic import load_ipython_extension as load

    load(ipython)
