"""The recorded segment behind one canonical NeMo Gym row, and what both profiles read of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from sediment.plugin import PluginSettings, RolloutEvidence, Turn

from .items import Unrepresentable, function_tools

#: Reasons shared by both Responses profiles (each profile's vocabulary lists them in this order).
SHARED_SKIP_REASONS: tuple[str, ...] = (
    "missing_reward",
    "call_context_absent",
    "unsupported_role",
    "unrepresentable_part",
    "unsupported_tool_definition",
    "transcript_capture",
)

#: What would change the main shared reasons (the summary's hint when every row is declined).
SHARED_REMEDIES: dict[str, str] = {
    "missing_reward": "the rows have no CI reward: ingest the CI webhooks of the attributed commits' runs "
                      "(`sediment ingest github|gitlab|circleci|buildkite`) and derive again",
    "call_context_absent": "the Rollouts were derived by an older Sediment: derive them again (`sediment derive`)",
    "transcript_capture": "the calls were rebuilt from client transcripts, which do not record the request the model "
                          "saw: capture them through a gateway (`sediment ingest calls`, `sediment serve`) or OTLP",
}


class ResponsesSettings(PluginSettings):
    """What a recorded request does not say, declared by the operator (defaults: the OpenAI API's
    own defaults for a request that omits them)."""

    agent_name: str = Field(default="sediment_agent", min_length=1,
                            description="the NeMo Gym agent instance rows route to (agent_ref.name)")
    tool_choice: Literal["none", "auto", "required"] = Field(
        default="auto", description="tool_choice of the recorded requests (the API default when they omit it)")
    parallel_tool_calls: bool = Field(
        default=True, description="parallel_tool_calls of the recorded requests (the API default when omitted)")


def kept_evidence(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The ``sediment`` column: the canonical row's metadata without its ``schema_id`` (a native
    row is not the canonical row, so it must not claim that row's schema)."""
    return {key: value for key, value in metadata.items() if key != "schema_id"}


def segment_turns(row: Mapping[str, Any], evidence: RolloutEvidence) -> Sequence[Turn]:
    """The Turns of the row's segment (``metadata.segment_index``)."""
    index = row["metadata"]["segment_index"]
    return evidence.rollout.segments[index]


def check_call_context(turns: Sequence[Turn], *, admit_transcripts: bool = False) -> None:
    """Every Turn carries its call's recorded context (derived by this Sediment, not an older one),
    recorded on the wire: a call rebuilt from a client transcript has no exact request (no tool
    definitions, often no system prompt) to build ``responses_create_params`` from, unless the
    profile admits transcripts (a task prompt does not need the exact request)."""
    if any(t.observed_at is None for t in turns):
        raise Unrepresentable("call_context_absent")
    if not admit_transcripts and any(t.capture is not None for t in turns):
        raise Unrepresentable("transcript_capture")


def reward_of(row: Mapping[str, Any]) -> float:
    """The canonical row's categorical reward; a row without a resolved verdict has none."""
    reward = row.get("reward")
    if not isinstance(reward, float):
        raise Unrepresentable("missing_reward")
    return reward


def declared_tools(evidence: RolloutEvidence, turns: Sequence[Turn]) -> list[dict[str, Any]]:
    """The tools the turns' requests declared, as function tools; they must all declare the same."""
    declared = {t.tools_digest for t in turns}
    if len(declared) > 1:
        raise Unrepresentable("tool_definitions_vary")
    return function_tools(evidence.tools(turns[0]))


def request(input_items: list[dict[str, Any]], tools: list[dict[str, Any]], settings: ResponsesSettings,
            model: str | None = None) -> dict[str, Any]:
    """``responses_create_params``: only keys NeMo Gym's request model knows, none of them null."""
    params: dict[str, Any] = {"input": input_items}
    if model is not None:
        params["model"] = model
    params |= {"tools": tools, "tool_choice": settings.tool_choice, "parallel_tool_calls": settings.parallel_tool_calls}
    return params
