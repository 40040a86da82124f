"""The public API: `App` on a data home (facade.py, built from core.py, records.py and
papers.py), the turn state machine (runner.py), the event stream (stream.py), library operations
as typed records (library.py), `doctor`, and the one description of a failure every surface shows
(describe.py). Surfaces import from here."""

from zocrates_nb.app.describe import describe_error
from zocrates_nb.app.facade import ACTIONS, Action, App, open_app
from zocrates_nb.app.library import IndexStatus, SearchHit
from zocrates_nb.app.runner import CANCELLED, OnBegin
from zocrates_nb.sessions import (
    CheckpointClaimed,
    CheckpointPending,
    NoPendingCheckpoint,
    SessionBusy,
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
    "OnBegin",
    "SearchHit",
    "SessionBusy",
    "SessionNotFound",
    "describe_error",
    "open_app",
]
