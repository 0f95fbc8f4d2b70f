"""Reading source files record by record, and what every importer shares.

:func:`read_units` streams a file's records without loading the file: a JSON Lines file line
by line, a top-level JSON array element by element (a byte scanner finds each element's exact
bytes), any other JSON document whole. Each :class:`SourceUnit` keeps the exact bytes, which
become the record's ``raw_record``.

The rest are the helpers the importers share: :func:`parse_json` (strict: UTF-8, no duplicate
keys), :func:`raw_record_of` (secrets redacted, the redaction recorded), :func:`split_attempt`
(task id vs attempt suffix), :class:`CallIds` (deterministic call-id namespacing) and
:class:`ImportRefusal` (a one-line refusal naming file, line and field).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final

from sediment.ingest.reading.compressed import InputUnreadable, content_sha256, logical_name, open_input
from sediment.ingest.reading.json_text import MAX_DEPTH, too_deep
from sediment.ingest.redaction.credentials import marker as redaction_marker
from sediment.ingest.redaction.credentials import redact_json_text
from sediment.records import decode_record
from sediment.trajectory.record import RawRecord, Transformation

#: Bytes read at a time.
CHUNK = 1 << 20
#: The version of the shared import operations (recorded in each transformation).
TOOLKIT_VERSION = "1"


@dataclass(frozen=True)
class SourceUnit:
    """One record's bytes in a source file: where it starts (1-based line) and its locator."""

    path: Path
    line: int
    locator: str
    data: bytes


@dataclass(frozen=True)
class ImportRefusal:
    """A record (or a whole file) an importer refused: one line naming file, line and field."""

    path: Path
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.field}: {self.message}"


