"""The offline engine's discovery: which requests ask for papers beyond the library (a rule),
the query the online search role sends (the request's key phrases), and the online synthesizer
played extractively (the candidates in their ranking by meaning, each with the abstract's
sentence closest to the question)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic_ai import ModelResponse
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from zocrates_nb.agents.offline.brief import OnlineSearchBrief, RecommendBrief, brief_of
from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.agents.offline.messages import exchanges, result_dict, tool_call
from zocrates_nb.agents.parts import core_goal
from zocrates_nb.text import split_sentences

# ---------------------------------------------------------------------------- routing
_OBJECT = (r"(?:papers?|articles?|work|works|literature|publications?|preprints?|studies|"
           r"reading|research|references)")  # fmt: skip
_ABOUT = r"(?:on|about|regarding|related to|covering|concerning|for|in the area of|into)"
# Papers beyond the library, said outright.
_OUTSIDE = re.compile(
    r"\bwhat am i missing\b|\bwhat (?:else )?(?:should|could|must) i (?:read|add|cite)\b|"
    r"\b(?:not|isn't|aren't) (?:yet )?in my (?:library|collection|zotero)\b|"
    r"\b(?:outside|beyond|missing from|absent from) (?:of )?(?:my|our|the) "
    r"(?:library|collection|zotero)\b|"
    r"\b(?:i|we) (?:don't|do not|dont|haven't|have not) (?:yet )?(?:have|own|got|read)\b",
    re.I,
)
# The library itself: its questions stay with the library search.
_INSIDE = re.compile(
    r"\b(?:in|from|within|among|inside|across|of) (?:my|our|the|this|these|those|selected) "
    r"(?:library|collection|collections|zotero|selection|selected papers|papers|items)\b|"
    r"\bmy (?:library|collection|papers|items|zotero)\b|\bwhich of (?:my|the|these)\b|"
    r"\bthe selected\b",
    re.I,
)
_FIND = re.compile(
    r"^\s*(?:please\s+)?(?:(?:can|could|would|will) you\s+)?(?:please\s+)?"
    r"(?:find|search(?: online)? for|look for|look up|recommend|suggest|discover|dig up|"
    r"get me|give me|fetch)\s+(?:me\s+)?(?:some\s+|more\s+|other\s+|new\s+|recent\s+|related\s+|"
    r"relevant\s+|good\s+|key\s+|additional\s+|further\s+|a few\s+|any\s+|several\s+|newer\s+)*"
    + _OBJECT + r"\s+" + _ABOUT + r"\b",
    re.I,
)
_RECENT = re.compile(
    r"\b(?:recent|latest|newest|new|current)\s+" + _OBJECT + r"\s+" + _ABOUT + r"\b", re.I
)
_ADD = re.compile(r"\b(?:add|import|look up|find|fetch|get)\b", re.I)
DOI = re.compile(r"\b10\.\d{4,9}/[^\s\"'<>]+", re.I)
ARXIV = re.compile(r"\b(?:arxiv:\s*|arxiv\.org/(?:abs|pdf)/)?(\d{4}\.\d{4,5}(?:v\d+)?)\b", re.I)


def identifier(text: str) -> str | None:
    """A DOI or an arXiv id the text names."""
    if m := DOI.search(text):
        return m.group(0).rstrip(".,;:)]")
    if m := ARXIV.search(text):
        return m.group(1)
    return None


def wants_discovery(message: str) -> bool:
    """Whether a message asks for papers beyond the library: "find / recommend papers on X",
    "what am I missing", "papers I don't have on X", "recent work on X", a DOI or arXiv id to
    add. A question about the library ("which papers in my library discuss X") does not."""
    if _OUTSIDE.search(message) or (identifier(message) and _ADD.search(message)):
        return True
    if _INSIDE.search(message):
        return False
    return bool(_FIND.search(message) or _RECENT.search(message))


# ---------------------------------------------------------------------------- the query
_LEAD_INS = [
    re.compile(r"^\s*(?:please\s+)?(?:(?:can|could|would|will) you\s+)?(?:please\s+)?", re.I),
    re.compile(r"^(?:find|search(?: online)? for|look for|look up|recommend|suggest|discover|"
               r"dig up|get me|give me|fetch|show me|list)\s+(?:me\s+)?", re.I),
    re.compile(r"^what am i missing\s*(?:" + _ABOUT + r")?\s*", re.I),
    re.compile(r"^what (?:else )?(?:should|could|must) i (?:read|add|cite)\s*(?:" + _ABOUT
               + r")?\s*", re.I),
    re.compile(r"^(?:(?:some|more|other|new|newer|recent|latest|newest|current|related|"
               r"relevant|good|key|additional|further|a few|any|several)\s+)*", re.I),
    re.compile(r"^" + _OBJECT + r"\s+(?:(?:that|which)\s+)?(?:i|we)\s+(?:don't|do not|dont|"
               r"haven't|have not)\s+(?:yet\s+)?(?:have|own|got|read)\s*(?:yet\s*)?", re.I),
    re.compile(r"^" + _OBJECT + r"\s+", re.I),
    re.compile(r"^" + _ABOUT + r"\s+", re.I),
]
_TAIL = re.compile(
    r"\s*(?:,?\s*(?:that|which)\s+(?:i|we)\s+(?:don't|do not|dont|haven't|have not)\s+"
    r"(?:yet\s+)?(?:have|own|got|read)(?:\s+yet)?|\s+(?:that are |which are )?(?:not|isn't|"
    r"aren't)\s+(?:yet\s+)?in my (?:library|collection|zotero)|\s+(?:outside|beyond)\s+(?:of\s+)?"
    r"my (?:library|collection|zotero)|\s+online|\s+on the web|\s+please)\s*$",
    re.I,
)


def key_phrases(request: str) -> str:
    """What the offline search role sends: a named DOI or arXiv id, else the request without
    its asking ("find papers on", "what am I missing on", "recent work about", "that I don't
    have")."""
    text = " ".join(request.split())
    if ident := identifier(text):
        return ident
    text = core_goal(text)
    text = text.rstrip("?.! ")
    for _ in range(3):
        before = text
        for rx in _LEAD_INS:
            text = rx.sub("", text, count=1).strip()
        text = _TAIL.sub("", text).strip().rstrip("?.!,; ")
        if text == before:
            break
    return text or " ".join(request.split())


# ---------------------------------------------------------------------------- the roles
def online_search_compute(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """One query of the request's key phrases, then stop."""
    request = brief_of(OnlineSearchBrief).request
    done = [e for e in exchanges(messages) if e.tool == "search_scholarly_sources"]
    if not done:
        return tool_call("search_scholarly_sources", {"query": key_phrases(request)})
    found = sum(len(result_dict(e.result).get("papers") or []) for e in done)
    summary = f"{found} paper(s) from {len(done)} quer{'y' if len(done) == 1 else 'ies'}."
    return tool_call("finish_search", {"summary": summary})


# How close (cosine, all-MiniLM-L6-v2) a paper's title or abstract must come to the question to
# be recommended offline: unrelated papers score about 0.0–0.25, papers on the topic 0.4 and up.
RELEVANCE_FLOOR = 0.35


class OfflineRecommender:
    """The online synthesizer without a language model: the candidates in the order discovery
    ranked them (by meaning, with the bundled embedding model), each with the sentence of its
    abstract closest to the question — quoted, never written."""

    def __init__(self, emb: SentenceEmbeddings) -> None:
        self.emb = emb

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        brief = brief_of(RecommendBrief)
        question = brief.question or brief.request
        topic = key_phrases(question) or question
        picks: list[dict[str, str]] = []
        for c in brief.candidates:
            if len(picks) >= brief.limit:
                break
            why, relevance = self.best_sentence(topic, c.title, c.abstract)
            # Sources answer every query with something: a paper whose title and abstract
            # say nothing close to the question is not recommended (the answer counts it).
            if relevance >= RELEVANCE_FLOOR:
                picks.append({"id": c.id, "why": why})
        name = info.output_tools[0].name if info.output_tools else "final_result"
        return tool_call(name, {"recommendations": picks})

    def best_sentence(self, question: str, title: str, abstract: str) -> tuple[str, float]:
        """The abstract's sentence closest to the question, and how close the paper comes
        (its title or best sentence: cosine with the bundled embedding model)."""
        sentences = split_sentences(abstract) if abstract.strip() else []
        sentences = [s for s in sentences if len(s.split()) >= 4][:40]
        texts = [t for t in (title, *sentences) if t]
        if not texts:
            return "", 0.0
        scores: Sequence[float] = self.emb.similarity(question, texts).tolist()
        if not sentences:
            return "", max(scores)
        best = max(range(len(sentences)), key=lambda i: scores[i + bool(title)])
        return sentences[best], max(scores)


__all__ = [
    "OfflineRecommender",
    "identifier",
    "key_phrases",
    "online_search_compute",
    "wants_discovery",
]
