"""A `Candidate` as a Zotero item (the JSON both the connector and the Web API take)."""

from __future__ import annotations

from typing import Any

from zocrates_nb.online.candidate import Candidate

STAGED_TAG = "zocrates:discovered"


def split_name(name: str) -> dict[str, str]:
    """'Diego Ongaro' → first/last; 'Ongaro, Diego' too; one word → a single-field name."""
    name = " ".join(name.split())
    if "," in name:
        last, first = (p.strip() for p in name.split(",", 1))
        return {"creatorType": "author", "firstName": first, "lastName": last}
    first, _, last = name.rpartition(" ")
    if not first:
        return {"creatorType": "author", "name": name}
    return {"creatorType": "author", "firstName": first, "lastName": last}


def is_preprint(c: Candidate) -> bool:
    """Known only as an arXiv preprint (no DOI, or arXiv's own DataCite DOI)."""
    return bool(c.arxiv_id) and (not c.doi or c.doi.startswith("10.48550/"))


def zotero_item(c: Candidate, *, tags: list[str] | None = None) -> dict[str, Any]:
    """Zotero's item fields: a preprint when only arXiv knows it, else a journal article."""
    preprint = is_preprint(c)
    item: dict[str, Any] = {
        "itemType": "preprint" if preprint else "journalArticle",
        "title": c.title,
        "creators": [split_name(a) for a in c.authors if a.strip()],
        "date": str(c.year) if c.year else "",
        "url": c.url or (f"https://arxiv.org/abs/{c.arxiv_id}" if c.arxiv_id else ""),
        "abstractNote": c.abstract,
        "tags": [{"tag": t} for t in (tags if tags is not None else [STAGED_TAG])],
    }
    if c.doi:
        item["DOI"] = c.doi
    if preprint:
        item["repository"] = "arXiv"
        item["archiveID"] = f"arXiv:{c.arxiv_id}"
    else:
        item["publicationTitle"] = c.venue
        if c.arxiv_id:
            item["extra"] = f"arXiv: {c.arxiv_id}"
    return {k: v for k, v in item.items() if v not in ("", [])}
