"""Long strings stored once: a blob's long strings become references to string blobs.

A tool result in the typed message and the same text in the raw provider message, or one
file's content seen by many Sessions, are then stored once. The transformation is exact and
reversible: a dict that happens to use a reserved key is escaped, so nothing can be misread.
"""

from __future__ import annotations

from typing import Any

from sediment.records import canonical_json, sha256_hex

LONG_STRING = 512
STRING_REF = "\x00sediment-string"
ESCAPED = "\x00sediment-escaped"
_RESERVED = (STRING_REF, ESCAPED)


def string_record(text: str) -> bytes:
    """The stored form of a string blob: its JSON literal (ASCII, lone surrogates escaped)."""
    return canonical_json(text).encode("ascii")


def intern(value: Any, strings: dict[str, bytes]) -> Any:
    """``value`` with every string of ``LONG_STRING`` characters or more replaced by a reference;
    the referenced strings are added to ``strings`` (hash → stored form)."""
    if isinstance(value, str):
        if len(value) < LONG_STRING:
            return value
        record = string_record(value)
        digest = sha256_hex(record)
        strings[digest] = record
        return {STRING_REF: digest}
    if isinstance(value, dict):
        interned = {key: intern(item, strings) for key, item in value.items()}
        if len(value) == 1 and next(iter(value)) in _RESERVED:
            return {ESCAPED: interned}
        return interned
    if isinstance(value, list):
        return [intern(item, strings) for item in value]
    return value


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
