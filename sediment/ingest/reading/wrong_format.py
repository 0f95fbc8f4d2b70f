"""Telling a file in another format from JSON Lines with bad lines.

An operator who hands a YAML cassette, an XML report or a binary file to a JSON-Lines reader
should read one line saying so, not one ``not JSON`` problem per line. A file is in the wrong
format when its first non-blank line does not start like a JSON record (``{`` or ``[``) and no
line of it is JSON at all. A file where some line is JSON keeps its per-line problems, so no
good record around a bad one is lost; a first line that starts like JSON but breaks (a truncated
record) keeps its own problem too, since its column says what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

from sediment.ingest.reading.compressed import open_input

HEAD_BYTES: Final = 256
"""How much of the first non-blank line is kept to guess what the file looks like."""
_MAX_BLANK_LINES: Final = 1024  # blank lines read past before the first line is given up on
_JSON_RECORD_START: Final = (b"{", b"[")
_YAML_LINE: Final = re.compile(rb"(?:---|%YAML|- |-$|[A-Za-z_][\w .-]*:(?:\s|$))")
_NOT_TEXT: Final = re.compile(rb"[\x00-\x08\x0e-\x1f]")


def looks_like(head: bytes) -> str | None:
    """What a file whose first non-blank line is ``head`` looks like, when that is cheap to
    tell: ``binary data``, ``XML or HTML``, ``YAML``; None when it is not clear."""
    text = head.lstrip(b" \t\r\n").removeprefix(b"\xef\xbb\xbf")
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(text) - 3:  # not only a character cut at the end of the kept head
            return "binary data"
    if _NOT_TEXT.search(text):
        return "binary data"
    if text.startswith(b"<"):
        return "XML or HTML"
    if _YAML_LINE.match(text):
        return "YAML"
    return None


def not_json_lines(head: bytes) -> str:
    """The one problem line of a file in the wrong format."""
    kind = looks_like(head)
    seen = f" (it looks like {kind})" if kind else ""
    return f"not JSON Lines{seen}: no line of it is JSON"


class FormatWatch:
    """Watches one file read as JSON Lines: its first non-blank line, and whether any line was JSON."""

    def __init__(self) -> None:
        self.head: bytes | None = None  # the first non-blank line's start (b"{" when too long to read)
        self.json_seen = False
        self.bytes = 0  # the bytes of the lines read so far

    def lines(self, lines: Iterable[tuple[int, bytes | None]]) -> Iterator[tuple[int, bytes | None]]:
        """``lines`` unchanged, each shown to :meth:`line`."""
        for number, line in lines:
            self.line(line)
            yield number, line

    def line(self, line: bytes | None) -> None:
        """A line read; the first non-blank one is kept (a line over the length limit, None,
        is never judged: the file is not called wrong for it)."""
        if line is not None:
            self.bytes += len(line)
        if self.head is None:
            if line is None:
                self.head = b"{"
            elif line.strip(b" \t\r\n"):
                self.head = line[:HEAD_BYTES]

    def saw(self, *, syntax: bool) -> None:
        """A record was read; ``syntax``: its text was not JSON at all."""
        if not syntax:
            self.json_seen = True

    def verdict(self) -> str | None:
        """The file's one problem when it is in another format, else None."""
        if self.json_seen or self.head is None:
            return None
        if self.head.lstrip(b" \t\r\n").removeprefix(b"\xef\xbb\xbf").startswith(_JSON_RECORD_START):
            return None
        return not_json_lines(self.head)


def first_line(path: str | Path) -> bytes | None:
    """The start of ``path``'s first non-blank line (inflated when compressed); None when it has none."""
    with open_input(path) as handle:
        for _ in range(_MAX_BLANK_LINES):
            line = handle.readline(HEAD_BYTES)
            if not line:
                return None
            if line.strip(b" \t\r\n"):
                return line
    return None
