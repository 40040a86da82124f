"""One paper found outside the library, whatever API reported it, carried end to end (discover
→ staging → Zotero / RIS / BibTeX). The record itself lives with the turn record (`turn.py`),
since a discovery turn carries its candidates; here is how records from several APIs merge:
one record per work, the published version leading its preprint."""

from __future__ import annotations

from zocrates_nb.turn import (
    Candidate,
    candidate_id,
    clean_arxiv_id,
    clean_doi,
    normalize_title,
)

__all__ = ["Candidate", "candidate_id", "clean_arxiv_id", "clean_doi", "is_preprint", "merge",
           "normalize_title"]  # fmt: skip

# DOI prefixes of preprint servers (arXiv's DataCite DOIs, bioRxiv/medRxiv, Research Square,
# Preprints.org, OSF and its Rxivs, SSRN, ChemRxiv, TechRxiv, Authorea).
PREPRINT_DOI_PREFIXES = ("10.48550/", "10.1101/", "10.21203/", "10.20944/", "10.31219/",
                         "10.31234/", "10.31235/", "10.31222/", "10.2139/", "10.26434/",
                         "10.36227/", "10.22541/")  # fmt: skip


def is_preprint(c: Candidate) -> bool:
    """A preprint: its source says so, or only arXiv or a preprint server's DOI knows it."""
    if c.item_type:
        return c.item_type == "preprint"
    if c.doi:
        return c.doi.startswith(PREPRINT_DOI_PREFIXES)
    return bool(c.arxiv_id)


def _surnames(c: Candidate) -> set[str]:
    return {normalize_title(a.split(",")[0] if "," in a else a.split()[-1])
            for a in c.authors if a.strip()}  # fmt: skip


def same_work(a: Candidate, b: Candidate) -> bool:
    """A shared DOI, arXiv id or ISBN (a version relation counts); else the same title by an
    author they share (unless both are published under different DOIs)."""
    strong = {i for i in a.identities() if not i.startswith("title:")}
    if strong & b.identities():
        return True
    if not normalize_title(a.title) or normalize_title(a.title) != normalize_title(b.title):
        return False
    if a.doi and b.doi and not is_preprint(a) and not is_preprint(b):
        return False  # two publications sharing a title ("Introduction"): two works
    return not (_surnames(a) and _surnames(b)) or bool(_surnames(a) & _surnames(b))


def combine(first: Candidate, other: Candidate) -> Candidate:
    """One record of two versions: the published one leads (its DOI, venue, type, year and
    link); the other fills what it lacks, and its DOI is kept among the versions."""
    lead, rest = (other, first) if is_preprint(first) and not is_preprint(other) else (
        first, other)  # fmt: skip
    out = lead.model_copy(deep=True)
    for name in ("year", "doi", "arxiv_id", "url", "pdf_url", "isbn"):
        if getattr(out, name) is None and getattr(rest, name) is not None:
            setattr(out, name, getattr(rest, name))
    out.authors = out.authors or rest.authors
    out.venue = out.venue or rest.venue
    out.publisher = out.publisher or rest.publisher
    out.item_type = out.item_type or ("" if is_preprint(rest) else rest.item_type)
    if len(rest.abstract) > len(out.abstract):
        out.abstract = rest.abstract
    if rest.doi and rest.doi != out.doi:
        out.versions.append(f"doi:{rest.doi}")
    out.versions = list(dict.fromkeys([*out.versions, *rest.versions]))
    out.sources += [s for s in rest.sources if s not in out.sources]
    out.score = max(first.score, other.score)
    if not out.notice or (rest.retracted and not out.retracted):
        out.retracted, out.notice = rest.retracted, rest.notice or out.notice
    return out


def merge(found: list[Candidate]) -> list[Candidate]:
    """One record per work: records of the same paper (or of its preprint and published
    versions) are merged, keeping every source's name, in the order first found."""
    groups: list[Candidate] = []
    for c in found:
        n = next((n for n, g in enumerate(groups) if same_work(g, c)), None)
        if n is None:
            groups.append(c.model_copy(deep=True))
        else:
            groups[n] = combine(groups[n], c)
    for g in groups:
        g.versions = [v for v in g.versions if v not in {f"doi:{g.doi}", f"arxiv:{g.arxiv_id}"}]
        g.id = candidate_id(g)
    return groups
