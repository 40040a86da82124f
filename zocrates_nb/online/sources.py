"""The scholarly APIs behind one small interface: `Source.search(query, limit)` → candidates.

Plain httpx for all four so that timeouts, `Retry-After` and "nothing goes online unless
enabled" live in one place (`online.http`) and every base URL is configurable (mirrors, tests).
Parsers are defensive: the recorded responses show years of schema drift.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

import httpx
from defusedxml import ElementTree

from zocrates_nb.config import OnlineSettings, SourceSettings
from zocrates_nb.online.candidate import Candidate, clean_doi
from zocrates_nb.online.http import SourceError, get, get_json
from zocrates_nb.online.markup import abstract_text, plain
from zocrates_nb.online.notices import Notice, crossref_notices, openalex_notice
from zocrates_nb.turn import clean_isbn

# What each API calls a record, as Zotero's item type ("" leaves it to the default).
CROSSREF_TYPES = {
    "journal-article": "journalArticle", "proceedings-article": "conferencePaper",
    "book-chapter": "bookSection", "book-section": "bookSection", "book-part": "bookSection",
    "dissertation": "thesis", "report": "report", "report-component": "report",
    "book": "book", "monograph": "book", "edited-book": "book", "reference-book": "book",
}  # fmt: skip
OPENALEX_TYPES = {"article": "journalArticle", "preprint": "preprint", "book": "book",
                  "book-chapter": "bookSection", "dissertation": "thesis", "report": "report"}
S2_TYPES = {"Conference": "conferencePaper", "BookSection": "bookSection", "Book": "book",
            "JournalArticle": "journalArticle"}  # fmt: skip

USER_AGENT = "zocrates-nb (https://github.com/zocrates-nb)"
_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"


class Source(Protocol):
    name: str

    def search(self, client: httpx.Client, query: str, limit: int) -> list[Candidate]: ...

    def lookup(self, client: httpx.Client, kind: str, ident: str) -> list[Candidate]: ...


_DOI_RE = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)?(10\.\d{4,9}/\S+)$", re.I)
_ISBN_RE = re.compile(r"^(?:isbn(?:-1[03])?:?\s*)?((?:97[89][\s-]?)?(?:\d[\s-]?){9}[\dXx])$", re.I)
_ARXIV_RE = re.compile(
    r"^(?:https?://(?:export\.)?arxiv\.org/(?:abs|pdf)/|arxiv:\s*)?"
    r"(\d{4}\.\d{4,5}(?:v\d+)?|[a-z-]+(?:\.[A-Z]{2})?/\d{7}(?:v\d+)?)(?:\.pdf)?$",
    re.I,
)


def identity(kind: str, ident: str) -> set[str]:
    """The identities of the paper a look-up asks for (as `Candidate.identities` spells them)."""
    return Candidate(title="", doi=ident if kind == "doi" else None,
                     arxiv_id=ident if kind == "arxiv" else None,
                     isbn=ident if kind == "isbn" else None).identities()  # fmt: skip


def not_an_identifier(query: str) -> str:
    """Why `query` names no paper (for an identifier that `identifier` refused)."""
    text = query.strip().rstrip(".,;")
    if m := _ISBN_RE.match(text):
        digits = re.sub(r"[\s-]", "", m.group(1))
        return (f"an ISBN whose check digit is wrong ({digits[-1]}): check it for a typing "
                "mistake")  # fmt: skip
    if re.match(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)?10\.\d", text, re.I):
        return "not a complete DOI (10.<prefix>/<suffix>)"
    return "not a DOI, an arXiv id or an ISBN"


def identifier(query: str) -> tuple[str, str] | None:
    """("doi", "10.x/y"), ("arxiv", "2104.12255v1") or ("isbn", "9780262033848") when the
    whole query is one identifier: a look-up of that paper, not a search."""
    text = query.strip().rstrip(".,;")
    if m := _DOI_RE.match(text):
        return "doi", m.group(1)
    if m := _ARXIV_RE.match(text):
        return "arxiv", m.group(1)
    if m := _ISBN_RE.match(text):
        isbn = clean_isbn(m.group(1))
        return ("isbn", isbn) if isbn else None
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

    def _one(self, client: httpx.Client, path: str, parse: Callable[[Any, str], Candidate],
             **kw: Any) -> list[Candidate]:  # fmt: skip
        """A look-up's one paper; "not found" (HTTP 404) is an empty answer, not an error."""
        try:
            data = self._get(client, path, **kw)
        except SourceError as e:
            if e.status == 404:
                return []
            raise
        found = parse(data or {}, self.name)
        return [found] if found.title else []

    def _get(self, client: httpx.Client, path: str, **kw: Any) -> Any:
        return get_json(client, self.name, self.settings.base_url + path, **self.pacing, **kw)

    @property
    def pacing(self) -> dict[str, Any]:
        """The longest wait honoured and this API's polite interval (`online.http.get`)."""
        return {"max_retry_after": self.online.max_retry_after,
                "interval": self.settings.min_interval}  # fmt: skip


