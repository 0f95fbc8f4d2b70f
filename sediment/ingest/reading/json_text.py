"""Reading one JSON value exactly: the standard parser with a duplicate-key hook, a float
check and a depth limit, for every place Sediment parses JSON it did not write (input
records, bodies sent as JSON text, SSE event data). Imports nothing heavy."""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Callable
from typing import Any, Final

from sediment.ingest import TranslationError

MAX_DEPTH: Final = 256
"""The deepest nesting of arrays and objects in one record (the record's own object is level 1)."""

class RecordProblem(TranslationError):
    """A record's text is not one JSON value within the limits (``syntax``: not JSON at all)."""

    def __init__(self, message: str, *, syntax: bool = False) -> None:
        super().__init__(message)
        self.syntax = syntax


# --- one JSON value, exactly --------------------------------------------------------------

_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")
#: A string literal or a bracket: enough to find where a value ends without building it.
_TOKEN: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[][{}]', re.DOTALL)
_NUMBER: Final = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise RecordProblem(f"number out of range: {text}")
    return value


def _first_duplicate(pairs: list[tuple[str, Any]]) -> str:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    raise AssertionError("no duplicate key")  # pragma: no cover - only called when one exists


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when arrays and objects nest more than ``limit`` levels in ``value`` (breadth first,
    so no recursion however deep it is)."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        children: list[Any] = []
        for node in level:
            children.extend(node.values() if isinstance(node, dict) else node)  # a FlawedObject too
        level = [child for child in children if isinstance(child, dict) or type(child) is list]
    return False


class Flaw:
    """A value the reader could not read exactly (a number out of range, an integer of too many
    digits), kept in place by a :class:`JsonReader` that keeps flaws: whoever uses the record
    around it refuses that part alone (:func:`first_flaw`)."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem

    def __repr__(self) -> str:
        return f"Flaw({self.problem!r})"


class FlawedObject(dict[str, Any]):
    """An object that named a key twice, read by a :class:`JsonReader` that keeps flaws (the
    last value is kept, and ``problem`` says which key)."""

    problem: str


def first_flaw(value: Any) -> str | None:
    """The problem of the first :class:`Flaw` or :class:`FlawedObject` in ``value`` (depth first,
    in order; no recursion), or None when it was read exactly."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, Flaw):
            return node.problem
        if isinstance(node, FlawedObject):
            return node.problem
        if type(node) is dict:
            stack.extend(reversed(node.values()))
        elif type(node) is list:
            stack.extend(reversed(node))
    return None


def _checked_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise RecordProblem(f"integer has more than {sys.get_int_max_str_digits()} digits") from None


