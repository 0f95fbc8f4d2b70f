"""The trainer message mapper: one InferenceCall as the chat messages a trainer reads.

A call's ``input_messages`` become the ``prompt`` and its ``output_messages`` the
``completion`` of a :class:`TrainerConversation` (``tools`` is always ``[]``; the rows set the
call's declared tools from :mod:`sediment.evidence.chat_tools`). The shapes, in
key order (JSON Schemas ``trainer-messages/*`` v1 under ``schemas/trainer-messages/``):

- text message ``{role, content}``, role ``developer`` | ``system`` | ``user``;
- assistant message ``{role: "assistant", thinking?, content?, tool_calls?}``: ``thinking``
  when the message has a reasoning part, ``content`` when it has a text part, ``tool_calls``
  when it has a tool call (at least one of the three);
- tool call ``{id, type: "function", function: {name, arguments}}``, ``arguments`` the
  recorded object;
- tool result ``{role: "tool", name, tool_call_id, content}``, ``name`` that of the earlier
  tool call with that id.

Per message, in order (prompt first, then completion; one id → name map of tool calls
spans the whole call):

1. no parts → ``empty_message``;
2. a completion message whose role is not ``assistant`` → ``unsupported_completion_role``;
3. a message with a tool result (``tool_call_response`` part): its role must be ``tool`` or
   ``user`` (else ``unsupported_role_part``); text parts of a ``user`` message are buffered
   and flushed as one user message before each tool message and at the end; any other part
   → ``unrepresentable_part_order``; a result whose id names no earlier tool call →
   ``unresolved_tool_call``; a result's content is the string itself, else its strict JSON
   text (:func:`strict_json`) which must decode back to an equal value (else
   ``non_string_tool_result``), after the result passed the representation check;
4. any other role outside ``developer``, ``system``, ``user``, ``assistant`` →
   ``unsupported_message_role`` (a ``tool`` message without a result included);
5. a non-assistant message must hold only text parts (else ``unsupported_role_part``);
   ``content`` is their concatenation, with no separator;
6. an assistant message's parts run reasoning, then text, then tool calls (else
   ``unrepresentable_part_order``); a tool-call id seen before in the call →
   ``duplicate_tool_call_id`` (tested before the order of that part); ``thinking`` and
   ``content`` are concatenations and empty strings are kept.

Then an empty completion → ``completionless``, and the emitted conversation must pass the
representation check (:func:`~sediment.evidence.representation.representation_problem`):
a non-finite number → ``non_finite_number``, a lone surrogate → ``unrepresentable_unicode``.

The mapper is a pure function of the call: the same call gives equal messages whatever was
mapped before it. :data:`TRAINER_MESSAGES_VERSION` names these rules; it is recorded in the
provenance of every row built from them (:class:`~sediment.evidence.trainer_messages.TrainingProvenance`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Required, TypeAlias, TypedDict, get_args

from pydantic import Field

from sediment.derive.confidence import LabelConfidencePolicy
from sediment.evidence.representation import REPRESENTATION_REASONS, representation_problem
from sediment.identifiers import has_unpaired_surrogate
from sediment.model.facts import (
    InferenceCall,
    InferenceMessage,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from sediment.model.policy import Provenance
from sediment.records import plain

__all__ = [
    "MESSAGE_ROLES",
    "TEXT_ROLES",
    "TRAINER_MESSAGES_VERSION",
    "TRAINER_SKIP_REASONS",
    "AssistantMessage",
    "FunctionCall",
    "TextMessage",
    "ToolCall",
    "ToolMessage",
    "TrainerConversation",
    "TrainerDecline",
    "TrainerMessage",
    "TrainingProvenance",
    "map_conversation",
    "map_inference_call",
    "map_inference_prompt",
    "strict_json",
]

#: The version of the mapping rules (the module docstring); a change to any emitted byte bumps it.
TRAINER_MESSAGES_VERSION = "1"

TrainerSkipReason: TypeAlias = Literal[
    "non_finite_number",
    "unrepresentable_unicode",
    "completionless",
    "duplicate_tool_call_id",
    "empty_message",
    "non_string_tool_result",
    "unrepresentable_part_order",
    "unresolved_tool_call",
    "unsupported_completion_role",
    "unsupported_message_role",
    "unsupported_role_part",
]

#: Why a call cannot be mapped: the closed vocabulary, in its contract order (the
#: representation reasons first).
TRAINER_SKIP_REASONS: tuple[TrainerSkipReason, ...] = get_args(TrainerSkipReason)

#: Roles of a text message.
TEXT_ROLES: tuple[str, ...] = ("developer", "system", "user")
#: Roles a message without a tool result may have.
MESSAGE_ROLES: tuple[str, ...] = (*TEXT_ROLES, "assistant")
_RESULT_ROLES = ("tool", "user")
_REASONING, _TEXT, _TOOL_CALL = 0, 1, 2


class FunctionCall(TypedDict):
    name: str
    arguments: dict[str, Any]


class ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCall


class TextMessage(TypedDict):
    role: Literal["developer", "system", "user"]
    content: str


class AssistantMessage(TypedDict, total=False):
    role: Required[Literal["assistant"]]
    thinking: str
    content: str
    tool_calls: list[ToolCall]


class ToolMessage(TypedDict):
    role: Literal["tool"]
    name: str
    tool_call_id: str
    content: str


TrainerMessage: TypeAlias = TextMessage | AssistantMessage | ToolMessage


@dataclass(frozen=True)
class TrainerConversation:
    """A mapped call: ``prompt`` (from the input messages), ``completion`` (assistant
    messages from the output messages) and ``tools`` (always empty)."""

    prompt: list[TrainerMessage]
    completion: list[AssistantMessage]
    tools: list[Any] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """``{"prompt", "completion", "tools"}``, the keys a training row starts with."""
        return {"prompt": self.prompt, "completion": self.completion, "tools": self.tools}


@dataclass(frozen=True)
class TrainerDecline:
    """Why a call (or its prompt) cannot be mapped: one reason of :data:`TRAINER_SKIP_REASONS`."""

    reason: TrainerSkipReason

    @property
    def is_representation(self) -> bool:
        """True for a representation reason (a value no JSON row may carry), False for a
        structural one (messages that have no trainer shape)."""
        return self.reason in REPRESENTATION_REASONS


class _Declined(Exception):
    def __init__(self, reason: TrainerSkipReason) -> None:
        super().__init__(reason)
        self.reason = reason


def strict_json(value: Any) -> str:
    """``value`` as strict JSON text: keys sorted, ``,`` and ``:`` separators, non-ASCII kept,
    no NaN or infinities (``ValueError``); a value JSON cannot hold raises ``TypeError``."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _result_text(result: Any) -> str:
    if isinstance(result, str):  # a string's only representation problem is a lone surrogate
        if has_unpaired_surrogate(result):
            raise _Declined("unrepresentable_unicode")
        return result
    problem = representation_problem(result)
    if problem is not None:
        raise _Declined(problem)  # type: ignore[arg-type]  # one of REPRESENTATION_REASONS
    try:
        text = strict_json(result)
    except (TypeError, ValueError):
        raise _Declined("non_string_tool_result") from None
    if json.loads(text) != result:  # e.g. a tuple, or a dict with non-string keys
        raise _Declined("non_string_tool_result")
    return text


