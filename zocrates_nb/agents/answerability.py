"""What the pipeline does so an answer says what the library can and cannot answer.

* `question_parts`: a compound or comparative question split into its parts (`agents.parts`),
  with the library's catalogue resolving the names it uses; each part is searched and answered
  on its own, and a part without evidence is named, not hidden behind "no evidence".
* `cover_parts`: the synthesizer's evidence holds the best passages for every part (a single
  rerank against the whole question lets one part's passages crowd out another's).
* `elsewhere`: when the scope is narrower than the library and the scope's best passages match
  the question clearly worse than passages elsewhere in the library, the papers that hold them
  are named (with a scope that would include them). A library-wide search that costs the
  researcher's budget nothing; no text from outside the scope enters the answer.

Both engines go through here; the offline roles read the parts from their prompts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from zocrates_nb.agents.parts import Part, catalogue_of, decompose
from zocrates_nb.index import Index, SearchFilter
from zocrates_nb.retrieval.state import Evidence
from zocrates_nb.text import split_sentences, strip_reference_markers
from zocrates_nb.turn import Scope, Source

# Best-sentence similarity a passage outside the scope needs to be named, and by how much it
# must beat the scope's own best passage (calibrated on the dev sets' selection, collection
# and scope-mismatch questions: answerable scopes sit within ~0.05 of the library's best).
ELSEWHERE_FLOOR = 0.45
ELSEWHERE_MARGIN = 0.08
MAX_ELSEWHERE = 3
PART_PASSAGES = 3  # per part, guaranteed a place in the synthesizer's evidence


def question_parts(index: Index, goal: str) -> list[Part]:
    """The parts of the goal (none when it asks one thing)."""
    try:
        catalogue = catalogue_of(index.items())
    except Exception:  # an unreadable catalogue: decompose by the question's own names
        catalogue = None
    return decompose(goal, catalogue)


def cover_parts(
    ranked: list[Evidence],
    pool: Sequence[Evidence],
    parts: Sequence[Part],
    rank: Callable[[str, list[Evidence]], list[Evidence]],
    max_chunks: int,
) -> list[Evidence]:
    """`ranked` with each part's best passages (by `rank(part_text, pool)`) put in front when
    missing, then trimmed back to `max_chunks` from the end."""
    if not parts or not pool:
        return ranked
    have = {e.chunk_id for e in ranked}
    front: list[Evidence] = []
    for p in parts:
        mine = [e for e in pool if not p.items or e.item_key in p.items] or list(pool)
        for e in rank(p.text, mine)[:PART_PASSAGES]:
            if e.chunk_id not in have:
                have.add(e.chunk_id)
                front.append(e)
    if not front:
        return ranked
    out = list(ranked)
    # Interleave: the added passages go right after the passages already ranked highest.
    head = out[: max(1, max_chunks - len(front))]
    tail = out[len(head) :]
    merged = head + front + tail
    return merged[: max(max_chunks, len(head) + len(front))]


@dataclass
class Elsewhere:
    sources: list[Source] = field(default_factory=list)
    widen: Scope | None = None
    note: str = ""


def best_sentence_similarity(index: Index, query: str, texts: Sequence[str]) -> list[float]:
    """Per passage, 0.4 × whole-passage + 0.6 × best-sentence cosine similarity to `query`."""
    if not texts:
        return []
    sents: list[str] = []
    owner: list[int] = []
    for i, t in enumerate(texts):
        for s in split_sentences(strip_reference_markers(t)):
            if len(s.split()) >= 5:
                sents.append(s)
                owner.append(i)
    vecs = np.asarray(index.embedder.embed([query, *(t[:1500] for t in texts), *sents]))
    vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
    q = vecs[0]
    whole = vecs[1 : 1 + len(texts)] @ q
    top = [-1.0] * len(texts)
    for i, v in zip(owner, vecs[1 + len(texts) :] @ q, strict=True):
        top[i] = max(top[i], float(v))
    return [
        0.4 * float(w) + 0.6 * t if t > -1 else float(w) for w, t in zip(whole, top, strict=True)
    ]


def elsewhere(
    index: Index,
    goal: str,
    parts: Sequence[Part],
    scope: Scope,
    allowed: Sequence[str],
    where: str,
) -> Elsewhere:
    """Papers outside a narrower scope that bear on what the scope does not answer."""
    if scope.kind == "library" or not allowed:
        return Elsewhere()
    inside = set(allowed)
    queries = [p.text for p in parts] or [re.sub(r"\s*\(Follow-up.*$", "", goal, flags=re.S)]
    found: dict[str, tuple[float, Source]] = {}
    for q in queries:
        own = index.search(q, SearchFilter(item_keys=list(allowed)), limit=8, merge_twins=False)
        wide = [
            h for h in index.search(q, None, limit=16, merge_twins=False)
            if h.chunk.item_key not in inside
        ]
        if not wide:
            continue
        sims = best_sentence_similarity(
            index, q, [h.chunk.text for h in own] + [h.chunk.text for h in wide]
        )
        best_in = max(sims[: len(own)], default=0.0)
        for h, s in zip(wide, sims[len(own) :], strict=True):
            if s < ELSEWHERE_FLOOR or s < best_in + ELSEWHERE_MARGIN:
                continue
            c = h.chunk
            if c.item_key not in found or found[c.item_key][0] < s:
                item = index.item(c.item_key)
                src = Source(
                    item_key=c.item_key,
                    title=c.title or (item.title if item else ""),
                    authors=list(item.authors if item else []),
                    year=item.year if item else None,
                )
                found[c.item_key] = (s, src)
    if not found:
        return Elsewhere()
    ranked = sorted(found.values(), key=lambda x: x[0], reverse=True)
    top = ranked[0][0]
    sources = [src for s, src in ranked if s >= top - 0.06][:MAX_ELSEWHERE]
    widen = (
        Scope(items=[*scope.items, *(s.item_key for s in sources)])
        if scope.kind == "selection" and not scope.collections
        else Scope()
    )
    names = ", ".join(f"*{s.title}*" for s in sources)
    verb = "discusses" if len(sources) == 1 else "discuss"
    note = (
        f"**Elsewhere in your library:** {where} may not answer this; {names} in your library "
        f"{verb} it more directly — widen the scope to search "
        + ("it." if len(sources) == 1 else "them.")
    )
    return Elsewhere(sources=sources, widen=widen, note=note)


__all__ = [
    "ELSEWHERE_FLOOR",
    "ELSEWHERE_MARGIN",
    "Elsewhere",
    "best_sentence_similarity",
    "cover_parts",
    "elsewhere",
    "question_parts",
]
