"""The public API: `App` on a data home (facade.py, built from core.py, records.py and
papers.py), the turn state machine (runner.py), the event stream (stream.py), library operations
as typed records (library.py), `doctor` and its report (doctor.py), the one description of a
failure every surface shows (describe.py), the one view of a turn (view.py), and the records
surfaces show (a save's result, an outline, a read). Surfaces import from here, and only from
here below the base modules."""

from zocrates_nb.app.describe import describe_error, disk_full
from zocrates_nb.app.doctor import DoctorReport, ModelsInfo
from zocrates_nb.app.facade import ACTIONS, Action, App, open_app
from zocrates_nb.app.library import IndexStatus, SearchHit
from zocrates_nb.app.runner import CANCELLED, OnBegin
from zocrates_nb.app.view import turn_view
from zocrates_nb.retrieval.results import ReadAsset, ReadResult, TocResult
from zocrates_nb.sessions import (
    CheckpointClaimed,
    CheckpointPending,
    NoPendingCheckpoint,
    SessionBusy,
    SessionNotFound,
)
from zocrates_nb.writeback import SaveResult

__all__ = [
    "ACTIONS",
    "CANCELLED",
    "Action",
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
    "describe_error",
    "disk_full",
    "open_app",
    "turn_view",
]
