"""One paper found outside the library, whatever API reported it, carried end to end (discover
→ staging → Zotero / RIS / BibTeX)."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from pydantic import BaseModel, Field

_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.IGNORECASE)
_ARXIV_VERSION = re.compile(r"v\d+$")


class Candidate(BaseModel):
    """A paper to consider adding; `id` is stable across sources and processes."""

    id: str = ""
    title: str
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    venue: str = ""
    doi: str | None = None
    arxiv_id: str | None = None
    url: str | None = None
    pdf_url: str | None = None  # open-access PDF when a source knows one
    abstract: str = ""
    in_library: bool = False
    library_key: str | None = None
    why: str = ""  # one sentence from its abstract that bears on the query
    sources: list[str] = Field(default_factory=list)  # which APIs reported it
    score: float = 0.0  # relevance to the query (higher first)

    def model_post_init(self, _context: object) -> None:
        self.doi = clean_doi(self.doi)
        self.arxiv_id = clean_arxiv_id(self.arxiv_id)
        if self.doi and not self.arxiv_id and (m := _ARXIV_DOI.match(self.doi)):
            self.arxiv_id = clean_arxiv_id(m.group(1))
        if not self.id:
            self.id = candidate_id(self)

    def identities(self) -> set[str]:
        """The identities this paper is known by, for de-duplication and library matching."""
        out = {f"title:{t}"} if (t := normalize_title(self.title)) else set()
        if self.doi:
            out.add(f"doi:{self.doi}")
        if self.arxiv_id:
            out.add(f"arxiv:{self.arxiv_id}")
        return out


def clean_doi(doi: str | None) -> str | None:
    """`https://doi.org/10.X/Y` and `doi:10.X/Y` → `10.x/y` (DOIs are case-insensitive)."""
    if not doi:
        return None
    text = re.sub(r"^(https?://(dx\.)?doi\.org/|doi:)", "", doi.strip(), flags=re.IGNORECASE)
    return text.lower() or None


def clean_arxiv_id(arxiv_id: str | None) -> str | None:
    """`http://arxiv.org/abs/2104.12255v1` → `2104.12255` (versions are one paper)."""
    if not arxiv_id:
        return None
    text = re.sub(r"^(https?://(export\.)?arxiv\.org/(abs|pdf)/|arxiv:)", "", arxiv_id.strip(),
                  flags=re.IGNORECASE)  # fmt: skip
    return _ARXIV_VERSION.sub("", text).lower() or None


def normalize_title(title: str | None) -> str:
    """Lower-case letters and digits only, accents folded: the same paper's titles agree."""
    text = unicodedata.normalize("NFKD", title or "")
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    return " ".join(re.findall(r"[a-z0-9]+", text))


def candidate_id(c: Candidate) -> str:
    """Short and stable: from the DOI, else the arXiv id, else the normalised title."""
    key = (f"doi:{c.doi}" if c.doi else f"arxiv:{c.arxiv_id}" if c.arxiv_id
           else f"title:{normalize_title(c.title)}")  # fmt: skip
    return "c" + hashlib.sha1(key.encode()).hexdigest()[:9]


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
