"""The public API: `App` on a data home (facade.py, built from core.py, records.py and
papers.py), the turn state machine (runner.py), the event stream (stream.py), library operations
as typed records (library.py), `doctor` and its report (doctor.py), the one description of a
failure every surface shows (describe.py), the one view of a turn (view.py), and the records
surfaces show (a save's result, an outline, a read). Surfaces import from here, and only from
here below the base modules."""

from typing import TYPE_CHECKING

from zocrates_nb.app.describe import describe_error, disk_full
from zocrates_nb.app.doctor import DoctorReport, ModelsInfo
from zocrates_nb.app.facade import ACTIONS, Action, App, open_app
from zocrates_nb.app.library import IndexStatus, SearchHit
from zocrates_nb.app.view import turn_view
from zocrates_nb.retrieval.results import ReadAsset, ReadResult, TocResult
from zocrates_nb.sessions import (
    CheckpointClaimed,
    CheckpointPending,
    NoPendingCheckpoint,
    SessionBusy,
    SessionNotFound,
    WrongCheckpoint,
)
from zocrates_nb.writeback import SaveResult
from zocrates_nb.writeback.annotations import AnnotateResult

if TYPE_CHECKING:
    from zocrates_nb.app.runner import CANCELLED, OnBegin


def __getattr__(name: str) -> object:
    """The turn runner's names, imported on first use: it pulls in the agents (pydantic-ai,
    the vector store), which `status`, `sessions` and the like never need."""
    if name in ("CANCELLED", "OnBegin"):
        from zocrates_nb.app import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'zocrates_nb.app' has no attribute {name!r}")


__all__ = [
    "ACTIONS",
    "CANCELLED",
    "Action",
    "AnnotateResult",
    "App",
    "CheckpointClaimed",
    "CheckpointPending",
    "DoctorReport",
    "IndexStatus",
    "ModelsInfo",
    "NoPendingCheckpoint",
    "OnBegin",
    "ReadAsset",
    "ReadResult",
    "SaveResult",
    "SearchHit",
    "SessionBusy",
    "SessionNotFound",
    "TocResult",
    "WrongCheckpoint",
    "describe_error",
    "disk_full",
    "open_app",
    "turn_view",
]