class _CallMapper:
    """Maps the messages of one call; remembers every tool call's name by id."""

    def __init__(self) -> None:
        self.tool_names: dict[str, str] = {}

    def message(self, message: InferenceMessage, *, completion: bool) -> list[TrainerMessage]:
        parts = message.parts
        if not parts:
            raise _Declined("empty_message")
        role = message.role
        if completion and role != "assistant":
            raise _Declined("unsupported_completion_role")
        if any(isinstance(p, ToolCallResponsePart) for p in parts):
            return self._with_results(role, parts)
        if role not in MESSAGE_ROLES:
            raise _Declined("unsupported_message_role")
        if role == "assistant":
            return [self._assistant(parts)]
        texts = []
        for part in parts:
            if not isinstance(part, TextPart):
                raise _Declined("unsupported_role_part")
            texts.append(part.content)
        text: TextMessage = {"role": role, "content": "".join(texts)}  # type: ignore[typeddict-item]
        return [text]

    def _with_results(self, role: str, parts: Sequence[Any]) -> list[TrainerMessage]:
        if role not in _RESULT_ROLES:
            raise _Declined("unsupported_role_part")
        out: list[TrainerMessage] = []
        buffered: list[str] = []
        for part in parts:
            if isinstance(part, ToolCallResponsePart):
                if buffered:
                    out.append({"role": "user", "content": "".join(buffered)})
                    buffered = []
                name = self.tool_names.get(part.id)
                if name is None:
                    raise _Declined("unresolved_tool_call")
                out.append({"role": "tool", "name": name, "tool_call_id": part.id,
                            "content": _result_text(part.result)})
            elif isinstance(part, TextPart) and role == "user":
                buffered.append(part.content)
            else:
                raise _Declined("unrepresentable_part_order")
        if buffered:
            out.append({"role": "user", "content": "".join(buffered)})
        return out

    def _assistant(self, parts: Sequence[Any]) -> AssistantMessage:
        phase = _REASONING
        thinking: list[str] = []
        texts: list[str] = []
        calls: list[ToolCall] = []
        for part in parts:
            if isinstance(part, ReasoningPart):
                current = _REASONING
            elif isinstance(part, TextPart):
                current = _TEXT
            elif isinstance(part, ToolCallPart):
                if part.id in self.tool_names:
                    raise _Declined("duplicate_tool_call_id")
                current = _TOOL_CALL
            else:  # pragma: no cover - every part type is handled above or in _with_results
                raise _Declined("unrepresentable_part_order")
            if current < phase:
                raise _Declined("unrepresentable_part_order")
            phase = current
            if isinstance(part, ReasoningPart):
                thinking.append(part.content)
            elif isinstance(part, TextPart):
                texts.append(part.content)
            else:
                self.tool_names[part.id] = part.name
                calls.append({"id": part.id, "type": "function",
                              "function": {"name": part.name, "arguments": plain(part.arguments)}})
        message: AssistantMessage = {"role": "assistant"}
        if thinking:
            message["thinking"] = "".join(thinking)
        if texts:
            message["content"] = "".join(texts)
        if calls:
            message["tool_calls"] = calls
        return message


