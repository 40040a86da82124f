"""Citations: leaked plumbing stripped, occurrences found, unsupported ids pruned in place,
markers renumbered, and every retrieved paper in exactly one tier of sources."""

from __future__ import annotations

import pytest

from zocrates_nb.agents import citations as cit
from zocrates_nb.agents.citations import Verdict
from zocrates_nb.retrieval.state import Evidence


def ev(key: str, n: int, text: str, title: str = "") -> Evidence:
    return Evidence(
        chunk_id=f"A{key}:{n:04d}",
        item_key=key,
        attachment_key=f"A{key}",
        title=title or f"Paper {key}",
        authors=["Ada Lovelace"],
        year=2020,
        section="2 Design",
        text=text,
        words=len(text.split()),
    )


def test_sanitize_strips_keys_chunk_ids_and_key_tags() -> None:
    text = (
        'As [Key: RAFTKEY2] "Raft" shows (RAFTKEY2: "Understandable Consensus"), leaders win '
        "elections [1]. See chunk ARAFTKEY2:0003 and RAFTKEY2:s4 [Attachment Key: ARAFTKEY2]. "
        "The [Chunk 2] passage agrees."
    )
    out = cit.sanitize(text, keys={"RAFTKEY2", "ARAFTKEY2"}, chunk_ids={"ARAFTKEY2:0003"})
    assert "RAFTKEY2" not in out and "Key:" not in out and ":0003" not in out
    assert '("Understandable Consensus")' in out
    assert "[1]" in out and "[2]" in out  # `[Chunk 2]` becomes a plain citation
    assert "  " not in out


def test_occurrences_take_the_sentence_around_the_marker() -> None:
    text = (
        "Raft elects leaders with random timeouts [1]. Logs are replicated [2, 3].\n\n"
        "- A list item [4]"
    )
    occs = cit.find_occurrences(text)
    assert [o.ids for o in occs] == [[1], [2, 3], [4]]
    assert occs[0].claim == "Raft elects leaders with random timeouts."
    assert occs[1].claim == "Logs are replicated."
    assert occs[2].claim == "A list item"
    # Figure and table references are not citations; ranges expand.
    assert cit.find_occurrences("As Table [2] shows") == []
    assert cit.find_occurrences("Both agree [2-4].")[0].ids == [2, 3, 4]


def test_pruning_in_place_and_renumbering() -> None:
    text = "Claim one [1, 2]. Claim two [2]. Claim three [3]."
    occs = cit.find_occurrences(text)
    keep = {(0, 1): True, (0, 2): False, (1, 2): False, (2, 3): True}
    pruned, n, marked = cit.apply_verdicts(text, occs, keep, n_evidence=3)
    # A sentence whose citations all fail keeps a visible mark, never a silent de-citation.
    assert pruned == "Claim one [1]. Claim two [unsupported]. Claim three [3]."
    assert n == 2 and marked == [1]
    renumbered, mapping = cit.renumber(pruned)
    assert renumbered == "Claim one [1]. Claim two [unsupported]. Claim three [2]."
    assert mapping == {1: 1, 3: 2}
    # Ids beyond the evidence are dropped even without a verdict.
    out, n, _ = cit.apply_verdicts("X [9].", cit.find_occurrences("X [9]."), {}, n_evidence=3)
    assert out == "X [unsupported]." and n == 1


def test_two_tiers_hold_every_retrieved_paper_exactly_once() -> None:
    ranked = [
        ev("RAFTKEY2", 1, "Raft elects a leader.", "Raft"),
        ev("GARDNKY2", 1, "Tomatoes need sun.", "Tomatoes"),
        ev("RAFTKEY2", 2, "Entries commit on a majority.", "Raft"),
    ]
    gathered = [*ranked, ev("BMKEY234", 1, "BM25 weights terms.", "BM25")]
    text = "Leaders are elected [1, 2] and entries commit on a majority [3]."
    occs = cit.find_occurrences(text)
    verdicts = {
        (0, 1): Verdict(True, 0.93),
        (0, 2): Verdict(False, 0.04),
        (1, 3): Verdict(True, 0.88),
    }
    answer = cit.finish(text, occs, verdicts, ranked, gathered)
    assert answer.text == "Leaders are elected [1] and entries commit on a majority [2]."
    assert [(s.n, s.numbers, s.title, s.tier) for s in answer.cited_sources] == [
        (1, [1, 2], "Raft", "cited")]  # two passages of one paper: one entry, both numbers
    others = {s.title for s in answer.other_sources}
    assert others == {"Tomatoes", "BM25"}
    cited_keys = {s.item_key for s in answer.cited_sources}
    other_keys = [s.item_key for s in answer.other_sources]
    assert not cited_keys & set(other_keys) and len(other_keys) == len(set(other_keys))
    assert cited_keys | set(other_keys) == {e.item_key for e in gathered}
    assert [(c.n, c.chunk_id, c.support) for c in answer.citations] == [
        (1, "ARAFTKEY2:0001", 0.93),
        (2, "ARAFTKEY2:0002", 0.88),
    ]
    assert answer.support[2] == pytest.approx(0.04)  # the pruned one is recorded too


