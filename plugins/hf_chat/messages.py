"""Profile ``hf-chat-messages-v1``: Sediment rollout rows as conversational SFT rows for
Hugging Face ``datasets`` and TRL's ``SFTTrainer``.

One canonical rollout row (one segment) becomes one row::

    {"messages": [...], "tools": [...], "instance_id", "session_id", "segment_index",
     "split", "reward_source", "sediment": {...}}

``messages`` is the segment's conversation as the model saw it plus the last call's answer:
the first Turn's ``new_messages``, every later Turn's ``new_messages``, then the last Turn's
``output_messages`` (message shape in :mod:`sediment_hf_chat.chat`). ``tools`` are the
function tools the segment's requests declared, in chat-template shape (``[]`` when none).
``reward_source`` is the recorded CI verdict (``resolved_ci_pass`` / ``resolved_ci_fail``,
null without one); no numeric reward is made up. ``sediment`` (a ``json`` column) carries the
reward evidence: recipe, attribution source and the selected CI resolution (or null).

The prompt guarded by the train/eval check is the messages before the last call's answer.
A row is declined, with one reason of :data:`SKIP_REASONS`, when it cannot be represented
without inventing a value: see :data:`sediment_hf_chat.chat.MESSAGE_SKIP_REASONS`, and
``final_output_missing`` (the last call recorded no output message),
``final_output_not_assistant`` (an output message with another role),
``tools_differ_within_segment`` (the segment's calls declared different tool lists),
``transcript_capture`` (a call rebuilt from a client transcript, unless the
``admit_transcripts`` setting admits it) and ``timestamp_like_text`` (a field ``datasets``
would read back as a timestamp).

**Transcript-captured segments.** A call rebuilt from a client transcript lacks what the model
saw beyond the messages (the tool definitions; for Claude Code the system prompt), so by
default such a segment is declined as ``transcript_capture``: the row would not be the exact
conversation. A chat-SFT team that captures only transcripts sets
``--set hf-chat-messages-v1.admit_transcripts=true``: the row is then the recorded messages
with ``tools: []`` (none recorded), and its sidecar line names each Turn's capture
(``evidence.captures``: source and what it lacks, null for a Turn recorded on the wire).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from sediment.plugin import (
    AdaptedRow,
    ManifestInfo,
    PluginSettings,
    ProfileInfo,
    PublishedExport,
    RolloutEvidence,
    ToolDefinition,
    Turn,
    capture_row,
    hookimpl,
    schemas_in,
)

from . import card
from .chat import MESSAGE_SKIP_REASONS, RESULT_ENCODINGS, ChatConversation, Decline, chat_tools

PROFILE_ID = "hf-chat-messages-v1"
ROLLOUT_SCHEMA_ID = "https://sediment.so/schemas/training-rows/sediment-rlvr-rollout/v4.json"
#: The schema of this profile's data rows (the consumer's native rows).
NATIVE_SCHEMA = "https://sediment.so/schemas/training-rows/hf-chat-messages-row/v1.json"

SKIP_REASONS: tuple[str, ...] = (
    *MESSAGE_SKIP_REASONS,
    "final_output_missing",
    "final_output_not_assistant",
    "tools_differ_within_segment",
    "transcript_capture",
    "timestamp_like_text",
)

_MESSAGE_FIELDS = [
    card.string("role"),
    card.string("content"),
    card.struct_list("tool_calls", [
        card.string("id"),
        card.string("type"),
        card.struct("function", [card.string("name"), card.string("arguments")]),
    ]),
    card.string("tool_call_id"),
    card.string("name"),
    card.string("reasoning_content"),
]
#: Every column, in row order, as the card declares it.
FEATURES: list[card.Feature] = [
    card.struct_list("messages", _MESSAGE_FIELDS),
    card.json_list("tools"),
    card.string("instance_id"),
    card.string("session_id"),
    card.int64("segment_index"),
    card.string("split"),
    card.string("reward_source"),
    card.json_value("sediment"),
]
_JSON_COLUMNS = card.json_columns(FEATURES)

INFO = ProfileInfo(
    consumer="hf-datasets-trl",
    version=1,
    target="sediment",
    population="rollouts",
    canonical_schema=ROLLOUT_SCHEMA_ID,
    native_schema=NATIVE_SCHEMA,
    validated_with=card.VALIDATED_WITH,
    validation=("datasets.load_dataset on the export directory through its README.md card (exactly the "
                "published train/eval splits, rows equal to the JSONL rows after the Arrow round trip), "
                "trl.data_utils.is_conversational on every row, and trl.data_utils.maybe_apply_chat_template "
                "with row['tools'] through an in-memory tokenizer whose chat template renders tools, tool calls "
                "and tool results"),
    support=("conversational SFT rows (messages with tool calls, tool results and reasoning, plus the declared "
             "function tools) for TRL's SFTTrainer and datasets, one row per rollout segment: the conversation "
             "the model saw and the last call's answer; recorded API sessions carry no token ids, so the rows "
             "hold none (re-tokenize with the chat template); rewards are the recorded CI verdicts as "
             "reward_source (null without a verdict), never a numeric reward invented here"),
    skip_reasons=SKIP_REASONS,
    remedies={"transcript_capture": "the calls were rebuilt from client transcripts, which do not record the tools "
                                    "the model saw: capture them through a gateway (`sediment ingest calls`, "
                                    "`sediment serve`) or OTLP, or admit them with "
                                    "`--set hf-chat-messages-v1.admit_transcripts=true`"},
    description="Sediment rollout segments as conversational SFT rows (messages + tools) for datasets and TRL",
)


@hookimpl
def describe_profile() -> ProfileInfo:
    """The profile declaration."""
    return INFO


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    """The schema of this profile's data rows (the package folder holds its siblings' too)."""
    return schemas_in(__package__ or __name__, ids=(NATIVE_SCHEMA,))


class ChatMessagesSettings(PluginSettings):
    """What the operator decides for this profile."""

    admit_transcripts: bool = Field(
        default=False,
        description="admit segments whose calls were rebuilt from client transcripts (chat SFT needs the "
                    "messages, not the exact request): their rows have tools [] and the sidecar names each "
                    "Turn's capture; off by default, such segments are declined as transcript_capture")


@hookimpl
def plugin_settings() -> type[PluginSettings]:
    return ChatMessagesSettings


@hookimpl
def describe_manifest() -> ManifestInfo:
    """The dataset card this profile writes beside its rows."""
    return card.manifest(PROFILE_ID)


def segment_turns(row: Mapping[str, Any], evidence: RolloutEvidence) -> tuple[Turn, ...]:
    """The Turns of the row's segment, checked against the row's own turn ids."""
    index = row["segment_index"]
    segments = evidence.rollout.segments
    turns = segments[index] if 0 <= index < len(segments) else ()
    if [t.inference_call_id for t in turns] != [t["inference_call_id"] for t in row["turns"]]:
        raise RuntimeError(f"{PROFILE_ID}: row {row['instance_id']} does not match segment {index} of its Rollout")
    return turns


def segment_tools(turns: Sequence[Turn], evidence: RolloutEvidence) -> tuple[ToolDefinition, ...]:
    """The one tool list every call of the segment declared (none declared reads as empty)."""
    declared = [evidence.tools(t) or () for t in turns]
    if any(tools != declared[0] for tools in declared[1:]):
        raise Decline("tools_differ_within_segment")
    return declared[0]


def conversation(turns: Sequence[Turn]) -> tuple[ChatConversation, int]:
    """The segment's chat messages, and how many of them precede the last call's answer."""
    final = turns[-1].output_messages
    if not final:
        raise Decline("final_output_missing")
    if any(m.role != "assistant" for m in final):
        raise Decline("final_output_not_assistant")
    chat = ChatConversation()
    for turn in turns:
        chat.add(turn.new_messages)
    prompt_length = len(chat.messages)
    chat.add(final)
    return chat, prompt_length


def reward_evidence(row: Mapping[str, Any]) -> dict[str, Any]:
    """The ``sediment`` column: how the row's reward source was established."""
    return {
        "recipe_id": row["recipe_id"],
        "recipe_version": row["recipe_version"],
        "attribution_source": row["attribution_source"],
        "ci_resolution": row.get("ci_resolution"),
    }


