"""What a save reports back to every surface."""

from __future__ import annotations

from pydantic import BaseModel, Field

from zocrates_nb.errors import ZocratesError


class WriteError(ZocratesError):
    """Nothing (or not everything) was written; the message says what to do."""


class SaveResult(BaseModel):
    to: str  # connector | web | ris | bibtex
    saved: list[str] = Field(default_factory=list)  # candidate ids written
    keys: dict[str, str] = Field(default_factory=dict)  # candidate id → new Zotero item key
    failed: dict[str, str] = Field(default_factory=dict)  # candidate id → plain reason
    # Already in Zotero, so not written again: candidate id → where it was found.
    held: dict[str, str] = Field(default_factory=dict)
    tagged: list[str] = Field(default_factory=list)  # existing item keys given a tag
    attached: list[str] = Field(default_factory=list)  # candidate ids Zotero found a PDF for
    # Saved, but its open-access PDF could not be attached: candidate id → plain reason.
    unattached: dict[str, str] = Field(default_factory=dict)
    where: str = ""  # "the collection 'X' in My Library", a file path…
    # Not saved yet, to be sent by the next save of the same list: in a batch whose answer was
    # lost or was refused for now (rate limit, server error), or not sent after it.
    pending: list[str] = Field(default_factory=list)
    message: str = ""  # why the save stopped, what was saved and how to continue ("" if done)
    warnings: list[str] = Field(default_factory=list)  # e.g. a place that could not be asked
    # Asked for but not done though the papers were saved ("the collection 'X'", "the tags …").
    incomplete: list[str] = Field(default_factory=list)
    titles: dict[str, str] = Field(default_factory=dict)  # candidate id → title, for messages

    @property
    def complete(self) -> bool:
        """Everything asked for was done (the exit status is 0 only then)."""
        return not (self.failed or self.pending or self.incomplete)

    def name(self, cid: str) -> str:
        """A paper as messages name it: its title, then its id."""
        title = self.titles.get(cid, "")
        return f"'{title[:80]}{'…' if len(title) > 80 else ''}' ({cid})" if title else cid
