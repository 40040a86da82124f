"""The embedded default: every role played without a language model, as pydantic-ai models.

With no model configured, the coordinator, the search agent and the synthesizer still run as the
same pydantic-ai agents with the same tools; only their model is a `FunctionModel` whose
"thinking" is deterministic code over the messages it is sent:

* coordinator: answers greetings and questions about itself, routes everything else to
  `search_library` (a follow-up is rewritten to stand alone with the previous turn's goal);
* search agent: searches passages, surveys candidate papers (frontmatter), opens outlines and
  reads the sections whose headings and passages best match the goal (embedding similarity over
  what the tools returned), reports gaps when the evidence is weak, then concludes;
* synthesizer: answers extractively — the evidence sentences that best answer the question
  (embedding similarity + lexical overlap, MMR for diversity), grouped by paper and cited `[n]` —
  or says plainly that the library holds no evidence;
* online search and online synthesizer (discovery): the request's key phrases sent once to the
  scholarly sources; the candidates kept in their ranking by meaning, each with its abstract's
  sentence closest to the question.

Everything it writes says it was made without a language model.

Modules: `messages` (reading the conversation), `embeddings`, `coordinator`, `search_state` and
`search` (the planner), `writer` (the extractive synthesizer), `discovery` (routing and the
online roles), `support` (the verifier's score),
`engine` (the `FunctionModel`s that wire them).
"""

from zocrates_nb.agents.offline.coordinator import coordinator_compute, standalone_goal
from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.agents.offline.engine import OfflineEngine, stream_from
from zocrates_nb.agents.offline.search import OfflineSearch
from zocrates_nb.agents.offline.support import offline_support
from zocrates_nb.agents.offline.writer import (
    NO_LM_NOTE,
    EvidenceChunk,
    OfflineSynthesizer,
    parse_evidence,
)

__all__ = [
    "NO_LM_NOTE",
    "EvidenceChunk",
    "OfflineEngine",
    "OfflineSearch",
    "OfflineSynthesizer",
    "SentenceEmbeddings",
    "coordinator_compute",
    "offline_support",
    "parse_evidence",
    "standalone_goal",
    "stream_from",
]
