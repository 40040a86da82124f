"""What a request may select, checked before any work: at most `limits.scope_items` item keys
and `limits.scope_collections` collections, every one of them known to the index.

An unknown collection or item key is refused in one sentence naming it (a typo, or an item added
to Zotero since the last `index`), instead of a search over nothing that answers "the library
has no evidence". The counts are checked first: a selection of millions of keys is refused
before a single look-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zocrates_nb.config import LimitsSettings
from zocrates_nb.errors import UsageError
from zocrates_nb.library.paths import printable
from zocrates_nb.turn import Scope

if TYPE_CHECKING:
    from zocrates_nb.index import Index

_NAMED = 5  # unknown keys named in the message (the rest are counted)


def check_scope(index: Index, limits: LimitsSettings, scope: Scope) -> None:
    """Raise `UsageError` for a scope that is too large or names what the index lacks."""
    items = [k for k in scope.items if k]
    collections = [c for c in scope.collections if c]
    for given, limit, what, key in ((items, limits.scope_items, "item keys", "scope_items"),
                                    (collections, limits.scope_collections, "collections",
                                     "scope_collections")):  # fmt: skip
        if len(given) > limit:
            raise UsageError(
                f"{len(given):,} {what} in one request; at most {limit:,} are accepted "
                f"(limits.{key} in zocrates_config.json): choose a collection instead, or "
                "raise the limit"
            )
    if collections:
        try:
            index.collection_item_keys(collections)
        except ValueError as e:
            raise UsageError(str(e)) from None
    known = index.known_keys(items) if items else set()
    unknown = [k for k in dict.fromkeys(items) if k not in known]
    if unknown:
        named = ", ".join(repr(printable(k)) for k in unknown[:_NAMED])
        more = f" and {len(unknown) - _NAMED:,} more" if len(unknown) > _NAMED else ""
        raise UsageError(
            f"unknown item key{'s' if len(unknown) > 1 else ''} {named}{more}: not in the index "
            "(run `zocrates-nb index` if they were added to the library since)"
        )
