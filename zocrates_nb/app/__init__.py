"""The public API: `App` on a data home (facade.py), the turn state machine (runner.py), the
event stream (stream.py), library operations as typed records (library.py), `doctor`, and the
one description of a failure every surface shows (describe.py)."""

from zocrates_nb.app.describe import describe_error
from zocrates_nb.app.facade import ACTIONS, Action, App, open_app
from zocrates_nb.app.library import IndexStatus, SearchHit
from zocrates_nb.app.runner import CANCELLED
from zocrates_nb.sessions import (
    CheckpointClaimed,
    CheckpointPending,
    NoPendingCheckpoint,
    SessionNotFound,
)

__all__ = [
    "ACTIONS",
    "CANCELLED",
    "Action",
    "App",
    "CheckpointClaimed",
    "CheckpointPending",
    "IndexStatus",
    "NoPendingCheckpoint",
    "SearchHit",
    "SessionNotFound",
    "describe_error",
    "open_app",
]