class Arxiv(_Base):
    def search(self, client: httpx.Client, query: str, limit: int) -> list[Candidate]:
        terms = " AND ".join(f"all:{w}" for w in query.split())
        params = {"search_query": terms, "start": 0, "max_results": limit,
                  "sortBy": "relevance", "sortOrder": "descending"}  # fmt: skip
        # arXiv sporadically answers an empty first page to queries that match: ask once more
        # before trusting it (its API group's advice).
        for _ in range(2):
            r = get(client, self.name, self.settings.base_url + "/query", params=params,
                    **self.pacing)
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
                **self.pacing)
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
            abstract=abstract_text(e.findtext(f"{_ATOM}summary")),
            sources=[name],
        ))  # fmt: skip
    return [c for c in out if c.title]


class Crossref(_Base):
    def _polite(self, params: dict[str, Any]) -> dict[str, Any]:
        """The polite pool: `mailto` in the query and the User-Agent, when one is configured."""
        mail = self.online.mailto
        agent = f"{USER_AGENT} (mailto:{mail})" if mail else USER_AGENT
        return {"params": {**params, "mailto": mail} if mail else params,
                "headers": {"User-Agent": agent}}  # fmt: skip

    def search(self, client: httpx.Client, query: str, limit: int) -> list[Candidate]:
        data = self._get(client, "/works",
                         **self._polite({"query.bibliographic": query, "rows": limit}))  # fmt: skip
        items = ((data or {}).get("message") or {}).get("items") or []
        return [c for c in (crossref_item(i, self.name) for i in items) if c.title]

    def lookup(self, client: httpx.Client, kind: str, ident: str) -> list[Candidate]:
        if kind != "doi":
            return []  # Crossref registers DOIs only
        return self._one(client, f"/works/{quote(ident, safe='')}",
                         lambda d, n: crossref_item(d.get("message") or {}, n),
                         **self._polite({}))  # fmt: skip


