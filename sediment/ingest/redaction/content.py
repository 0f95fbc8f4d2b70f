"""Content redaction at capture: the secrets :mod:`sediment.ingest.redaction.secret_patterns` finds are
replaced in every string a captured record keeps, before it is stored.

Each ingest path calls this at its one capture point, so the stored Fact is the redacted one
(and what is read back, exported or bundled is that Fact):

- model calls (``ingest calls``, ``serve``): :func:`redact_call` on the built InferenceCall, in
  :func:`sediment.ingest.calls.toolkit.build_call`: message text, reasoning, tool-call
  arguments (every string leaf), tool results, tool definitions and the whole ``raw`` record,
  its conversation included;
- transcripts (``ingest transcripts``): :func:`redact_call` on each rebuilt call, and
  :func:`redact_value` on each DeveloperDecision's ``raw``;
- OTLP log records: :func:`redact_value` on the kept record (bodies and attribute values);
- CI payloads (webhooks, ``ingest ci``/``github``/…, ``serve``): :func:`redact_value` on the
  stored ``raw`` (:func:`sediment.ingest.facts_jsonl.stored_raw`);
- trajectory import: :func:`redact_trajectory` on each imported record (event text, reasoning,
  tool-call arguments, metadata and the ``raw_record`` text).

Ids are still derived from the record as received (before redaction), so a record stored
before content redaction existed and the same record ingested now are one Fact.

Redaction is per string and deterministic: a replayed message redacts to the same bytes as
its first appearance, so the store's replay deduplication holds. A :class:`ContentCache` (one
per Session, owned by :class:`~sediment.ingest.calls.toolkit.ReplayMemo`) remembers the
previous call's redacted messages and raw list items by identity, and each list it walked: a
list whose leading items are the very items of the previous call's list (the replayed history)
takes their results with no lookup per item, and only the items after that prefix are looked up
or walked. Replayed context thus costs one identity comparison per item, not one scan.

The setting: ``SEDIMENT_REDACT_CONTENT=0`` (or ``false``/``no``/``off``) turns content
redaction off for a process, and ``sediment ingest --no-redact-content`` for one command
(:func:`content_redaction`); it is on by default everywhere. Name-based redaction
(:mod:`sediment.ingest.redaction.credentials`) is never turned off.

Counting: inside :func:`tallying`, every secret found is noted in a :class:`RedactionTally`
(kind → the distinct secrets' digests), which ingest reports as ``redacted``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import takewhile
from operator import is_, truth
from typing import TYPE_CHECKING, Any

from sediment.ingest.redaction.secret_patterns import Finding, might_hold_secret, redact_text

if TYPE_CHECKING:
    from sediment.model.facts import InferenceCall, InferenceMessage, ToolDefinition

#: The environment variable that turns content redaction off (``0``, ``false``, ``no``, ``off``).
ENV = "SEDIMENT_REDACT_CONTENT"
_OFF = frozenset({"0", "false", "no", "off"})
_override: ContextVar[bool | None] = ContextVar("sediment_redact_content", default=None)


def content_redaction_enabled() -> bool:
    """True unless turned off: by :func:`content_redaction`, else by :data:`ENV`."""
    chosen = _override.get()
    if chosen is not None:
        return chosen
    return os.environ.get(ENV, "").strip().lower() not in _OFF


@contextmanager
def content_redaction(enabled: bool) -> Iterator[None]:
    """Content redaction on or off inside the block, whatever :data:`ENV` says."""
    token = _override.set(enabled)
    try:
        yield
    finally:
        _override.reset(token)


def set_content_redaction(enabled: bool | None) -> None:
    """Content redaction on or off for the rest of this context, or (``None``) as :data:`ENV`
    says: every CLI command that captures sets it anew, so an earlier command's
    ``--no-redact-content`` never carries over to a later one in the same process."""
    _override.set(enabled)


# --- counting -------------------------------------------------------------------------------


@dataclass
class RedactionTally:
    """The secrets redacted: for each kind, the digests of the distinct secrets found."""

    kinds: dict[str, set[str]] = field(default_factory=dict)

    def note(self, findings: Iterator[Finding] | tuple[Finding, ...] | list[Finding]) -> None:
        for kind, digest in findings:
            self.kinds.setdefault(kind, set()).add(digest)

    def absorb(self, other: RedactionTally) -> None:
        for kind, digests in other.kinds.items():
            self.kinds.setdefault(kind, set()).update(digests)

    def counts(self) -> dict[str, int]:
        """Kind → how many distinct secrets of that kind were redacted, by kind name."""
        return {kind: len(digests) for kind, digests in sorted(self.kinds.items())}


_tally: ContextVar[RedactionTally | None] = ContextVar("sediment_redaction_tally", default=None)


@contextmanager
def tallying(tally: RedactionTally) -> Iterator[RedactionTally]:
    """Note every secret redacted inside the block in ``tally``."""
    token = _tally.set(tally)
    try:
        yield tally
    finally:
        _tally.reset(token)


def _note(findings: list[Finding] | tuple[Finding, ...]) -> None:
    if findings:
        tally = _tally.get()
        if tally is not None:
            tally.note(findings)


# --- values ----------------------------------------------------------------------------------


_Walked = tuple[Any, tuple[Finding, ...]]  # an item's redacted form and what was found in it


class ContentCache:
    """The previous walk's redacted containers, by identity: a list item (a replayed message,
    the very object the :class:`~sediment.ingest.calls.toolkit.ReplayMemo` reuses) or an
    InferenceMessage seen again costs one lookup, and a list whose leading items are the very
    items of a list walked before (a replayed history) reuses that list's results for them with
    no lookup per item. Holds only what the last walk saw."""

    def __init__(self) -> None:
        self._previous: dict[int, tuple[Any, Any, tuple[Finding, ...]]] = {}
        self._current: dict[int, tuple[Any, Any, tuple[Finding, ...]]] = {}
        #: Lists walked, by their first item's identity: the items, their redacted forms and
        #: the (index, findings) of the items that held a secret.
        self._lists_previous: dict[int, tuple[tuple[Any, ...], list[Any], list[tuple[int, tuple[Finding, ...]]]]] = {}
        self._lists_current: dict[int, tuple[tuple[Any, ...], list[Any], list[tuple[int, tuple[Finding, ...]]]]] = {}

    def get(self, item: Any) -> tuple[Any, tuple[Finding, ...]] | None:
        key = id(item)
        hit = self._previous.get(key) or self._current.get(key)  # a replayed item: the previous call's
        if hit is None or hit[0] is not item:
            return None
        self._current[key] = hit
        return hit[1], hit[2]

    def put(self, item: Any, redacted: Any, findings: tuple[Finding, ...]) -> None:
        self._current[id(item)] = (item, redacted, findings)

    def walk_list(self, items: Sequence[Any], one: Callable[[Any], _Walked], found: list[Finding]) -> list[Any]:
        """Each item of ``items`` redacted by ``one`` (its findings added to ``found``, in
        order), but the leading items that are the very items of a list walked before: their
        results are that list's."""
        if not items:
            return []
        key = id(items[0])
        known = self._lists_previous.get(key) or self._lists_current.get(key)
        kept = 0
        if known is not None and known[0][0] is items[0]:
            kept = len(list(takewhile(truth, map(is_, items, known[0]))))
        results: list[Any] = known[1][:kept] if known is not None else []
        held = [(index, findings) for index, findings in known[2] if index < kept] if known is not None else []
        for _, findings in held:
            found.extend(findings)
        for index in range(kept, len(items)):
            redacted, findings = one(items[index])
            results.append(redacted)
            if findings:
                held.append((index, findings))
                found.extend(findings)
        self._lists_current[key] = (tuple(items), results, held)
        return results

    def turn(self) -> None:
        """End one walk (one call): only what it saw is kept for the next."""
        self._previous, self._current = self._current, {}
        self._lists_previous, self._lists_current = self._lists_current, {}


