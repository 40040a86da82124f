"""One paper found outside the library, whatever API reported it, carried end to end (discover
→ staging → Zotero / RIS / BibTeX). The record itself lives with the turn record (`turn.py`),
since a discovery turn carries its candidates; here is how records from several APIs merge."""

from __future__ import annotations

from zocrates_nb.turn import (
    Candidate,
    candidate_id,
    clean_arxiv_id,
    clean_doi,
    normalize_title,
)

__all__ = ["Candidate", "candidate_id", "clean_arxiv_id", "clean_doi", "merge", "normalize_title"]


def merge(found: list[Candidate]) -> list[Candidate]:
    """One record per paper: records sharing a DOI, an arXiv id or a normalised title are merged,
    keeping the first non-empty value of each field and every source's name."""
    groups: list[Candidate] = []
    by_key: dict[str, Candidate] = {}
    for c in found:
        into = next((by_key[k] for k in c.identities() if k in by_key), None)
        if into is None:
            into = c.model_copy(deep=True)
            groups.append(into)
        else:
            for name in ("year", "doi", "arxiv_id", "url", "pdf_url"):
                if getattr(into, name) is None and getattr(c, name) is not None:
                    setattr(into, name, getattr(c, name))
            into.authors = into.authors or c.authors
            into.venue = into.venue or c.venue
            if len(c.abstract) > len(into.abstract):
                into.abstract = c.abstract
            into.sources += [s for s in c.sources if s not in into.sources]
            into.score = max(into.score, c.score)
        into.id = candidate_id(into)
        for k in into.identities():
            by_key[k] = into
    return groups
