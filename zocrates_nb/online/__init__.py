"""Discovery beyond the library: scholarly APIs (arXiv, Crossref, Semantic Scholar, OpenAlex)
read into one `Candidate` record. A room beside `library/`: it reaches the outside world only
when the user enabled `online.enabled` and asked for it."""

from zocrates_nb.online.candidate import Candidate, candidate_id, normalize_title
from zocrates_nb.online.discover import Discovery, OnlineDisabled, discover
from zocrates_nb.online.http import SourceError

__all__ = [
    "Candidate",
    "Discovery",
    "OnlineDisabled",
    "SourceError",
    "candidate_id",
    "discover",
    "normalize_title",
]
