"""With a configured model, a compound question's parts come from the model (structured output),
checked, and carried to the search, the synthesizer and the turn's record; a model that fails or
answers outside the bounds falls back to the engine's own split and says so. Through `App.ask`,
on the `openai:` and `litellm:` routes, against the scripted OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents_helpers import run, terminal
from scripted_helpers import assert_usage_served, of_role, open_app, roles

from zocrates_nb.devtools.scripted_openai import (
    Hang,
    Request,
    ScriptedOpenAI,
    Status,
    Step,
    bad_args,
    structured,
    tool,
)

# No name the engine's rules know, so they see one question; a model sees two.
PAPERS = "What do the consensus paper and the gardening paper each say about failures?"
BY_MODEL = [
    {"question": "What does the consensus paper say about failures?",
     "subject": "the consensus paper"},
    {"question": "What does the gardening paper say about failures?",
     "subject": "the gardening paper"},
]  # fmt: skip
# Two names the engine's rules know (its fallback splits it by them).
NAMED = "How does Raft elect a leader, and how does BM25 weigh a query term?"


def ask(tmp_path: Path, llm: ScriptedOpenAI, index: Any, route: str, question: str,
        parts: Any, **models: Any) -> tuple[Any, Any]:  # fmt: skip
    llm.set_script(roles(coordinator=lambda req: tool("search_library", request=question),
                         parts=parts))  # fmt: skip
    app = open_app(tmp_path, llm, index, route, **models)
    sid = app.new_session()
    events = run(app.ask(question, session_id=sid, hitl=False))
    final = terminal(events)
    assert final.type == "final", final
    assert_usage_served(app.history(sid)[-1].usage, llm)
    return final, events


def split_step(events: list[Any]) -> Any:
    return next(e for e in events if e.type == "step" and e.phase == "parts")


def test_a_compound_question_is_split_by_the_model_and_carried_to_every_role(
    tmp_path: Path, scripted_llm: ScriptedOpenAI, small_index: Any, model_route: str
) -> None:
    final, events = ask(tmp_path, scripted_llm, small_index, model_route, PAPERS,
                        lambda req: structured(req, {"parts": BY_MODEL}))  # fmt: skip
    texts = [p["question"] for p in BY_MODEL]
    assert [p.text for p in final.parts] == texts
    assert [p.subject for p in final.parts] == ["the consensus paper", "the gardening paper"]
    assert split_step(events).detail["split_by"] == "model"
    (asked,) = of_role(scripted_llm, "parts")  # one request, the question fenced as data
    assert f"<question>\n{PAPERS}\n</question>" in asked.contents("user")[-1]
    search = of_role(scripted_llm, "search")[0].contents("user")[0]
    synthesis = of_role(scripted_llm, "synthesizer")[0].contents("user")[-1]
    for prompt in (search, synthesis):
        assert "Parts of the Question" in prompt and all(t in prompt for t in texts), prompt
    assert not any("parts" in w for w in final.warnings), final.warnings
    assert final.usage.roles["parts"].requests == 1


def test_a_question_the_model_reads_as_one_has_no_parts(
    tmp_path: Path, scripted_llm: ScriptedOpenAI, small_index: Any, model_route: str
) -> None:
    # The engine's rules would split it by its two names; the model's reading wins.
    final, events = ask(tmp_path, scripted_llm, small_index, model_route, NAMED,
                        lambda req: structured(req, {"parts": []}))  # fmt: skip
    assert final.parts == [] and not [e for e in events if e.type == "step"
                                      and e.phase == "parts"]  # fmt: skip
    assert len(of_role(scripted_llm, "parts")) == 1


def invented(req: Request) -> Step:
    return structured(req, {"parts": [
        {"question": "How does Raft elect a leader?", "subject": "Raft"},
        {"question": "How does Kubernetes schedule pods?", "subject": "Kubernetes"},
    ]})  # fmt: skip


def too_many(req: Request) -> Step:
    return structured(req, {"parts": [
        {"question": f"How does Raft elect a leader in case {i}?", "subject": "Raft"}
        for i in range(9)
    ]})  # fmt: skip


BAD = {
    "invented-subject": (invented, "neither in the question nor a name your library knows"),
    "too-many-parts": (too_many, "9 parts"),
    "invalid-arguments": (lambda req: bad_args(req.tools[0]), "sent unusable output twice"),
    "server-error": (lambda req: Status(500), "failed with a server error (HTTP 500)"),
    "hang": (lambda req: Hang(30), "did not finish answering within models.timeout = 3 s"),
}


@pytest.mark.parametrize(("script", "said"), BAD.values(), ids=list(BAD))
def test_a_split_the_model_gets_wrong_falls_back_to_the_engines_and_says_so(
    tmp_path: Path, scripted_llm: ScriptedOpenAI, small_index: Any, model_route: str,
    script: Any, said: str,
) -> None:  # fmt: skip
    final, events = ask(tmp_path, scripted_llm, small_index, model_route, NAMED, script,
                        timeout=3)  # fmt: skip
    assert [p.subject for p in final.parts] == ["Raft", "BM25"]  # the engine's rules
    assert split_step(events).detail["split_by"] == "engine"
    note = [w for w in final.warnings if w.startswith("The question was split into parts by "
                                                        "the engine's own rules: ")]
    assert len(note) == 1 and said in note[0], final.warnings
    assert "Kubernetes" not in final.answer and final.evidence
    assert final.usage.roles["parts"].requests == len(of_role(scripted_llm, "parts")) >= 1



@pytest.mark.parametrize(
    ("subjects", "said"),
    [
        (["the", "Python"], "names nothing"),  # a span of the question, but no name
        (["thon", "R"], "neither in the question"),  # inside a word is not a span
        (["Python", "python"], "twice"),
        (["R", "x" * 101], "longer than"),
    ],
)
def test_the_models_parts_are_bounded(subjects: list[str], said: str) -> None:
    from zocrates_nb.agents.model_parts import QuestionSplit, UnusableSplit, accepted

    question = "How do R and Python handle missing values in the consensus paper?"
    split = QuestionSplit(parts=[{"question": f"How does {s} do it?", "subject": s}
                                 for s in subjects])  # fmt: skip
    with pytest.raises(UnusableSplit, match=said):
        accepted(split, [question], None)
    fine = QuestionSplit(parts=[{"question": "How does R handle missing values", "subject": "R"},
                                {"question": "How does Python handle them?", "subject": "Python"}])
    assert [(p.subject, p.text) for p in accepted(fine, [question], None)] == [
        ("R", "How does R handle missing values?"), ("Python", "How does Python handle them?")]


def test_a_split_that_outlasts_its_own_bound_falls_back_without_waiting_for_the_model(
    tmp_path: Path, scripted_llm: ScriptedOpenAI, small_index: Any, model_route: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from zocrates_nb.agents import model_parts

    monkeypatch.setattr(model_parts, "TIMEOUT", 1.5)  # models.timeout stays 30 s
    final, _ = ask(tmp_path, scripted_llm, small_index, model_route, NAMED,
                   lambda req: Hang(30), timeout=30)  # fmt: skip
    assert [p.subject for p in final.parts] == ["Raft", "BM25"]
    assert any("did not split it within 1.5 s" in w for w in final.warnings), final.warnings
    assert final.timings["parts"] < 5
