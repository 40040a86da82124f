"""The retrieval tools on the real 37-paper Zotero library (indexed once per session).

Keys are the Zotero keys of ../shared/corpus/zotero-library: the Raft paper (with a short child
note), the Transformer paper (a PDF, an HTML snapshot and a long reading note).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from zocrates_nb.config import RetrievalSettings
from zocrates_nb.retrieval import RunState, Toolkit, allowed_keys, bind
from zocrates_nb.retrieval.assets import section_span
from zocrates_nb.retrieval.outline import MAX_SECTIONS
from zocrates_nb.turn import Scope

RAFT, RAFT_PDF, RAFT_NOTE = "B4BVDRMA", "YH7LQ4ZJ", "YJWHUYBU"
TRANSFORMER, TRANSFORMER_PDF, TRANSFORMER_HTML, TRANSFORMER_NOTE = (
    "TEN7CNGG", "4Q4PQA5L", "48DQV3FB", "QLG29MTK")
ZOOKEEPER = "DD642LQR"

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def index(corpus_index: Any) -> Any:
    """The session's corpus index (conftest's `corpus_index` holds it with its report)."""
    return corpus_index.index


def _kit(index: Any, **settings: Any) -> Toolkit:
    return Toolkit(index, RunState.new(RetrievalSettings(**settings)))


def _section_id(index: Any, doc_key: str, title_part: str) -> str:
    toc = index.bundle(doc_key).toc
    return next(s.id for s in toc.sections if title_part.lower() in s.title.lower())


# ----------------------------------------------------------------------------- budget


def test_calls_nine_and_ten_carry_notices_and_eleven_is_refused(index: Any) -> None:
    kit = _kit(index)
    results = [kit.search_corpus(f"leader election term {n}", limit=1) for n in range(1, 9)]
    assert all(r.status == "success" and "Notice" not in (r.notice or "") for r in results)
    ninth = kit.get_document_toc(RAFT)
    assert ninth.notice.splitlines()[-1] == (
        "[Notice: 9/10 retrieval tool calls used (1 call remaining). Plan your final retrieval, "
        "request an extension via `request_search_extension`, or prepare to call "
        "`conclude_search`.]"
    )
    tenth = kit.read_document(RAFT, "abstract")
    assert tenth.status == "success"
    assert tenth.notice.splitlines()[-1] == (
        "[Notice: Retrieval tool budget exhausted (10/10). Call `conclude_search` to synthesize, "
        "or call `request_search_extension` to request additional search allowance.]"
    )
    eleventh = kit.search_corpus("log replication")
    assert eleventh.status == "budget_exhausted"
    assert "conclude_search" in eleventh.message
    assert kit.state.tool_count == 10
    # Neither conclude_search nor an extension request counts against the budget.
    asked = kit.request_search_extension("need Zab too", "Raft covered", ["Zab"])
    assert asked.status == "success"
    assert kit.state.extension_request is not None
    assert kit.state.extension_request.pass_number == 1
    assert kit.state.tool_count == 10
    # Granting the extension scales the budget: calls 11..15, notices at 14 and 15.
    assert kit.state.grant_extension()
    for _ in range(3):
        assert kit.search_corpus("atomic broadcast", limit=1).status == "success"
    assert "14/15 retrieval tool calls used (1 call remaining)" in kit.search_corpus(
        "primary backup", limit=1).notice
    assert "budget exhausted (15/15)" in kit.search_corpus("quorum", limit=1).notice
    assert kit.search_corpus("quorum again").status == "budget_exhausted"
    assert kit.request_search_extension("more", "", []).pass_number == 2


def test_word_ceiling_trips_the_breaker_and_full_reads_that_would_blow_it_are_refused(
    index: Any,
) -> None:
    kit = _kit(index, word_ceiling=1500)
    full = kit.read_document(RAFT, "full")
    assert full.status == "success" and full.assets == []
    assert "Full text refused" in full.notice and "sections" in full.notice
    toc = index.bundle(RAFT_PDF).toc
    big = max((s for s in toc.sections if s.level == 1), key=lambda s: s.words)
    first = kit.read_document(RAFT, [big.id])
    assert first.status == "success"
    assert kit.state.words >= 1500 > 0
    assert "word ceiling reached" in first.notice.lower()
    refused = kit.search_corpus("leader election")
    assert refused.status == "budget_exhausted"
    assert "word ceiling" in refused.message
    assert kit.state.tool_count == 2  # the refused call was not run


# ----------------------------------------------------------------------------- dedup


def test_a_read_section_never_comes_back_from_search(index: Any) -> None:
    kit = _kit(index)
    sid = _section_id(index, RAFT_PDF, "membership")
    read = kit.read_document(RAFT, sid)
    [asset] = read.assets
    assert asset.asset_id == sid and asset.title.startswith("In Search of an")
    a, b, _ = section_span(index.bundle(RAFT_PDF).toc,
                           index.bundle(RAFT_PDF).toc.asset(sid))
    overlapping = set(index.chunks_intersecting(RAFT_PDF, a, b))
    assert overlapping and overlapping <= set(kit.state.seen_chunk_ids)
    # Search for the section's own words: none of its chunks may return.
    sentence = " ".join(asset.text.split()[40:70])
    found = kit.search_corpus(sentence, item_key=RAFT, limit=20)
    assert found.status == "success"
    assert not overlapping & {r.chunk_id for r in found.results}
    # Without the exclusion they are exactly what that query finds first.
    fresh = _kit(index).search_corpus(sentence, item_key=RAFT, limit=3)
    assert fresh.results[0].chunk_id in overlapping


def test_assets_are_read_once(index: Any) -> None:
    kit = _kit(index)
    first = kit.read_document(RAFT, "s1, s2")
    assert [x.asset_id for x in first.assets] == ["s1", "s2"]
    again = kit.read_document(RAFT_PDF, '["S01", "s2"]')  # attachment key, other spelling
    assert again.assets == []
    assert again.notice.splitlines()[0] == (
        f"[All requested assets for {RAFT_PDF} (s1, s2) were already retrieved in this session.]"
    )
    mixed = kit.read_document(RAFT, ["s2", "s3"])
    assert [x.asset_id for x in mixed.assets] == ["s3"]
    assert "not repeated: s2" in mixed.notice
    ids = [e.chunk_id for e in kit.state.evidence]
    assert len(ids) == len(set(ids))
    assert {f"{RAFT_PDF}:s1", f"{RAFT_PDF}:s2", f"{RAFT_PDF}:s3"} <= set(kit.state.seen_assets)


@pytest.mark.parametrize("form", ["[s1, s2]", '["s1", "s2"]', '"s1", "s2"', "S1 s02", "s1-s2",
                                  ["s1", "s2"]])
def test_every_asset_id_form_reads_the_same_sections(index: Any, form: Any) -> None:
    got = _kit(index).read_document(RAFT, form)
    assert [a.asset_id for a in got.assets] == ["s1", "s2"]
    assert got.unresolved_asset_ids == []


def test_unknown_asset_ids_are_reported_not_dropped(index: Any) -> None:
    got = _kit(index).read_document(RAFT, "s1, s999, f77")
    assert [a.asset_id for a in got.assets] == ["s1"]
    assert got.unresolved_asset_ids == ["s999", "f77"]
    assert "s999, f77" in got.notice


def test_pages_figures_tables_and_the_abstract_can_be_read(index: Any) -> None:
    kit = _kit(index)
    toc = index.bundle(TRANSFORMER_PDF).toc
    page = kit.read_document(TRANSFORMER, page=3)
    [p3] = page.assets
    assert p3.asset_id == "p3" and p3.page == 3 and p3.words > 100
    assert toc.figures and toc.tables
    fig_table = kit.read_document(TRANSFORMER, [toc.figures[0].id, toc.tables[0].id])
    kinds = {a.type for a in fig_table.assets}
    assert kinds == {"figure", "table"}
    table = next(a for a in fig_table.assets if a.type == "table")
    if toc.tables[0].csv:
        assert table.csv == toc.tables[0].csv
    abstract = kit.read_document(TRANSFORMER, "summary")
    [ab] = abstract.assets
    assert "attention" in ab.text.lower()
    evidence = {e.chunk_id: e for e in kit.state.evidence}
    assert all(e.title == "Attention Is All You Need" for e in evidence.values())
    assert all(e.authors and e.year == 2017 for e in evidence.values())


# ----------------------------------------------------------------------------- documents


def test_a_parent_key_resolves_to_its_pdf_and_names_the_siblings(index: Any) -> None:
    kit = _kit(index)
    raft = kit.get_document_toc(RAFT)
    assert raft.doc_key == RAFT_PDF
    assert raft.outline.startswith(
        f'### [Key: {RAFT_PDF}, Parent Key: {RAFT}] "In Search of an Understandable Consensus')
    assert RAFT_NOTE in raft.notice
    transformer = kit.get_document_toc(TRANSFORMER)
    assert transformer.doc_key == TRANSFORMER_PDF  # pdf > html
    assert TRANSFORMER_NOTE in transformer.notice  # the HTML is a link: nothing to read
    assert TRANSFORMER_HTML not in transformer.notice
    by_attachment = kit.get_document_toc(RAFT_PDF)
    assert by_attachment.doc_key == RAFT_PDF and by_attachment.notice is None


def test_a_note_key_reads_the_note(index: Any) -> None:
    kit = _kit(index)
    toc = kit.get_document_toc(TRANSFORMER_NOTE)
    assert toc.doc_key == TRANSFORMER_NOTE and toc.parent_key == TRANSFORMER
    assert toc.outline.startswith(f"### [Key: {TRANSFORMER_NOTE}, Parent Key: {TRANSFORMER}]")
    note = kit.read_document(TRANSFORMER_NOTE, "full")
    assert note.status == "success" and note.assets
    text = " ".join(a.text for a in note.assets)
    assert len(text.split()) > 50
    assert {e.chunk_type for e in kit.state.evidence} == {"note"}
    raft_note = kit.read_document(RAFT_NOTE.lower(), "full")  # keys in any case
    assert "raft" in " ".join(a.text for a in raft_note.assets).lower()


def test_outline_folds_long_documents_and_lists_assets(index: Any) -> None:
    kit = _kit(index)
    folded = listed_all = 0
    for item in index.items():
        result = kit.document_toc(item.key)
        if result.status != "success":
            continue
        toc = index.bundle(result.doc_key).toc
        outline = result.outline
        shown = re.findall(r"^\s*- \[(s\d+)\] .* \(~\d+ words\)$", outline, re.MULTILINE)
        body = [s for s in toc.sections if s.id != "s0"]
        if len(body) > MAX_SECTIONS:
            folded += 1
            assert [s for s in shown if s != "s0"] == [s.id for s in body if s.level <= 2]
        else:
            listed_all += 1
            assert [s for s in shown if s != "s0"] == [s.id for s in body]
        for name, assets, limit in (("figures", toc.figures, 8), ("tables", toc.tables, 6)):
            letter = name[0]
            if len(assets) > limit:
                assert (f"{len(assets)} {name} present ([{letter}1] to [{letter}{len(assets)}])"
                        in outline)
            else:
                assert len(re.findall(rf"^  - \[{letter}\d+\] ", outline, re.MULTILINE)) == len(
                    assets)
    assert folded and listed_all  # the corpus has both kinds of paper
    raft = kit.document_toc(RAFT).outline
    assert "  - [s8] 5.2 Leader election (~" in raft  # level 2 under "5 The Raft…"


def test_outline_shows_the_metadata_abstract_and_stays_compact(index: Any) -> None:
    kit = _kit(index)
    outline = kit.document_toc(ZOOKEEPER).outline
    toc = index.bundle(kit.document_toc(ZOOKEEPER).doc_key).toc
    has_abstract_heading = any(s.title.lower().strip(" .:") == "abstract" for s in toc.sections)
    assert ("- [abstract] Abstract / Summary (~" in outline) == (
        bool(toc.abstract) and not has_abstract_heading)
    assert len(outline.split()) < 400


# ----------------------------------------------------------------------------- search


def test_search_results_carry_attribution_and_join_the_evidence(index: Any) -> None:
    kit = _kit(index)
    got = kit.search_corpus("how does a leader replicate log entries to followers", limit=5)
    assert got.status == "success" and len(got.results) == 5
    top = got.results[0]
    for field in ("title", "authors", "year", "section", "chunk_id", "item_key",
                  "attachment_key", "chunk_type", "text"):
        assert field in top.model_dump()
    assert top.item_key == RAFT
    assert [e.chunk_id for e in kit.state.evidence] == [r.chunk_id for r in got.results]
    # Seen: every passage returned, and every continuation joined to one (joining.py).
    seen = set(kit.state.seen_chunk_ids)
    assert {r.chunk_id for r in got.results} <= seen
    texts = " ".join(r.text for r in got.results)
    assert all(index.chunk(c).text in texts for c in seen)
    again = kit.search_corpus("how does a leader replicate log entries to followers", limit=5)
    assert not {r.chunk_id for r in again.results} & seen


def test_the_passage_that_continues_a_hit_joins_it_within_the_character_budget(
    index: Any,
) -> None:
    """Zab's answer (the prospective leader learns what it lacks from the followers' last
    zxid) lies in the chunk after the one that matches the question best: it ranks far below
    the ten returned passages on its own, and comes back joined to the passage it continues."""
    question = ("When a new leader takes over, does it have to fetch committed entries it is "
                "missing from other servers? Compare Raft with Zab.")
    kit = _kit(index)
    got = kit.search_corpus(question)
    results = got.results
    assert len(results) == 10 and sum(len(r.text) for r in results) <= 25_000
    zab = next(r for r in results
               if "last zxid of a follower is sufficient" in " ".join(r.text.split()))
    own = index.chunk(zab.chunk_id)
    joined = [c for c in kit.state.seen_chunk_ids if c not in {r.chunk_id for r in results}]
    assert own.text in zab.text and len(zab.text) > len(own.text)
    assert any(index.chunk(c).text in zab.text for c in joined)
    evidence = next(e for e in kit.state.evidence if e.chunk_id == zab.chunk_id)
    assert evidence.line_end > own.line_end or evidence.line_start < own.line_start
    # Joined chunks are read: they never come back as results of their own.
    again = kit.search_corpus(question)
    assert not {r.chunk_id for r in again.results} & set(joined)


def test_item_key_forms_scope_a_search(index: Any) -> None:
    kit = _kit(index)
    for form in (f'["{RAFT}", "{ZOOKEEPER}"]', [RAFT, ZOOKEEPER], f"{RAFT.lower()}, {ZOOKEEPER}"):
        got = kit.search_corpus("leader", item_key=form, limit=8)
        assert got.status == "success" and got.results
        assert {r.item_key for r in got.results} <= {RAFT, ZOOKEEPER}
    by_attachment = kit.search_corpus("term", item_key=RAFT_PDF, limit=3)
    assert {r.attachment_key for r in by_attachment.results} == {RAFT_PDF}
    bad = kit.search_corpus("term", item_key="NOTAKEY9")
    assert bad.status == "error"


def test_frontmatter_survey_returns_one_paper_each(index: Any) -> None:
    kit = _kit(index)
    got = kit.search_corpus("self-supervised contrastive learning", chunk_type="frontmatter",
                            limit=30)
    results = got.results
    assert 1 < len(results) <= 10
    assert {r.chunk_type for r in results} == {"frontmatter"}
    assert len({r.item_key for r in results}) == len(results)


# ----------------------------------------------------------------------------- scope


def test_a_selection_scope_refuses_other_items(index: Any) -> None:
    kit = Toolkit(index, bind(index, Scope(items=[RAFT])))
    for result in (
        kit.search_corpus("attention heads", item_key=TRANSFORMER),
        kit.read_document(TRANSFORMER_PDF, "s1"),
        kit.get_document_toc(TRANSFORMER_NOTE),
        kit.search_corpus("x", item_key=[RAFT, ZOOKEEPER]),
    ):
        assert result.status == "out_of_scope"
        assert "outside this run's scope" in result.message
    for item_key in (None, "all", "library", "active"):
        got = kit.search_corpus("attention heads in transformers", item_key=item_key, limit=3)
        assert got.status == "success"
        assert {r.item_key for r in got.results} <= {RAFT}
    assert kit.read_document(RAFT_NOTE, "full").status == "success"  # the item's own note


def test_a_collection_scope_refuses_items_outside_it(index: Any) -> None:
    state = bind(index, Scope(collections=["Information Retrieval"]))
    allowed = set(state.allowed_keys)
    assert allowed and RAFT not in allowed
    kit = Toolkit(index, state)
    assert kit.read_document(RAFT, "s1").status == "out_of_scope"
    got = kit.search_corpus("consensus leader election", limit=10)
    assert got.status == "success"
    assert {r.item_key for r in got.results} <= allowed
    with pytest.raises(ValueError, match="unknown collection"):
        allowed_keys(index, Scope(collections=["No Such Collection"]))


# ----------------------------------------------------------------------------- reports


def test_conclude_and_the_automatic_report(index: Any) -> None:
    kit = _kit(index)
    kit.read_document(RAFT, "s1")
    kit.search_corpus("ZooKeeper watches", item_key=ZOOKEEPER, limit=2)
    auto = kit.finish()
    assert auto.source == "auto_generated"
    assert "In Search of an Understandable Consensus Algorithm" in auto.summary
    assert "ZooKeeper" in auto.summary and "2 paper(s)" in auto.summary
    concluded = _kit(index)
    assert concluded.conclude_search("Raft's membership change", gaps="no numbers").status == (
        "success")
    report = concluded.finish()
    assert report.source == "agent" and report.gaps == ["no numbers"]
    assert concluded.state.tool_count == 0


# ----------------------------------------------------------------------------- CLI


def test_cli_toc_and_read(corpus_index: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from zocrates_nb.cli import main

    home = str(corpus_index.home)
    assert main(["--home", home, "toc", RAFT]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"### [Key: {RAFT_PDF}, Parent Key: {RAFT}]") and RAFT_NOTE in out
    assert main(["--home", home, "read", RAFT, "[s2,", "s99]", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [a["asset_id"] for a in data["assets"]] == ["s2"]
    assert data["unresolved_asset_ids"] == ["s99"]
    assert main(["--home", home, "read", RAFT, "s2"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# In Search of an Understandable Consensus Algorithm")
    assert "\n## [s2] 1 Introduction" in text
    assert main(["--home", home, "toc", "NOSUCHKY"]) == 2
    assert "Unknown item key" in capsys.readouterr().err


def test_active_items_in_a_library_run(index: Any) -> None:
    kit = Toolkit(index, bind(index, active=[ZOOKEEPER]))
    assert kit.state.scope.kind == "library" and not kit.state.restricted
    got = kit.search_corpus("leader election", item_key="selected", limit=3)
    assert {r.item_key for r in got.results} == {ZOOKEEPER}
    assert kit.read_document(RAFT, "s1").status == "success"  # the library stays open
    lonely = _kit(index).search_corpus("leader election", item_key="active", limit=3)
    assert "No items are selected" in lonely.notice and lonely.results


def test_a_restored_snapshot_continues_the_run(index: Any) -> None:
    import json

    kit = _kit(index)
    kit.read_document(RAFT, "s2")
    kit.search_corpus("randomized election timeouts", item_key=RAFT, limit=3)
    kit.request_search_extension("need more", "intro read", ["timeouts"])
    snapshot = json.dumps(kit.state.to_json())
    restored = RunState.from_json(json.loads(snapshot))
    assert restored == kit.state and json.dumps(restored.to_json()) == snapshot
    resumed = Toolkit(index, restored)
    again = resumed.read_document(RAFT, "s2")
    assert again.assets == [] and "already retrieved" in again.notice
    found = resumed.search_corpus("randomized election timeouts", item_key=RAFT, limit=3)
    assert not {r.chunk_id for r in found.results} & set(kit.state.seen_chunk_ids)
    assert resumed.state.tool_count == 4 and resumed.state.extension_pending
