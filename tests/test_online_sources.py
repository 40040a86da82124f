"""Discovery's scholarly sources against a loopback server replaying recorded API responses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import corpus_path
from online_fixtures import FixtureServer, Reply

from zocrates_nb.config import OnlineSettings
from zocrates_nb.online import Candidate, OnlineDisabled, discover
from zocrates_nb.online.candidate import merge
from zocrates_nb.online.discover import LibraryMatch
from zocrates_nb.online.sources import crossref_item, parse_arxiv, s2_paper

KEYS = {"OPENALEX_API_KEY": "test-openalex-key"}


@pytest.fixture(scope="module")
def fixtures() -> Path:
    return corpus_path("online-fixtures")


@pytest.fixture
def server(fixtures: Path) -> Iterator[FixtureServer]:
    with FixtureServer(fixtures) as srv:
        yield srv


def load(root: Path, name: str) -> Any:
    return json.loads((root / name).read_text("utf-8"))


def online(server: FixtureServer, **extra: object) -> OnlineSettings:
    return OnlineSettings.model_validate(server.online_config(**extra))


def test_disabled_sends_nothing_and_says_how_to_turn_it_on(server: FixtureServer) -> None:
    settings = OnlineSettings.model_validate({**server.online_config(), "enabled": False})
    with pytest.raises(OnlineDisabled) as err:
        discover(settings, "consensus protocols", environ=KEYS)
    assert '"online": {"enabled": true}' in str(err.value)
    assert server.requests == []


def test_every_source_answers_with_typed_candidates(server: FixtureServer) -> None:
    found = discover(online(server, mailto="me@example.org"), "testing", limit=100, environ=KEYS)
    assert found.errors == []
    by_source = {s: [c for c in found.candidates if s in c.sources]
                 for s in ("arXiv", "Crossref", "Semantic Scholar", "OpenAlex")}  # fmt: skip
    assert all(by_source.values()), {k: len(v) for k, v in by_source.items()}
    arxiv = next(c for c in by_source["arXiv"] if c.arxiv_id == "2202.12139")
    assert arxiv.title.startswith("Testing Deep Learning Models")
    assert arxiv.pdf_url == "https://arxiv.org/pdf/2202.12139v1" and arxiv.year == 2022
    crossref = [c for c in by_source["Crossref"] if c.abstract]
    assert crossref and all("<jats" not in c.abstract for c in crossref)
    assert any(c.venue == "Big Data & Society" for c in by_source["Crossref"])  # &amp; decoded
    assert all(c.doi and c.doi == c.doi.lower() for c in by_source["Crossref"])
    openalex = [c for c in by_source["OpenAlex"] if c.abstract]
    assert openalex and all(c.doi is None or not c.doi.startswith("http") for c in openalex)
    ids = [c.id for c in found.candidates]
    assert len(ids) == len(set(ids)) and all(len(i) == 10 for i in ids)
    # The polite pool: Crossref gets the mailto in the User-Agent; OpenAlex gets the key.
    sent = {p: (q, h) for p, q, h in server.requests}
    assert "mailto:me@example.org" in sent["crossref"][1]["User-Agent"]
    assert "api_key=test-openalex-key" in sent["openalex"][0]


def test_openalex_is_asked_only_with_a_key(server: FixtureServer) -> None:
    found = discover(online(server), "testing", environ={})
    assert found.candidates and not any("OpenAlex" in c.sources for c in found.candidates)
    assert {p for p, _, _ in server.requests} == {"arxiv", "crossref", "s2"}


def test_candidate_ids_are_stable_across_runs(server: FixtureServer) -> None:
    first = discover(online(server), "testing", environ=KEYS)
    second = discover(online(server), "testing", environ=KEYS)
    assert [c.id for c in first.candidates] == [c.id for c in second.candidates]


def test_one_paper_reported_by_several_sources_is_one_candidate(fixtures: Path) -> None:
    """Crossref and Semantic Scholar's recorded records of the same paper (by DOI) merge, and
    the arXiv id only Semantic Scholar knew is kept."""
    cr = load(fixtures, "crossref/crossref_works_doi_10.1038-s42256-024-00832-8_mailto.json")
    s2 = load(fixtures, "semanticscholar/s2_paper_DOI-10.1038-s42256-024-00832-8_many-fields.json")
    merged = merge([crossref_item(cr["message"]), s2_paper(s2)])
    assert len(merged) == 1
    (paper,) = merged
    assert paper.doi == "10.1038/s42256-024-00832-8" and paper.arxiv_id == "2304.05376"
    assert paper.sources == ["Crossref", "Semantic Scholar"]
    assert paper.title == "Augmenting large language models with chemistry tools"


def test_arxiv_versions_and_doi_forms_are_one_identity() -> None:
    a = Candidate(title="X", arxiv_id="http://arxiv.org/abs/2104.12255v1")
    b = Candidate(title="Y", doi="https://doi.org/10.48550/arXiv.2104.12255")
    assert a.arxiv_id == b.arxiv_id == "2104.12255"
    assert len(merge([a, b])) == 1


def test_papers_already_in_the_library_are_marked(server: FixtureServer, fixtures: Path) -> None:
    body = load(fixtures, "crossref/crossref_works_query-ecology_query.author-carl-boettiger.json")
    first, second = body["message"]["items"][:2]
    library = LibraryMatch.of([
        ("BYDOI001", "A different title in the library", first["DOI"].upper(), None),
        ("BYTITLE1", second["title"][0].upper() + "  ", None, None),
    ])  # fmt: skip
    found = discover(online(server), "ecology", limit=100, library=library, environ={})
    marked = {c.library_key: c for c in found.candidates if c.in_library}
    assert set(marked) == {"BYDOI001", "BYTITLE1"}
    assert marked["BYDOI001"].doi == first["DOI"].lower()
    assert sum(c.in_library for c in found.candidates) == 2
    # Not recommended again: after the `limit` recommendations, still shown as held.
    few = discover(online(server), "ecology", limit=3, library=library, environ={})
    assert [c.in_library for c in few.candidates] == [False, False, False, True, True]


def test_why_quotes_a_sentence_of_the_abstract(server: FixtureServer) -> None:
    found = discover(online(server), "software testing methods", environ={})
    explained = [c for c in found.candidates if c.why]
    assert explained
    for c in explained:
        assert c.why.rstrip("…") in c.abstract or c.why[:-1] in c.abstract


def test_rate_limit_is_waited_out_when_retry_after_is_short(server: FixtureServer) -> None:
    server.inject("crossref", Reply(429, b"Too Many Requests", {"Retry-After": "0"}))
    found = discover(online(server), "ecology", environ={})
    assert found.errors == []
    assert sum(p == "crossref" for p, _, _ in server.requests) == 2
    assert any("Crossref" in c.sources for c in found.candidates)


def test_a_failing_source_is_reported_and_the_others_still_answer(server: FixtureServer) -> None:
    server.inject("crossref", Reply(429, b"slow down", {"Retry-After": "3600"}))
    server.inject("s2", Reply(500, b"<html>Internal error trace</html>"))
    server.inject("arxiv", Reply(200, b"<feed><entry>truncated", {"content-type": "text/xml"}))
    found = discover(online(server), "testing", environ=KEYS)
    assert sorted(found.errors) == [
        "Crossref: is rate limiting requests; try again later (it asks to wait 3600 s)",
        "Semantic Scholar: had a server error (HTTP 500); try again later",
        "arXiv: sent a response that could not be read",
    ]
    assert found.candidates and all(c.sources == ["OpenAlex"] for c in found.candidates)


def test_a_malformed_json_body_and_a_stall_are_plain_errors(server: FixtureServer) -> None:
    server.inject("s2", Reply(200, b'{"data": [', {"content-type": "application/json"}))
    server.inject("openalex", Reply(200, b"{}", stall=3.0))
    found = discover(online(server, timeout=0.5), "testing", environ=KEYS)
    assert sorted(found.errors) == [
        "OpenAlex: did not answer in time; try again later",
        "Semantic Scholar: sent a response that could not be read",
    ]
    assert found.candidates


def test_unreachable_sources_say_so(fixtures: Path) -> None:
    settings = OnlineSettings.model_validate({
        "enabled": True, "timeout": 2,
        **{k: {"base_url": "http://127.0.0.1:9"} for k in
           ("arxiv", "crossref", "semantic_scholar", "openalex")},
    })  # fmt: skip
    found = discover(settings, "anything", environ=KEYS)
    assert found.candidates == [] and len(found.errors) == 4
    assert all("could not be reached" in e for e in found.errors)


def test_recorded_arxiv_error_feed_is_an_error(fixtures: Path) -> None:
    from zocrates_nb.online.http import SourceError

    with pytest.raises(SourceError, match="rejected"):
        parse_arxiv((fixtures / "arxiv/arxiv_query_id_list-abc_error-400.xml").read_bytes())
    assert (
        parse_arxiv((fixtures / "arxiv/arxiv_query_id_list-0000.0000_empty.xml").read_bytes()) == []
    )


def test_similarity_ranks_candidates_by_meaning(server: FixtureServer) -> None:
    """The App passes the embedding model's cosine; the ranking follows it."""

    def turing_first(query: str, texts: list[str]) -> list[float]:
        return [1.0 if "turing" in t.lower() else -1.0 for t in texts]

    found = discover(online(server), "testing", limit=5, environ={}, similarity=turing_first)
    assert len(found.candidates) == 5
    assert all("turing" in c.title.lower() for c in found.candidates)


