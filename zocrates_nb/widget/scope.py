"""The panel's scope: the chips a researcher picks, checked and named before a question uses them.

The chips become a `turn.Scope` (the keys a question searches) by `ScopeChips.scope`;
`apply_scope` checks a `set_scope` pick with the App (`App.check_scope`: every key known, within
the limits) and the panel's own bound (at most five papers), and names each chip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zocrates_nb.turn import ScopeChips

if TYPE_CHECKING:
    from zocrates_nb.app import App

MAX_SCOPE_ITEMS = 5


def apply_scope(chips: ScopeChips, app: App | None = None) -> ScopeChips:
    """The scope as applied, or ValueError (`UsageError` from the App) saying why it is
    refused (PROTOCOL.md, set_scope)."""
    if chips.mode == "items":
        keys = [i.key for i in chips.items]
        if not 1 <= len(keys) <= MAX_SCOPE_ITEMS:
            raise ValueError(f"pick 1 to {MAX_SCOPE_ITEMS} papers (got {len(keys)})")
        if len(set(keys)) != len(keys):
            raise ValueError("every picked paper needs a distinct key")
        applied = ScopeChips(mode="items", items=[i.model_copy() for i in chips.items])
    elif chips.mode == "collections":
        if not chips.collections:
            raise ValueError("pick at least one collection")
        applied = ScopeChips(mode="collections",
                             collections=[c.model_copy() for c in chips.collections])  # fmt: skip
    else:
        return ScopeChips()
    if app is None:
        return applied
    app.check_scope(applied.scope)
    for item in applied.items:
        record = app.item(item.key)
        item.title = item.title or (record.title if record else "") or item.key
        item.year = item.year if item.year is not None else (record.year if record else None)
    names = app.collections() if applied.collections else {}
    for c in applied.collections:
        c.name = c.name or names.get(c.key) or c.key
    return applied
