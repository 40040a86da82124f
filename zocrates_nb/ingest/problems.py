"""What a researcher reads when a document cannot be indexed: one plain line, never Python.

Every conversion failure passes through `plain_message`, so the index report, the catalogue
and `doctor` never show an exception class name, a traceback or a library's own error text
("RecursionError: maximum recursion depth exceeded", "PdfiumError: Failed to load
document"). Known cases are worded as what to do about them.
"""

from __future__ import annotations

import errno
import logging
import re

from zocrates_nb.ingest.bundle import ConversionError

log = logging.getLogger(__name__)

MAX_CHARS = 300
_CLASS_PREFIX = re.compile(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception|Warning)\b:?\s*)+")
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\s*File \".*\", line \d+", re.M)

DEEP_NESTING = "too deeply nested to read (markup thousands of levels deep)"
NO_MEMORY = "too large to convert in the memory available"
CRASHED = "the converter stopped on this file (an internal problem; please report it)"
DISK_FULL = "the disk is full: no space left to write its conversion"


def one_line(text: str) -> str:
    """Whitespace collapsed, class-name prefixes dropped, at most MAX_CHARS characters."""
    line = _CLASS_PREFIX.sub("", " ".join(str(text).split())).strip()
    return line if len(line) <= MAX_CHARS else line[: MAX_CHARS - 1] + "…"


def plain_message(error: BaseException) -> str:
    """The one line the report shows for `error` (ours are already plain; others are mapped)."""
    if isinstance(error, ConversionError):
        text = one_line(str(error))
        if text and not _TRACEBACK.search(str(error)):
            return text
        return CRASHED
    if isinstance(error, RecursionError):
        return DEEP_NESTING
    if isinstance(error, MemoryError):
        return NO_MEMORY
    if isinstance(error, OSError):
        return os_message(error)
    log.debug("conversion failed", exc_info=error)
    return CRASHED


def os_message(error: OSError) -> str:
    """An operating-system error as the user would say it."""
    if isinstance(error, PermissionError):
        return "cannot read the file: permission denied (check the file's permissions)"
    if isinstance(error, FileNotFoundError):
        return "file not found (moved or deleted while indexing)"
    if isinstance(error, IsADirectoryError):
        return "a folder, not a file"
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return DISK_FULL
    if error.errno == errno.ENAMETOOLONG:
        return "cannot read the file: its name or path is too long for the file system"
    reason = (error.strerror or "").strip().lower()
    return f"cannot read the file: {reason}" if reason else "cannot read the file"