def test_the_raft_paper_in_the_corpus_library_is_matched_by_title() -> None:
    """The real 37-paper Zotero library (read-only): a source's differently-cased Raft title
    finds the library's Raft item."""
    from conftest import ZOTERO_DIR

    from zocrates_nb.library import read_zotero_dir

    corpus_path("zotero-library")
    library = read_zotero_dir(ZOTERO_DIR)
    rows = [(i.key, i.title, i.doi or None, None) for i in library.items.values()]
    match = LibraryMatch.of(rows)
    raft = next(i for i in library.items.values()
                if i.title == "In Search of an Understandable Consensus Algorithm")  # fmt: skip
    found = Candidate(title="In search of an understandable consensus algorithm (extended "
                      "version)", sources=["Semantic Scholar"])  # fmt: skip
    assert match.find(found) is None  # a different title is a different paper
    same = Candidate(title="In Search of an Understandable Consensus-Algorithm",
                     sources=["Crossref"])  # fmt: skip
    assert match.find(same) == raft.key


def test_an_empty_arxiv_page_is_asked_once_more(server: FixtureServer, fixtures: Path) -> None:
    empty = (fixtures / "arxiv/arxiv_query_id_list-0000.0000_empty.xml").read_bytes()
    server.inject("arxiv", Reply(200, empty, {"content-type": "application/atom+xml"}))
    found = discover(online(server), "testing", limit=100, environ={})
    assert sum(p == "arxiv" for p, _, _ in server.requests) == 2
    assert any("arXiv" in c.sources for c in found.candidates)


