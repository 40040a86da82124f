"""Zotero item fields → `Item`: the rules both Zotero readers (data dir, API) share.

Both readers hand over the same raw material (fields by name, creators, tags,
collections), so the DOI, date, venue and note-title rules live here once and a
library reads the same whichever way it was opened.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup

from zocrates_nb.library.model import Creator, Item

# Container fields, most specific first (type-specific names, not base fields: the
# DB stores proceedingsTitle for a conferencePaper, the API returns it under that name).
VENUE_FIELDS = (
    "publicationTitle",
    "proceedingsTitle",
    "bookTitle",
    "encyclopediaTitle",
    "dictionaryTitle",
    "websiteTitle",
    "blogTitle",
    "forumTitle",
    "programTitle",
    "conferenceName",
    "institution",
    "university",
    "repository",
    "publisher",
)
# Fields that have their own attribute on Item and are not repeated in Item.fields.
DEDICATED_FIELDS = frozenset({"title", "abstractNote", "date", "DOI", "url"})

_MULTIPART = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (.*)$", re.DOTALL)
_YEAR = re.compile(r"(?<!\d)(1[5-9]\d{2}|20\d{2}|21\d{2})(?!\d)")
_DOI = re.compile(r"10\.\d{4,9}/\S+")
_EXTRA_DOI = re.compile(r"^\s*DOI\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)


def human_date(value: str) -> str:
    """Zotero's multipart date '2017-12-00 2017-12' → the part a person typed ('2017-12')."""
    m = _MULTIPART.match(value.strip())
    return m.group(4).strip() if m else value.strip()


def year_of(value: str) -> int | None:
    """Year of a (multipart or free-text) date, None when there is none."""
    m = _MULTIPART.match(value.strip())
    if m and m.group(1) != "0000":
        return int(m.group(1))
    y = _YEAR.search(value)
    return int(y.group(1)) if y else None


def clean_doi(value: str) -> str:
    """'https://doi.org/10.1/x' or 'doi:10.1/x' → '10.1/x'; '' when there is no DOI."""
    m = _DOI.search(value)
    return m.group(0).rstrip(".,;") if m else ""


def doi_of(fields: dict[str, str]) -> str:
    """The DOI field, else a 'DOI: …' line in Extra (Zotero's place for types without DOI)."""
    doi = clean_doi(fields.get("DOI", ""))
    if doi:
        return doi
    m = _EXTRA_DOI.search(fields.get("extra", ""))
    return clean_doi(m.group(1)) if m else ""


def venue_of(fields: dict[str, str]) -> str:
    for name in VENUE_FIELDS:
        value = fields.get(name, "").strip()
        if value:
            return value
    return ""


def note_title(html: str) -> str:
    """First non-empty line of a note's text (what Zotero shows as the note's title)."""
    text = BeautifulSoup(html, "html.parser").get_text("\n")
    for line in text.splitlines():
        if line.strip():
            return " ".join(line.split())[:120]
    return ""


def iso_utc(timestamp: str | None) -> str:
    """The DB's UTC '2024-03-04 09:47:00' → the API's '2024-03-04T09:47:00Z'."""
    ts = (timestamp or "").strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", ts):
        return ts.replace(" ", "T") + "Z"
    return ts


def change_marker(version: int | str | None, date_modified: str | None) -> str:
    """'v{version}:{dateModified}'; the date makes a never-synced library (version 0) change too.

    Dates are in the API's ISO form, so a data-dir read and a local-API read of the same
    library give the same marker.
    """
    return f"v{version or 0}:{iso_utc(date_modified)}"


def build_item(
    key: str,
    item_type: str,
    fields: dict[str, str],
    *,
    creators: list[Creator],
    tags: list[str],
    collections: list[str],
    version: str,
    date_added: str = "",
    date_modified: str = "",
) -> Item:
    """An Item from fields by name; every field without its own attribute goes in `fields`."""
    raw_date = fields.get("date", "")
    extra_fields = {k: v for k, v in fields.items() if k not in DEDICATED_FIELDS and v != ""}
    if date_added:
        extra_fields["dateAdded"] = iso_utc(date_added)
    if date_modified:
        extra_fields["dateModified"] = iso_utc(date_modified)
    return Item(
        key=key,
        item_type=item_type,
        title=fields.get("title", "").strip(),
        creators=creators,
        date=human_date(raw_date),
        year=year_of(raw_date),
        doi=doi_of(fields),
        abstract=fields.get("abstractNote", "").strip(),
        venue=venue_of(fields),
        url=fields.get("url", "").strip(),
        tags=tags,
        collections=collections,
        version=version,
        fields=extra_fields,
    )
