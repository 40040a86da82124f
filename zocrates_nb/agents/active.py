"""The selected items as the agents present them: each with its attachments and notes (short
notes carry their text), built from the index and kept in a checkpoint snapshot."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from zocrates_nb.agents.prompts import ActiveChild, ActiveItemView
from zocrates_nb.retrieval.scope import parent_key

if TYPE_CHECKING:
    from zocrates_nb.index import Index

def build_active_items(index: Index, keys: Sequence[str]) -> list[ActiveItemView]:
    """The items named by `keys` (item, attachment or note keys), parents once each."""
    out: list[ActiveItemView] = []
    seen: set[str] = set()
    for raw in keys:
        parent = parent_key(index, raw) or parent_key(index, raw.upper()) or raw
        if parent in seen:
            continue
        seen.add(parent)
        item = index.item(parent)
        docs = index.documents(parent)
        children: list[ActiveChild] = []
        for d in sorted(docs, key=lambda d: (d.kind == "note", d.doc_key)):
            if d.doc_key == parent:
                continue
            if d.kind == "note":
                text = ""
                with contextlib.suppress(Exception):
                    text = index.bundle(d.doc_key).markdown
                plain = re.sub(r"[#*_>`|\[\]]", " ", text)
                children.append(
                    ActiveChild(
                        d.doc_key, "note", d.title or "Note", words=len(plain.split()),
                        text=plain.strip(),
                    )
                )
            else:
                children.append(
                    ActiveChild(d.doc_key, "attachment", d.title or d.kind, content_type=d.kind)
                )
        title = item.title if item else (docs[0].title if docs else raw)
        out.append(
            ActiveItemView(
                parent,
                title,
                item.year if item else None,
                list(item.authors) if item else [],
                children,
            )
        )
    return out
