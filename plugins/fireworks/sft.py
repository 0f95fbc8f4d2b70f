"""Profile ``fireworks-sft-v2``: SFT samples (``sft-sample`` v4) as Fireworks SFT rows,
``{"messages": [...], "tools": [...]}``.

``messages`` is the sample's prompt then its completion (:mod:`sediment_fireworks.messages`),
each assistant message weighted: ``weight: 0`` in the prompt (context, not trained on),
``weight: 1`` in the completion; other roles carry no weight. ``tools`` are the function tools
the call's request declared, in the OpenAI chat ``tools`` shape the sample already holds (the
row-level list Fireworks' function-calling SFT example shows; ``[]`` when none were declared
or recorded); a provider's built-in tool refuses the export (:data:`FUNCTION_TOOLS_ONLY`), as
does a developer message or a system message after the first. Files are ordered by the data
row's SHA-256. ``fireworks-sft-v1`` (the same rows without ``tools``) is retired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sediment.plugin import AdaptedRow, ProfileInfo, hookimpl, schemas_in, tools_state

from .messages import SUPPORT, VALIDATION, check_roles, evidence, fireworks_message, function_tools

PROFILE_ID = "fireworks-sft-v2"
SFT_SCHEMA_ID = "https://sediment.so/schemas/training-rows/sft-sample/v4.json"
#: The schema of this profile's data rows (the consumer's native rows).
NATIVE_SCHEMA = "https://sediment.so/schemas/training-rows/fireworks-sft-row/v2.json"
FUNCTION_TOOLS_ONLY = "Fireworks SFT v2 carries function tools only"
REEXPORT = "and re-export (its rows carry the tool definitions the calls declared, which fireworks-sft-v1 dropped)"

INFO = ProfileInfo(
    consumer="fireworks",
    version=2,
    target="sft",
    objective="sft",
    population="sft",
    canonical_schema=SFT_SCHEMA_ID,
    native_schema=NATIVE_SCHEMA,
    validated_with=(),
    validation=VALIDATION,
    support=SUPPORT,
    retires=("fireworks-sft-v1",),
    retirement_notes={"fireworks-sft-v1": REEXPORT},
    description="SFT samples and their function tools as Fireworks SFT messages rows with assistant weights "
                "(format only)",
    row_order="row_sha256",
)


@hookimpl
def describe_profile() -> ProfileInfo:
    return INFO


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    """The schema of this profile's data rows (the package folder holds its siblings' too)."""
    return schemas_in(__package__ or __name__, ids=(NATIVE_SCHEMA,))


def weighted(message: Mapping[str, Any], weight: int) -> dict[str, Any]:
    out = fireworks_message(message)
    if out["role"] == "assistant":
        out["weight"] = weight
    return out


@hookimpl
def adapt_row(row: Mapping[str, Any]) -> AdaptedRow:
    """One SFT sample and its tools as a Fireworks messages row; an unsupported role or a
    provider's built-in tool refuses the export."""
    row_id = row["metadata"]["completion_id"]
    messages = [*row["prompt"], *row["completion"]]
    check_roles(messages, row_id)
    tools = function_tools(row["tools"], row_id, FUNCTION_TOOLS_ONLY)
    body = {"messages": [weighted(m, 0) for m in row["prompt"]] + [weighted(m, 1) for m in row["completion"]],
            "tools": tools}
    state = tools_state(tools, (row["metadata"].get("capture"),))
    return AdaptedRow(body=body, prompt=row["prompt"], evidence=evidence(row, state), instance_id=row_id)