def map_conversation(prompt: Sequence[InferenceMessage], completion: Sequence[InferenceMessage], *,
                     prompt_representable: bool = False) -> TrainerConversation | TrainerDecline:
    """Map ``prompt`` then ``completion`` messages of one call (rules in the module docstring).

    ``prompt_representable``: the caller has found no lone surrogate and no non-finite number in
    the prompt messages (every string and number of the mapped prompt is one of theirs), so the
    representation check reads the mapped completion alone: the same answer, since the prompt
    comes first."""
    mapper = _CallMapper()
    try:
        mapped_prompt = [m for message in prompt for m in mapper.message(message, completion=False)]
        mapped_completion: list[AssistantMessage] = [
            m for message in completion for m in mapper.message(message, completion=True)  # type: ignore[misc]
        ]
    except _Declined as declined:
        return TrainerDecline(declined.reason)
    if not mapped_completion:
        return TrainerDecline("completionless")
    conversation = TrainerConversation(mapped_prompt, mapped_completion)
    problem = representation_problem(mapped_completion if prompt_representable else conversation.as_dict())
    if problem is not None:
        return TrainerDecline(problem)  # type: ignore[arg-type]
    return conversation


def map_inference_call(call: InferenceCall) -> TrainerConversation | TrainerDecline:
    """The trainer conversation of ``call``: its input messages as the prompt, its output
    messages as the completion; or the reason it has none."""
    return map_conversation(call.input_messages, call.output_messages)


def map_inference_prompt(call: InferenceCall) -> list[TrainerMessage] | TrainerDecline:
    """Only the prompt of ``call`` (its input messages); the output is never read, so nothing
    in it declines the prompt. The representation check covers the prompt alone."""
    mapper = _CallMapper()
    try:
        mapped = [m for message in call.input_messages for m in mapper.message(message, completion=False)]
    except _Declined as declined:
        return TrainerDecline(declined.reason)
    problem = representation_problem(mapped)
    if problem is not None:
        return TrainerDecline(problem)  # type: ignore[arg-type]
    return mapped


class TrainingProvenance(Provenance):
    """The provenance of a training row built from trainer messages and a Confidence: the
    evidence's :class:`Provenance`, then the versions of the two policies the row also depends
    on, so rows built under other rules or other ladder knobs can be told apart.

    RLVR rows keep plain :class:`Provenance` (they read neither policy); schema
    ``training-rows/training-provenance`` v1.
    """

    label_confidence_policy_version: str = Field(min_length=1)
    label_confidence_policy_digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    trainer_messages_version: str = Field(min_length=1)

    @classmethod
    def of(cls, provenance: Provenance, label_confidence: LabelConfidencePolicy) -> TrainingProvenance:
        """``provenance`` stamped with ``label_confidence``'s version and digest and the
        trainer message mapper's version."""
        return cls(
            policy_version=provenance.policy_version,
            quarantine_revision=provenance.quarantine_revision,
            policy_digest=provenance.policy_digest,
            label_confidence_policy_version=label_confidence.policy_version,
            label_confidence_policy_digest=label_confidence.digest,
            trainer_messages_version=TRAINER_MESSAGES_VERSION,
        )
