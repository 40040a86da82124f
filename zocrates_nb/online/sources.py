"""The scholarly APIs behind one small interface: `Source.search(query, limit)` → candidates.

Plain httpx for all four so that timeouts, `Retry-After` and "nothing goes online unless
enabled" live in one place (`online.http`) and every base URL is configurable (mirrors, tests).
Parsers are defensive: the recorded responses show years of schema drift.
"""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
from defusedxml import ElementTree

from zocrates_nb.config import OnlineSettings, SourceSettings
from zocrates_nb.online.candidate import Candidate
from zocrates_nb.online.http import SourceError, get, get_json

USER_AGENT = "zocrates-nb (https://github.com/zocrates-nb)"
_TAG = re.compile(r"<[^>]+>")
_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"


class Source(Protocol):
    name: str

    def search(self, client: httpx.Client, query: str, limit: int) -> list[Candidate]: ...


@dataclass
class _Base:
    settings: SourceSettings
    online: OnlineSettings
    name: str = ""
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))

    @property
    def key(self) -> str | None:
        env = self.settings.api_key_env
        return (self.environ.get(env) or "").strip() or None if env else None

    def search(self, client: httpx.Client, query: str, limit: int) -> list[Candidate]:
        raise NotImplementedError

    def _get(self, client: httpx.Client, path: str, **kw: Any) -> Any:
        return get_json(client, self.name, self.settings.base_url + path,
                        max_retry_after=self.online.max_retry_after, **kw)  # fmt: skip


def plain(text: str | None) -> str:
    """Markup (JATS, HTML) stripped, entities decoded (`&amp;` → `&`), whitespace collapsed."""
    return " ".join(html.unescape(_TAG.sub(" ", text or "")).split())


class Arxiv(_Base):
    def search(self, client: httpx.Client, query: str, limit: int) -> list[Candidate]:
        terms = " AND ".join(f"all:{w}" for w in query.split())
        params = {"search_query": terms, "start": 0, "max_results": limit,
                  "sortBy": "relevance", "sortOrder": "descending"}  # fmt: skip
        # arXiv sporadically answers an empty first page to queries that match: ask once more
        # before trusting it (its API group's advice).
        for _ in range(2):
            r = get(client, self.name, self.settings.base_url + "/query", params=params,
                    max_retry_after=self.online.max_retry_after)  # fmt: skip
            found = parse_arxiv(r.content, self.name)
            if found:
                break
        return found


def parse_arxiv(body: bytes, name: str = "arXiv") -> list[Candidate]:
    try:
        feed = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        raise SourceError(name, "sent a response that could not be read") from None
    out = []
    for e in feed.iter(f"{_ATOM}entry"):
        ident = e.findtext(f"{_ATOM}id") or ""
        if "/api/errors" in ident:
            raise SourceError(name, "rejected the request")
        pdf = next((ln.get("href") for ln in e.iter(f"{_ATOM}link")
                    if ln.get("title") == "pdf"), None)  # fmt: skip
        published = e.findtext(f"{_ATOM}published") or ""
        out.append(Candidate(
            title=plain(e.findtext(f"{_ATOM}title")),
            authors=[plain(a.findtext(f"{_ATOM}name")) for a in e.iter(f"{_ATOM}author")],
            year=int(published[:4]) if published[:4].isdigit() else None,
            venue=plain(e.findtext(f"{_ARXIV}journal_ref")) or "arXiv",
            doi=e.findtext(f"{_ARXIV}doi"),
            arxiv_id=ident,
            url=ident.replace("http://", "https://") or None,
            pdf_url=pdf,
            abstract=plain(e.findtext(f"{_ATOM}summary")),
            sources=[name],
        ))  # fmt: skip
    return [c for c in out if c.title]


class Crossref(_Base):
    def search(self, client: httpx.Client, query: str, limit: int) -> list[Candidate]:
        mail = self.online.mailto
        params: dict[str, Any] = {"query.bibliographic": query, "rows": limit}
        if mail:
            params["mailto"] = mail  # the polite pool
        agent = f"{USER_AGENT} (mailto:{mail})" if mail else USER_AGENT
        data = self._get(client, "/works", params=params, headers={"User-Agent": agent})
        items = ((data or {}).get("message") or {}).get("items") or []
        return [c for c in (crossref_item(i, self.name) for i in items) if c.title]


