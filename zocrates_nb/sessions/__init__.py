"""The session store (`sessions.db`): sessions, coordinator messages, turns (`turn.TurnResult`),
per-session state, numbered migrations and post-turn compaction. Knows nothing of agent
behaviour."""

from zocrates_nb.sessions.checkpoints import refuse_new_turn, refuse_resume
from zocrates_nb.sessions.claims import LEASE_SECONDS, RENEW_SECONDS, claim_holds
from zocrates_nb.sessions.compaction import (
    SUMMARY_PREFIX,
    CompactionResult,
    Summarizer,
    compact,
    estimate_tokens,
    maybe_compact,
    offline_summarize,
    prompt_tokens,
    render_transcript,
    should_compact,
    summary_message,
    summary_of,
)
from zocrates_nb.sessions.database import DB_FILE, INTERRUPTED
from zocrates_nb.sessions.errors import (
    CheckpointClaimed,
    CheckpointPending,
    NoPendingCheckpoint,
    SessionBusy,
    SessionNotFound,
    WrongCheckpoint,
)
from zocrates_nb.sessions.migrations import SCHEMA_VERSION, NewerSessionStore
from zocrates_nb.sessions.records import (
    COMPLETED_STATUSES,
    MessageBlock,
    SessionRecord,
)
from zocrates_nb.sessions.state import (
    MAX_AUDIT_TURNS,
    MAX_CACHED_OUTLINES,
    ActiveItem,
    AuditRecord,
    CachedOutline,
    CheckpointClaim,
    CheckpointSnapshot,
    CompactionInfo,
    SessionState,
)
from zocrates_nb.sessions.store import SessionStore

__all__ = [
    "COMPLETED_STATUSES",
    "DB_FILE",
    "INTERRUPTED",
    "LEASE_SECONDS",
    "MAX_AUDIT_TURNS",
    "MAX_CACHED_OUTLINES",
    "RENEW_SECONDS",
    "SCHEMA_VERSION",
    "SUMMARY_PREFIX",
    "ActiveItem",
    "AuditRecord",
    "CachedOutline",
    "CheckpointClaim",
    "CheckpointClaimed",
    "CheckpointPending",
    "CheckpointSnapshot",
    "CompactionInfo",
    "CompactionResult",
    "MessageBlock",
    "NewerSessionStore",
    "NoPendingCheckpoint",
    "SessionBusy",
    "SessionNotFound",
    "SessionRecord",
    "SessionState",
    "SessionStore",
    "Summarizer",
    "WrongCheckpoint",
    "claim_holds",
    "compact",
    "estimate_tokens",
    "maybe_compact",
    "offline_summarize",
    "prompt_tokens",
    "refuse_new_turn",
    "refuse_resume",
    "render_transcript",
    "should_compact",
    "summary_message",
    "summary_of",
]
