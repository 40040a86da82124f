"""Whether Zotero already holds a paper, asked wherever it can be asked: the indexed library,
this data home's record of what it saved (the write ledger), Zotero's local API when it is on,
and the Web API when it is configured. A paper found anywhere is never saved again; the answer
says where it was found."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx2
import pyzotero
from pyzotero import zotero

from zocrates_nb.online.candidate import Candidate
from zocrates_nb.writeback.ledger import CONNECTOR, Saved
from zocrates_nb.writeback.web import WebLibrary, match

log = logging.getLogger(__name__)
Finder = Callable[[set[str], str], "str | None"]


@dataclass
class Place:
    name: str
    find: Finder
    quiet: bool = False  # not answering is normal (Zotero closed, its local API off)
    target: str = ""  # the write target it is (a Web API library), "" for others


def library_name(target: str, names: dict[str, str] | None = None) -> str:
    """A Web API write target as messages name it ("the group library 'Lab'")."""
    if names and target in names:
        return names[target]
    kind, _, number = target.removeprefix("web:").partition("s/")
    return "your user library" if kind == "user" else f"the group library {number}"


@dataclass
class Held:
    key: str  # the Zotero item key ("" when the connector saved it: it reports no keys)
    where: str  # "in your indexed library", "in the group library 'Lab' (saved from here …)"

    def describe(self) -> str:
        return f"{self.where}, item {self.key}" if self.key else self.where


class LocalLibrary:
    """Zotero desktop's local API (off by default; read-only before Zotero 10)."""

    def __init__(self, connector_url: str, timeout: float = 5.0) -> None:
        self.zot = zotero.Zotero(0, "user", local=True,
                                 client=httpx2.Client(timeout=timeout, trust_env=False))
        self.zot.endpoint = connector_url.rstrip("/") + "/api"

    def find(self, identities: set[str], title: str) -> str | None:
        asks = [i.split(":", 1)[1] for i in sorted(identities) if not i.startswith("title:")]
        for text, mode in [*((a, "everything") for a in asks), (title, "titleCreatorYear")]:
            if text.strip():
                found = self.zot.items(q=text[:200], qmode=mode, limit=25)
                if key := match([i for i in found or [] if isinstance(i, dict)], identities):
                    return key
        return None


@dataclass
class Holdings:
    """The places to ask, in order; a remote place that fails is skipped from then on (and
    named in `unasked`), the others still answer."""

    indexed: Callable[[Candidate], str | None] | None = None
    saved: dict[str, Saved] = field(default_factory=dict)
    remote: list[Place] = field(default_factory=list)
    unasked: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # write target → its library's name

    def find(self, c: Candidate) -> Held | None:
        ids = c.identities()
        if self.indexed is not None and (key := self.indexed(c)):
            return Held(key, "in your indexed library")
        # Identifiers before titles: two papers can share a title, never a DOI.
        for i in sorted(ids, key=lambda k: k.startswith("title:")):
            if i in self.saved:
                s = self.saved[i]
                day = time.strftime("%Y-%m-%d", time.localtime(s.settled))
                if s.target == CONNECTOR:
                    return Held(s.item_key, "in Zotero (saved from here through the Zotero "
                                            f"app on {day})")  # fmt: skip
                return Held(s.item_key, f"in {library_name(s.target, self.names)} (saved "
                                        f"from here through the Zotero Web API on {day})")
        for place in list(self.remote):
            try:
                key = place.find(ids, c.title)
            except (pyzotero.PyZoteroError, httpx2.HTTPError, ValueError, KeyError) as e:
                log.info("%s could not be asked: %s", place.name, e)
                self.remote.remove(place)
                if not place.quiet:
                    self.unasked.append(place.name)
                continue
            if key:
                return Held(key, f"in {place.name}")
        return None


def remote_places(*, web: WebLibrary | None, connector_url: str | None,
                  timeout: float = 5.0) -> list[Place]:  # fmt: skip
    """The places Zotero itself answers: the local API (when on), the Web API (when set up)."""
    places: list[Place] = []
    if connector_url:
        local = LocalLibrary(connector_url, timeout)
        places.append(Place("Zotero on this computer", local.find, quiet=True))
    if web is not None:
        places.append(Place(web.describe(), web.find, target=web.target))
    return places
