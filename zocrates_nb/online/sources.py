"""The scholarly APIs behind one small interface: `Source.search(query, limit)` → candidates.

Plain httpx for all four so that timeouts, `Retry-After` and "nothing goes online unless
enabled" live in one place (`online.http`) and every base URL is configurable (mirrors, tests).
Parsers are defensive: the recorded responses show years of schema drift.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

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

    def lookup(self, client: httpx.Client, kind: str, ident: str) -> list[Candidate]: ...


_DOI_RE = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)?(10\.\d{4,9}/\S+)$", re.I)
_ARXIV_RE = re.compile(
    r"^(?:https?://(?:export\.)?arxiv\.org/(?:abs|pdf)/|arxiv:\s*)?"
    r"(\d{4}\.\d{4,5}(?:v\d+)?|[a-z-]+(?:\.[A-Z]{2})?/\d{7}(?:v\d+)?)(?:\.pdf)?$",
    re.I,
)


def identity(kind: str, ident: str) -> set[str]:
    """The identities of the paper a look-up asks for (as `Candidate.identities` spells them)."""
    return Candidate(title="", doi=ident if kind == "doi" else None,
                     arxiv_id=ident if kind == "arxiv" else None).identities()  # fmt: skip


def identifier(query: str) -> tuple[str, str] | None:
    """("doi", "10.x/y") or ("arxiv", "2104.12255v1") when the whole query is one identifier:
    a look-up of that paper, not a search."""
    text = query.strip().rstrip(".,;")
    if m := _DOI_RE.match(text):
        return "doi", m.group(1)
    if m := _ARXIV_RE.match(text):
        return "arxiv", m.group(1)
    return None


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

    def lookup(self, client: httpx.Client, kind: str, ident: str) -> list[Candidate]:
        """The paper with this DOI or arXiv id (nothing, without a request, from a source that
        does not register that kind of identifier)."""
        return []

    def _found(self, fetch: Callable[[], list[Candidate]]) -> list[Candidate]:
        """A look-up's result; "not found" (HTTP 404) is an empty answer, not an error."""
        try:
            return fetch()
        except SourceError as e:
            if e.status == 404:
                return []
            raise

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


    def lookup(self, client: httpx.Client, kind: str, ident: str) -> list[Candidate]:
        if kind != "arxiv":
            return []
        # The parameters the `arxiv` client sends for an id look-up.
        params = {"search_query": "", "id_list": ident, "sortBy": "relevance",
                  "sortOrder": "descending", "start": 0, "max_results": 100}  # fmt: skip
        r = get(client, self.name, self.settings.base_url + "/query", params=params,
                max_retry_after=self.online.max_retry_after)  # fmt: skip
        return parse_arxiv(r.content, self.name)


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


    def lookup(self, client: httpx.Client, kind: str, ident: str) -> list[Candidate]:
        if kind != "doi":
            return []  # Crossref registers DOIs only
        mail = self.online.mailto
        params = {"mailto": mail} if mail else None
        agent = f"{USER_AGENT} (mailto:{mail})" if mail else USER_AGENT

        def fetch() -> list[Candidate]:
            data = self._get(client, f"/works/{quote(ident, safe='')}", params=params,
                             headers={"User-Agent": agent})  # fmt: skip
            item = crossref_item((data or {}).get("message") or {}, self.name)
            return [item] if item.title else []

        return self._found(fetch)


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


    def lookup(self, client: httpx.Client, kind: str, ident: str) -> list[Candidate]:
        headers = {"User-Agent": USER_AGENT}
        if self.key:
            headers["x-api-key"] = self.key
        ref = quote(f"DOI:{ident}" if kind == "doi" else f"arXiv:{ident}", safe=":")

        def fetch() -> list[Candidate]:
            data = self._get(client, f"/paper/{ref}", headers=headers,
                             params={"fields": S2_FIELDS})  # fmt: skip
            paper = s2_paper(data or {}, self.name)
            return [paper] if paper.title else []

        return self._found(fetch)


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


    def lookup(self, client: httpx.Client, kind: str, ident: str) -> list[Candidate]:
        if kind != "doi":
            return []
        params: dict[str, Any] = {"api_key": self.key} if self.key else {}
        if self.online.mailto:
            params["mailto"] = self.online.mailto

        def fetch() -> list[Candidate]:
            data = self._get(client, f"/works/doi:{quote(ident, safe='')}", params=params,
                             headers={"User-Agent": USER_AGENT})  # fmt: skip
            work = openalex_work(data or {}, self.name)
            return [work] if work.title else []

        return self._found(fetch)


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
