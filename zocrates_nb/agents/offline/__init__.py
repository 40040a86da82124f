"""The embedded default: every role played without a language model, as pydantic-ai models.

With no model configured, the coordinator, the search agent and the synthesizer still run as the
same pydantic-ai agents with the same tools; only their model is a `FunctionModel` whose
"thinking" is deterministic code. What each role is told it reads from its typed brief
(`brief`: the run state, budgets, parts, guidance, the conversation's turns, the ranked
evidence), handed over by the code that runs it; what its tools returned it reads from its
messages. No prompt prose decides what it does:

* coordinator: answers greetings, questions about itself and about the conversation (from its
  turns), routes everything else to `search_library` (a message that refers back names what it
  refers to; any other is a new question);
* search agent: searches passages, surveys candidate papers (frontmatter), opens outlines and
  reads the sections whose headings and passages best match the goal (the passages' stored
  window vectors: nothing is embedded twice), reports gaps when the evidence is weak, concludes;
* synthesizer: answers extractively — the evidence sentences that best answer the question
  (embedding similarity of the sentences the stored windows point to + lexical overlap, MMR for
  diversity), grouped by paper and cited `[n]`, the paper a question names first — or says
  plainly that the scope holds no evidence;
* online search and online synthesizer (discovery): the request's key phrases sent once to the
  scholarly sources; the candidates kept in their ranking by meaning, each with its abstract's
  sentence closest to the question.

Everything it writes says it was made without a language model.

Modules: `brief` (the typed hand-over), `messages` (tool results), `embeddings`, `coordinator`
and `conversation`, `search_state`, `search` and `guidance` (the planner), `quotes` and `writer`
(the extractive synthesizer), `discovery` (routing and the online roles), `support` (the
verifier's score), `engine` (the `FunctionModel`s that wire them).
"""

from zocrates_nb.agents.offline.brief import (
    CoordinatorBrief,
    MissingBrief,
    OnlineSearchBrief,
    PastTurn,
    RecommendBrief,
    SearchBrief,
    WriterBrief,
    briefed,
)
from zocrates_nb.agents.offline.coordinator import coordinator_compute, standalone_goal
from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.agents.offline.engine import OfflineEngine, stream_from
from zocrates_nb.agents.offline.quotes import EvidenceChunk
from zocrates_nb.agents.offline.search import OfflineSearch
from zocrates_nb.agents.offline.support import offline_support
from zocrates_nb.agents.offline.writer import NO_LM_NOTE, OfflineSynthesizer

__all__ = [
    "NO_LM_NOTE",
    "CoordinatorBrief",
    "EvidenceChunk",
    "MissingBrief",
    "OfflineEngine",
    "OfflineSearch",
    "OfflineSynthesizer",
    "OnlineSearchBrief",
    "PastTurn",
    "RecommendBrief",
    "SearchBrief",
    "SentenceEmbeddings",
    "WriterBrief",
    "briefed",
    "coordinator_compute",
    "offline_support",
    "standalone_goal",
    "stream_from",
]
