"""Long strings stored once: a blob's long strings become references to string blobs.

A tool result in the typed message and the same text in the raw provider message, or one
file's content seen by many Sessions, are then stored once. The transformation is exact and
reversible: a dict that happens to use a reserved key is escaped, so nothing can be misread.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from datetime import datetime
from typing import Any, Final

from pydantic import BaseModel

from sediment.identifiers import render_datetime
from sediment.records import json_string_ascii, plain, sha256_hex

LONG_STRING = 512
STRING_REF = "\x00sediment-string"
ESCAPED = "\x00sediment-escaped"
_RESERVED = (STRING_REF, ESCAPED)
#: How many bytes of long strings :class:`StringDigests` remembers by default (``sys.getsizeof``).
DIGESTS_BYTES: Final = 16 * 1024 * 1024


class StringDigests:
    """Long strings referenced recently and their digests (least recently used first out past
    ``limit`` bytes, as the strings take them in memory), so a text met again (a tool result in
    the typed message and in the raw one) is not encoded and hashed again. A string met again is
    given to ``strings`` as its text, not its stored form: the writer encodes it only
    when the blob is not known to be stored (:func:`stored_form`)."""

    def __init__(self, limit: int = DIGESTS_BYTES) -> None:
        self._limit = limit
        self._size = 0
        self._digests: OrderedDict[str, str] = OrderedDict()

    def get(self, text: str) -> str | None:
        digest = self._digests.get(text)
        if digest is not None:
            self._digests.move_to_end(text)
        return digest

    def put(self, text: str, digest: str) -> None:
        size = sys.getsizeof(text)
        if size > self._limit or text in self._digests:
            return
        self._digests[text] = digest
        self._size += size
        while self._size > self._limit:
            old, _ = self._digests.popitem(last=False)
            self._size -= sys.getsizeof(old)


def stored_form(string: bytes | str) -> bytes:
    """A string blob's stored form, from what :func:`intern_plain` put in ``strings``."""
    return string if isinstance(string, bytes) else string_record(string)


def string_record(text: str) -> bytes:
    """The stored form of a string blob: its JSON literal (ASCII, lone surrogates escaped)."""
    return json_string_ascii(text)


def intern(value: Any, strings: dict[str, bytes] | dict[str, bytes | str]) -> Any:
    """``value`` with every string of ``LONG_STRING`` characters or more replaced by a reference;
    the referenced strings are added to ``strings`` (hash → stored form)."""
    if isinstance(value, str):
        return value if len(value) < LONG_STRING else _reference(value, strings)
    if isinstance(value, dict):
        return _escaped({key: intern(item, strings) for key, item in value.items()})
    if isinstance(value, list):
        return [intern(item, strings) for item in value]
    return value


def intern_plain(value: Any, strings: dict[str, bytes | str], known: StringDigests | None = None,
                 inexact: list[bool] | None = None) -> Any:
    """``intern(plain(value), strings)`` in one walk instead of two: models, tuples and the
    rest made JSON-ready (:func:`~sediment.records.plain`) and long strings referenced as they
    are met. With ``known``, a string it remembers is referenced by the digest it remembers and
    given to ``strings`` as its text (:func:`stored_form` makes its stored form). ``inexact``
    is appended to when a float is met, or a value of any type but the exact JSON ones (its
    record is then written by the standard encoder: :func:`~sediment.records.canonical_record_bytes`)."""
    kind = type(value)
    if kind is str:
        if len(value) < LONG_STRING:
            return value
        digest = known.get(value) if known is not None else None
        if digest is None:
            reference = _reference(value, strings)
            if known is not None:
                known.put(value, reference[STRING_REF])
            return reference
        strings.setdefault(digest, value)
        return {STRING_REF: digest}
    if kind is int or kind is bool or value is None:
        return value
    if kind is datetime:  # as plain() renders it: an exact, short string
        return render_datetime(value)
    if kind is dict:
        return _escaped({key: intern_plain(item, strings, known, inexact) for key, item in value.items()})
    if kind is list or kind is tuple:
        return [intern_plain(item, strings, known, inexact) for item in value]
    if kind is not float and isinstance(value, BaseModel):
        return _escaped({name: intern_plain(getattr(value, name), strings, known, inexact)
                         for name in type(value).model_fields})
    if inexact is not None:
        inexact.append(True)
    if kind is float:
        return value
    return intern(plain(value), strings)  # datetimes, other mappings and sequences, subclasses: both walks


def _reference(text: str, strings: dict[str, bytes] | dict[str, bytes | str]) -> dict[str, str]:
    record = string_record(text)
    digest = sha256_hex(record)
    strings[digest] = record
    return {STRING_REF: digest}


def _escaped(interned: dict[Any, Any]) -> dict[Any, Any]:
    """An interned dict, escaped when its one key is a reserved one (so it cannot be misread)."""
    if len(interned) == 1 and next(iter(interned)) in _RESERVED:
        return {ESCAPED: interned}
    return interned


def references(value: Any, found: set[str]) -> set[str]:
    """Every string blob ``value`` refers to."""
    if isinstance(value, dict):
        if len(value) == 1 and STRING_REF in value:
            found.add(value[STRING_REF])
        elif len(value) == 1 and ESCAPED in value:
            for item in value[ESCAPED].values():
                references(item, found)
        else:
            for item in value.values():
                references(item, found)
    elif isinstance(value, list):
        for item in value:
            references(item, found)
    return found


def expand(value: Any, strings: dict[str, str]) -> Any:
    """Undo :func:`intern` given the referenced strings (hash → text)."""
    if isinstance(value, dict):
        if len(value) == 1 and STRING_REF in value:
            return strings[value[STRING_REF]]
        if len(value) == 1 and ESCAPED in value:
            return {key: expand(item, strings) for key, item in value[ESCAPED].items()}
        return {key: expand(item, strings) for key, item in value.items()}
    if isinstance(value, list):
        return [expand(item, strings) for item in value]
    return value