@pytest.mark.parametrize(
    ("query", "kind"),
    [("10.1038/s42256-024-00832-8", "doi"), ("https://doi.org/10.1038/s42256-024-00832-8", "doi"),
     ("arXiv:2104.12255v1", "arxiv"), ("https://arxiv.org/abs/2104.12255v1", "arxiv")],
)  # fmt: skip
def test_a_doi_or_arxiv_id_is_looked_up_not_searched(
    server: FixtureServer, query: str, kind: str
) -> None:
    """"Add this paper by DOI / arXiv id": the sources are asked for that paper (Crossref's
    /works/{doi}, arXiv's id_list, Semantic Scholar's /paper/{DOI|arXiv}:…), and a source that
    does not know it answers nothing rather than an error or a search's unrelated papers."""
    found = discover(online(server), query, environ={})
    assert found.errors == []
    assert len(found.candidates) == 1
    paper = found.candidates[0]
    if kind == "doi":
        assert paper.doi == "10.1038/s42256-024-00832-8" and paper.sources == ["Crossref"]
        assert paper.title.startswith("Augmenting large language models with chemistry tools")
    else:
        assert paper.arxiv_id == "2104.12255" and paper.sources == ["arXiv"]
    sent = [p for p, q, _ in server.requests]
    assert sent.count("s2") == 1 and all("/paper/search" not in q for _, q, _ in server.requests)
    assert all("search_query=all" not in q and "query.bibliographic" not in q
               for _, q, _ in server.requests)  # fmt: skip


def test_jats_markup_leaves_abstracts_and_the_text_stays(fixtures: Path) -> None:
    """OpenAlex's recorded abstracts carry JATS (`<sec> <title>BACKGROUND</title>`): the tags
    go, the section titles stay as lead-ins, and a `<` that is text ("(<10") stays."""
    from zocrates_nb.online.sources import openalex_work

    body = load(fixtures, "openalex/"
                "openalex_works_search_machine-learning-AND-public-health_page1_per-page200.json")
    works = {w["id"]: openalex_work(w) for w in body["results"]}
    jats = works["https://openalex.org/W4243312951"].abstract
    assert jats.startswith("BACKGROUND: ") and "OBJECTIVE: " in jats and "METHODS: " in jats
    assert "<" not in jats and "title>" not in jats
    assert "(<10" in works["https://openalex.org/W4367333911"].abstract
    cr = load(fixtures, "crossref/crossref_works_doi_10.1038-s42256-024-00832-8_mailto.json")
    abstract = crossref_item(cr["message"]).abstract
    assert "<jats" not in abstract and not abstract.lower().startswith("abstract")


