"""Sections of a commit's patch: which files' changes a diff-SFT row may carry, verbatim.

A commit's patch (its first-parent diff, git's format) is split into sections at every line
starting with ``diff `` (LF line ends; blank sections are ignored). Each section is checked
strictly and is either **valid** (its exact original text is kept, under its path: the new
path, or the old one for a deletion), **unsupported** (a change no text patch can carry:
binary, copies, combined diffs, submodules, a quoted path whose bytes are not UTF-8) or
**malformed** (anything else git's format does not allow). Nothing is repaired or synthesized.
See docs/diff-sft.md for every rule.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["MALFORMED", "UNSUPPORTED", "ParsedPatch", "PatchSection", "parse_patch", "split_sections"]

UNSUPPORTED = "unsupported_diff_section"
MALFORMED = "malformed_diff_section"

_MODE = re.compile(r"^(old mode|new mode|new file mode|deleted file mode) ([0-7]{6})$")
_INDEX = re.compile(r"^index [0-9a-f]+\.\.[0-9a-f]+( [0-7]{6})?$")
_SIMILARITY = re.compile(r"^(similarity|dissimilarity) index [0-9]{1,3}%$")
_HUNK = re.compile(r"^@@ -([0-9]+)(?:,([0-9]+))? \+([0-9]+)(?:,([0-9]+))? @@(?: .*)?$")
_UNSUPPORTED_PREFIXES = ("Binary files ", "GIT binary patch", "@@@", "copy from ", "copy to ")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_NO_NEWLINE = "\\ No newline at end of file"
_DEV_NULL = "/dev/null"


class _Unsupported(Exception):
    pass


class _Malformed(Exception):
    pass


@dataclass(frozen=True)
class PatchSection:
    """One valid section: its path and its exact original text."""

    path: str
    text: str


@dataclass(frozen=True)
class ParsedPatch:
    """The valid sections of a patch in diff order, and the count of the others by reason."""

    sections: tuple[PatchSection, ...]
    skipped: Counter[str] = field(default_factory=Counter)

    def for_paths(self, paths: frozenset[str]) -> str:
        """The exact text of every valid section whose path is in ``paths``, in diff order."""
        return "".join(s.text for s in self.sections if s.path in paths)

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(s.path for s in self.sections)


def split_sections(text: str) -> list[str]:
    """``text`` cut before every line that starts with ``diff `` (LF line ends only)."""
    sections: list[list[str]] = [[]]
    for line in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
        if line.startswith("diff ") and sections[-1]:
            sections.append([])
        sections[-1].append(line)
    # rebuild the exact text, every line ended by the LF it had
    out: list[str] = []
    remaining = text
    for lines in sections:
        length = sum(len(line) + 1 for line in lines)
        out.append(remaining[:length])
        remaining = remaining[length:]
    return [s for s in out if s.strip()]


def parse_patch(text: str) -> ParsedPatch:
    """Every section of ``text`` checked (module docstring)."""
    valid: list[PatchSection] = []
    skipped: Counter[str] = Counter()
    for section in split_sections(text):
        try:
            valid.append(PatchSection(_section_path(section), section))
        except _Unsupported:
            skipped[UNSUPPORTED] += 1
        except _Malformed:
            skipped[MALFORMED] += 1
    return ParsedPatch(tuple(valid), skipped)


# --- paths -------------------------------------------------------------------------------

def _unquote(quoted: str) -> str:
    """A C-quoted path (without its quotes) decoded; octal bytes must be UTF-8."""
    raw = bytearray()
    i = 0
    while i < len(quoted):
        ch = quoted[i]
        if ch == '"':
            raise _Malformed()
        if ch != "\\":
            if ord(ch) < 32 or ord(ch) == 127:
                raise _Malformed()
            raw.extend(ch.encode("utf-8"))
            i += 1
            continue
        nxt = quoted[i + 1:i + 2]
        if nxt in _ESCAPES:
            raw.append(_ESCAPES[nxt])
            i += 2
        elif re.fullmatch(r"[0-3][0-7]{2}", quoted[i + 1:i + 4]):
            raw.append(int(quoted[i + 1:i + 4], 8))
            i += 4
        else:
            raise _Malformed()
    try:
        path = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Unsupported() from None
    if "\x00" in path:
        raise _Malformed()
    return path


def _plain_path(path: str) -> str:
    if any(ord(c) < 32 or ord(c) == 127 for c in path) or "\\" in path or '"' in path:
        raise _Malformed()
    return path


def _file_path(value: str, prefix: str) -> str | None:
    """The path of a ``---``/``+++`` header value (``None`` for /dev/null)."""
    if value.startswith('"'):
        if len(value) < 2 or not value.endswith('"'):
            raise _Malformed()
        path = _unquote(value[1:-1])
    else:
        if value.endswith("\t"):
            value = value[:-1]
        if value == _DEV_NULL:
            return None
        path = _plain_path(value)
    if not path.startswith(prefix) or len(path) == len(prefix):
        raise _Malformed()
    return path[len(prefix):]


def _header_pairs(header: str) -> list[tuple[str, str]]:
    """Every way to read ``diff --git``'s rest as ``a/X b/Y``."""
    if header.startswith('"'):
        end = _closing_quote(header, 0)
        left = "a/" + _strip(_unquote(header[1:end]), "a/")
        rest = header[end + 1:]
        if not rest.startswith(" "):
            raise _Malformed()
        return [(left[2:], _header_right(rest[1:]))]
    pairs = []
    for match in re.finditer(" ", header):
        left, right = header[:match.start()], header[match.end():]
        if not left.startswith("a/") or len(left) == 2:
            continue
        if right.startswith('"') or right.startswith("b/"):
            try:
                pairs.append((_plain_path(left)[2:], _header_right(right)))
            except _Malformed:
                continue
    return pairs


