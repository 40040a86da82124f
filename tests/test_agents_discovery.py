"""Discovery as a conversation: the coordinator routes "find papers on X" to the online search
agent and the online synthesizer, library questions to the library search; nothing is sent
while discovery is off; a model's recommendations are checked (no invented paper, no paper the
library holds, no reason that is not the abstract's own); usage adds up over the online roles.

Scholarly APIs: the loopback server replaying the recorded responses (`online_fixtures`);
language models: pydantic-ai `FunctionModel`s or the embedded offline engine."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents_helpers import call, scripted, user_prompts
from conftest import corpus_path
from online_fixtures import FixtureServer, Reply
from pydantic_ai import ModelResponse
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from zocrates_nb.agents.discovery import (
    Recommendation,
    Recommendations,
    check_recommendations,
    grounded_why,
)
from zocrates_nb.agents.offline.coordinator import coordinator_compute
from zocrates_nb.agents.offline.discovery import key_phrases, wants_discovery
from zocrates_nb.agents.role_spec import role_spec
from zocrates_nb.app import App
from zocrates_nb.config import Settings, load_settings
from zocrates_nb.events import Event, Final, Step
from zocrates_nb.online import OnlineDisabled
from zocrates_nb.turn import Candidate, TurnResult

S2_SEARCH = "semanticscholar/s2_paper_search_query-turing_fields-title_offset0_limit100.json"
RAFT_ABSTRACT = (
    "Raft is a consensus algorithm for managing a replicated log. It produces a result "
    "equivalent to (multi-)Paxos, and it is as efficient as Paxos, but its structure is "
    "different from Paxos; this makes Raft more understandable than Paxos and also provides a "
    "better foundation for building practical systems."
)


def s2_paper(title: str, abstract: str = RAFT_ABSTRACT, year: int = 2014) -> dict[str, Any]:
    return {"paperId": "2b5ab8a4", "title": title, "year": year, "abstract": abstract,
            "venue": "USENIX Annual Technical Conference", "externalIds": {},
            "authors": [{"name": "Diego Ongaro"}, {"name": "John Ousterhout"}]}  # fmt: skip


def s2_reply(*papers: dict[str, Any]) -> Reply:
    """A Semantic Scholar search answer in its recorded shape: these papers, then the first
    recorded results."""
    recorded = json.loads(corpus_path("online-fixtures", S2_SEARCH).read_text("utf-8"))
    body = {**recorded, "data": [*papers, *recorded["data"][:5]]}
    return Reply(200, json.dumps(body).encode(), {"content-type": "application/json"})


@pytest.fixture(scope="module")
def server() -> Iterator[FixtureServer]:
    with FixtureServer(corpus_path("online-fixtures")) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _no_openalex_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENALEX_API_KEY", raising=False)


def run(app: App, prompt: str, **kw: Any) -> list[Event]:
    async def go() -> list[Event]:
        return [ev async for ev in await asyncio.to_thread(app.ask, prompt, **kw)]

    return asyncio.run(go())


def final(events: list[Event]) -> TurnResult:
    last = events[-1]
    assert isinstance(last, Final), getattr(last, "message", last)
    return last


def steps(events: list[Event]) -> list[str]:
    return [e.label for e in events if isinstance(e, Step)]


# ---------------------------------------------------------------------------- routing
DISCOVERY = [
    "find papers on consensus protocols for replicated logs",
    "Find papers about Byzantine fault tolerance",
    "Could you recommend some papers on vector databases?",
    "suggest recent papers about retrieval-augmented generation",
    "search for papers on log-structured merge trees",
    "What am I missing on distributed consensus?",
    "what am I missing",
    "papers I don't have on leader election",
    "Are there papers on Paxos that are not in my library?",
    "recent work about learned index structures",
    "add this paper: 10.1145/2723372.2742797",
    "please add arXiv:2104.12255 to my library",
    "look up 1605.08386",
]
LIBRARY = [
    "what papers in my library discuss consensus?",
    "Which papers discuss leader election?",
    "find papers on consensus in my library",
    "find the paper about Raft",
    "How does Raft elect a leader?",
    "Which of my papers recommend randomized timeouts?",
    "search my library for papers on consensus",
    "what does the literature in my collection say about snapshots?",
    "Summarize the selected papers on replication",
    "What is the DOI of the Raft paper?",
    "Does the Raft paper cite 10.1145/279227.279229?",
    "recommend a section of the Raft paper to read first",
]


@pytest.mark.parametrize("message", DISCOVERY)
def test_requests_for_papers_beyond_the_library_go_to_discovery(message: str) -> None:
    assert wants_discovery(message)


@pytest.mark.parametrize("message", LIBRARY)
def test_library_questions_stay_with_the_library_search(message: str) -> None:
    assert not wants_discovery(message)


def _tools(*names: str) -> AgentInfo:
    from pydantic_ai.tools import ToolDefinition

    tools = [ToolDefinition(name=n, parameters_json_schema={}) for n in names]
    return AgentInfo(function_tools=[], allow_text_output=True, output_tools=tools,
                     model_settings=None, model_request_parameters=None,  # type: ignore[arg-type]
                     instructions=None)


def test_the_offline_coordinator_calls_the_tool_each_kind_asks_for() -> None:
    from pydantic_ai.messages import ModelRequest, ToolCallPart, UserPromptPart

    from zocrates_nb.agents.offline import CoordinatorBrief, briefed

    info = _tools("search_library", "search_online_literature")
    for message, tool in [(DISCOVERY[0], "search_online_literature"),
                          (LIBRARY[0], "search_library")]:  # fmt: skip
        with briefed(CoordinatorBrief(message)):
            out = coordinator_compute([ModelRequest(parts=[UserPromptPart(message)])], info)
        part = out.parts[0]
        assert isinstance(part, ToolCallPart) and part.tool_name == tool


@pytest.mark.parametrize(("request_", "query"), [
    ("find papers on consensus protocols for replicated logs",
     "consensus protocols for replicated logs"),
    ("What am I missing on distributed consensus?", "distributed consensus"),
    ("Could you recommend some recent papers about vector databases, please?",
     "vector databases"),
    ("papers I don't have on leader election", "leader election"),
    ("recent work about learned index structures", "learned index structures"),
    ("Find papers on Paxos that I don't have", "Paxos"),
    ("please add arXiv:2104.12255v1 to my library", "2104.12255v1"),
    ("add this paper: https://doi.org/10.1145/2723372.2742797.", "10.1145/2723372.2742797"),
])  # fmt: skip
def test_the_offline_search_sends_the_key_phrases(request_: str, query: str) -> None:
    assert key_phrases(request_) == query


# ---------------------------------------------------------------------------- checking picks
def test_a_why_must_be_a_sentence_or_clause_of_the_abstract() -> None:
    assert grounded_why("“Raft is a consensus algorithm for managing a replicated log.”",
                        RAFT_ABSTRACT) == "Raft is a consensus algorithm for managing a replicated log."  # fmt: skip  # noqa: E501
    assert grounded_why("it is as efficient as Paxos", RAFT_ABSTRACT)  # a clause
    assert grounded_why("Raft is the best consensus algorithm ever written.", RAFT_ABSTRACT) is None
    assert grounded_why("Raft", RAFT_ABSTRACT) is None  # too short to say why
    assert grounded_why("Raft is a consensus algorithm", "") is None


def test_invented_held_and_ungrounded_picks_are_corrected() -> None:
    fresh = Candidate(title="Paxos Made Simple", abstract="The Paxos algorithm is very simple. "
                      "It is among the simplest distributed algorithms.", why="The Paxos "
                      "algorithm is very simple.")  # fmt: skip
    other = Candidate(title="Viewstamped Replication", abstract="We describe a replication "
                      "protocol for primary copy systems.")  # fmt: skip
    held = Candidate(title="Raft", abstract=RAFT_ABSTRACT, in_library=True, library_key="K1")
    recs = Recommendations(recommendations=[
        Recommendation(id="c0000000000", why="An invented paper."),
        Recommendation(id=held.id, why="Raft is a consensus algorithm for managing a replicated log."),  # noqa: E501
        Recommendation(id=fresh.id, why="A classic every student should read."),
        Recommendation(id=other.id, why="We describe a replication protocol for primary copy systems."),  # noqa: E501
        Recommendation(id=other.id, why="again"),
    ])  # fmt: skip
    checked = check_recommendations(recs, [fresh, other, held])
    assert [c.title for c in checked.chosen] == ["Paxos Made Simple", "Viewstamped Replication"]
    assert (checked.invented, checked.held, checked.replaced) == (1, 1, 1)
    assert checked.chosen[0].why == "The Paxos algorithm is very simple."  # the extractive one
    assert checked.chosen[1].why.startswith("We describe a replication protocol")


# ---------------------------------------------------------------------------- roles
CHAIN_ABSTRACT = (
    "Chain replication is a new approach to coordinating clusters of fail-stop storage servers. "
    "The approach is intended for supporting large-scale storage services that exhibit high "
    "throughput and availability without sacrificing strong consistency guarantees."
)


VR_ABSTRACT = (
    "This paper presents an updated version of Viewstamped Replication, a replication technique "
    "that handles failures in which nodes crash. It describes how client requests are handled, "
    "how the group reorganizes when a replica fails, and how a failed replica is able to rejoin "
    "the group."
)


def test_the_offline_recommender_leaves_out_papers_unrelated_to_the_question() -> None:
    """Sources answer every query with something: the offline synthesizer recommends what
    comes close to the question (title or abstract, by meaning) and leaves the rest out."""
    from pydantic_ai.messages import ModelRequest, ToolCallPart, UserPromptPart

    from zocrates_nb.agents.offline import OfflineEngine, RecommendBrief, briefed
    from zocrates_nb.agents.prompts import online_synthesis_prompt

    pool = [
        Candidate(title="Chain replication for supporting high throughput and availability",
                  abstract=CHAIN_ABSTRACT),
        Candidate(title="Magic: The Gathering is Turing Complete",
                  abstract="Magic: The Gathering is a popular and famously complicated trading "
                           "card game about magical combat."),
        Candidate(title="Turing instability in the reaction-diffusion network."),
    ]  # fmt: skip
    question = "find papers on consensus protocols for replicated logs"
    prompt = online_synthesis_prompt(question, question, pool, [], 10)
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(prompt)])]
    engine = OfflineEngine.shared()
    recommender = engine.online_synthesizer.function  # type: ignore[attr-defined]
    with briefed(RecommendBrief(question, question, 10, tuple(pool))):
        reply = recommender(messages, _tools("final_result"))
    part = reply.parts[0]
    assert isinstance(part, ToolCallPart)
    picks = part.args_as_dict()["recommendations"]
    assert [p["id"] for p in picks] == [pool[0].id]
    assert grounded_why(picks[0]["why"], CHAIN_ABSTRACT) == picks[0]["why"]


def test_the_online_roles_inherit_the_base_and_think_low_and_high(tmp_path: Path) -> None:
    offline = Settings()
    assert role_spec(offline, "online_search").offline
    assert (role_spec(offline, "online_search").thinking,
            role_spec(offline, "online_synthesizer").thinking) == ("low", "high")  # fmt: skip
    based = Settings.model_validate({"models": {"base": "ollama:qwen3",
                                                "search": "ollama:small"}})  # fmt: skip
    for role in ("online_search", "online_synthesizer"):
        spec = role_spec(based, role)
        assert (spec.model_string, spec.config_key) == ("ollama:qwen3", "models.base")
    pinned = Settings.model_validate({"models": {
        "base": "ollama:qwen3",
        "online_synthesizer": {"model": "openai:gpt-5.2", "thinking": "medium"},
    }})  # fmt: skip
    spec = role_spec(pinned, "online_synthesizer")
    assert (spec.model_string, spec.config_key, spec.thinking, spec.is_cloud) == (
        "openai:gpt-5.2", "models.online_synthesizer", "medium", True)  # fmt: skip
    assert role_spec(pinned, "online_search").model_string == "ollama:qwen3"


def test_doctor_and_the_environment_know_the_online_roles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zocrates_nb.agents.models import doctor_info

    monkeypatch.setenv("ZOCRATES_ONLINE_SEARCH_MODEL", "ollama:tiny")
    settings = load_settings(tmp_path)
    roles = doctor_info(settings)["roles"]
    assert list(roles)[-2:] == ["online_search", "online_synthesizer"]
    assert roles["online_search"]["model"] == "ollama:tiny"
    assert roles["online_synthesizer"]["from"] == "models.base"


# ---------------------------------------------------------------------------- turns
@pytest.fixture
def small_app(tmp_path: Path, small_index: Any) -> Iterator[App]:
    with App.open(tmp_path, index=small_index) as app:
        yield app


def test_off_by_default_a_discovery_turn_sends_nothing_and_says_how_to_turn_it_on(
    small_app: App, server: FixtureServer
) -> None:
    before = len(server.requests)
    turn = final(run(small_app, "find papers on consensus protocols for replicated logs"))
    message = str(OnlineDisabled())
    assert turn.status == "answered" and turn.answer == message
    assert turn.discovery is not None and turn.discovery.candidates == []
    assert turn.discovery.errors == [message]
    assert len(server.requests) == before
    assert "online_search" not in turn.usage.roles  # no online role ran
    # A library question still goes to the library search.
    lib = final(run(small_app, "what papers in my library discuss consensus?"))
    assert lib.discovery is None and lib.evidence


def test_every_source_failing_is_shown_source_by_source(
    tmp_path: Path, small_index: Any, server: FixtureServer
) -> None:
    server.inject("arxiv", Reply(500, b"<html>trace</html>"))
    server.inject("crossref", Reply(429, b"slow down", {"Retry-After": "3600"}))
    server.inject("s2", Reply(403, b'{"message": "Forbidden"}'))
    with App.open(tmp_path, index=small_index, online=server.online_config()) as app:
        turn = final(run(app, "find papers on consensus protocols"))
    assert turn.status == "answered" and turn.discovery is not None
    assert turn.discovery.candidates == []
    assert len(turn.discovery.errors) == 3
    for name in ("arXiv", "Crossref", "Semantic Scholar"):
        assert any(e.startswith(name) for e in turn.discovery.errors)
        assert name in turn.answer
    assert "could not be searched" in turn.answer and "trace" not in turn.answer
    assert not any(server.injected.values())


class Scripted:
    """The three roles a discovery turn needs, as FunctionModels that count their calls."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {"coordinator": 0, "online_search": 0,
                                      "online_synthesizer": 0}  # fmt: skip
        self.invented_why = "This is the best paper ever written on logs."

    def models(self) -> dict[str, Any]:
        return {role: scripted(self._counted(role, fn), role) for role, fn in (
            ("coordinator", self.coordinator), ("online_search", self.search),
            ("online_synthesizer", self.synthesizer))}  # fmt: skip

    def _counted(self, role: str, fn: Any) -> Any:
        def counted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            self.calls[role] += 1
            return fn(messages, info)

        counted.__name__ = role
        return counted

    def coordinator(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return call("search_online_literature", request="consensus for replicated logs")

    def search(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        # Two real queries, the first again in other words (not sent), then over the budget.
        plan = ["consensus replicated log", "Replicated log, consensus!", "raft", "paxos",
                "viewstamped replication"]  # fmt: skip
        n = self.calls["online_search"] - 1
        if n < len(plan):
            return call("search_scholarly_sources", query=plan[n])
        return call("finish_search", summary="done")

    def synthesizer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = user_prompts(messages)[-1]
        blocks = re.findall(r'<candidate id="([^"]+)"[^>]*>\n(.*?)\n</candidate>', prompt, re.S)
        with_abstracts = [(cid, re.search(r"Abstract: (.+?)(?<=[.!?])\s", body + " "))
                          for cid, body in blocks if "Abstract: (none)" not in body]  # fmt: skip
        (first, _), (second, sentence) = with_abstracts[0], with_abstracts[1]
        held = re.search(r"- id (c[0-9a-f]+):", prompt)
        assert held and sentence
        return call(info.output_tools[0].name, recommendations=[
            {"id": "c0123456789", "why": "A paper no source returned."},
            {"id": held.group(1), "why": "Raft is a consensus algorithm for managing a replicated log."},  # noqa: E501
            {"id": first, "why": self.invented_why},
            {"id": second, "why": sentence.group(1)},
        ])  # fmt: skip


def test_a_model_driven_run_is_checked_budgeted_and_its_usage_adds_up(
    tmp_path: Path, small_index: Any, server: FixtureServer
) -> None:
    from conftest import TOPICS

    raft_title = TOPICS["raft"][0]  # the small library's Raft paper, as a source lists it
    server.inject("s2", s2_reply(s2_paper(raft_title.upper())))
    script = Scripted()
    before = len(server.requests)
    with App.open(tmp_path, index=small_index, online=server.online_config(),
                  role_models=script.models()) as app:  # fmt: skip
        events = run(app, "Find papers on consensus for replicated logs")
        turn = final(events)
        stored = app.history(turn.session_id)[-1]
        staged = app.stage([turn.discovery.candidates[0].id] if turn.discovery else [],
                           session_id=turn.session_id)  # fmt: skip
    d = turn.discovery
    assert d is not None and stored.discovery == d
    # Budget: three distinct queries sent, the reworded repeat and the fourth never.
    s2 = [q for p, q, _ in server.requests[before:] if p == "s2"]
    assert len(s2) == 3 and turn.tool_calls == 3
    assert [q.split("query=")[1].split("&")[0] for q in s2] == [
        "consensus+replicated+log", "raft", "paxos"]  # fmt: skip
    # Corrections: the invented paper dropped, the held one not recommended, the invented why
    # replaced by the abstract's own sentence, the quoted one kept.
    recommended = [c for c in d.candidates if not c.in_library]
    held = [c for c in d.candidates if c.in_library]
    assert len(recommended) == 2
    assert [c.title for c in held] == [raft_title.upper()] and held[0].library_key
    assert all(c.id != "c0123456789" for c in d.candidates)
    assert script.invented_why not in turn.answer
    for c in recommended:
        assert grounded_why(c.why, c.abstract) == c.why
    assert any("dropped 1 paper(s) no source returned" in s and "replaced 1 reason(s)" in s
               and "kept 1 paper(s) your library holds" in s
               for s in steps(events)), "\n".join(steps(events))  # fmt: skip
    # The answer lists the recommendations with their ids and says what the library holds.
    assert all(c.id in turn.answer for c in recommended)
    assert "Already in your library" in turn.answer and raft_title.upper() in turn.answer
    assert [c.id for c in staged] == [recommended[0].id]
    # Usage: exactly the model calls each role made, summed.
    roles = turn.usage.roles
    for role, n in script.calls.items():
        assert roles[role].requests == n and roles[role].model == f"scripted:{role}"
    assert turn.usage.requests == sum(script.calls.values())
    assert turn.usage.input_tokens == sum(r.input_tokens for r in roles.values()) > 0
    assert not any(server.injected.values())


def test_find_papers_on_the_corpus_marks_raft_as_held_and_recommends_others(
    corpus_index: Any, server: FixtureServer
) -> None:
    """End to end on the real 37-paper library with the offline engine: the Raft paper a
    source returns is marked in the library and not recommended; the others are, each with
    a sentence of its abstract, and `stage add ID` finds them in the session's list."""
    raft = next(i for i in corpus_index.library.items.values()
                if i.title == "In Search of an Understandable Consensus Algorithm")  # fmt: skip
    server.inject("s2", s2_reply(
        s2_paper("In search of an understandable consensus algorithm"),
        s2_paper("Viewstamped Replication Revisited", VR_ABSTRACT, 2012)))  # fmt: skip
    before = len(server.requests)
    with App.open(corpus_index.home, index=corpus_index.index,
                  online=server.online_config()) as app:  # fmt: skip
        events = run(app, "find papers on consensus protocols for replicated logs")
        turn = final(events)
        d = turn.discovery
        assert d is not None
        recommended = [c for c in d.candidates if not c.in_library]
        staged = app.stage([recommended[0].id], session_id=turn.session_id)
    assert turn.status == "answered" and d.query == "consensus protocols for replicated logs"
    held = [c for c in d.candidates if c.in_library]
    assert [(c.title, c.library_key) for c in held] == [
        ("In search of an understandable consensus algorithm", raft.key)]  # fmt: skip
    assert 1 <= len(recommended) <= 10 and staged[0].id == recommended[0].id
    assert recommended[0].title == "Viewstamped Replication Revisited"
    assert all(c.why == "" or grounded_why(c.why, c.abstract) == c.why for c in recommended)
    assert any(c.why for c in recommended)
    assert "Already in your library" in turn.answer and recommended[0].id in turn.answer
    sent = [q for p, q, _ in server.requests[before:] if p == "s2"]
    assert len(sent) == 1 and "query=consensus+protocols+for+replicated+logs" in sent[0]
    labels = steps(events)
    assert "Searching arXiv, Crossref, Semantic Scholar for “consensus protocols for " \
           "replicated logs”" in labels  # fmt: skip
    assert any(re.fullmatch(r"Ranking \d+ candidates", s) for s in labels)
    assert {"coordinator", "online_search", "online_synthesizer"} <= set(turn.usage.roles)


def test_the_cli_prints_a_discovery_turn_as_a_list_with_ids() -> None:
    import io

    from zocrates_nb.cli.printer import TurnPrinter
    from zocrates_nb.turn import Discovery

    fresh = Candidate(title="Paxos Made Simple", year=2001, venue="ACM SIGACT News",
                      why="The Paxos algorithm is very simple.")  # fmt: skip
    held = Candidate(title="Raft", year=2014, in_library=True, library_key="K1")
    d = Discovery(query="consensus", candidates=[fresh, held], errors=["Crossref: is unavailable"])
    record = TurnResult(turn_id="t1", session_id="s1", status="answered", answer="(markdown)",
                        discovery=d)  # fmt: skip
    out = io.StringIO()
    printer = TurnPrinter(None, json_mode=False, verbose=False, out=out)  # type: ignore[arg-type]
    printer.feed(Final.of(record))
    printer.print_human()
    text = out.getvalue()
    assert f"  {fresh.id}  Paxos Made Simple (2001, ACM SIGACT News)" in text
    assert "why: The Paxos algorithm is very simple." in text
    assert "Already in your library (not recommended again):\n  - Raft (2014)" in text
    assert "  - Crossref: is unavailable" in text
    assert "zocrates-nb stage add ID --session s1" in text and "(markdown)" not in text
    assert printer.result()["discovery"]["candidates"][0]["id"] == fresh.id
