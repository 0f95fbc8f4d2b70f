"""Profile ``nemo-gym-rollouts-v2``: canonical ``nemo-gym`` rollout rows as native NeMo Gym 0.7.0
rollout rows, the shape ``gym eval run`` writes and its trainers and metrics read.

One row per segment:

- ``responses_create_params``: the segment's first request: ``input`` (its Turn's new messages
  as Responses items), ``model``, ``tools`` (the declared function tools), ``tool_choice``,
  ``parallel_tool_calls``;
- ``response``: a complete Responses object: ``id`` (``resp-<instance id>``), ``created_at``
  (the first call's time, epoch seconds), ``model``, ``object: "response"``, ``output`` (the
  first call's output items, then for each later call the tool results it was sent and its
  output items: the replayed copies of earlier outputs are not repeated), ``parallel_tool_calls``,
  ``tool_choice``, ``tools``;
- ``reward``: 1.0 for a resolved pass, 0.0 for a resolved failure (rows without one are declined);
- ``agent_ref``, ``_ng_task_index`` (the row's position in its file), ``_ng_rollout_index`` (0),
  ``instance_id``, and the canonical metadata without its ``schema_id`` under ``sediment`` (the
  row obeys its own schema, ``nemo-gym-rollout-row`` v2; NeMo Gym's models ignore unknown
  top-level keys, its collection helpers keep them).

Recorded API sessions carry no token ids or log-probabilities, so these rows do not drive
NeMo RL policy gradients (it skips output items without ``generation_token_ids``); they serve
as task inputs, for metrics, and for offline SFT/DPO after conversion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sediment.plugin import (
    AdaptedRow,
    Dependency,
    InferenceMessage,
    PluginSettings,
    ProfileInfo,
    RolloutEvidence,
    ToolCallResponsePart,
    hookimpl,
    schemas_in,
)

from .items import Items, Unrepresentable, message_items
from .segment import (
    SHARED_REMEDIES,
    SHARED_SKIP_REASONS,
    ResponsesSettings,
    check_call_context,
    declared_tools,
    kept_evidence,
    request,
    reward_of,
    segment_turns,
)

CANONICAL_SCHEMA = "https://sediment.so/schemas/training-rows/nemo-gym-rollout/v4.json"
#: The schema of this profile's data rows (the consumer's native rows).
NATIVE_SCHEMA = "https://sediment.so/schemas/training-rows/nemo-gym-rollout-row/v2.json"
SKIP_REASONS = (*SHARED_SKIP_REASONS, "tool_definitions_vary", "model_absent", "model_conflict",
                "user_turn_inside_segment")


@hookimpl
def describe_profile() -> ProfileInfo:
    return ProfileInfo(
        consumer="nemo-gym",
        version=2,
        target="nemo-gym",
        population="rollouts",
        canonical_schema=CANONICAL_SCHEMA,
        native_schema=NATIVE_SCHEMA,
        validated_with=(Dependency("nemo-gym", "0.7.0"), Dependency("openai", "2.44.0")),
        validation=(
            "nemo_gym.base_resources_server.BaseVerifyResponse.model_validate on every row, with the concrete "
            "class of every input and output item; nemo_gym.responses_converter.ResponsesConverter on every "
            "request; nemo_gym.rollout_collection.RolloutCollectionHelper.preprocess_examples and "
            "nemo_gym.reward_profile.compute_aggregate_metrics on the file"
        ),
        support=(
            "native NeMo Gym 0.7.0 rollout rows with a categorical reward from recorded CI verdicts; recorded "
            "API sessions carry no token ids or log-probabilities, so they do not drive NeMo RL policy "
            "gradients (use them as task inputs, for metrics, or for offline SFT/DPO); no resources server "
            "or environment is inferred"
        ),
        skip_reasons=SKIP_REASONS,
        remedies=SHARED_REMEDIES,
        retires=("nemo-gym-rollouts-v1",),
        description="NeMo Gym 0.7.0 rollout rows (Responses request, response, reward, agent_ref, indices)",
    )


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    """The schema of this profile's data rows (the package folder holds its siblings' too)."""
    return schemas_in(__package__ or __name__, ids=(NATIVE_SCHEMA,))


@hookimpl
def plugin_settings() -> type[PluginSettings]:
    return ResponsesSettings


def _model(turns: Any) -> str:
    models = {t.model for t in turns}
    if None in models:
        raise Unrepresentable("model_absent")
    if len(models) > 1:
        raise Unrepresentable("model_conflict")
    return str(next(iter(models)))


def _tool_results_only(message: InferenceMessage) -> bool:
    return message.role != "assistant" and bool(message.parts) and all(
        isinstance(p, ToolCallResponsePart) for p in message.parts)


def _output(turns: Any) -> Items:
    """Each call's outputs, and between them what the next call was sent beyond the replay."""
    first = turns[0]
    built = message_items(first.output_messages, call_id=first.inference_call_id, side="output")
    previous = first
    for turn in turns[1:]:
        replayed = len(previous.output_messages)
        sent = turn.new_messages[replayed:]
        if not all(_tool_results_only(m) for m in sent):  # a Responses output carries no new user turn
            raise Unrepresentable("user_turn_inside_segment")
        message_items(sent, call_id=turn.inference_call_id, side="input", built=built, first_index=replayed)
        message_items(turn.output_messages, call_id=turn.inference_call_id, side="output", built=built)
        previous = turn
    return built


@hookimpl
def adapt_row(row: Mapping[str, Any], evidence: RolloutEvidence, settings: ResponsesSettings,
              index: int) -> AdaptedRow | str:
    try:
        reward = reward_of(row)
        turns = segment_turns(row, evidence)
        check_call_context(turns)
        model = _model(turns)
        tools = declared_tools(evidence, turns)
        first = turns[0]
        prompt = message_items(first.new_messages, call_id=first.inference_call_id, side="input")
        output = _output(turns)
    except Unrepresentable as reason:
        return str(reason)
    metadata = row["metadata"]
    params = request(prompt.items, tools, settings, model)
    assert first.observed_at is not None  # check_call_context
    response = {
        "id": f"resp-{metadata['instance_id']}",
        "created_at": first.observed_at.timestamp(),
        "model": model,
        "object": "response",
        "output": output.items,
        "parallel_tool_calls": settings.parallel_tool_calls,
        "tool_choice": settings.tool_choice,
        "tools": tools,
    }
    body = {
        "responses_create_params": params,
        "response": response,
        "reward": reward,
        "agent_ref": {"name": settings.agent_name},
        "_ng_task_index": index,
        "_ng_rollout_index": 0,
        "instance_id": metadata["instance_id"],
        "sediment": kept_evidence(metadata),
    }
    return AdaptedRow(body=body, prompt=params["input"], evidence={
        "inference_call_ids": [t.inference_call_id for t in turns],
        "created_at_source_call_id": first.inference_call_id,
        "response_configuration_source": "settings",
        "json_encoded_tool_results": prompt.json_encoded_tool_results + output.json_encoded_tool_results,
        "token_ids": "absent",
    })
