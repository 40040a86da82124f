"""Writing to Zotero only through Zotero's own APIs (never `zotero.sqlite`): the desktop app's
connector server, the Web API (pyzotero), or RIS/BibTeX files for a manual import. A room
beside `library/`; nothing here runs without the user's explicit confirmation upstream."""

from zocrates_nb.writeback.connector import ConnectorTarget, save_to_connector
from zocrates_nb.writeback.export import to_bibtex, to_ris
from zocrates_nb.writeback.items import zotero_item
from zocrates_nb.writeback.notes import answer_note_html, save_note_to_connector, save_note_to_web
from zocrates_nb.writeback.result import SaveResult, WriteError
from zocrates_nb.writeback.web import save_to_web

__all__ = [
    "ConnectorTarget",
    "SaveResult",
    "WriteError",
    "answer_note_html",
    "save_note_to_connector",
    "save_note_to_web",
    "save_to_connector",
    "save_to_web",
    "to_bibtex",
    "to_ris",
    "zotero_item",
]
