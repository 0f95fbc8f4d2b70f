"""A Codex rollout (``~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl``) → one InferenceCall per
model call.

The mapping (``docs/transcripts.md``): every line is ``{"timestamp", "type", "payload"}``.

- ``session_meta``: the Session (``payload.id``), the client version (``cli_version``), the
  ``model_provider`` and ``base_instructions`` (the request's instructions: a leading ``system``
  message of every call). A second ``session_meta`` (a fork replays its parent's) is skipped as
  ``session_meta_repeated``.
- ``response_item``: Responses API items, in order the input of the next call. Assistant
  messages, ``reasoning``, ``function_call`` / ``custom_tool_call`` (and Codex's built-in
  ``local_shell_call`` / ``web_search_call``) are what a call output; user and developer
  messages and tool outputs (keyed by ``call_id``) are what the next call is sent. Another item
  type stays in ``raw`` only (``response_item:<type>``).
- ``event_msg`` ``token_count`` whose ``total_token_usage.total_tokens`` grew closes a call:
  its input is every earlier item (the instructions first), its output the output items since
  the previous call, its tokens ``last_token_usage`` (``input_tokens``, cached ones included;
  ``output_tokens``, reasoning included), its time the first output item's ``timestamp``. A
  repeated count (Codex sends one again after ``turn_context``) closes nothing. Other events
  mirror the items and are skipped by name (``event_msg:<type>``).
- ``turn_context``: the model of the calls that follow (``payload.model``).
- ``compacted``: the history is replaced, by ``payload.replacement_history`` when the line has
  it, else by its summary ``payload.message`` as one user message: later calls see what Codex
  sent after compacting.
- Output items after the last count wait for it (``call_incomplete``) until they are ten
  minutes (:data:`~.common.SETTLE`) older than the capture time: then they are a call cut off
  before Codex counted it, stored without token counts. A line of another type is skipped as
  ``unknown_entry:<type>`` and kept in the ``raw`` of the call it falls in.

A call's ``raw`` is its lines (from the line after the previous call's count through its own
count); a rollout records no response id, so the call's id is the digest of those lines.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from sediment.ingest import TranslationError
from sediment.ingest.calls.fields import as_object, token_count
from sediment.ingest.calls.openai_responses import item_parts
from sediment.ingest.calls.toolkit import AnyPart, Notes, content_parts, message, parse_timestamp
from sediment.ingest.transcripts.common import (
    SETTLE,
    Entry,
    RebuiltCall,
    TranscriptResult,
    build_call,
    capture,
    text_or_none,
)
from sediment.model.facts import CaptureLack, InferenceMessage

CLIENT: Final = "codex"
OUTPUT_ITEMS: Final = frozenset({"reasoning", "function_call", "custom_tool_call", "local_shell_call",
                                 "web_search_call"})
INPUT_ITEMS: Final = frozenset({"message", "function_call_output", "custom_tool_call_output"})


def _is_output(item: dict[str, Any]) -> bool:
    kind = item.get("type")
    return (isinstance(kind, str) and kind in OUTPUT_ITEMS) or (kind == "message" and item.get("role") == "assistant")


def _parent_thread(source: Any) -> str | None:
    """The ``parent_thread_id`` a spawned subagent's ``source`` names (at any depth of it), else None."""
    if isinstance(source, dict):
        found = text_or_none(source.get("parent_thread_id"))
        if found is not None:
            return found
        for value in source.values():
            found = _parent_thread(value)
            if found is not None:
                return found
    return None


def _opaque(item: dict[str, Any]) -> bool:
    """A reasoning item whose thinking text is not there (only a summary or ciphertext)."""
    if item.get("type") != "reasoning":
        return False
    content = item.get("content")
    return not (isinstance(content, list) and any(
        isinstance(c, dict) and isinstance(c.get("text"), str) and c["text"].strip() for c in content))


