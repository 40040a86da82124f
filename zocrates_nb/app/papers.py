"""`App`'s papers beyond the library: discovery, the staging list, adding by identifier, and
saving to Zotero (or a file), answers' quotes as highlights: each method a door to discovery.py,
adding.py, writes.py or annotating.py (imported when used: opening an App loads no network
client)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from zocrates_nb.app.core import AppCore

ZOTERO_TARGETS = ("connector", "web")  # a save whose ledger the data home keeps

if TYPE_CHECKING:
    from zocrates_nb.online import Candidate, Discovery
    from zocrates_nb.writeback import SaveResult
    from zocrates_nb.writeback.annotations import AnnotateResult


class Papers(AppCore):
    """Discovery, staging and Zotero writes (mixed into `App`)."""

    def discover(self, query: str, *, limit: int = 10, session_id: str | None = None) -> Discovery:
        """Papers beyond the library from the enabled scholarly APIs (`online.*`), deduplicated,
        ranked, each with why it is relevant and whether the library already holds it; they are
        remembered for `stage`. Raises `OnlineDisabled` (sending nothing) while discovery is
        off. Without `session_id` the data home's own list is used."""
        from zocrates_nb.app.discovery import run_discovery

        return run_discovery(self, query, limit=limit, session_id=session_id)

    def stage(self, ids: Sequence[str], *, session_id: str | None = None) -> list[Candidate]:
        """Put discovered candidates on the staging list (all or none); a paper Zotero already
        holds (the index, this data home's saves, Zotero's local or Web API) is refused with
        where it is."""
        from zocrates_nb.app.discovery import stage

        self.refuse_read_only("stage papers")
        return stage(self, list(ids), session_id=session_id)

    def unstage(self, ids: Sequence[str], *, session_id: str | None = None) -> int:
        """Take candidates off the staging list; how many were on it."""
        from zocrates_nb.app.writes import list_of
        from zocrates_nb.sessions.staging import Staging

        self.refuse_read_only("change the staging list")
        return Staging(self.store).unstage(list(ids), list_id=list_of(self, session_id))

    def staged(self, *, session_id: str | None = None) -> list[Candidate]:
        """The staging list, in staging order."""
        from zocrates_nb.app.discovery import candidates_of

        return candidates_of(self, session_id, staged=True)

    def discovered(self, *, session_id: str | None = None) -> list[Candidate]:
        """The candidates discovery remembered (staged or not), for `stage`."""
        from zocrates_nb.app.discovery import candidates_of

        return candidates_of(self, session_id, staged=False)

    def save_staged(
        self,
        to: str,
        *,
        confirmed: bool = False,
        session_id: str | None = None,
        out: Path | str | None = None,
        collection: str | None = None,
        tags: Sequence[str] | None = None,
        ids: Sequence[str] | None = None,
        lost: str | None = None,
    ) -> tuple[SaveResult, str | None]:
        """Save the staging list to Zotero (`connector`: the running app, into `collection` —
        a path or name — else its selected one; `web`: the Web API, `collection` a key) with
        `tags`, or export it (`ris`, `bibtex`: to `out`, else returned as text). Nothing is
        written unless `confirmed`, nothing Zotero holds is written again, and a retry or
        re-run never writes a paper twice (`lost`: "saved"/"unsaved", what the researcher
        found in Zotero for a connector save whose answer was lost). `zotero.sqlite` is never
        touched."""
        from zocrates_nb.app.writes import save_staged

        if confirmed and to in ZOTERO_TARGETS:  # its record of what Zotero holds stays here
            self.refuse_read_only("save to Zotero")
        target = Path(out) if out else None
        return save_staged(self, to, session_id=session_id, confirmed=confirmed, out=target,
                           collection=collection, tags=tags, ids=ids, lost=lost)  # fmt: skip

    def lookup(self, identifiers: Sequence[str]) -> tuple[list[Candidate], dict[str, str]]:
        """The papers DOIs, arXiv ids or ISBNs name (from the scholarly sources, while
        `online.enabled` is on), and the identifiers not found with why. Writes nothing."""
        from zocrates_nb.app.adding import lookup

        return lookup(self, identifiers)

    def add(
        self,
        identifiers: Sequence[str],
        *,
        to: str = "connector",
        confirmed: bool = False,
        collection: str | None = None,
        tags: Sequence[str] | None = None,
        lost: str | None = None,
    ) -> tuple[SaveResult, list[Candidate]]:
        """Add papers by DOI, arXiv id or ISBN to Zotero (`connector` or `web`, into
        `collection` with `tags`), as `save_staged` saves: after `confirmed`, never twice,
        nothing Zotero holds. The result and the papers found."""
        from zocrates_nb.app.adding import add

        if confirmed:
            self.refuse_read_only("add papers to Zotero")
        return add(self, identifiers, to=to, confirmed=confirmed, collection=collection,
                   tags=tags, lost=lost)  # fmt: skip

    def save_note(
        self,
        session_id: str,
        *,
        to: str,
        turn_id: str | None = None,
        confirmed: bool = False,
        collection: str | None = None,
        tag_cited: bool = False,
        standalone: bool = False,
    ) -> SaveResult:
        """Save an answer with its cited sources as a Zotero note (`connector`: standalone in
        the selected collection; `web`: a child of the one cited item when the library holds
        it, else a WriteError offering `standalone` or adding the paper). Default: the
        session's last answered turn. `tag_cited` (web) tags the cited items `zocrates:cited`.
        Nothing is written unless `confirmed`; a note is written once per library."""
        from zocrates_nb.app.writes import save_note

        if confirmed and to in ZOTERO_TARGETS:
            self.refuse_read_only("save a note to Zotero")
        return save_note(self, session_id, turn_id=turn_id, to=to, confirmed=confirmed,
                         collection=collection, tag_cited=tag_cited,
                         standalone=standalone)  # fmt: skip

    def annotate(self, session_id: str, *, turn: str | int | None = None, to: str = "web",
                 confirmed: bool = False, dry_run: bool = False) -> AnnotateResult:  # fmt: skip
        """Write each verified quote of a turn (its number or id; default the session's last
        answer) as a highlight in its PDF in Zotero (`web`), never twice; quotes that cannot
        be placed exactly, folder papers and non-PDF attachments are named as skipped.
        Nothing is written unless `confirmed`; `dry_run` shows what would be."""
        from zocrates_nb.app.annotating import annotate

        if confirmed and not dry_run:
            self.refuse_read_only("write highlights to Zotero")
        return annotate(self, session_id, turn=turn, to=to, confirmed=confirmed,
                        dry_run=dry_run)  # fmt: skip