def _walk(value: Any, found: list[Finding], cache: ContentCache | None) -> Any:
    """``value`` with every string redacted: the very object when nothing changed, else a copy
    of each container on the way to a change. Keys are kept."""
    if isinstance(value, str):
        text, findings = redact_text(value)
        if not findings:
            return value  # the very object: callers tell a redaction by identity
        found.extend(findings)
        return text
    if isinstance(value, dict):
        copied: dict[Any, Any] | None = None
        for key, item in value.items():
            redacted = _walk(item, found, cache)
            if redacted is not item:
                if copied is None:
                    copied = dict(value)
                copied[key] = redacted
        return value if copied is None else copied
    if isinstance(value, list):
        if cache is not None:
            results = cache.walk_list(value, lambda item: _item(item, cache), found)
            return value if all(map(is_, results, value)) else results
        listed: list[Any] | None = None
        for index, item in enumerate(value):
            redacted = _walk(item, found, cache)
            if redacted is not item:
                if listed is None:
                    listed = list(value)
                listed[index] = redacted
        return value if listed is None else listed
    return value


def _item(item: Any, cache: ContentCache) -> _Walked:
    """A list item redacted: a container through the identity cache, anything else walked."""
    local: list[Finding] = []
    if not isinstance(item, dict | list):
        return _walk(item, local, cache), tuple(local)
    hit = cache.get(item)
    if hit is not None:
        return hit
    redacted = _walk(item, local, None)
    cache.put(item, redacted, tuple(local))
    return redacted, tuple(local)


