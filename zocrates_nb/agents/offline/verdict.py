"""Whether the evidence states what was asked, by meaning: the offline writer's negatives.

A question whose every name the library knows may still ask for something no paper gives (a
figure the papers never report, a cost, a head count). Its best sentences then only share its
topic: they score low against the question, or, when a number is asked for, none near the best
gives one. The answer then says plainly that the papers do not give it, and shows the closest
passages as what they are: near the question, not an answer, and not cited.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from zocrates_nb.agents.offline.quantity import asks_only_count, asks_quantity, gives_quantity
from zocrates_nb.agents.offline.quotes import NUMBER_SHARE, Candidate
from zocrates_nb.text import markdown_text

# Calibrated on the development questions and our own (the best sentence of an answerable
# question scores above STATES; a plausible question the papers do not answer stays below).
STATES = 0.40
# The paper the question names comes near it from here (below, nothing of it is on topic).
NAMED_NEAR = 0.3
# Between STATES and CLEAR the best sentences come near the question without settling it.
CLEAR = 0.5
# A question asking for a number that no sentence near the best gives is not answered unless
# its best sentence comes this close.
NUMBER_CLEAR = 0.6


class Verdict(Enum):
    STATED = "stated"  # a sentence states the answer
    APPROACHED = "approached"  # the best sentences come near it: said so above the quotes
    NOT_GIVEN = "not given"  # nothing states it: said plainly, closest passages uncited


def verdict(question: str, cands: Sequence[Candidate], named: bool = False) -> Verdict:
    """How well the scored candidates answer `question`. `named`: they are the sentences of
    the paper the question names, which surely bears on it: a low score alone then says only
    that they come near (a loosely worded "Which one?" scores low against its answer); a
    number asked for and given by none near the best still says the paper does not give it."""
    top = max((c.relevance for c in cands), default=0.0)
    asked = asks_quantity(question)
    gives = asked and any(c.relevance >= NUMBER_SHARE * top and gives_quantity(question, c.text)
                          for c in cands)  # fmt: skip
    if top < STATES:
        if named and top >= NAMED_NEAR and (gives or not asked):
            return Verdict.APPROACHED
        return Verdict.NOT_GIVEN
    if (
        (top < NUMBER_CLEAR or asks_only_count(question))
        and asked
        and not gives
    ):
        return Verdict.NOT_GIVEN  # a number was asked for, none near the best gives one, and
        # the best only shares the topic (a question that also asks whether or how may be
        # answered by a sentence that states no number)
    return Verdict.STATED if top >= CLEAR else Verdict.APPROACHED


def not_given(question: str, closest: Sequence[Candidate], where: str = "", never: str = ""
              ) -> list[str]:  # fmt: skip
    """The plain negative (with why, when the papers asked about never mention what is asked
    of them: `never`) and the closest passages, labelled, with no citation marker: they are
    shown for orientation, not as support."""
    asked = " ".join(question.split())
    scope = f" ({where})" if where else ""
    lines = [f"Your papers do not give this{scope}: none of the passages found states an "
             f"answer to “{asked}”", ""]  # fmt: skip
    if never:
        lines += [never, ""]
    if closest:
        lines += ["The closest passages, which do not answer it:", ""]
        for c in closest:
            section = f", § {c.chunk.section}" if c.chunk.section else ""
            text = c.text.strip().replace("`", "\\`")
            lines.append(f"- “{text}” (*{c.chunk.title}*{section})")
        lines.append("")
    return lines


def never_line(unsaid: Sequence[str], own: Sequence[Candidate]) -> str:
    """"*BERT: …* never mentions English-German.": what the named papers lack, by name."""
    if not unsaid:
        return ""
    titles = list(dict.fromkeys(c.chunk.title for c in own if not c.chunk.is_note))
    who = " or ".join(f"*{markdown_text(t)}*" for t in titles) or "The paper it names"
    names = [f"“{markdown_text(e)}”" for e in unsaid]
    what = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    return f"{who} never {'mention' if len(titles) > 1 else 'mentions'} {what}."


APPROACHED_LEAD = (
    "Nothing in your papers states this directly; the closest they come, in their own words:"
)

__all__ = ["APPROACHED_LEAD", "CLEAR", "STATES", "Verdict", "never_line", "not_given", "verdict"]