def crossref_item(i: dict[str, Any], name: str = "Crossref") -> Candidate:
    parts = ((i.get("issued") or i.get("published") or {}).get("date-parts") or [[None]])[0]
    pdf = next((ln.get("URL") for ln in i.get("link") or []
                if ln.get("content-type") == "application/pdf"), None)  # fmt: skip
    kind = str(i.get("type") or "")
    item_type = ("preprint" if kind == "posted-content" and i.get("subtype") == "preprint"
                 else CROSSREF_TYPES.get(kind, ""))  # fmt: skip
    venue = " ".join((i.get("container-title") or [])[:1])
    if not venue or item_type in ("thesis", "report", "preprint"):  # who published it
        venue = next((str(x.get("name") or "") for x in i.get("institution") or []
                      if isinstance(x, dict)), "") or venue  # fmt: skip
    raw = i.get("relation")
    relation: dict[str, Any] = raw if isinstance(raw, dict) else {}
    versions = [f"doi:{d}" for r in ("has-preprint", "is-preprint-of")
                for x in relation.get(r) or [] if isinstance(x, dict)
                and x.get("id-type") == "doi" and (d := clean_doi(str(x.get("id") or "")))]
    return Candidate(
        title=plain(" ".join(i.get("title") or [])),
        # "Family, Given": Crossref knows which name is which, so nothing has to guess later.
        authors=[", ".join(filter(None, [a.get("family"), a.get("given")])) or a.get("name", "")
                 for a in i.get("author") or []],
        year=parts[0] if parts and isinstance(parts[0], int) else None,
        venue=plain(venue),
        doi=i.get("DOI"),
        url=i.get("URL"),
        pdf_url=pdf,
        isbn=next(iter(i.get("ISBN") or []), None),
        publisher=plain(i.get("publisher")) if item_type in ("book", "bookSection") else "",
        item_type=item_type,
        versions=versions,
        abstract=abstract_text(i.get("abstract")),
        sources=[name],
        score=float(i.get("score") or 0.0),
        **_flag([n for n in crossref_notices(i) if n.doi == clean_doi(i.get("DOI"))]),
    )  # fmt: skip


S2_FIELDS = "title,authors,year,venue,externalIds,abstract,openAccessPdf,url,publicationTypes"


class SemanticScholar(_Base):
    def _headers(self) -> dict[str, str]:
        return {"User-Agent": USER_AGENT, **({"x-api-key": self.key} if self.key else {})}

    def search(self, client: httpx.Client, query: str, limit: int) -> list[Candidate]:
        data = self._get(client, "/paper/search", headers=self._headers(),
                         params={"query": query, "limit": limit, "fields": S2_FIELDS})  # fmt: skip
        return [c for c in (s2_paper(p, self.name) for p in (data or {}).get("data") or [])
                if c.title]  # fmt: skip

    def lookup(self, client: httpx.Client, kind: str, ident: str) -> list[Candidate]:
        if kind not in ("doi", "arxiv"):
            return []
        ref = quote(f"DOI:{ident}" if kind == "doi" else f"arXiv:{ident}", safe=":")
        return self._one(client, f"/paper/{ref}", s2_paper, headers=self._headers(),
                         params={"fields": S2_FIELDS})  # fmt: skip


def s2_paper(p: dict[str, Any], name: str = "Semantic Scholar") -> Candidate:
    ids = p.get("externalIds") or {}
    kinds = [t for t in p.get("publicationTypes") or [] if t in S2_TYPES]
    return Candidate(
        title=plain(p.get("title")),
        authors=[a.get("name", "") for a in p.get("authors") or []],
        year=p.get("year") if isinstance(p.get("year"), int) else None,
        venue=plain(p.get("venue")),
        doi=ids.get("DOI"),
        arxiv_id=ids.get("ArXiv"),
        url=p.get("url"),
        pdf_url=(p.get("openAccessPdf") or {}).get("url") or None,
        item_type=S2_TYPES[kinds[0]] if kinds else "",
        abstract=abstract_text(p.get("abstract")),
        sources=[name],
    )


class OpenAlex(_Base):
    def _params(self, **params: Any) -> dict[str, Any]:
        """The key (its 2026 terms) and the polite pool's `mailto`, with the call's own."""
        extra = {"api_key": self.key, "mailto": self.online.mailto}
        return {**params, **{k: v for k, v in extra.items() if v}}

    def search(self, client: httpx.Client, query: str, limit: int) -> list[Candidate]:
        data = self._get(client, "/works", params=self._params(search=query, **{"per-page": limit}),
                         headers={"User-Agent": USER_AGENT})  # fmt: skip
        return [c for c in (openalex_work(w, self.name) for w in (data or {}).get("results") or [])
                if c.title]  # fmt: skip

    def lookup(self, client: httpx.Client, kind: str, ident: str) -> list[Candidate]:
        if kind != "doi":
            return []
        return self._one(client, f"/works/doi:{quote(ident, safe='')}", openalex_work,
                         params=self._params(), headers={"User-Agent": USER_AGENT})  # fmt: skip


