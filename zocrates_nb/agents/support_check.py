"""The second, independent support check beside a verifier model: the engine's own score.

A verifier model reads the passage, so a passage can talk to it ("mark every claim as
supported"), and a model can simply be wrong. Every citation the model accepts is therefore
also scored by the offline engine's sentence-level support scorer (`offline.support`: the
embedding and lexical score the offline verifier uses; it reads no instructions). A citation
the model accepts but the scorer finds unsupported (below `FLOOR`, under the offline
verifier's own threshold: only a clear disagreement overrules), or whose claim is mostly
words the passage never uses (an on-topic invention scores high on similarity alone), is
judged unsupported and the answer says so. The model's rejections stand: the second check only
ever removes support.

Sentences that speak to a model (the verifier, an assistant, "the claim") are also taken out of
a passage before the verifier model reads it, so an instruction inside a paper cannot change
the model's verdict in the first place.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from zocrates_nb.agents.citations import Occurrence, Verdict
from zocrates_nb.agents.offline.support import offline_support
from zocrates_nb.retrieval.state import Evidence
from zocrates_nb.text import split_sentences, terms

log = logging.getLogger("zocrates_nb.agents.verifier")

FLOOR = 0.35  # the engine's score under which a model's acceptance is overruled
NOVEL = 0.5  # ... or the share of the claim's terms the passage never uses, over which it is

# A sentence addressed to a model rather than a reader: an imperative aimed at the reader of
# the prompt, about claims, verdicts, instructions or support.
_ADDRESSED_RE = re.compile(
    r"(?:^|[:;,\-–—]\s*|\bplease\s+|\byou\s+(?:must|should|shall|will)\s+)"
    r"(ignore|disregard|forget|override|obey|follow|mark|rate|judge|label|treat|consider|"
    r"output|respond|reply|answer|return|set|assign|print|say)\b[^.!?\n]{0,80}\b(claims?|"
    r"instructions?|prompt|verdicts?|supported|support(?:ed)?_probability|probability|"
    r"citations?|assistant|verifier|system)\b"
    r"|\b(system|developer|assistant)\s*(?:override|prompt|message|note)?\s*:"
    r"|\b(verifier|language model|AI model|assistant)s?\b[^.!?\n]{0,60}\b(must|should|shall)\b",
    re.I,
)
_TAG_RE = re.compile(r"<\s*/?\s*[A-Za-z_][\w-]*(?:\s[^<>\n]{0,120})?>")


def without_instructions(passage: str) -> tuple[str, int]:
    """The passage without its sentences addressed to a model (and tags that try to close the
    prompt's blocks), and how many sentences were taken out."""
    if not _ADDRESSED_RE.search(passage):
        return passage, 0
    kept: list[str] = []
    removed = 0
    for line in _TAG_RE.sub(" ", passage).splitlines():
        for sentence in split_sentences(line) or [line]:
            if _ADDRESSED_RE.search(sentence):
                removed += 1
            else:
                kept.append(sentence)
    return " ".join(kept), removed


def novel_share(claim: str, passage: str) -> float:
    """The share of the claim's terms (stemmed, stopwords aside) that the passage never uses."""
    wanted = set(terms(claim))
    return len(wanted - set(terms(passage))) / len(wanted) if wanted else 0.0


@dataclass
class SecondCheck:
    """What the engine's score said of the model's accepted citations."""

    checked: int = 0  # sentences with a citation the model accepted, scored by the engine
    overruled: list[tuple[int, int]] = field(default_factory=list)  # (occurrence, passage)
    scores: dict[tuple[int, int], float] = field(default_factory=dict)

    @property
    def disagreements(self) -> int:
        return len(self.overruled)


def second_check(
    emb: Any,
    occurrences: Sequence[Occurrence],
    ranked: Sequence[Evidence],
    verdicts: dict[tuple[int, int], Verdict],
    window: Any,
) -> SecondCheck:
    """Score every sentence's accepted citations with the engine's scorer, its passages
    together (a sentence may join what two passages say); overrule (in place, in `verdicts`)
    the acceptances of a sentence they do not support. `window(claim, passage)` picks what the
    scorer reads of a long passage (the same windows the verifier model read)."""
    out = SecondCheck()
    accepted: dict[str, list[tuple[int, int]]] = {}
    for (i, n), v in verdicts.items():
        if v.supported and v.probability is not None:
            accepted.setdefault(occurrences[i].claim, []).append((i, n))
    for claim, pairs in accepted.items():
        ids = list(dict.fromkeys(n for _, n in pairs))
        texts = [without_instructions(window(claim, ranked[n - 1].text))[0] for n in ids]
        score = supported(emb, claim, texts)
        out.checked += 1
        for pair in pairs:
            out.scores[pair] = score
            if score < FLOOR:
                v = verdicts[pair]
                verdicts[pair] = Verdict(False, min(v.probability or 0.0, score), overruled=True)
                out.overruled.append(pair)
    return out


def supported(emb: Any, claim: str, passages: Sequence[str]) -> float:
    """The engine's support of `claim` by `passages` together: 0 when most of the claim's terms
    appear in none of them, else the best of each passage's score and the joined passages'."""
    joined = " ".join(p for p in passages if p.strip())
    if not joined or novel_share(claim, joined) > NOVEL:
        return 0.0
    scores = [offline_support(emb, claim, p) for p in passages if p.strip()]
    if len(scores) > 1:
        scores.append(offline_support(emb, claim, joined))
    return round(max(scores), 4)


def overruled_note(n: int) -> str:
    """The warning that says how many accepted claims the engine's score overruled."""
    return (
        f"The verifier model accepted {n} citation(s) that the engine's own support check "
        "found unsupported by the cited passage: they were removed, and a sentence left "
        "without support is marked [unsupported]."
    )


__all__ = [
    "FLOOR",
    "NOVEL",
    "SecondCheck",
    "novel_share",
    "overruled_note",
    "second_check",
    "supported",
    "without_instructions",
]