def _strip(path: str, prefix: str) -> str:
    if not path.startswith(prefix) or len(path) == len(prefix):
        raise _Malformed()
    return path[len(prefix):]


def _closing_quote(text: str, start: int) -> int:
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i
        i += 1
    raise _Malformed()


def _header_right(right: str) -> str:
    if right.startswith('"'):
        end = _closing_quote(right, 0)
        if end != len(right) - 1:
            raise _Malformed()
        return _strip(_unquote(right[1:-1]), "b/")
    return _strip(_plain_path(right), "b/")


# --- sections ----------------------------------------------------------------------------

def _section_path(section: str) -> str:
    lines = section.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines[0].startswith("diff --git "):
        raise _Unsupported()
    for line in lines[1:]:
        if line.startswith("@@ "):
            break
        if line.startswith(_UNSUPPORTED_PREFIXES):
            raise _Unsupported()
        mode = _MODE.match(line)
        if (mode and mode.group(2) == "160000") or (line.startswith("index ") and line.endswith(" 160000")):
            raise _Unsupported()
    header = lines[0][len("diff --git "):]
    pairs = _header_pairs(header)  # may raise _Unsupported on undecodable quoted bytes
    renames: dict[str, str] = {}
    change_metadata = False
    created = deleted = False
    old_file: str | None = None
    new_file: str | None = None
    has_headers = False
    i = 1
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- "):
            if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
                raise _Malformed()
            old_file = _file_path(line[4:], "a/")
            new_file = _file_path(lines[i + 1][4:], "b/")
            if old_file is None and new_file is None:
                raise _Malformed()
            has_headers = True
            i += 2
            break
        if line.startswith("@@"):
            raise _Malformed()  # hunks without headers
        mode = _MODE.match(line)
        if mode:
            change_metadata = True
            created = created or mode.group(1) == "new file mode"
            deleted = deleted or mode.group(1) == "deleted file mode"
        elif line.startswith(("rename from ", "rename to ")):
            kind, value = ("from", line[12:]) if line.startswith("rename from ") else ("to", line[10:])
            if kind in renames:
                raise _Malformed()
            renames[kind] = _unquote(value[1:-1]) if value.startswith('"') and value.endswith('"') and len(
                value) > 1 else _plain_path(value)
            if not renames[kind]:
                raise _Malformed()
            change_metadata = True
        elif not (_INDEX.match(line) or _SIMILARITY.match(line)):
            raise _Malformed()  # an unknown extended header line
        i += 1
    if len(renames) == 1:
        raise _Malformed()
    hunks = lines[i:]
    if has_headers and not hunks:
        raise _Malformed()  # headers without a hunk
    if not has_headers and not change_metadata:
        raise _Malformed()
    if hunks:
        _check_hunks(hunks)
    old_path, new_path = old_file, new_file
    if renames:
        if has_headers and (old_file != renames["from"] or new_file != renames["to"]):
            raise _Malformed()
        old_path, new_path = renames["from"], renames["to"]
    if has_headers or renames:
        a = old_path if old_path is not None else new_path
        b = new_path if new_path is not None else old_path
        if (a, b) not in pairs:
            raise _Malformed()
    else:
        same = [(a, b) for a, b in pairs if a == b]
        if len(same) != 1:
            raise _Malformed()
        old_path = None if created else same[0][0]
        new_path = None if deleted else same[0][1]
    path = new_path if new_path is not None else old_path
    if path is None:
        raise _Malformed()
    return path


def _check_hunks(lines: list[str]) -> None:
    previous: tuple[int, int, int] | None = None  # (old end, offset after, ...)
    i = 0
    while i < len(lines):
        match = _HUNK.match(lines[i])
        if not match:
            raise _Malformed()
        a, b, c, d = (int(g) if g is not None else 1 for g in match.groups())
        if (a == 0 and b != 0) or (c == 0 and d != 0):
            raise _Malformed()
        old_start = a if b else a + 1
        new_start = c if d else c + 1
        if previous is not None:
            old_end, offset = previous[0], previous[1]
            if old_start < old_end or new_start - old_start != offset:
                raise _Malformed()
        previous = (old_start + b, new_start + d - (old_start + b), 0)
        i += 1
        old_left, new_left = b, d
        last_body = False
        while old_left or new_left or (i < len(lines) and lines[i] == _NO_NEWLINE):
            if i >= len(lines):
                raise _Malformed()  # counts not exhausted
            line = lines[i]
            if line == _NO_NEWLINE:
                if not last_body:
                    raise _Malformed()
                last_body = False
                i += 1
                continue
            if line == "":
                raise _Malformed()
            kind = line[0]
            if kind == " " and old_left and new_left:
                old_left -= 1
                new_left -= 1
            elif kind == "-" and old_left:
                old_left -= 1
            elif kind == "+" and new_left:
                new_left -= 1
            else:
                raise _Malformed()
            last_body = True
            i += 1
