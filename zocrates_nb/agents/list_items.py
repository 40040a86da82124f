"""The items of a list in a question, for cutting another thing's item out of one part's text.

"How many servers do a Chubby cell, a Raft cluster and MapReduce's input storage use?" lists
three things, each with words of its own ("cell", "cluster"): not names joined by connectives
alone. Raft's part asks "How many servers do a Raft cluster … use?": the other items go, from
where each begins (", a ", " and in ") to where the next begins, so no other paper's name is
searched or matched for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# What opens a list's next item: "…, a Raft cluster", "… and in MoCo v2", "… and van
# Renesse's Paxos …", "…, or Zab".
_LEAD_RE = re.compile(r"(?:,\s*(?:and|or)|,|\band|\bor)\s+(?:(?:in|of|for|the|a|an)\s+)?"
                      r"(?:(?:[\w-]+\s+){0,2}?[\w-]+(?:\s+et\s+al\.?)?['’]s\s+)?$")  # fmt: skip
_JOINT_RE = re.compile(r"(?:,\s*(?:and|or)|,|and|or)\s+")
_WHOSE_RE = re.compile(r"(?:\b(?:a|an|the|in|of|for)\s+)?(?:\b[\w-]+(?:\s+et\s+al\.?)?['’]s\s+)?$")
_TAIL_RE = re.compile(r"(?:\s+et\s+al\.?)?['’]s\b")


def lead(text: str, at: int) -> re.Match[str] | None:
    """The words opening the list item whose name starts at `at`, if it is a later item."""
    return _LEAD_RE.search(text[:at])


def joint_end(opening: re.Match[str]) -> int:
    """Where a list's joint (", and") ends, before the item's own words ("a", "in")."""
    joint = _JOINT_RE.match(opening.group(0))
    return opening.start() + (joint.end() if joint else 0)


def item_span(text: str, name: tuple[int, int], next_name: tuple[int, int] | None
              ) -> tuple[int, int] | None:  # fmt: skip
    """The span of the list item named at `name` (character offsets), up to where the next
    item (named at `next_name`) begins; None when the name is no list's item."""
    own = lead(text, name[0])
    nxt = lead(text, next_name[0]) if next_name else None
    if own:  # a later item: from its ", a " to the next item's, or past its name
        tail = _TAIL_RE.match(text[name[1] :])
        return own.start(), nxt.start() if nxt else name[1] + (tail.end() if tail else 0)
    if nxt:  # the first item: from its "a" up to where the next begins
        whose = _WHOSE_RE.search(text[: name[0]])
        return (whose.start() if whose else name[0]), joint_end(nxt)
    return None


def without(text: str, cuts: Sequence[tuple[int, int]], keep: Sequence[int] = ()) -> str:
    """`text` with the spans cut (overlapping ones as one); an item kept (its name starting at
    one of `keep`) whose list before it is gone loses its joint too ("… and MapReduce's")."""
    merged: list[tuple[int, int]] = []
    for a, b in sorted(cuts):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    for at in keep:
        opening = lead(text, at)
        if opening and merged and merged[-1][1] == opening.start():
            merged[-1] = (merged[-1][0], joint_end(opening))
    for a, b in sorted(merged, reverse=True):
        text = text[:a] + " " + text[b:]
    return " ".join(text.split())


__all__ = ["item_span", "joint_end", "lead", "without"]
