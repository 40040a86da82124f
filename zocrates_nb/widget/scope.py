"""The panel's scope: the chips a researcher picks, checked and named before a question uses them.

`scope_of` is the one place the chips become a `turn.Scope` (the keys a question searches);
`apply_scope` checks a `set_scope` pick with the App (`App.check_scope`: every key known, within
the limits) and the panel's own bound (at most five papers), and names each chip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zocrates_nb.turn import Scope, ScopeChips

if TYPE_CHECKING:
    from zocrates_nb.app import App

MAX_SCOPE_ITEMS = 5


def scope_of(chips: ScopeChips) -> Scope:
    """The keys the chips select. (Adapter: once `Scope` validates the chips' dict itself,
    this is `Scope.model_validate(chips.model_dump())`.)"""
    if chips.mode == "items":
        return Scope(items=[i.key for i in chips.items])
    if chips.mode == "collections":
        return Scope(collections=[c.key for c in chips.collections])
    return Scope()


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
    app.check_scope(scope_of(applied))
    for item in applied.items:
        record = app.item(item.key)
        item.title = item.title or (record.title if record else "") or item.key
        item.year = item.year if item.year is not None else (record.year if record else None)
    names = app.collections() if applied.collections else {}
    for c in applied.collections:
        c.name = c.name or names.get(c.key) or c.key
    return applied
