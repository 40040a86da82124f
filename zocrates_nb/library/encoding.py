"""Bytes of a text file → text, and a note when the bytes were not clean UTF-8.

Windows' "Unicode" save writes UTF-16 with a byte-order mark; older tools write Windows-1252;
files get truncated mid-character or carry NUL bytes. Guessing silently (the old Latin-1
fallback) turned UTF-16 notes into NUL-riddled mojibake that nothing could search, so:
a BOM decides the encoding; otherwise UTF-8, and whatever is not valid UTF-8 becomes U+FFFD
with a warning. One exception keeps legacy notes searchable: text with no UTF-8 sequence at
all whose other bytes are accented letters inside words ("caf\xe9") is read as
Windows-1252, also with a warning. Control characters (NUL…) are removed, with a warning.
Lives in `library` because both the folder reader (front matter) and the converters use it.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field

_BOMS = (  # UTF-32 first: its little-endian BOM starts with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)
_UTF8_MULTIBYTE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}"
)
_HIGH = re.compile(rb"[\x80-\xff]")
# Legacy 8-bit text: accented letters inside words ("caf\xe9", "cr\xe8me"), or Windows-1252's
# curly quotes and dashes. A stray byte between spaces is damage, not an encoding.
_CP1252_LETTER = re.compile(rb"(?<=[A-Za-z\xc0-\xfe])[\xc0-\xfe]|[\xc0-\xfe](?=[A-Za-z\xc0-\xfe])")
_CP1252_PUNCT = re.compile(rb"[\x85\x91-\x97]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


@dataclass
class DecodedText:
    text: str
    encoding: str  # what was used: "UTF-8", "UTF-16", "Windows-1252"…
    warnings: list[str] = field(default_factory=list)


def decode_text(data: bytes, declared: str | None = None) -> DecodedText:
    """Decode a text file's bytes; `declared` is a charset the file names (HTML meta)."""
    out = _decode(data, declared)
    cleaned, n = _CONTROL.subn("", out.text)
    if n:
        out.text = cleaned
        out.warnings.append(f"{n:,} control character{'s' if n > 1 else ''} (NUL…) removed")
    return out


def _decode(data: bytes, declared: str | None) -> DecodedText:
    for bom, codec, name in _BOMS:
        if data.startswith(bom):
            return _lenient(data[len(bom) :], codec, name)
    utf16 = _bomless_utf16(data)
    if utf16:
        return _lenient(data, utf16, "UTF-16")
    if declared:
        try:
            codecs.lookup(declared)
            return DecodedText(data.decode(declared), declared)
        except (LookupError, UnicodeDecodeError):
            pass  # a wrong declaration: fall through to UTF-8
    try:
        return DecodedText(data.decode("utf-8"), "UTF-8")
    except UnicodeDecodeError:
        pass
    if not _UTF8_MULTIBYTE.search(data) and _legacy(data):
        return DecodedText(
            data.decode("cp1252"),
            "Windows-1252",
            ["not UTF-8: read as Windows-1252 (Latin-1); save the file as UTF-8 if accented "
             "letters look wrong"],
        )
    return _lenient(data, "utf-8", "UTF-8")


def _legacy(data: bytes) -> bool:
    """Most bytes above ASCII read as Windows-1252 letters in words or its punctuation."""
    high = len(_HIGH.findall(data))
    fitting = len(_CP1252_LETTER.findall(data)) + len(_CP1252_PUNCT.findall(data))
    return high > 0 and fitting >= 0.8 * high


def _lenient(data: bytes, codec: str, name: str) -> DecodedText:
    text = data.decode(codec, errors="replace")
    bad = text.count("\ufffd") - data.decode(codec, errors="ignore").count("\ufffd")
    warnings = []
    if bad:
        warnings.append(
            f"{bad:,} invalid {name} byte sequence{'s' if bad > 1 else ''} replaced with �"
        )
    return DecodedText(text, name, warnings)


def _bomless_utf16(data: bytes) -> str | None:
    """UTF-16 without a BOM: NUL in every other byte of mostly-ASCII text."""
    sample = data[:4096]
    if len(sample) < 16:
        return None
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) > 0.8 * len(odd) and even.count(0) < 0.1 * len(even):
        return "utf-16-le"
    if even.count(0) > 0.8 * len(even) and odd.count(0) < 0.1 * len(odd):
        return "utf-16-be"
    return None
