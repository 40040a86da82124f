"""Retrieval pieces that need no index: asset ids, run state, evidence XML, authors."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from zocrates_nb.config import RetrievalSettings
from zocrates_nb.index.model import Chunk, Hit
from zocrates_nb.ingest.bundle import Asset, Section, Toc
from zocrates_nb.names import format_authors, last_name
from zocrates_nb.retrieval.assets import normalize_asset_ids, resolve_asset
from zocrates_nb.retrieval.evidence import format_evidence
from zocrates_nb.retrieval.joining import join_adjacent
from zocrates_nb.retrieval.rerank import filter_substantive, is_substantive, trim_to_words
from zocrates_nb.retrieval.state import (
    CompletionReport,
    Evidence,
    ExtensionRequest,
    RunState,
)
from zocrates_nb.turn import Scope

# ----------------------------------------------------------------------------- asset ids


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("[s3, s4]", ["s3", "s4"]),
        ('["s1", "s2"]', ["s1", "s2"]),
        ("['s1', 's2']", ["s1", "s2"]),
        ('"s1", "s2"', ["s1", "s2"]),
        ("S3", ["s3"]),
        ("s03", ["s3"]),
        ("s3-s5", ["s3", "s4", "s5"]),
        ("s3 to s5", ["s3", "s4", "s5"]),
        (["s2", "F1", "t02"], ["s2", "f1", "t2"]),
        ("s1 s2", ["s1", "s2"]),
        ("s2; s2, s2", ["s2"]),
        ("Abstract", ["abstract"]),
        ("summary", ["abstract"]),
        ("full", ["full"]),
        ("page 4", ["p4"]),
        ("Figure 2", ["figure 2"]),
        ("Table IV", ["table iv"]),
        ("section s3", ["s3"]),
        (None, []),
        ("", []),
    ],
)
def test_asset_ids_are_normalised_from_what_models_write(raw: object, expected: list[str]) -> None:
    assert normalize_asset_ids(raw) == expected


def _toc() -> Toc:
    return Toc(
        title="A Paper",
        abstract="We study things.",
        abstract_source="metadata",
        page_starts=[1, 20, 40],
        sections=[
            Section("s0", 0, None, "", 1, 1, 3, 20),
            Section("s1", 1, "1", "Introduction", 1, 4, 10, 100),
            Section("s2", 1, "2", "Model", 1, 11, 14, 30),
            Section("s3", 2, "2.1", "Encoder", 2, 15, 30, 200),
            Section("s4", 2, "2.2", "Decoder", 2, 31, 45, 150),
            Section("s5", 1, "3", "Results", 3, 46, 60, 120),
        ],
        figures=[Asset("f1", "Figure 1", "The model.", 2, 25, 25)],
        tables=[Asset("t1", "Table 2", "Scores.", 3, 50, 55, csv="a,b\n1,2\n")],
    )


def test_a_section_reads_with_its_subsections_and_labels_resolve() -> None:
    toc = _toc()
    s2 = resolve_asset(toc, "s2", 60)
    assert s2 is not None and (s2.line_start, s2.line_end) == (11, 45)
    assert s2.covers == ["s2", "s3", "s4"]
    fig = resolve_asset(toc, "figure 1", 60)
    assert fig is not None and fig.id == "f1" and fig.kind == "figure"
    tab = resolve_asset(toc, "table 2", 60)  # by printed label, not position
    assert tab is not None and tab.id == "t1" and tab.csv == "a,b\n1,2\n"
    assert resolve_asset(toc, "2.1", 60).id == "s3"  # type: ignore[union-attr]
    page = resolve_asset(toc, "p2", 60)
    assert page is not None and (page.line_start, page.line_end) == (20, 39)
    abstract = resolve_asset(toc, "abstract", 60)
    assert abstract is not None and abstract.text == "We study things."
    assert resolve_asset(toc, "s9", 60) is None
    assert resolve_asset(toc, "p7", 60) is None


# ----------------------------------------------------------------------------- run state


def _evidence(n: int, **kw: object) -> Evidence:
    base: dict[str, object] = {
        "chunk_id": f"DOC{n}:0001",
        "item_key": f"ITEM{n}",
        "attachment_key": f"DOC{n}",
        "title": f"Paper {n}",
        "authors": ["Ada Lovelace"],
        "year": 2000 + n,
        "section": "2 Method",
        "section_id": "s2",
        "chunk_type": "body",
        "text": "word " * 50,
        "words": 50,
        "line_start": 3,
        "line_end": 9,
        "page": 2,
        "tool": "search_corpus",
        "rank": n,
        "score": 0.5,
        "ranks": {"bm25": 1, "dense": 2},
    }
    base.update(kw)
    return Evidence.model_validate(base)


def test_state_round_trips_through_json_mid_run() -> None:
    st = RunState.new(
        RetrievalSettings(),
        goal="leader election",
        scope=Scope(items=["AAAA1111"]),
        allowed_keys=["AAAA1111"],
    )
    assert st.restricted and st.active_keys == ["AAAA1111"]
    st.add_evidence([_evidence(1), _evidence(2, csv="a,b\n1,2", chunk_type="table")])
    st.mark_seen(["DOC1:0001", "DOC1:0002"])
    st.mark_asset("DOC1:s2")
    st.tool_count = 4
    st.extension_request = ExtensionRequest(justification="need more", pass_number=1)
    st.report = CompletionReport(summary="done", gaps=["x"], source="agent")
    st.tool_log.append({"tool": "read_document", "args": {"asset_id": ["s2"]}, "status": "success"})
    data = st.to_json()
    text = json.dumps(data)  # what a checkpoint stores
    again = RunState.from_json(json.loads(text))
    assert again == st
    assert again.to_json() == data


def test_a_first_release_run_state_reads_into_one_scope_type() -> None:
    """A checkpoint snapshot of the first release kept a second scope type in the run state."""
    legacy = RunState.new(RetrievalSettings(), goal="g").to_json()
    for kind, items, active in (("selection", ["AAAA1111"], ["AAAA1111"]),
                                ("library", [], ["BBBB2222"])):  # fmt: skip
        legacy["scope"] = {"kind": kind, "item_keys": items or active, "collections": ["C"],
                           "allowed_keys": ["AAAA1111"]}  # fmt: skip
        st = RunState.from_json(legacy)
        assert st.scope == Scope(items=items, collections=["C"])
        assert st.allowed_keys == ["AAAA1111"] and st.active_keys == active
        assert RunState.from_json(st.to_json()) == st


def test_evidence_is_deduplicated_by_chunk_id_and_words_follow() -> None:
    st = RunState.new()
    assert st.add_evidence([_evidence(1), _evidence(1)]) == [_evidence(1)]
    assert st.words == 50
    st.drop_evidence({"DOC1:0001"})
    assert st.evidence == [] and st.words == 0


def test_extensions_scale_all_ceilings_twice_at_most() -> None:
    st = RunState.new()
    assert (st.budget, st.word_ceiling, st.max_rerank_chunks) == (10, 7500, 15)
    assert st.grant_extension()
    assert (st.budget, st.word_ceiling, st.max_rerank_chunks) == (15, 11250, 20)
    assert st.grant_extension()
    assert (st.budget, st.word_ceiling, st.max_rerank_chunks) == (20, 15000, 25)
    assert not st.grant_extension()
    assert st.extension_count == 2


# ----------------------------------------------------------------------------- evidence XML


@pytest.mark.parametrize(
    ("authors", "expected"),
    [
        ([], ""),
        (["Leslie Lamport"], "Lamport"),
        (["Diego Ongaro", "John Ousterhout"], "Ongaro & Ousterhout"),
        (["Ashish Vaswani", "Noam Shazeer", "Niki Parmar"], "Vaswani et al."),
        (["Lamport, Leslie"], "Lamport"),
        (["Robbert van Renesse", "Fred B. Schneider"], "van Renesse & Schneider"),
    ],
)
def test_authors_are_formatted_by_last_name(authors: list[str], expected: str) -> None:
    assert format_authors(authors) == expected


def test_last_name_drops_suffixes() -> None:
    assert last_name("Guy L. Steele Jr.") == "Steele"


def test_evidence_xml_is_well_formed_escaped_and_has_no_internal_keys() -> None:
    items = [
        _evidence(1, text='Raft uses <joint consensus> & "majorities"', title='Raft & "Paxos"'),
        _evidence(
            2,
            chunk_type="table",
            section_id="t1",
            section="Table 2",
            csv="n,ms\n3,<5\n",
            text="Table 2: latency",
            authors=["A B", "C D", "E F"],
        ),
        _evidence(
            3,
            chunk_type="figure",
            section_id="f1",
            label="Figure 1",
            caption="The architecture",
            text="Figure 1: The architecture",
            authors=[],
        ),
    ]
    xml = format_evidence(items)
    root = ET.fromstring(xml)
    assert root.tag == "retrieved_evidence"
    chunks = root.findall("chunk")
    assert [c.get("index") for c in chunks] == ["1", "2", "3"]
    first = chunks[0]
    assert first.get("title") == 'Raft & "Paxos"'
    assert first.get("authors") == "Lovelace"
    assert first.get("year") == "2001"
    assert first.get("section") == "2 Method"
    assert first.get("type") == "body"
    assert '<joint consensus> & "majorities"' in (first.text or "")
    assert chunks[1].get("authors") == "B et al."
    assert chunks[1].find("table_csv") is not None
    assert "3,<5" in (chunks[1].find("table_csv").text or "")  # type: ignore[union-attr]
    figure = chunks[2].find("figure")
    assert figure is not None and figure.text == "The architecture"
    assert chunks[2].get("authors") is None
    for leaked in ("DOC1", "ITEM1", ":0001", "0.5", "search_corpus", "score"):
        assert leaked not in xml


# ----------------------------------------------------------------------------- substantive filter


def test_substantive_filter_drops_frontmatter_toc_and_yaml_but_never_everything() -> None:
    body = _evidence(1)
    front = _evidence(2, chunk_type="frontmatter", section="", section_id="s0")
    s0 = _evidence(3, chunk_id="DOC3:s0", section_id="s0", tool="read_document")
    toc = _evidence(4, section="Table of Contents")
    numbered_toc = _evidence(5, section="0 Contents")
    yaml = _evidence(6, text="---\ntitle: X\nauthors: Y\n---\n")
    printed_toc = _evidence(7, section="Preface", text="\n".join(
        f"{n} Chapter about topic {n} {'.' * 8} {n * 7}" for n in range(1, 9)))
    cases = (body, front, s0, toc, numbered_toc, yaml, printed_toc)
    assert [is_substantive(e) for e in cases] == [True] + [False] * 6
    assert filter_substantive([front, body, toc]) == [body]
    assert filter_substantive([front, toc]) == [front, toc]  # nothing left: keep the original
    prose = "The leader sends heartbeats to every follower. " * 5
    # A paper without early headings (a letter, an OCR scan): its s0 is its text, evidence.
    letter = _evidence(9, chunk_id="DOC9:0002", section="", section_id="s0", text=(
        "In this letter we extend the above ideas to find a pair of segments. The similarity "
        "measure used here allows for arbitrary length deletions and insertions. The pair of "
        "segments with maximum similarity is found by first locating the maximum element."))
    title_page = _evidence(10, chunk_id="DOC10:0001", section="", section_id="s0", text=(
        "Identification of Common Molecular Subsequences\n\nT. F. Smith and M. S. Waterman\n\n"
        "Los Alamos Scientific Laboratory, P.O. Box 1663, Los Alamos N. Mex. 87545, U.S.A."))
    assert is_substantive(letter) and not is_substantive(title_page)
    with_yaml = _evidence(8, text=f"---\ntitle: Raft\n---\n{prose}")
    [kept] = filter_substantive([with_yaml])
    assert kept.text == prose.strip() and kept.words == 35


def test_trim_keeps_order_and_cuts_to_the_word_ceiling() -> None:
    items = [_evidence(i, chunk_id=f"C{i}", text="w " * 300, words=300) for i in range(5)]
    kept = trim_to_words(items, 1000)
    assert [e.chunk_id for e in kept] == ["C0", "C1", "C2", "C3"]
    assert sum(e.words for e in kept) == 1000
    assert kept[-1].text.endswith("…")
    assert [e.chunk_id for e in trim_to_words(items, 650)] == ["C0", "C1"]  # 50 left: no stub


def test_outline_names_s0_by_what_it_holds() -> None:
    from zocrates_nb.retrieval.outline import compact_outline

    toc = _toc()
    assert "- [s0] Frontmatter (~20 words)" in compact_outline(toc, "DOC", "PARENT")
    # A paper whose first heading comes late (a letter, an OCR scan): s0 holds its text.
    toc.sections = [Section("s0", 0, None, "", 1, 1, 64, 815),
                    Section("s1", 1, None, "References", 4, 65, 73, 152)]
    outline = compact_outline(toc, "DOC", "PARENT")
    assert "- [s0] Text before the first heading (~815 words)" in outline


# ----------------------------------------------------------------------------- joining


def _hit(n: int, *, doc: str = "D", section: str = "s3", ctype: str = "body", words: int = 100,
         page: int = 1) -> Hit:
    text = " ".join(f"w{n}x{i}" for i in range(words))
    chunk = Chunk(chunk_id=f"{doc}:{n:04d}", item_key="I" + doc, attachment_key=doc,
                  line_start=10 * n, line_end=10 * n + 8, section="3 Method", section_id=section,
                  chunk_type=ctype, text=text, page=page, page_end=page)
    return Hit(chunk=chunk, score=1.0 / (n + 1), ranks={"bm25": n})


def test_continuations_join_their_passage_best_candidate_first_within_the_budget() -> None:
    top = [_hit(5, page=2), _hit(20, doc="E")]
    rest = [_hit(30, doc="E", ctype="table"), _hit(21, doc="E", section="s4"), _hit(4),
            _hit(6, page=3), _hit(40), _hit(7, page=3)]
    got = join_adjacent(top + rest, limit=2)
    assert [p.hit.chunk.chunk_id for p in got] == ["D:0005", "E:0020"]  # ranks and order kept
    # 4 and 6 continue chunk 5, and 7 continues 6 once 6 has joined; a table, another section
    # and a chunk far away never join.
    assert got[0].chunk_ids == ["D:0005", "D:0004", "D:0006", "D:0007"]
    joined = got[0].hit.chunk
    assert (joined.line_start, joined.line_end, joined.page, joined.page_end) == (40, 78, 1, 3)
    assert joined.text.startswith("w4x0") and joined.text.endswith("w7x99")
    assert joined.text.index("w5x0") < joined.text.index("w6x0")  # document order
    assert got[1].chunk_ids == ["E:0020"] and got[1].hit is top[1]
    # The budget: characters of everything returned, then the run's words left.
    size = sum(len(h.chunk.text) for h in top)
    one = len(rest[2].chunk.text) + 2
    assert join_adjacent(top + rest, 2, budget=size + one)[0].chunk_ids == ["D:0005", "D:0004"]
    assert join_adjacent(top + rest, 2, budget=size + one - 1)[0].chunk_ids == ["D:0005"]
    assert join_adjacent(top + rest, 2, words_left=300)[0].chunk_ids == ["D:0005", "D:0004"]
    assert join_adjacent(top + rest, 2, words_left=299)[0].chunk_ids == ["D:0005"]
    # In a run, continuations at most double the words asked for (the other searches of the run,
    # each part of a compound question, keep their share): chunks of 100 words, 2 returned.
    assert len(join_adjacent(top + rest, 2, words_left=10_000)[0].chunk_ids) == 3