def crossref_item(i: dict[str, Any], name: str = "Crossref") -> Candidate:
    parts = ((i.get("issued") or i.get("published") or {}).get("date-parts") or [[None]])[0]
    pdf = next((ln.get("URL") for ln in i.get("link") or []
                if ln.get("content-type") == "application/pdf"), None)  # fmt: skip
    return Candidate(
        title=plain(" ".join(i.get("title") or [])),
        authors=[" ".join(filter(None, [a.get("given"), a.get("family")])) or a.get("name", "")
                 for a in i.get("author") or []],
        year=parts[0] if parts and isinstance(parts[0], int) else None,
        venue=plain(" ".join((i.get("container-title") or [])[:1])),
        doi=i.get("DOI"),
        url=i.get("URL"),
        pdf_url=pdf,
        abstract=plain(i.get("abstract")),
        sources=[name],
        score=float(i.get("score") or 0.0),
    )  # fmt: skip


S2_FIELDS = "title,authors,year,venue,externalIds,abstract,openAccessPdf,url"


class SemanticScholar(_Base):
    def search(self, client: httpx.Client, query: str, limit: int) -> list[Candidate]:
        headers = {"User-Agent": USER_AGENT}
        if self.key:
            headers["x-api-key"] = self.key
        data = self._get(
            client,
            "/paper/search",
            headers=headers,
            params={"query": query, "limit": limit, "fields": S2_FIELDS},
        )
        return [c for c in (s2_paper(p, self.name) for p in (data or {}).get("data") or [])
                if c.title]  # fmt: skip


def s2_paper(p: dict[str, Any], name: str = "Semantic Scholar") -> Candidate:
    ids = p.get("externalIds") or {}
    return Candidate(
        title=plain(p.get("title")),
        authors=[a.get("name", "") for a in p.get("authors") or []],
        year=p.get("year") if isinstance(p.get("year"), int) else None,
        venue=plain(p.get("venue")),
        doi=ids.get("DOI"),
        arxiv_id=ids.get("ArXiv"),
        url=p.get("url"),
        pdf_url=(p.get("openAccessPdf") or {}).get("url") or None,
        abstract=plain(p.get("abstract")),
        sources=[name],
    )


class OpenAlex(_Base):
    def search(self, client: httpx.Client, query: str, limit: int) -> list[Candidate]:
        params: dict[str, Any] = {"search": query, "per-page": limit}
        if self.key:
            params["api_key"] = self.key
        if self.online.mailto:
            params["mailto"] = self.online.mailto
        data = self._get(client, "/works", params=params, headers={"User-Agent": USER_AGENT})
        return [c for c in (openalex_work(w, self.name) for w in (data or {}).get("results") or [])
                if c.title]  # fmt: skip


def openalex_work(w: dict[str, Any], name: str = "OpenAlex") -> Candidate:
    loc = w.get("primary_location") or {}
    best = w.get("best_oa_location") or {}
    ids = w.get("ids") or {}
    return Candidate(
        title=plain(w.get("title") or w.get("display_name")),
        authors=[(a.get("author") or {}).get("display_name") or a.get("raw_author_name") or ""
                 for a in w.get("authorships") or []],
        year=w.get("publication_year") if isinstance(w.get("publication_year"), int) else None,
        venue=plain((loc.get("source") or {}).get("display_name")),
        doi=w.get("doi"),
        arxiv_id=ids.get("arxiv"),
        url=loc.get("landing_page_url") or w.get("id"),
        pdf_url=best.get("pdf_url") or loc.get("pdf_url") or None,
        abstract=inverted_abstract(w.get("abstract_inverted_index")),
        sources=[name],
        score=float(w.get("relevance_score") or 0.0),
    )  # fmt: skip


def inverted_abstract(index: Any) -> str:
    """OpenAlex's word → positions index back to text."""
    if not isinstance(index, dict):
        return ""
    words = sorted((pos, word) for word, positions in index.items() for pos in positions or [])
    return " ".join(w for _, w in words)


def enabled_sources(online: OnlineSettings, environ: dict[str, str] | None = None) -> list[_Base]:
    """The sources to ask: enabled ones; OpenAlex only when its key is set (its 2026 terms)."""
    env = dict(os.environ) if environ is None else environ
    made = [
        Arxiv(online.arxiv, online, "arXiv", env),
        Crossref(online.crossref, online, "Crossref", env),
        SemanticScholar(online.semantic_scholar, online, "Semantic Scholar", env),
        OpenAlex(online.openalex, online, "OpenAlex", env),
    ]
    return [s for s in made if s.settings.enabled and (s.name != "OpenAlex" or s.key)]
