"""Profile ``plain-chat-v1``: each NeMo Gym rollout row as one ``{"prompt", "answer", "reward"}``
line for a consumer that reads plain text pairs.

``prompt`` is the segment's first user message, ``answer`` the last call's assistant text, and
``reward`` the recorded CI reward. A row without a recorded verdict, or whose last call said
nothing in text, is declined: nothing is invented. Written against ``sediment.plugin`` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from sediment.plugin import (
    AdaptedRow,
    PluginSettings,
    ProfileInfo,
    RolloutEvidence,
    TextPart,
    hookimpl,
)

CANONICAL_SCHEMA = "https://sediment.so/schemas/training-rows/nemo-gym-rollout/v4.json"


class PlainChatSettings(PluginSettings):
    """``--set plain-chat-v1.separator=...`` joins the text parts of one message."""

    separator: str = Field(default="\n", description="joins the text parts of one message")


@hookimpl
def describe_profile() -> ProfileInfo:
    return ProfileInfo(
        consumer="plain-chat",
        version=1,
        target="nemo-gym",
        population="rollouts",
        canonical_schema=CANONICAL_SCHEMA,
        validated_with=(),
        validation="the example's own test reads the lines back",
        support="example only: prompt/answer text pairs with the recorded CI reward",
        skip_reasons=("no_reward", "no_answer"),
        description="Example: prompt/answer/reward text lines",
    )


@hookimpl
def plugin_settings() -> type[PluginSettings]:
    return PlainChatSettings


@hookimpl
def adapt_row(row: Mapping[str, Any], evidence: RolloutEvidence, settings: PlainChatSettings) -> AdaptedRow | str:
    if "reward" not in row:
        return "no_reward"
    turns = evidence.rollout.segments[row["metadata"]["segment_index"]]
    prompt = next((settings.separator.join(p.content for p in m.parts if isinstance(p, TextPart))
                   for m in turns[0].new_messages if m.role == "user"), "")
    answer = settings.separator.join(p.content for m in turns[-1].output_messages for p in m.parts
                                     if isinstance(p, TextPart))
    if not answer:
        return "no_answer"
    return AdaptedRow(body={"prompt": prompt, "answer": answer, "reward": row["reward"]}, prompt=prompt)