class _Rollout:
    def __init__(self, result: TranscriptResult, org_id: str) -> None:
        self.result = result
        self.org_id = org_id
        self.session: str | None = None
        self.version: str | None = None
        self.provider: str | None = None
        self.instructions: str | None = None
        self.parent: str | None = None
        self.model: str | None = None
        self.history: list[dict[str, Any]] = []
        self.window: list[dict[str, Any]] = []  # the raw lines of the call being read
        self.inputs: list[dict[str, Any]] = []
        self.outputs: list[tuple[dict[str, Any], Entry]] = []
        self.late: list[dict[str, Any]] = []  # inputs read after an output: the next call's
        self.total: int | None = None
        self.parts: dict[int, tuple[str, list[AnyPart]] | None] = {}  # by id(item): each item read once

    def translated(self, item: dict[str, Any], path: str) -> None:
        """Read ``item`` once (a malformed item fails, naming its field); its warnings are counted."""
        notes = Notes()
        self.parts[id(item)] = item_parts(item, path, notes)
        self.result.warn(notes)

    def messages(self, items: list[dict[str, Any]], instructions: str | None = None) -> list[InferenceMessage]:
        """Items as messages, grouped as the Responses call format groups them (consecutive
        assistant-side items are one assistant message), after the instructions."""
        found: list[InferenceMessage] = []
        if instructions:
            found.append(message("system", content_parts(instructions, "base_instructions", Notes())))
        grouped: list[tuple[str, list[AnyPart]]] = []
        for item in items:
            translated = self.parts.get(id(item))
            if translated is None:
                continue
            role, parts = translated
            if role == "assistant" and grouped and grouped[-1][0] == "assistant":
                grouped[-1][1].extend(parts)
            else:
                grouped.append((role, list(parts)))
        found.extend(message(role, parts) for role, parts in grouped)
        return found

    def read(self, entry: Entry) -> None:
        value = entry.value
        kind = value.get("type")
        if not isinstance(kind, str) or not kind.strip():
            raise TranslationError("type: expected a non-empty string")
        payload = value.get("payload")
        if kind == "session_meta":
            self.meta(as_object(payload, "payload"))
            return
        self.window.append(value)
        if kind == "response_item":
            self.item(as_object(payload, "payload"), entry)
        elif kind == "event_msg":
            event = as_object(payload, "payload")
            name = event.get("type")
            if name == "token_count":
                self.count(event, entry)
            else:
                self.result.skipped[f"event_msg:{name}"] += 1
        elif kind == "turn_context":
            self.model = text_or_none(as_object(payload, "payload").get("model")) or self.model
        elif kind == "compacted":
            self.compact(as_object(payload, "payload"))
        else:
            self.result.skipped[f"unknown_entry:{kind}"] += 1

    def meta(self, payload: dict[str, Any]) -> None:
        if self.session is not None:
            self.result.skipped["session_meta_repeated"] += 1
            return
        session = text_or_none(payload.get("id"))
        if session is None:
            raise TranslationError("payload.id: missing")
        self.session = session
        self.version = text_or_none(payload.get("cli_version"))
        self.provider = text_or_none(payload.get("model_provider"))
        instructions = payload.get("base_instructions")
        if isinstance(instructions, dict):
            instructions = instructions.get("text")
        if instructions is not None and not isinstance(instructions, str):
            raise TranslationError("payload.base_instructions: expected a string or {\"text\": string}")
        self.instructions = instructions or None
        self.parent = _parent_thread(payload.get("source"))

    def item(self, item: dict[str, Any], entry: Entry) -> None:
        kind = item.get("type")
        if kind is not None and not isinstance(kind, str):
            raise TranslationError("payload.type: expected a string")
        if kind not in OUTPUT_ITEMS | INPUT_ITEMS:
            self.result.skipped[f"response_item:{kind}"] += 1
            return
        self.translated(item, "payload")
        if _is_output(item):
            self.outputs.append((item, entry))
        elif self.outputs:
            self.late.append(item)
        else:
            self.inputs.append(item)

    def compact(self, payload: dict[str, Any]) -> None:
        replacement = payload.get("replacement_history")
        if isinstance(replacement, list):
            for index, item in enumerate(replacement):
                self.translated(as_object(item, f"payload.replacement_history[{index}]"),
                                f"payload.replacement_history[{index}]")
            self.history = list(replacement)
        else:
            summary = payload.get("message")
            if not isinstance(summary, str):
                raise TranslationError("payload.message: expected a string (or a replacement_history list)")
            summary_item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]}
            self.translated(summary_item, "payload.message")
            self.history = [summary_item]
        self.inputs = []

    def count(self, event: dict[str, Any], entry: Entry) -> None:
        info = event.get("info")
        if info is None:
            return
        info = as_object(info, "payload.info")
        totals = as_object(info.get("total_token_usage"), "payload.info.total_token_usage")
        total = token_count(totals.get("total_tokens"), "payload.info.total_token_usage.total_tokens")
        if total is None or (self.total is not None and total <= self.total):
            return
        self.total = total
        if not self.outputs:
            self.result.skipped["usage_without_output"] += 1
            return
        last = as_object(info.get("last_token_usage"), "payload.info.last_token_usage")
        tokens = (token_count(last.get("input_tokens"), "payload.info.last_token_usage.input_tokens"),
                  token_count(last.get("output_tokens"), "payload.info.last_token_usage.output_tokens"))
        self.close(tokens)

    def close(self, tokens: tuple[int | None, int | None]) -> None:
        outputs = [item for item, _ in self.outputs]
        first = self.outputs[0][1]
        sent = [*self.history, *self.inputs]
        inputs = self.messages(sent, self.instructions)
        produced = self.messages(outputs)
        lacks: set[CaptureLack] = {"tool_definitions"}
        if self.instructions is None:
            lacks.add("system_prompt")
        if any(_opaque(i) for i in (*sent, *outputs)):
            lacks.add("thinking_text")
        raw = {"entries": self.window}
        self.history = [*sent, *outputs]
        self.inputs, self.late, self.outputs, self.window = self.late, [], [], []
        if self.session is None:
            self.result.skipped["no_session"] += 1
            return
        try:
            observed = parse_timestamp(first.value.get("timestamp"), "timestamp")
        except TranslationError as exc:
            raise _LineError(first.line, str(exc)) from None
        if observed is None:
            raise _LineError(first.line, "timestamp: missing")
        rebuilt = RebuiltCall(
            session_id=self.session, inputs=tuple(inputs), outputs=tuple(produced), observed_at=observed,
            capture=capture(CLIENT, self.version, lacks, self.parent), raw=raw, model=self.model,
            model_provider=self.provider, input_tokens=tokens[0], output_tokens=tokens[1],
        )
        self.result.facts.append(build_call(rebuilt, self.org_id))


    def settled(self, captured_at: datetime) -> bool:
        """Whether the output items nothing closed are :data:`SETTLE` older than the capture."""
        last = self.outputs[-1][1]
        moment = parse_timestamp(last.value.get("timestamp"), "timestamp")
        return moment is not None and moment + SETTLE <= captured_at


class _LineError(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


def translate(entries: list[Entry], result: TranscriptResult, *, org_id: str, captured_at: datetime) -> None:
    """Add the rollout's calls to ``result``."""
    rollout = _Rollout(result, org_id)
    for entry in entries:
        try:
            rollout.read(entry)
        except _LineError as exc:
            result.problems.append((exc.line, str(exc)))
        except TranslationError as exc:
            result.problems.append((entry.line, str(exc)))
    if rollout.outputs:
        try:
            settled = rollout.settled(captured_at)
            if settled:
                rollout.close((None, None))
        except _LineError as exc:
            result.problems.append((exc.line, str(exc)))
            return
        except TranslationError as exc:
            result.problems.append((rollout.outputs[-1][1].line if rollout.outputs else 0, str(exc)))
            return
        if not settled:
            result.skipped["call_incomplete"] += 1