def redact_found(value: Any, *, cache: ContentCache | None = None) -> tuple[Any, tuple[Finding, ...]]:
    """A JSON value with the secrets in its strings redacted (object keys kept), or the very
    value when it holds none or content redaction is off; and what was found."""
    if not content_redaction_enabled():
        return value, ()
    found: list[Finding] = []
    redacted = _walk(value, found, cache)
    _note(found)
    return redacted, tuple(found)


def redact_value(value: Any, *, cache: ContentCache | None = None) -> Any:
    """:func:`redact_found`'s value alone."""
    return redact_found(value, cache=cache)[0]


# --- model calls ----------------------------------------------------------------------------


def _message(message: InferenceMessage, found: list[Finding]) -> InferenceMessage:
    from sediment.model.facts import ReasoningPart, TextPart, ToolCallPart, ToolCallResponsePart

    parts: list[Any] | None = None
    for index, part in enumerate(message.parts):
        new: Any = part
        if isinstance(part, TextPart | ReasoningPart):
            content = _walk(part.content, found, None)
            if content is not part.content:
                new = part.model_copy(update={"content": content})
        elif isinstance(part, ToolCallPart):
            arguments = _walk(part.arguments, found, None)
            if arguments is not part.arguments:
                new = part.model_copy(update={"arguments": arguments})
        elif isinstance(part, ToolCallResponsePart):
            result = _walk(part.result, found, None)
            if result is not part.result:
                new = part.model_copy(update={"result": result})
        if new is not part:
            if parts is None:
                parts = list(message.parts)
            parts[index] = new
    return message if parts is None else message.model_copy(update={"parts": tuple(parts)})


def _messages(messages: tuple[InferenceMessage, ...], found: list[Finding],
              cache: ContentCache | None) -> tuple[InferenceMessage, ...]:
    if cache is not None:
        results = cache.walk_list(messages, lambda message: _cached(message, _message, cache), found)
        return messages if all(map(is_, results, messages)) else tuple(results)
    redacted: list[InferenceMessage] | None = None
    for index, message in enumerate(messages):
        new = _message(message, found)
        if new is not message:
            if redacted is None:
                redacted = list(messages)
            redacted[index] = new
    return messages if redacted is None else tuple(redacted)