def test_all_citations_failing_leaves_no_cited_tier() -> None:
    ranked = [ev("RAFTKEY2", 1, "Raft elects a leader.", "Raft")]
    text = "The moon is made of cheese [1]."
    occs = cit.find_occurrences(text)
    answer = cit.finish(text, occs, {(0, 1): Verdict(False, 0.01)}, ranked, ranked)
    assert answer.text == "The moon is made of cheese [unsupported]."
    assert answer.unsupported == ["The moon is made of cheese."]
    assert answer.refuted == {1} and answer.verified is True  # its evidence row is flagged
    assert answer.cited_sources == [] and [s.title for s in answer.other_sources] == ["Raft"]


def test_offline_support_score_separates_quotes_from_unrelated_claims() -> None:
    from zocrates_nb.agents.offline import OfflineEngine

    engine = OfflineEngine.shared(None)
    passage = (
        "If a lock becomes free because the holder has failed or become inaccessible, the "
        "lock server will prevent other clients from claiming the lock for a period called "
        "the lock-delay. Clients may specify any lock-delay up to some bound, currently one "
        "minute."
    )
    quote = engine.support(
        "Clients may specify any lock-delay up to some bound, currently one minute.", passage
    )
    paraphrase = engine.support(
        "After a lock holder fails, other clients must wait for a lock-delay before taking it.",
        passage,
    )
    unrelated = engine.support("Tomato plants need warm soil and deep watering.", passage)
    assert quote == 1.0
    assert paraphrase > 0.5 > unrelated


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("timeouts¹.", "timeouts [1]."),
        ("timeouts.² Then", "timeouts. [2] Then"),
        ("timeouts¹⁻³.", "timeouts [1, 2, 3]."),
        ("votes [1, 2, and 3].", "votes [1, 2, 3]."),
        ("votes [S1, S2].", "votes [1, 2]."),
        ("votes [citation:4].", "votes [4]."),
        ("votes (Sources: 1, 2).", "votes [1, 2]."),
        ("votes [2](https://example.com/a).", "votes [2]."),
        ("votes [^3^].", "votes [3]."),
        # Numbers that are not citations stay as they are.
        ("an area of 10² m and 5 km² only", "an area of 10² m and 5 km² only"),
        ("where x^{2} grows", "where x^{2} grows"),
        ("in step (2) and Table [3]", "in step (2) and Table [3]"),
    ],
)
def test_citation_forms_read_and_numbers_that_are_not_citations_kept(
    written: str, read: str
) -> None:
    from zocrates_nb.agents.citation_forms import read_forms

    assert read_forms(written) == read


PAPERS = [(["Diego Ongaro", "John Ousterhout"], 2014), (["Lamport, Leslie"], 1998),
          (["Diego Ongaro", "John Ousterhout"], 2014)]  # fmt: skip


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("Leaders time out (Ongaro and Ousterhout, 2014).", "Leaders time out [1, 3]."),
        ("Hard (Lamport 1998; Ongaro et al., 2014).", "Hard [2, 1, 3]."),
        ("Ongaro et al. (2014) show it.", "Ongaro et al. [1, 3] show it."),
        ("As [Lamport, 1998, p. 5] says.", "As [2] says."),
        # A paper the answer was not given: a citation that names no passage (flagged).
        ("Chubby locks (Burrows, 2006).", "Chubby locks [0]."),
        ("Burrows et al. (2006) built it.", "Burrows et al. [0] built it."),
        # Parentheses that only look alike stay as written.
        ("It began (March 2019).", "It began (March 2019)."),
        ("Burrows (2006) built it.", "Burrows (2006) built it."),
        ("The result (Table 2, 2019) holds.", "The result (Table 2, 2019) holds."),
    ],
)
def test_author_year_citations_are_read_into_the_passages_of_their_paper(
    written: str, read: str
) -> None:
    from zocrates_nb.agents.citation_forms import read_author_year

    assert read_author_year(written, PAPERS) == read


def test_a_writer_citing_only_by_number_keeps_the_papers_own_brackets() -> None:
    """The offline engine quoted "Points reflect ResNets with depths of {50, 101, 152} …" and
    the answer showed "depths of [unsupported]": the set was read as a citation form and
    failed the check. Its quotes are the papers' words; it cites by `[n]` alone."""
    quote = ("- Points reflect ResNets with depths of {50, 101, 152} and width multipliers of "
             "{1×, 2×}, as noted before (ref. 4) and in timeouts¹. [1]")
    kept = cit.sanitize(quote, forms=False)
    assert "{50, 101, 152}" in kept and "(ref. 4)" in kept and "timeouts¹" in kept
    assert [o.ids for o in cit.find_occurrences(kept, 1)] == [[1]]
    read = cit.sanitize(quote)  # a model's answer: every form it may cite in is read
    assert "{50, 101, 152}" not in read and "[4]" in read
