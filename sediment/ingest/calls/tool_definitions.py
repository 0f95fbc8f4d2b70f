"""Tool definitions: the readers a call format uses for a request's tool list (function tools,
custom tools, provider built-ins), each definition exactly as sent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from sediment.errors import validation_message
from sediment.ingest.calls.fields import as_list, as_object, child, fail
from sediment.ingest.calls.toolkit import Notes, ToolDefinitions
from sediment.model.facts import ToolDefinition


def tool_definitions(value: Any, path: str, read: Callable[[dict[str, Any], str], ToolDefinition],
                     notes: Notes) -> ToolDefinitions:
    """A request's tool list, one definition per entry in request order (``read`` reads one
    entry of the format); None when the request declared none. A malformed entry fails."""
    if value is None:
        return None

    def read_all() -> ToolDefinitions:
        entries = as_list(value, path)
        return tuple(read(as_object(entry, f"{path}[{i}]"), f"{path}[{i}]") for i, entry in enumerate(entries))

    return notes.resent("tools", value, read_all)


def tool_kind(obj: dict[str, Any], path: str) -> str | None:
    """A tool entry's ``type``: a non-empty string, or None when absent."""
    kind = obj.get("type")
    if kind is None:
        return None
    if not isinstance(kind, str):
        fail(child(path, "type"), "expected a string")
    if not kind.strip():
        fail(child(path, "type"), "expected a non-empty string")
    return kind


def _tool_name(value: Any, path: str) -> str:
    if value is None:
        fail(path, "missing")
    if not isinstance(value, str):
        fail(path, "expected a string")
    if not value.strip():
        fail(path, "expected a non-empty string")
    return value


def _optional_string(value: Any, path: str) -> str | None:
    """A string kept as sent (blank included), or None; other types fail."""
    if value is not None and not isinstance(value, str):
        fail(path, "expected a string")
    return value


def _optional_schema(value: Any, path: str) -> dict[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        fail(path, "expected an object")
    return value


def _optional_flag(value: Any, path: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        fail(path, "expected a boolean")
    return value


def _definition(path: str, **fields: Any) -> ToolDefinition:
    try:
        return ToolDefinition(**fields)
    except ValidationError as exc:
        fail(path, validation_message(exc.errors()[0]))


def function_tool(obj: dict[str, Any], path: str, *, kind: str = "function",
                  schema_key: str | None = "parameters") -> ToolDefinition:
    """A tool with a name: its description, the JSON Schema under ``schema_key`` (None: the
    tool has no schema, as a free-form ``custom`` tool) and ``strict``, each exactly as sent."""
    schema = None if schema_key is None else _optional_schema(obj.get(schema_key), child(path, schema_key))
    return _definition(
        path,
        type=kind,
        name=_tool_name(obj.get("name"), child(path, "name")),
        description=_optional_string(obj.get("description"), child(path, "description")),
        parameters=schema,
        strict=_optional_flag(obj.get("strict"), child(path, "strict")),
    )


def builtin_tool(obj: dict[str, Any], path: str, kind: str) -> ToolDefinition:
    """A provider's built-in tool: its ``type`` and its name (the type when it has none); its
    other settings stay in ``raw``."""
    name = obj.get("name")
    return _definition(path, type=kind, name=kind if name is None else _tool_name(name, child(path, "name")))