def _cached(item: Any, redact: Callable[[Any, list[Finding]], Any], cache: ContentCache) -> _Walked:
    """A message or tool definition redacted by ``redact``, through the identity cache."""
    hit = cache.get(item)
    if hit is not None:
        return hit
    local: list[Finding] = []
    new = redact(item, local)
    cache.put(item, new, tuple(local))
    return new, tuple(local)


def _tools(tools: tuple[ToolDefinition, ...] | None, found: list[Finding],
           cache: ContentCache | None) -> tuple[ToolDefinition, ...] | None:
    """The tool definitions redacted. Each call's list is a new tuple (the call's model builds
    one), but a list declared again holds the very definitions of the previous call's
    (:class:`~sediment.ingest.calls.toolkit.ReplayMemo`): with ``cache``, they are looked up by
    identity, as messages are."""
    if tools is None:
        return None
    if cache is not None:
        results = cache.walk_list(tools, lambda tool: _cached(tool, _tool, cache), found)
        return tools if all(map(is_, results, tools)) else tuple(results)
    local: list[Finding] = []
    result = tuple(_tool(tool, local) for tool in tools)
    found.extend(local)
    return tools if all(map(is_, result, tools)) else result


def _tool(tool: ToolDefinition, found: list[Finding]) -> ToolDefinition:
    description = _walk(tool.description, found, None)
    parameters = _walk(tool.parameters, found, None)
    if description is tool.description and parameters is tool.parameters:
        return tool
    return tool.model_copy(update={"description": description, "parameters": parameters})


def redact_call(call: InferenceCall, *, cache: ContentCache | None = None) -> InferenceCall:
    """``call`` with the secrets in its content redacted: message text, reasoning, tool-call
    arguments, tool results, tool definitions and ``raw`` (the conversation included). The
    very call when it holds none, or content redaction is off. Ids are not touched."""
    if not content_redaction_enabled():
        return call
    found: list[Finding] = []
    update: dict[str, Any] = {}
    inputs = _messages(call.input_messages, found, cache)
    outputs = _messages(call.output_messages, found, cache)
    tools = _tools(call.tools, found, cache)
    raw = _walk(call.raw, found, cache)
    if cache is not None:
        cache.turn()
    for name, before, after in (("input_messages", call.input_messages, inputs),
                                ("output_messages", call.output_messages, outputs),
                                ("tools", call.tools, tools), ("raw", call.raw, raw)):
        if after is not before:
            update[name] = after
    _note(found)
    return call.model_copy(update=update) if update else call


# --- JSON text --------------------------------------------------------------------------------

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def redact_json_source(text: str) -> tuple[str, tuple[Finding, ...]]:
    """JSON text (a source record kept byte for byte) with the secrets in its string values
    redacted: a string literal that holds one is decoded, redacted and written again
    (``json.dumps``, non-ASCII kept); every other byte is the source's. Text that is not JSON
    is redacted as text. Returns the text and what was found."""
    if not content_redaction_enabled() or not might_hold_secret(text):
        return text, ()
    found: list[Finding] = []

    def literal(match: re.Match[str]) -> str:
        escaped = match.group()
        try:
            value = json.loads(escaped)
        except ValueError:
            return escaped
        if not isinstance(value, str) or not might_hold_secret(value):
            return escaped
        redacted, findings = redact_text(value)
        if not findings:
            return escaped
        found.extend(findings)
        return json.dumps(redacted, ensure_ascii=False)

    stripped = text.lstrip()
    if stripped.startswith(("{", "[", '"')):
        text = _JSON_STRING.sub(literal, text)
    else:
        text, findings = redact_text(text)
        found.extend(findings)
    _note(found)
    return text, tuple(found)
