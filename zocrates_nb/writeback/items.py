"""A `Candidate` as a Zotero item (the JSON both the connector and the Web API take): its item
type as its source record says (conference paper, book section, thesis, report, book,
preprint, journal article) and its venue in that type's own field."""

from __future__ import annotations

from typing import Any

from zocrates_nb.online.candidate import Candidate, is_preprint
from zocrates_nb.writeback.names import creator

STAGED_TAG = "zocrates:discovered"
ITEM_TYPES = ("journalArticle", "conferencePaper", "bookSection", "thesis", "report", "book",
              "preprint")  # fmt: skip
# Where each type keeps the venue a source reported (Zotero's schema: publicationTitle's
# and publisher's per-type names).
VENUE_FIELD = {
    "journalArticle": "publicationTitle",
    "conferencePaper": "proceedingsTitle",
    "bookSection": "bookTitle",
    "thesis": "university",
    "report": "institution",
    "preprint": "repository",
}
PUBLISHER_FIELD = {"book": "publisher", "bookSection": "publisher", "conferencePaper": "publisher"}
ISBN_TYPES = ("book", "bookSection", "conferencePaper", "thesis", "report")


def item_type(c: Candidate) -> str:
    """The type its source record gave, else a preprint when only arXiv or a preprint server
    knows it, else a journal article."""
    if c.item_type in ITEM_TYPES:
        return c.item_type
    return "preprint" if is_preprint(c) else "journalArticle"


def zotero_item(c: Candidate, *, tags: list[str] | None = None,
                collection: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Zotero's item fields for the candidate (Zotero's field names for its type)."""
    kind = item_type(c)
    item: dict[str, Any] = {
        "itemType": kind,
        "title": c.title,
        "creators": [creator(a) for a in c.authors if a.strip()],
        "date": str(c.year) if c.year else "",
        "url": c.url or (f"https://arxiv.org/abs/{c.arxiv_id}" if c.arxiv_id else ""),
        "abstractNote": c.abstract,
        "tags": [{"tag": t} for t in (tags if tags is not None else [STAGED_TAG])],
    }
    if c.doi:
        item["DOI"] = c.doi
    venue = c.venue
    if kind == "preprint":
        if c.arxiv_id and (not c.doi or c.doi.startswith("10.48550/")):
            venue = "arXiv"
            item["archiveID"] = f"arXiv:{c.arxiv_id}"
        elif c.arxiv_id:
            item["extra"] = f"arXiv: {c.arxiv_id}"
    elif c.arxiv_id:
        item["extra"] = f"arXiv: {c.arxiv_id}"
    if kind in VENUE_FIELD:
        item[VENUE_FIELD[kind]] = venue
    if kind in PUBLISHER_FIELD and c.publisher:
        item[PUBLISHER_FIELD[kind]] = c.publisher
    if kind in ISBN_TYPES and c.isbn:
        item["ISBN"] = c.isbn
    if collection:
        item["collections"] = [collection]
    return {k: v for k, v in item.items() if v not in ("", [])}


def annotation_identity(data: dict[str, Any]) -> str:
    """What names one highlight in one attachment, from its item JSON (sent or read back): the
    attachment, Zotero's sort index (page, character offset, top) and the text's length."""
    text = data.get("annotationText")
    return (f"highlight:{data.get('parentItem')}:{data.get('annotationSortIndex')}:"
            f"{len(text) if isinstance(text, str) else 0}")  # fmt: skip