@hookimpl
def adapt_row(row: Mapping[str, Any], evidence: RolloutEvidence, settings: ChatMessagesSettings) -> AdaptedRow | str:
    """One rollout segment as a conversational row, or the reason it cannot be one."""
    turns = segment_turns(row, evidence)
    captured = any(t.capture is not None for t in turns)
    if captured and not settings.admit_transcripts:
        # rebuilt from a client transcript: the tool definitions (and, for Claude Code, the system
        # prompt) the model saw were not recorded, so the row would not be the conversation it saw
        return "transcript_capture"
    try:
        tools = chat_tools(segment_tools(turns, evidence))
        chat, prompt_length = conversation(turns)
    except Decline as declined:
        return declined.reason
    body: dict[str, Any] = {
        "messages": chat.messages,
        "tools": tools,
        "instance_id": row["instance_id"],
        "session_id": row["session_id"],
        "segment_index": row["segment_index"],
        "split": row["split"],
        "reward_source": row.get("reward_source"),
        "sediment": reward_evidence(row),
    }
    if card.retyped_text(body, _JSON_COLUMNS) is not None:
        return "timestamp_like_text"
    described: dict[str, Any] = {
        "inference_call_ids": [t.inference_call_id for t in turns],
        "prompt_messages": prompt_length,
        "answer_messages": len(chat.messages) - prompt_length,
        "tool_results": {e: chat.result_encodings[e] for e in RESULT_ENCODINGS},
    }
    if captured:
        described["captures"] = [None if t.capture is None else capture_row(t.capture) for t in turns]
    return AdaptedRow(body=body, prompt=chat.messages[:prompt_length], evidence=described)


@hookimpl
def write_manifest(published: PublishedExport) -> Path | None:
    """``README.md`` beside this profile's published rows (nothing for any other export)."""
    return card.write_card(published, PROFILE_ID, INFO, FEATURES,
                           "Sediment rollouts as conversational SFT rows (hf-chat-messages-v1)")