class UnitError(ValueError):
    """A file whose records cannot be delimited (e.g. an unterminated JSON array)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


def file_sha256(path: Path) -> str:
    """The SHA-256 of a source file's content, read in chunks (a gzip or Zstandard file's
    inflated content, so a log keeps its digest when it is rotated and compressed)."""
    return content_sha256(path)


def _first_byte(handle: BinaryIO) -> bytes:
    """The first byte that is not blank (or a BOM), peeked: the handle is not moved."""
    seen: bytes = handle.peek(CHUNK)  # type: ignore[attr-defined]
    return seen.lstrip(b" \t\r\n\xef\xbb\xbf")[:1]


def read_units(path: Path) -> Iterator[SourceUnit]:
    """The records of ``path``: lines of ``*.jsonl``, elements of a top-level array, or the
    whole document. A gzip or Zstandard file is inflated as it is read, and named by its name
    without the compression suffix (``run.jsonl.zst`` reads as ``run.jsonl``, its locators
    ``run.jsonl:N``). Raises :class:`UnitError` when a file cannot be delimited or read on (the
    units before the problem have been yielded)."""
    name = logical_name(path.name)
    number = 0
    try:
        with open_input(path) as handle:
            first = _first_byte(handle)
            if name.endswith(".jsonl"):
                for number, line in enumerate(handle, start=1):
                    body = line.rstrip(b"\r\n")
                    if body.strip():
                        yield SourceUnit(path, number, f"{name}:{number}", body)
            elif first == b"[":
                yield from _array_elements(path, handle)
            else:
                data = handle.read()
                yield SourceUnit(path, 1, name, data)
    except InputUnreadable as exc:
        raise UnitError(exc.line or number + 1, str(exc)) from None


_STRUCTURE = re.compile(rb'[\[\]{}",\\]')
_STRING_END = re.compile(rb'["\\]')


def _array_elements(path: Path, handle: BinaryIO) -> Iterator[SourceUnit]:
    """Each element of a top-level JSON array, as its exact bytes (the text between the
    separators, blanks trimmed), with memory bounded by the largest element. Outside strings
    only brackets, braces, commas and quotes matter; inside a string only its end and escapes."""
    buf = b""
    pos = 0
    depth = 0
    in_string = False
    region: int | None = None  # where the current element's text begins in buf
    lines_before = 0  # newlines in the bytes dropped from buf
    index = 0
    done = False

    def line_at(offset: int) -> int:
        return lines_before + buf.count(b"\n", 0, offset) + 1

    while not done and (chunk := handle.read(CHUNK)):
        buf += chunk
        while True:
            if in_string:
                match = _STRING_END.search(buf, pos)
                if match is None:
                    pos = len(buf)
                    break
                if match.group() == b"\\":
                    if match.end() >= len(buf):  # the escaped byte is in the next chunk
                        pos = match.start()
                        break
                    pos = match.end() + 1
                    continue
                in_string = False
                pos = match.end()
                continue
            match = _STRUCTURE.search(buf, pos)
            if match is None:
                pos = len(buf)
                break
            token, at = match.group(), match.start()
            pos = at + 1
            if token == b'"':
                in_string = True
            elif token in (b"[", b"{"):
                depth += 1
                if depth == 1:
                    region = pos
            elif token == b"\\":
                raise UnitError(line_at(at), "a backslash outside a string")
            elif token == b"," and depth == 1 and region is not None:
                yield _unit(path, buf[region:at], line_at(region), index, line_at(at))
                index += 1
                region = pos
            elif token in (b"]", b"}"):
                depth -= 1
                if depth < 0:
                    raise UnitError(line_at(at), "unbalanced brackets")
                if depth == 0 and region is not None:
                    text = buf[region:at]
                    if text.strip() or index:
                        yield _unit(path, text, line_at(region), index, line_at(at))
                    done = True
                    break
        keep = region if region is not None else pos
        if keep > 0:
            lines_before += buf.count(b"\n", 0, keep)
            buf = buf[keep:]
            pos -= keep
            if region is not None:
                region = 0
    if not done:
        raise UnitError(line_at(len(buf)), "the JSON array is not terminated")


def _unit(path: Path, text: bytes, line: int, index: int, end_line: int) -> SourceUnit:
    stripped = text.lstrip(b" \t\r\n")
    line += text[: len(text) - len(stripped)].count(b"\n")
    body = stripped.rstrip(b" \t\r\n")
    if not body:
        raise UnitError(end_line, f"array element {index} is empty")
    return SourceUnit(path, line, f"{logical_name(path.name)}#{index}", body)


class TooDeep(ValueError):
    """A JSON value nested deeper than :data:`~sediment.ingest.reading.json_text.MAX_DEPTH` levels."""


def parse_json(data: bytes) -> Any:
    """Strict JSON: UTF-8 (lone surrogate escapes kept), no duplicate keys, no trailing data,
    arrays and objects nested at most :data:`~sediment.ingest.reading.json_text.MAX_DEPTH` levels
    (:class:`TooDeep`: deeper nesting would exhaust the stack of whatever walks the value)."""
    text = data.decode("utf-8")
    try:
        value = decode_record(text)
    except RecursionError:
        raise TooDeep(f"nested deeper than {MAX_DEPTH} levels") from None
    if len(text) > 2 * MAX_DEPTH and too_deep(value):
        raise TooDeep(f"nested deeper than {MAX_DEPTH} levels")
    return value


_NOT_JSON: Final = ("not UTF-8 (", "not JSON: ")
"""How :func:`describe_json_error` begins for text that is not JSON at all."""


def describe_json_error(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 (byte {exc.start})"
    if isinstance(exc, TooDeep):
        return str(exc)
    return f"not JSON: {exc}"


def is_not_json(refusal: ImportRefusal) -> bool:
    """Whether an importer refused a record because its text is not JSON at all (as
    :func:`describe_json_error` words it), so the file may be in another format altogether."""
    return refusal.message.startswith(_NOT_JSON)


# --- secrets ---------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\b(?:ghp_|gho_|ghu_|ghs_|ghr_)[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{30,}|\bglpat-[A-Za-z0-9_-]{20,}"
    r"|\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}|\bAKIA[0-9A-Z]{16}\b|\bhf_[A-Za-z0-9]{30,}"
)


def marker(value: str) -> str:
    """The redaction marker of a value: its SHA-256, never the value."""
    return redaction_marker(value)


_TOKEN_PREFIXES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-", "AKIA", "hf_")


def redact_text(text: str) -> tuple[str, int]:
    """``text`` with forge/provider tokens replaced by markers, and how many were replaced."""
    if not any(prefix in text for prefix in _TOKEN_PREFIXES):
        return text, 0
    count = 0

    def token(match: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return marker(match.group())

    return _TOKEN.sub(token, text), count


def redact_source_text(text: str) -> tuple[str, int]:
    """Source text with credentials replaced by markers, every other byte kept: the shared rule
    of :func:`sediment.ingest.redaction.credentials.redact_json_text` (credential-named string members, URL
    userinfo secrets), then forge/provider tokens anywhere (:func:`redact_text`)."""
    text, members = redact_json_text(text)
    text, tokens = redact_text(text)
    return text, members + tokens


def raw_record_of(data: bytes, media_type: str = "application/json") -> tuple[RawRecord, list[Transformation]]:
    """The raw record of a unit's bytes, with any secret replaced by a marker; a replacement
    is recorded as a ``redact-secrets`` transformation (the ``sha256`` stays the original's)."""
    raw = RawRecord.of(data, media_type)
    if raw.encoding != "utf-8":
        return raw, []
    redacted, count = redact_source_text(raw.content)
    if not count:
        return raw, []
    return (raw.model_copy(update={"content": redacted}),
            [Transformation(name="redact-secrets", version=TOOLKIT_VERSION,
                            detail={"field": "raw_record", "values": count})])


# --- identity ----------------------------------------------------------------------------

_ATTEMPT = re.compile(r"^(?P<task>.+-\d+)_(?P<attempt>\d+)$")


def split_attempt(instance_id: str) -> tuple[str, str | None]:
    """``("python__mypy-15976", "0")`` from ``python__mypy-15976_0``: only a trailing
    ``_<digits>`` after a final ``-<number>`` is an attempt suffix; nothing is split on ``-``."""
    match = _ATTEMPT.match(instance_id)
    if match is None:
        return instance_id, None
    return match.group("task"), match.group("attempt")


class CallIds:
    """Deterministic call ids for one record: a source id seen first is kept; a reused one
    becomes ``<id>#<n>`` (n = 2, 3, ... in order of reuse); a call without one gets
    ``call:<event index>.<position>``. Results resolve to the latest call of that id."""

    def __init__(self) -> None:
        self._uses: dict[str, int] = {}
        self._latest: dict[str, str] = {}
        self.renamed = 0

    def assign(self, original: str | None, event_index: int, position: int) -> str:
        if original is None or original == "":
            call_id = f"call:{event_index}.{position}"
            while call_id in self._uses:
                call_id += "'"
            self._uses[call_id] = 1
            return call_id
        uses = self._uses.get(original, 0) + 1
        self._uses[original] = uses
        call_id = original if uses == 1 else f"{original}#{uses}"
        if uses > 1:
            self.renamed += 1
        self._latest[original] = call_id
        return call_id

    def result_of(self, original: str) -> str | None:
        """The call id an answer naming ``original`` refers to (the latest such call)."""
        return self._latest.get(original)

    def transformations(self) -> list[Transformation]:
        if not self.renamed:
            return []
        return [Transformation(name="namespace-call-ids", version=TOOLKIT_VERSION,
                               detail={"renamed": self.renamed})]