def test_a_preprint_and_its_published_version_are_one_paper_led_by_the_published(
    fixtures: Path,
) -> None:
    """Crossref's recorded search holds both the bioRxiv preprint 10.1101/014852 and its
    published version 10.1002/ece3.2314 (`relation.has-preprint`): one candidate, with the
    journal's DOI, venue and type, whichever came first; the preprint's DOI is kept."""
    body = load(fixtures, "crossref/crossref_works_query-ecology_query.author-carl-boettiger.json")
    records = [crossref_item(i) for i in body["message"]["items"]]
    pre = next(c for c in records if c.doi == "10.1101/014852")
    pub = next(c for c in records if c.doi == "10.1002/ece3.2314")
    assert (pre.item_type, pre.venue) == ("preprint", "bioRxiv")
    assert pub.versions == ["doi:10.1101/014852"]
    for order in ([pre, pub], [pub, pre]):
        (one,) = merge(order)
        assert (one.doi, one.venue, one.item_type, one.year) == (
            "10.1002/ece3.2314", "Ecology and Evolution", "journalArticle", 2016)
        assert "doi:10.1101/014852" in one.identities()
    # The same title by other authors is another work; an arXiv-only record and the article
    # it became merge on title and author.
    other = pre.model_copy(update={"authors": ["Someone Else"], "doi": None, "item_type": ""})
    assert len(merge([pub, other])) == 2
    arxiv = Candidate(title=pub.title, authors=["T. Alex Perkins"], arxiv_id="1503.01234")
    (one,) = merge([arxiv, pub])
    assert one.doi == "10.1002/ece3.2314" and one.arxiv_id == "1503.01234"
    assert {c.item_type for c in records} == {"journalArticle", "preprint", ""}  # "": other


def test_titles_in_any_script_give_papers_their_own_ids() -> None:
    """A DOI-less paper's id comes from its title in whatever script, its first author and
    year: Chinese, Russian, Greek and Arabic titles never share one, and merging keeps each."""
    titles = ["分布式系统中的共识算法", "分布式存储系统的一致性", "Распределённые системы",
              "Консенсус в распределённых системах", "Κατανεμημένα συστήματα",
              "Συναίνεση σε κατανεμημένα συστήματα", "الأنظمة الموزعة",
              "الإجماع في الأنظمة الموزعة",
              "分散システムにおける合意", "분산 시스템의 합의"]  # fmt: skip
    found = [Candidate(title=t, authors=["A. Author"], year=2020) for t in titles]
    assert len({c.id for c in found}) == len(titles)
    assert len(merge(found)) == len(titles)
    # The same title by another first author, or in another year, is another paper.
    same = Candidate(title=titles[0], authors=["A. Author"], year=2020)
    assert same.id == found[0].id
    assert Candidate(title=titles[0], authors=["B. Other"], year=2020).id != same.id
    assert Candidate(title=titles[0], authors=["A. Author"], year=2021).id != same.id
    # Case and accents do not make another paper; an identifier leads when there is one.
    assert Candidate(title="ΚΑΤΑΝΕΜΗΜΈΝΑ ΣΥΣΤΉΜΑΤΑ", authors=["A. Author"], year=2020).id == (
        found[4].id)  # fmt: skip
    assert Candidate(title=titles[0], doi="10.1/x").id != same.id


def test_a_mistyped_isbn_is_named_as_such() -> None:
    from zocrates_nb.online.sources import identifier, not_an_identifier

    assert identifier("0262033844") == ("isbn", "9780262033848")
    assert identifier("0-8044-2957-X") is not None
    for typo in ("0262033845", "978-0-262-03384-9"):
        assert identifier(typo) is None
        assert not_an_identifier(typo).startswith("an ISBN whose check digit is wrong")
    assert not_an_identifier("10.1234") == "not a complete DOI (10.<prefix>/<suffix>)"
    assert not_an_identifier("hello") == "not a DOI, an arXiv id or an ISBN"
