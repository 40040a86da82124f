"""What the command line prints never drives the terminal.

Titles, authors and notes come from the library, answers from a model or from papers: any of
them may carry ESC, C1 or other control characters (`\\x1b]0;…\\x07` retitles the window,
`\\x1b[2J` or U+009B `2J` clears the screen, a bare CR overwrites the line it is on). The
command's stdout and stderr are wrapped for the length of a command so that every write, ours
or a library's, shows such characters as U+FFFD instead of sending them to the terminal.
Tab and newline stay; on stderr a carriage return stays too (the indexing bar redraws with it).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from zocrates_nb.text import CONTROL_RE

REPLACEMENT = "\ufffd"


def terminal_text(text: str, *, keep_cr: bool = False) -> str:
    """`text` with every control character that a terminal would act on (`text.CONTROL_RE`:
    C0 but tab and newline, DEL, C1) replaced by U+FFFD; CRLF line ends become LF, and a lone
    CR a line end, unless `keep_cr`."""
    if keep_cr:
        return "\r".join(CONTROL_RE.sub(REPLACEMENT, piece) for piece in text.split("\r"))
    return CONTROL_RE.sub(REPLACEMENT, text.replace("\r\n", "\n").replace("\r", "\n"))


class TerminalSafe:
    """A text stream whose writes pass through `terminal_text`; the rest is the inner stream's
    (`fileno`, `isatty`, `buffer`, `flush`, `encoding`…)."""

    def __init__(self, inner: TextIO, *, keep_cr: bool = False) -> None:
        self._inner = inner
        self._keep_cr = keep_cr

    def write(self, text: str) -> int:
        self._inner.write(terminal_text(text, keep_cr=self._keep_cr))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@contextlib.contextmanager
def safe_streams() -> Iterator[None]:
    """`sys.stdout` and `sys.stderr` made `TerminalSafe` inside the block, restored after."""
    out, err = sys.stdout, sys.stderr
    if not isinstance(out, TerminalSafe):
        sys.stdout = TerminalSafe(out)
    if not isinstance(err, TerminalSafe):
        sys.stderr = TerminalSafe(err, keep_cr=True)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


__all__ = ["TerminalSafe", "safe_streams", "terminal_text"]
