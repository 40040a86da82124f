"""Text out of the markup scholarly APIs send: JATS and HTML tags dropped, the text kept (a
JATS section title becomes a lead-in, "METHODS: …"), entities decoded, whitespace collapsed.
A `<` that opens no tag ("p < 0.05", "(<10") is text and stays."""

from __future__ import annotations

import html
import re

# A tag: `<`, an optional `/`, a letter-led name (jats:p, sec, title, i, sup), attributes.
_TAG = re.compile(r"</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>")
_TITLE = re.compile(r"<(?:jats:)?title\b[^<>]*>\s*(.*?)\s*</(?:jats:)?title>", re.S | re.I)
_LEAD = re.compile(r"^(?:abstract|summary)\s*[:.]\s+(?=\S)", re.I)


def plain(text: str | None) -> str:
    """Markup stripped, entities decoded (`&amp;` → `&`), whitespace collapsed."""
    return " ".join(html.unescape(_TAG.sub(" ", text or "")).split())


def abstract_text(text: str | None) -> str:
    """An abstract as text: section titles as lead-ins ("BACKGROUND: …"), the heading
    "Abstract" that JATS abstracts open with dropped."""
    titled = _TITLE.sub(lambda m: f" {m.group(1).strip().rstrip(':.')}: " if m.group(1).strip()
                        else " ", text or "")  # fmt: skip
    return _LEAD.sub("", plain(titled))
