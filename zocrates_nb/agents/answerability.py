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

Both engines go through here; the offline roles get the parts in their briefs. Passages are
judged by their stored window vectors (`retrieval.vectors`): the check of the wider library
embeds nothing but the question.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from zocrates_nb.agents.parts import Part, core_goal, decompose
from zocrates_nb.index import Index
from zocrates_nb.index.library_names import names_for
from zocrates_nb.index.names import Catalogue
from zocrates_nb.retrieval.scope_words import scope_free
from zocrates_nb.retrieval.state import Evidence
from zocrates_nb.retrieval.vectors import PassageVectors
from zocrates_nb.turn import Scope, Source

# How much better the best paper outside the scope must stand in the library-wide search than
# the scope's best paper for the scope to be passed over (each paper scored by its passages
# among the top 20: rank weight × (0.5 + stored-window cosine)), and the least it must score.
# Calibrated on the dev sets' scoped questions: scopes that answer stand at 1.1× the best
# outside paper or better; scopes that do not, at a 30th of it or less. The papers then named
# are those whose best passage is within 0.6 of the best one's.
ELSEWHERE_RATIO = 2.0
ELSEWHERE_FLOOR = 0.5
# Where to look is said on less than that another paper answers: the closest papers outside,
# named when the scope answers nothing or only comes near.
NEAREST_FLOOR = 0.4
WIDE_DEPTH = 20
MAX_ELSEWHERE = 3
PART_PASSAGES = 3  # per part, guaranteed a place in the synthesizer's evidence


def catalogue_for(index: Index) -> Catalogue | None:
    """The library's names (`index.library_names.names_for`)."""
    return names_for(index)


def question_parts(index: Index, goal: str) -> list[Part]:
    """The parts of the goal (none when it asks one thing)."""
    return decompose(goal, catalogue_for(index))


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
    # The best titles outside the scope, none clearly better than those inside: named when
    # the scope has nothing on the question, so the researcher knows where to look.
    nearest: list[str] = field(default_factory=list)


def elsewhere(
    index: Index,
    goal: str,
    parts: Sequence[Part],
    scope: Scope,
    allowed: Sequence[str],
    vectors: PassageVectors | None = None,
) -> Elsewhere:
    """Papers outside a narrower scope that answer what the scope does not: in the
    library-wide search for the question (or each part), a paper outside the scope that
    stands clearly above every paper inside it."""
    if scope.kind == "library" or not allowed:
        return Elsewhere()
    vectors = vectors or PassageVectors(index)
    inside = set(allowed)
    queries = [scope_free(p.text) for p in parts] or [scope_free(core_goal(goal) or goal)]
    found: dict[str, tuple[float, str]] = {}  # item key → (paper score, its best section)
    near: dict[str, float] = {}
    for q in queries:
        hits = index.search(q, None, limit=WIDE_DEPTH, merge_twins=False)
        sims = vectors.chunk_similarity(q, [h.chunk.chunk_id for h in hits])
        score: dict[str, float] = {}  # a paper's passages together: how much it is on the topic
        best: dict[str, float] = {}  # its best passage: whether it holds the answer
        section: dict[str, tuple[float, str]] = {}
        for rank, (h, s) in enumerate(zip(hits, sims, strict=True), 1):
            key = h.chunk.item_key
            weight = (0.5 + (s or 0.0)) / (2 + rank)
            score[key] = score.get(key, 0.0) + weight
            best[key] = max(best.get(key, 0.0), weight)
            if s is not None and s > section.get(key, (-1.0, ""))[0]:
                section[key] = (s, h.chunk.section)
        best_in = max((v for k, v in score.items() if k in inside), default=0.0)
        outside = sorted(((v, k) for k, v in score.items() if k not in inside), reverse=True)
        if not outside:
            continue
        top = outside[0][0]
        for v, key in outside[:2]:  # named only where the scope answers nothing or only nears
            if v >= max(NEAREST_FLOOR, 0.8 * top):
                near[key] = max(v, near.get(key, 0.0))
        if top < ELSEWHERE_FLOOR or top < ELSEWHERE_RATIO * best_in:
            continue  # the scope stands as well as the rest of the library
        # Which papers answer: those holding the best single passages. The paper that names
        # the question's subject most often ("Bigtable" in "which gap in Bigtable was
        # Percolator built to fill?") gathers the most passages, not the one that answers.
        holders = sorted((k for k in score if k not in inside), key=lambda k: -best[k])
        for key in holders[:MAX_ELSEWHERE]:
            if best[key] < 0.6 * best[holders[0]]:
                break
            if key not in found or found[key][0] < best[key]:
                found[key] = (best[key], section.get(key, (0.0, ""))[1])
    if not found:
        ranked = sorted(near, key=lambda k: -near[k])
        return Elsewhere(nearest=[it.title for k in ranked if (it := index.item(k)) is not None])
    chosen = sorted(found.items(), key=lambda kv: kv[1][0], reverse=True)[:MAX_ELSEWHERE]
    sources: list[Source] = []
    lines: list[str] = []
    for key, (_, sec) in chosen:
        item = index.item(key)
        src = Source(
            item_key=key,
            title=item.title if item else key,
            authors=list(item.authors if item else []),
            year=item.year if item else None,
        )
        sources.append(src)
        lines.append(f"*{src.title}*" + (f", which covers it in § {sec}" if sec else ""))
    note = f"**Elsewhere in your library:** {'; '.join(lines)}."
    # "Search the whole library": the same question once over everything, the scope kept.
    return Elsewhere(sources=sources, widen=Scope(), note=note)


__all__ = [
    "ELSEWHERE_FLOOR",
    "ELSEWHERE_RATIO",
    "Elsewhere",
    "catalogue_for",
    "cover_parts",
    "elsewhere",
    "question_parts",
]
