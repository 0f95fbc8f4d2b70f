"""Field access shared by the call formats: a field's path, the one-line
:class:`~sediment.ingest.TranslationError` that names it, and readers of objects, lists,
texts and token counts that refuse anything else."""

from __future__ import annotations

import math
from typing import Any, NoReturn

from sediment.ingest import TranslationError
from sediment.ingest.reading.json_text import RecordProblem, read_json


def fail(path: str, problem: str) -> NoReturn:
    """Raise the :class:`TranslationError` for ``path`` (``<field path>: <problem>``)."""
    raise TranslationError(f"{path}: {problem}")


def child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def as_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        fail(path, "expected an object")
    return value


def as_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        fail(path, "expected a list")
    return value


def required(obj: dict[str, Any], key: str, path: str) -> Any:
    """``obj[key]``; a missing or null value fails as ``<path>.<key>: missing``."""
    value = obj.get(key)
    if value is None:
        fail(child(path, key), "missing")
    return value


def optional_object(obj: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    """``obj[key]`` as an object; absent or null reads as ``{}``."""
    value = obj.get(key)
    return {} if value is None else as_object(value, child(path, key))


def optional_text(value: Any, path: str) -> str | None:
    """A string stripped of padding; null and blank read as absent, other types fail."""
    if value is None:
        return None
    if not isinstance(value, str):
        fail(path, "expected a string")
    return value.strip() or None


def token_count(value: Any, path: str) -> int | None:
    """A usage counter: a non-negative integer (integral floats accepted), or absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        fail(path, "expected a non-negative integer")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        fail(path, "expected a non-negative integer")
    if value < 0:
        fail(path, "expected a non-negative integer")
    return int(value)


def body_object(value: Any, path: str) -> dict[str, Any]:
    """A body that is an object, or the JSON text of one."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = read_json(value)
        except RecordProblem as exc:
            fail(path, "invalid JSON" if exc.syntax else str(exc))
    return as_object(value, path)
