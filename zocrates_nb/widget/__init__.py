"""The chat panel inside Jupyter: `chat()` opens it, `ChatWidget` is it.

Modules: `panel` (the widget and its message handlers), `protocol` (the typed messages, and
widgets/PROTOCOL.md generated from them), `records` (turns and the library as the panel shows
them), `scope` (the chips → `turn.Scope`), `running` (the live turn, warm-up, event loop),
`writes` (notes and papers added from the panel), `assets` (the bundled front end) and
`recording` (a comm that records, for tests and `bench ui`).
"""

from zocrates_nb.widget.assets import asset_path
from zocrates_nb.widget.panel import (
    MAX_PROMPT_CHARS,
    OFFLINE_LABEL,
    PAUSED_HINT,
    SAVE_UNCONFIRMED,
    WIDGET_OPTIONS,
    ChatWidget,
    chat,
)
from zocrates_nb.widget.records import history_turn, turn_view
from zocrates_nb.widget.running import LiveTurn, WarmUp, start_warm_up
from zocrates_nb.widget.scope import MAX_SCOPE_ITEMS, apply_scope

__all__ = [
    "MAX_PROMPT_CHARS",
    "MAX_SCOPE_ITEMS",
    "OFFLINE_LABEL",
    "PAUSED_HINT",
    "SAVE_UNCONFIRMED",
    "WIDGET_OPTIONS",
    "ChatWidget",
    "LiveTurn",
    "WarmUp",
    "apply_scope",
    "asset_path",
    "chat",
    "history_turn",
    "start_warm_up",
    "turn_view",
]