def openalex_work(w: dict[str, Any], name: str = "OpenAlex") -> Candidate:
    loc = w.get("primary_location") or {}
    best = w.get("best_oa_location") or {}
    ids = w.get("ids") or {}
    item_type = OPENALEX_TYPES.get(str(w.get("type") or ""), "")
    if item_type == "journalArticle" and (loc.get("source") or {}).get("type") == "conference":
        item_type = "conferencePaper"
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
        item_type=item_type,
        abstract=abstract_text(inverted_abstract(w.get("abstract_inverted_index"))),
        sources=[name],
        score=float(w.get("relevance_score") or 0.0),
        **_flag([n] if (n := openalex_notice(w)) else []),
    )  # fmt: skip


def _flag(notices: list[Notice]) -> dict[str, Any]:
    """A candidate's `retracted` and `notice` from what its source reported."""
    if not notices:
        return {}
    n = max(notices, key=lambda n: (n.retracted, n.year or 0))
    return {"retracted": n.retracted, "notice": n.sentence()}


def inverted_abstract(index: Any) -> str:
    """OpenAlex's word → positions index back to text."""
    if not isinstance(index, dict):
        return ""
    words = sorted((pos, word) for word, positions in index.items() for pos in positions or [])
    return " ".join(w for _, w in words)


class OpenLibrary(_Base):
    """Books by ISBN (Open Library's Books API, `jscmd=data`); it is never searched."""

    def search(self, client: httpx.Client, query: str, limit: int) -> list[Candidate]:
        return []

    def lookup(self, client: httpx.Client, kind: str, ident: str) -> list[Candidate]:
        if kind != "isbn":
            return []
        params = {"bibkeys": f"ISBN:{ident}", "format": "json", "jscmd": "data"}
        data = self._get(client, "/api/books", params=params, headers={"User-Agent": USER_AGENT})
        record = (data or {}).get(f"ISBN:{ident}") if isinstance(data, dict) else None
        found = openlibrary_book(record, ident, self.name) if isinstance(record, dict) else None
        return [found] if found is not None and found.title else []


def openlibrary_book(b: dict[str, Any], isbn: str, name: str = "Open Library") -> Candidate:
    title = plain(b.get("title"))
    if isinstance(b.get("subtitle"), str) and b["subtitle"].strip():
        title = f"{title}: {plain(b['subtitle'])}"
    year = re.search(r"\b(1[5-9]\d\d|20\d\d)\b", str(b.get("publish_date") or ""))
    return Candidate(
        title=title,
        authors=[plain(a.get("name")) for a in b.get("authors") or [] if isinstance(a, dict)],
        year=int(year.group(1)) if year else None,
        publisher=next((plain(p.get("name")) for p in b.get("publishers") or []
                        if isinstance(p, dict)), ""),
        isbn=isbn,
        url=b.get("url") if isinstance(b.get("url"), str) else None,
        item_type="book",
        sources=[name],
    )


def enabled_sources(online: OnlineSettings, environ: dict[str, str] | None = None, *,
                    lookup: bool = False) -> list[_Base]:  # fmt: skip
    """The sources to ask: enabled ones; OpenAlex only when its key is set (its 2026 terms);
    Open Library only for a look-up (`lookup`: it is never searched)."""
    env = dict(os.environ) if environ is None else environ
    made = [
        Arxiv(online.arxiv, online, "arXiv", env),
        Crossref(online.crossref, online, "Crossref", env),
        SemanticScholar(online.semantic_scholar, online, "Semantic Scholar", env),
        OpenAlex(online.openalex, online, "OpenAlex", env),
        OpenLibrary(online.openlibrary, online, "Open Library", env),
    ]
    return [s for s in made if s.settings.enabled and (s.name != "OpenAlex" or s.key)
            and (lookup or not isinstance(s, OpenLibrary))]
