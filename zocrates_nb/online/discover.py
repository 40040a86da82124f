"""One discovery run: ask every enabled source, merge duplicates, mark what the library already
holds, rank by relevance to the query and say why each paper is relevant.

Nothing is sent unless `online.enabled` is on: `OnlineDisabled` tells the user how to turn it on.
A source that fails is reported in `errors`; the others still answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import httpx

from zocrates_nb.config import CONFIG_FILE, OnlineSettings
from zocrates_nb.errors import ZocratesError
from zocrates_nb.online.candidate import (
    Candidate,
    clean_arxiv_id,
    clean_doi,
    merge,
    normalize_title,
)
from zocrates_nb.online.http import SourceError
from zocrates_nb.online.sources import enabled_sources, identifier, identity
from zocrates_nb.text import split_sentences, terms
from zocrates_nb.turn import Discovery

log = logging.getLogger(__name__)
MAX_LIMIT = 100

Similarity = Callable[[str, list[str]], list[float]]


class OnlineDisabled(ZocratesError):
    """Discovery is off; the message says how to turn it on. Nothing was sent."""

    def __init__(self) -> None:
        super().__init__(
            "Searching beyond your library is off, so nothing was sent. To turn it on, set "
            f'"online": {{"enabled": true}} in {CONFIG_FILE} in your data home '
            '(optionally "mailto": "you@example.org" for the scholarly APIs\' polite pools).'
        )


class Holder(Protocol):
    def find(self, c: Candidate) -> str | None:
        """The library's key for the paper ("" when held under no known key), else None."""
        ...


@dataclass
class LibraryMatch:
    """The library's papers by DOI, arXiv id and normalised title → item key."""

    keys: dict[str, str]

    @classmethod
    def of(cls, items: Iterable[tuple[str, str | None, str | None, str | None]]) -> LibraryMatch:
        """From (item key, title, DOI, arXiv id) rows."""
        keys: dict[str, str] = {}
        for key, title, doi, arxiv_id in items:
            for k in (f"title:{normalize_title(title)}" if normalize_title(title) else None,
                      f"doi:{d}" if (d := clean_doi(doi)) else None,
                      f"arxiv:{a}" if (a := clean_arxiv_id(arxiv_id)) else None):  # fmt: skip
                if k:
                    keys.setdefault(k, key)
        return cls(keys)

    def find(self, c: Candidate) -> str | None:
        # Identifiers before titles: two papers can share a title, never a DOI.
        for k in sorted(c.identities(), key=lambda k: k.startswith("title:")):
            if k in self.keys:
                return self.keys[k]
        return None


def discover(
    online: OnlineSettings,
    query: str,
    *,
    limit: int = 10,
    library: Holder | None = None,
    environ: dict[str, str] | None = None,
    transport: httpx.BaseTransport | None = None,
    similarity: Similarity | None = None,
) -> Discovery:
    """Candidates for `query` from every enabled source (raises OnlineDisabled when off): up
    to `limit` recommendations, then the papers found that the library already holds.

    `similarity(query, texts)` → one score in [-1, 1] per text (the bundled embedding model's
    cosine, from the App) ranks candidates by meaning; without it the lexical score ranks."""
    if not online.enabled:
        raise OnlineDisabled()
    query = " ".join(query.split())
    if not query:
        raise ZocratesError("Say what to look for: the query is empty.")
    limit = max(1, min(int(limit), MAX_LIMIT))
    ident = identifier(query)  # one paper by its DOI, arXiv id or ISBN: look it up
    sources = enabled_sources(online, environ, lookup=ident is not None)
    if not sources:
        off = "No scholarly source is enabled: turn one on under online.* in the config."
        return Discovery(query=query, errors=[off])
    found: list[Candidate] = []
    errors: list[str] = []
    timeout = httpx.Timeout(online.timeout, connect=min(5.0, online.timeout))
    client = httpx.Client(timeout=timeout, transport=transport, follow_redirects=True)
    with client, ThreadPoolExecutor(max_workers=len(sources)) as pool:
        futures = [pool.submit(s.lookup, client, *ident) if ident
                   else pool.submit(s.search, client, query, limit) for s in sources]  # fmt: skip
        for source, fut in zip(sources, futures, strict=True):
            try:
                found.extend(fut.result())
            except SourceError as e:
                errors.append(str(e))
            except Exception:  # a parser meeting an unforeseen shape: one source, one line
                errors.append(f"{source.name}: sent a response that could not be read")
    merged = merge(found)
    if ident:  # a look-up answers with that paper only, whatever else a source sent
        merged = [c for c in merged if c.identities() & identity(*ident)]
    wanted = query_terms(query)
    meaning = None
    if similarity is not None and merged:
        try:
            meaning = similarity(query, [f"{c.title}. {c.abstract[:600]}" for c in merged])
        except Exception as e:  # the embedding model unavailable: rank lexically, say so
            log.warning("discovery ranks lexically: %s", e)
            errors.append("Ranking by meaning was unavailable; ranked by shared words instead.")
    for n, c in enumerate(merged):
        c.score = relevance(c, wanted)
        if meaning is not None:
            c.score = round(0.7 * meaning[n] + 0.3 * c.score, 4)
        c.why = why(c, wanted)
        if library is not None and (key := library.find(c)) is not None:
            c.in_library, c.library_key = True, key or None
    merged.sort(key=lambda c: (-c.score, c.title))
    # Papers the library holds are not recommended again: they follow the `limit`
    # recommendations, marked, so the researcher sees what they already have.
    fresh = [c for c in merged if not c.in_library][:limit]
    held = [c for c in merged if c.in_library]
    return Discovery(query=query, candidates=fresh + held, errors=errors)


def query_terms(text: str) -> set[str]:
    return set(terms(text))


def relevance(c: Candidate, wanted: set[str]) -> float:
    """Share of the query's terms in the title (counted twice) and abstract, plus agreement
    between sources: a lexical stand-in until the ranking agent (embeddings) takes over."""
    if not wanted:
        return 0.0
    title, body = set(terms(c.title)), set(terms(c.abstract))
    hit = (2 * len(wanted & title) + len(wanted & body)) / (3 * len(wanted))
    return round(hit + 0.05 * (len(c.sources) - 1), 4)


def why(c: Candidate, wanted: set[str]) -> str:
    """The abstract's sentence sharing most terms with the query (grounded: quoted, not made)."""
    sentences = split_sentences(c.abstract)
    if not sentences or not wanted:
        return ""
    best = max(sentences, key=lambda s: len(wanted & set(terms(s))))
    if not wanted & set(terms(best)):
        return ""
    return best if len(best) <= 300 else best[:297].rstrip() + "…"
