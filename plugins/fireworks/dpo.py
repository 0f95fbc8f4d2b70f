"""Profile ``fireworks-dpo-v3``: DPO pairs (``dpo-pair`` v5) as Fireworks preference rows::

    {"input": {"messages": [...], "tools": [...]},
     "preferred_output": [<one assistant message>], "non_preferred_output": [<one assistant message>]}

``input.tools`` are the function tools both calls' requests declared, in the OpenAI chat
``tools`` shape the pair already holds (``[]`` when none were declared or recorded); a
provider's built-in tool refuses the export (:data:`FUNCTION_TOOLS_ONLY`).

Fireworks' DPO format documents text messages only: each output must be exactly one final
assistant message (:data:`ONE_OUTPUT`), and every message of the input and the outputs exactly
``{"role": system|user|assistant, "content": <string>}`` (:data:`TEXT_ONLY`), so reasoning,
tool calls and tool results anywhere refuse the export, as do a developer message and a system
message after the first. Files are ordered by the data row's SHA-256. ``fireworks-dpo-v2``
(``dpo-pair`` v4 rows, ``tools`` always ``[]``) and ``fireworks-dpo-v1`` (DPO recipe v1 / schema v3
rows) are retired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sediment.plugin import AdaptedRow, IncompatibleRow, ProfileInfo, hookimpl, schemas_in, tools_state

from .messages import SUPPORT, VALIDATION, check_roles, evidence, fireworks_message, function_tools

PROFILE_ID = "fireworks-dpo-v3"
DPO_SCHEMA_ID = "https://sediment.so/schemas/training-rows/dpo-pair/v5.json"
#: The schema of this profile's data rows (the consumer's native rows).
NATIVE_SCHEMA = "https://sediment.so/schemas/training-rows/fireworks-dpo-row/v3.json"
ONE_OUTPUT = "Fireworks DPO requires one final assistant message per output"
TEXT_ONLY = "Fireworks DPO v3 supports documented text messages only"
FUNCTION_TOOLS_ONLY = "Fireworks DPO v3 carries function tools only"
REEXPORT = ("and re-export canonical evidence with DPO recipe v2/schema v5 (the pairs keep the recorded tool "
            "definitions)")
TEXT_ROLES = ("system", "user", "assistant")

INFO = ProfileInfo(
    consumer="fireworks",
    version=3,
    target="dpo",
    objective="dpo",
    population="dpo",
    canonical_schema=DPO_SCHEMA_ID,
    native_schema=NATIVE_SCHEMA,
    validated_with=(),
    validation=VALIDATION,
    support=SUPPORT,
    retires=("fireworks-dpo-v1", "fireworks-dpo-v2"),
    retirement_notes={"fireworks-dpo-v1": REEXPORT, "fireworks-dpo-v2": REEXPORT},
    description="DPO pairs and their function tools as Fireworks preference rows, text messages only (format only)",
    row_order="row_sha256",
)


@hookimpl
def describe_profile() -> ProfileInfo:
    return INFO


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    """The schema of this profile's data rows (the package folder holds its siblings' too)."""
    return schemas_in(__package__ or __name__, ids=(NATIVE_SCHEMA,))


def pair_id(metadata: Mapping[str, Any]) -> str:
    return f"{metadata['chosen_completion_id']}>{metadata['rejected_completion_id']}"


def _text_only(messages: Sequence[Mapping[str, Any]], row_id: str, where: str) -> None:
    for index, message in enumerate(messages):
        if (set(message) != {"role", "content"} or message["role"] not in TEXT_ROLES
                or not isinstance(message["content"], str)):
            raise IncompatibleRow(f"{TEXT_ONLY} (row {row_id}, {where} message {index})")


@hookimpl
def adapt_row(row: Mapping[str, Any]) -> AdaptedRow:
    """One DPO pair as a Fireworks preference row; anything but text messages refuses the export."""
    row_id = pair_id(row["metadata"])
    check_roles(row["prompt"], row_id)
    for side in ("chosen", "rejected"):
        if len(row[side]) != 1:
            raise IncompatibleRow(f"{ONE_OUTPUT} (row {row_id}, {side} has {len(row[side])})")
    prompt = [fireworks_message(m) for m in row["prompt"]]
    chosen = [fireworks_message(m) for m in row["chosen"]]
    rejected = [fireworks_message(m) for m in row["rejected"]]
    _text_only(prompt, row_id, "input")
    _text_only(chosen, row_id, "preferred_output")
    _text_only(rejected, row_id, "non_preferred_output")
    tools = function_tools(row["tools"], row_id, FUNCTION_TOOLS_ONLY)
    body = {"input": {"messages": prompt, "tools": tools}, "preferred_output": chosen, "non_preferred_output": rejected}
    captures = (row["metadata"].get(key) for key in ("chosen_capture", "rejected_capture"))
    return AdaptedRow(body=body, prompt=row["prompt"], evidence=evidence(row, tools_state(tools, captures)),
                      instance_id=row_id)