def _object_hook(duplicates: list[str], keep_flaws: bool) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """The decoder's object hook: a dict of the pairs; a key given twice is added to
    ``duplicates``, or with ``keep_flaws`` makes the object a :class:`FlawedObject`."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) != len(pairs):
            duplicate = _first_duplicate(pairs)
            if keep_flaws:
                flawed = FlawedObject(result)
                flawed.problem = f"duplicate key {duplicate!r}"
                return flawed
            duplicates.append(duplicate)
        return result

    return hook


class JsonReader:
    """Parses JSON text exactly with the standard parser (orjson would turn integers beyond 64
    bits into floats and cannot see a key given twice): duplicate keys, numbers that overflow,
    integers beyond Python's digit limit and nesting beyond :data:`MAX_DEPTH` are
    :class:`RecordProblem` s.

    With ``keep_flaws`` a duplicate key or an unreadable number does not fail the whole text:
    the object becomes a :class:`FlawedObject`, the number a :class:`Flaw`, and a reader of a
    batch of records (an OTLP export) refuses only the record holding one. Nesting beyond the
    limit still fails the whole text.
    """

    def __init__(self, *, keep_flaws: bool = False) -> None:
        self._duplicates: list[str] = []
        # The hooks are no bound methods of the reader: the decoder holding them would make a
        # reference cycle of the reader, which only the cyclic collector frees, with whatever
        # the reader remembers (a SpanReader: up to 64 MiB of replayed elements).
        hook = _object_hook(self._duplicates, keep_flaws)
        if keep_flaws:
            self._decoder = json.JSONDecoder(object_pairs_hook=hook, parse_float=self._float, parse_int=self._int)
        else:
            self._decoder = json.JSONDecoder(object_pairs_hook=hook, parse_float=_finite_float)

    @staticmethod
    def _float(text: str) -> float | Flaw:
        try:
            return _finite_float(text)
        except RecordProblem as exc:
            return Flaw(str(exc))

    @staticmethod
    def _int(text: str) -> int | Flaw:
        try:
            return _checked_int(text)
        except RecordProblem as exc:
            return Flaw(str(exc))

    def parse(self, data: bytes | str) -> Any:
        """One JSON value (surrounding whitespace allowed); a RecordProblem names what is wrong."""
        text = _utf8(data)
        value, end = self.value_at(text, _skip_ws(text, 0))
        end = _skip_ws(text, end)
        if end != len(text):
            raise RecordProblem(f"not JSON: Extra data (column {end + 1})", syntax=True)
        return value

    def value_at(self, text: str, index: int, depth: int = MAX_DEPTH) -> tuple[Any, int]:
        """The JSON value starting at ``index`` and the index after it; nesting beyond ``depth``
        levels is a RecordProblem (only a value of more than ``2 * depth`` characters can)."""
        self._duplicates.clear()
        try:
            value, end = self._decoder.raw_decode(text, index)
        except json.JSONDecodeError as exc:
            raise RecordProblem(f"not JSON: {exc.msg} (column {exc.colno})", syntax=True) from None
        except RecursionError:
            raise RecordProblem(f"nested deeper than {MAX_DEPTH} levels") from None
        except RecordProblem:
            raise
        except ValueError as exc:  # an integer beyond the interpreter's digit limit
            message = str(exc)
            if "integer string conversion" in message:
                message = f"integer has more than {sys.get_int_max_str_digits()} digits"
            raise RecordProblem(f"not JSON: {message}") from None
        if self._duplicates:
            raise RecordProblem(f"duplicate key {self._duplicates[0]!r}")
        if end - index > 2 * depth and _brackets(text, index, end) > depth and too_deep(value, depth):
            raise RecordProblem(f"nested deeper than {depth} levels")
        return value, end


def _brackets(text: str, start: int, end: int) -> int:
    """How many opening brackets ``text[start:end]`` holds (strings included): a value nests at
    most that many levels, so one with no more than the limit needs no walk of its nodes."""
    return text.count("[", start, end) + text.count("{", start, end)


def _skip_ws(text: str, index: int) -> int:
    match = _WHITESPACE.match(text, index)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _utf8(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordProblem(f"not UTF-8: invalid byte at column {exc.start + 1}", syntax=True) from None


_readers = threading.local()  # one plain reader per thread (a reader is not thread-safe)


def read_json(data: bytes | str) -> Any:
    """One JSON value read exactly by this thread's plain :class:`JsonReader` (made once, not
    once per value: a call log holds a JSON text in every tool call); a RecordProblem names
    what is wrong."""
    reader = getattr(_readers, "plain", None)
    if reader is None:
        reader = _readers.plain = JsonReader()
    return reader.parse(data)


def parse_line(line: str | bytes) -> Any | Exception:
    """One JSON value read exactly (see :class:`JsonReader`), or the problem with it."""
    try:
        return read_json(line)
    except RecordProblem as exc:
        return detached(exc)


def detached(problem: RecordProblem) -> RecordProblem:
    """``problem`` kept as a value: without its traceback and the exception it replaced, which
    hold the frames it was raised in (and the line they read) in a reference cycle that only the
    cyclic collector, which a batch command runs seldom, would free."""
    problem.__traceback__ = None
    problem.__context__ = None
    return problem
