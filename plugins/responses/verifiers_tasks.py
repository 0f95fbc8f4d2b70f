"""Profile ``verifiers-tasks-v1``: canonical ``nemo-gym`` rollout rows as NeMo Gym task rows, the
task JSONL that verifiers 0.4.0's ``NeMoGymTaskset`` (and NeMo Gym's own ``gym eval run``) read.

One row per segment with a recorded CI verdict: ``responses_create_params`` (the segment's first
request: its input items, the declared function tools, ``tool_choice``, ``parallel_tool_calls``;
no ``model``: the policy being trained answers the task), ``agent_ref``, ``instance_id`` and the
canonical metadata under ``sediment`` (reward source, CI resolution, verifier results; not its
``schema_id``: the row obeys its own schema ``verifiers-task`` v1), where a
verifiers reward function or a resources server's ``verify()`` can read it.

A task row needs the task's prompt, not the exact request, so a team that captures only client
transcripts may set ``--set verifiers-tasks-v1.admit_transcripts=true``: a segment whose first
call was rebuilt from a transcript is then a task row (its tools ``[]``: none recorded) and the
sidecar line carries the call's ``capture`` (source and what it lacks). By default such a
segment is declined as ``transcript_capture``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from sediment.plugin import (
    AdaptedRow,
    Dependency,
    PluginSettings,
    ProfileInfo,
    RolloutEvidence,
    capture_row,
    hookimpl,
    schemas_in,
)

from .items import Unrepresentable, function_tools, message_items
from .segment import (
    SHARED_REMEDIES,
    SHARED_SKIP_REASONS,
    ResponsesSettings,
    check_call_context,
    kept_evidence,
    request,
    reward_of,
    segment_turns,
)

CANONICAL_SCHEMA = "https://sediment.so/schemas/training-rows/nemo-gym-rollout/v4.json"
#: The schema of this profile's data rows (the consumer's native rows).
NATIVE_SCHEMA = "https://sediment.so/schemas/training-rows/verifiers-task/v1.json"
REMEDIES = {**SHARED_REMEDIES,
            "transcript_capture": SHARED_REMEDIES["transcript_capture"]
            + ", or admit them as task prompts with `--set verifiers-tasks-v1.admit_transcripts=true`"}


class TaskSettings(ResponsesSettings):
    """The Responses settings, and whether transcript-captured segments become tasks."""

    admit_transcripts: bool = Field(
        default=False,
        description="admit segments whose first call was rebuilt from a client transcript (a task needs its "
                    "prompt, not the exact request): tools [] and the capture in the sidecar; off by default, "
                    "such segments are declined as transcript_capture")


@hookimpl
def describe_profile() -> ProfileInfo:
    return ProfileInfo(
        consumer="verifiers",
        version=1,
        target="nemo-gym",
        population="rollouts",
        canonical_schema=CANONICAL_SCHEMA,
        native_schema=NATIVE_SCHEMA,
        validated_with=(Dependency("verifiers", "0.4.0"), Dependency("nemo-gym", "0.7.0")),
        validation=(
            "verifiers.v1.tasksets.nemo_gym.taskset.NeMoGymTaskset over the file and "
            "verifiers.v1.dialects.responses.ResponsesDialect.parse_request on every request (prompt text and "
            "tool definitions kept); nemo_gym.train_data_utils.compute_sample_metrics on every line"
        ),
        support=(
            "task rows (a recorded agent's first request, its tools, and the recorded CI verdict under "
            "sediment) for verifiers' NeMo Gym taskset and NeMo Gym rollout collection; scoring needs the "
            "operator's own resources server: none is inferred"
        ),
        skip_reasons=SHARED_SKIP_REASONS,
        remedies=REMEDIES,
        description="verifiers 0.4.0 / NeMo Gym task rows: the first request of each verified segment",
    )


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    """The schema of this profile's data rows (the package folder holds its siblings' too)."""
    return schemas_in(__package__ or __name__, ids=(NATIVE_SCHEMA,))


@hookimpl
def plugin_settings() -> type[PluginSettings]:
    return TaskSettings


@hookimpl
def adapt_row(row: Mapping[str, Any], evidence: RolloutEvidence, settings: TaskSettings) -> AdaptedRow | str:
    try:
        reward_of(row)
        first = segment_turns(row, evidence)[0]
        check_call_context([first], admit_transcripts=settings.admit_transcripts)
        tools = function_tools(evidence.tools(first))
        prompt = message_items(first.new_messages, call_id=first.inference_call_id, side="input")
    except Unrepresentable as reason:
        return str(reason)
    metadata = row["metadata"]
    params = request(prompt.items, tools, settings)
    body = {
        "responses_create_params": params,
        "agent_ref": {"name": settings.agent_name},
        "instance_id": metadata["instance_id"],
        "sediment": kept_evidence(metadata),
    }
    described: dict[str, Any] = {
        "inference_call_id": first.inference_call_id,
        "json_encoded_tool_results": prompt.json_encoded_tool_results,
    }
    if first.capture is not None:
        described["capture"] = capture_row(first.capture)
    return AdaptedRow(body=body, prompt=params["input"], evidence=described)
