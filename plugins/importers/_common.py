"""What the built-in importers share: reading units into parsed values, and one refusal line."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from sediment.plugin import trajectory_kit as kit


class Refused(ValueError):
    """A record that cannot be stored exactly: the field and why (becomes an ImportRefusal)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def parsed_units(path: Path) -> Iterator[tuple[kit.SourceUnit, Any] | kit.ImportRefusal]:
    """Each unit of ``path`` with its parsed JSON value, or a refusal for a unit that is not
    JSON (the next units are still read); a file that cannot be delimited ends with one refusal."""
    try:
        for unit in kit.read_units(path):
            try:
                yield unit, kit.parse_json(unit.data)
            except ValueError as exc:
                yield kit.ImportRefusal(path, unit.line, "(record)", kit.describe_json_error(exc))
    except kit.UnitError as exc:
        yield kit.ImportRefusal(path, exc.line, "(file)", str(exc))


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else an empty one (for optional metadata)."""
    return value if isinstance(value, dict) else {}


def text_or_none(value: Any, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise Refused(field, f"expected text or null, found {type(value).__name__}")


def required_text(value: Any, field: str) -> str:
    if isinstance(value, str) and value.strip():
        return value
    raise Refused(field, "expected non-empty text")


def mapping(value: Any, field: str) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    raise Refused(field, f"expected an object, found {type(value).__name__}")


def array(value: Any, field: str) -> list[Any]:
    if isinstance(value, list):
        return value
    raise Refused(field, f"expected an array, found {type(value).__name__}")


def refusal(path: Path, line: int, exc: ValueError) -> kit.ImportRefusal:
    """One refusal line for a record that could not become a canonical record: a
    :class:`Refused` names its field, a model's validation error its first problem."""
    if isinstance(exc, Refused):
        return kit.ImportRefusal(path, line, exc.field, exc.message)
    if isinstance(exc, kit.TrajectoryError):  # a canonical rule, "FIELD: message"
        field, separator, message = str(exc).partition(": ")
        if separator and field and " " not in field and "\n" not in message:
            return kit.ImportRefusal(path, line, field, message)
    errors = getattr(exc, "errors", None)
    if callable(errors) and not isinstance(exc, kit.TrajectoryError):
        first = errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "(record)"
        return kit.ImportRefusal(path, line, where, str(first.get("msg", exc)).splitlines()[0])
    return kit.ImportRefusal(path, line, "(record)", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


Result = kit.Trajectory | kit.ImportRefusal


def convert_units(path: Path, units: Iterable[tuple[kit.SourceUnit, Any] | kit.ImportRefusal],
                  convert: Callable[[kit.SourceUnit, Any], kit.Trajectory]) -> Iterator[Result]:
    """Run ``convert(unit, value)`` over each parsed unit; a record that cannot be stored
    exactly becomes one refusal and the next unit is read."""
    for item in units:
        if isinstance(item, kit.ImportRefusal):
            yield item
            continue
        unit, value = item
        try:
            yield convert(unit, value)
        except ValueError as exc:  # Refused, TrajectoryError, a model's ValidationError
            yield refusal(path, unit.line, exc)


def records_of(path: Path, convert: Any) -> Iterator[kit.Trajectory | kit.ImportRefusal]:
    """Run ``convert(unit, value, file_sha256)`` over each unit of ``path``."""
    digest = kit.file_sha256(path)
    return convert_units(path, parsed_units(path), lambda unit, value: convert(unit, value, digest))


def openai_tools(value: Any, field: str) -> list[kit.TrajectoryToolDefinition]:
    """OpenAI function specs (``{"type": "function", "function": {...}}`` or bare functions)."""
    tools = []
    for index, spec in enumerate(array(value, field)):
        spec = mapping(spec, f"{field}.{index}")
        function = mapping(spec.get("function", spec), f"{field}.{index}.function")
        parameters = function.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            raise Refused(f"{field}.{index}.function.parameters", "expected an object")
        tools.append(kit.TrajectoryToolDefinition(
            name=required_text(function.get("name"), f"{field}.{index}.function.name"),
            description=text_or_none(function.get("description"), f"{field}.{index}.function.description"),
            parameters=parameters))
    return tools


CHAT_ROLES: dict[str, kit.Role] = {"system": "system", "developer": "system", "user": "user",
                                   "assistant": "assistant", "tool": "tool"}


def chat_events(messages: list[Any], field: str, calls: kit.CallIds,
                supervised: Any = None) -> list[kit.Event]:
    """OpenAI Chat messages as events: roles kept (``developer`` as system), tool calls with
    their source ids (namespaced when reused), tool messages linked by ``tool_call_id``;
    assistant events supervised unless ``supervised(index, message)`` says otherwise."""
    events: list[kit.Event] = []
    for index, message in enumerate(messages):
        where = f"{field}.{index}"
        message = mapping(message, where)
        role = message.get("role")
        if not isinstance(role, str) or role not in CHAT_ROLES:
            raise Refused(f"{where}.role", f"unknown role {role!r}")
        content = message.get("content")
        meta: dict[str, Any] = {}
        if role == "developer":
            meta["role"] = role
        if content is not None and not isinstance(content, str):
            meta["content"] = content
            content = None
        for key in ("name", "function_call"):
            if message.get(key) is not None:
                meta[key] = message[key]
        tool_calls = []
        raw_calls = message.get("tool_calls")
        if raw_calls is not None:
            if role != "assistant":
                raise Refused(f"{where}.tool_calls", f"a {role} message carries tool calls")
            for position, call in enumerate(array(raw_calls, f"{where}.tool_calls")):
                call = mapping(call, f"{where}.tool_calls.{position}")
                function = mapping(call.get("function"), f"{where}.tool_calls.{position}.function")
                arguments = function.get("arguments")
                if not isinstance(arguments, str | dict):
                    raise Refused(f"{where}.tool_calls.{position}.function.arguments", "expected text or an object")
                original = call.get("id")
                if original is not None and not isinstance(original, str):
                    raise Refused(f"{where}.tool_calls.{position}.id", "expected text")
                tool_calls.append(kit.TrajectoryToolCall(
                    call_id=calls.assign(original, index, position), original_call_id=original or None,
                    name=required_text(function.get("name"), f"{where}.tool_calls.{position}.function.name"),
                    arguments=arguments))
        link = None
        missing: list[kit.MissingField] = []
        if role == "tool":
            answered = message.get("tool_call_id")
            if not isinstance(answered, str) or not answered:
                missing.append(kit.MissingField(field="tool_result_of", reason="the tool message names no call"))
            else:
                link = calls.result_of(answered)
                if link is None:
                    missing.append(kit.MissingField(
                        field="tool_result_of", reason=f"it answers call {answered!r}, which no earlier call has"))
                meta["tool_call_id"] = answered
        supervise = role == "assistant" if supervised is None else bool(supervised(index, message))
        events.append(kit.Event(event_id=f"event:{index}", role=CHAT_ROLES[role], text=content,
                                tool_calls=tool_calls, tool_result_of=link, source_metadata=meta,
                                missing_fields=missing, supervised=supervise))
    return declare_unanswered(events)


def declare_unanswered(events: list[kit.Event]) -> list[kit.Event]:
    """Declare each call that no tool event answers (except in the final assistant decision)."""
    answered = {e.tool_result_of for e in events if e.tool_result_of is not None}
    last = max((i for i, e in enumerate(events) if e.role == "assistant"), default=-1)
    out = []
    for index, event in enumerate(events):
        extra = [kit.MissingField(field=f"tool_calls.{n}.result", reason="the source records no result for it")
                 for n, call in enumerate(event.tool_calls) if call.call_id not in answered and index != last]
        out.append(event.model_copy(update={"missing_fields": [*event.missing_fields, *extra]}) if extra else event)
    return out


def source(source_id: str, url: str | None, unit: kit.SourceUnit, digest: str) -> kit.Source:
    return kit.Source(source_id=source_id, url=url, revision=None, locator=unit.locator, file_sha256=digest)


def event_omissions(events: list[kit.Event]) -> list[kit.MissingField]:
    """Record-level declarations of every event-level omission (so incompleteness is declared)."""
    return [kit.MissingField(field=f"events.{i}.{m.field}", reason=m.reason)
            for i, e in enumerate(events) for m in e.missing_fields]
