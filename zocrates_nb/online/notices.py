"""A retraction, withdrawal or expression of concern as the scholarly APIs report it: one
`Notice` record, read from an OpenAlex work (`is_retracted`) or a Crossref work (its
`updated-by` notices, or the works a notice is an `update-to` of). Discovery's candidates and
the library's check (`retractions.py`) read them the same way; `RetractionStatus` is what every
surface shows of the library's papers flagged."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from zocrates_nb.online.candidate import clean_doi

Kind = Literal["retraction", "withdrawal", "expression_of_concern"]
# Crossref's update types that matter here (partial retractions count as retractions).
_KINDS: dict[str, Kind] = {"retraction": "retraction", "partial_retraction": "retraction",
                           "removal": "withdrawal", "withdrawal": "withdrawal",
                           "expression_of_concern": "expression_of_concern"}  # fmt: skip


class Notice(BaseModel):
    """What the scholarly record says happened to one paper."""

    doi: str
    kind: Kind = "retraction"
    year: int | None = None
    notice_doi: str | None = None  # the retraction notice itself, when Crossref names it
    sources: list[str] = Field(default_factory=list)  # OpenAlex, Crossref

    @property
    def retracted(self) -> bool:
        return self.kind != "expression_of_concern"

    def sentence(self) -> str:
        """'this paper was retracted in 2021' (the words every surface shows)."""
        when = f" in {self.year}" if self.year else ""
        if self.kind == "expression_of_concern":
            return "an expression of concern was published about this paper" + when
        return f"this paper was {'withdrawn' if self.kind == 'withdrawal' else 'retracted'}{when}"


def openalex_notice(work: dict[str, Any]) -> Notice | None:
    """OpenAlex says only whether a work is retracted (no kind, no date)."""
    doi = clean_doi(str(work.get("doi") or ""))
    if work.get("is_retracted") is not True or not doi:
        return None
    return Notice(doi=doi.lower(), sources=["OpenAlex"])


def crossref_notices(work: dict[str, Any]) -> list[Notice]:
    """A Crossref work's own notices (`updated-by`) and the works it is a notice of
    (`update-to`), those of the kinds that matter here."""
    own = clean_doi(str(work.get("DOI") or ""))
    out = []
    for field, is_notice in (("updated-by", False), ("update-to", True)):
        updates = work.get(field)
        for u in updates if isinstance(updates, list) else []:
            if not isinstance(u, dict) or not (kind := _KINDS.get(str(u.get("type")).lower())):
                continue
            other = clean_doi(str(u.get("DOI") or ""))
            target, notice = (other, own) if is_notice else (own, other)
            if target:
                out.append(Notice(doi=target.lower(), kind=kind, year=_year(u.get("updated")),
                                  notice_doi=notice, sources=["Crossref"]))  # fmt: skip
    return out


def _year(updated: Any) -> int | None:
    try:
        year = int(updated["date-parts"][0][0])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return year if 1600 < year < 3000 else None


class RetractedPaper(BaseModel):
    item_key: str
    title: str
    doi: str
    retracted: bool  # False: an expression of concern
    notice: str  # "this paper was retracted in 2021"


class RetractionStatus(BaseModel):
    """What the last check of the library's DOIs found, and when it was made."""

    checked: str | None = None  # ISO date of the last check (None: never)
    dois: int = 0  # DOIs in the library
    papers: list[RetractedPaper] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    message: str = ""  # one line for every surface

    def describe(self, online: bool) -> str:
        """One line for every surface: what was flagged, when it was checked, whether sent."""
        if not self.dois:
            return "Retractions: the library has no DOIs to check."
        when = f"last checked {self.checked}" if self.checked else "never checked"
        off = "" if online else "; online search is off, nothing was sent"
        flagged = "; ".join(f"{p.title}: {p.notice}" for p in self.papers) or "none flagged"
        failed = f" Not every source answered: {'; '.join(self.errors)}." if self.errors else ""
        return f"Retractions ({self.dois} DOIs, {when}{off}): {flagged}.{failed}"
