"""Profile ``fireworks-sft-v1``: SFT samples as Fireworks SFT rows, ``{"messages": [...]}``.

``messages`` is the sample's prompt then its completion (:mod:`sediment_fireworks.messages`),
each assistant message weighted: ``weight: 0`` in the prompt (context, not trained on),
``weight: 1`` in the completion; other roles carry no weight. A developer message or a system
message after the first refuses the export. Files are ordered by the data row's SHA-256.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sediment.plugin import AdaptedRow, ProfileInfo, hookimpl, schemas_in

from .messages import SUPPORT, VALIDATION, check_roles, evidence, fireworks_message

PROFILE_ID = "fireworks-sft-v1"
SFT_SCHEMA_ID = "https://sediment.so/schemas/training-rows/sft-sample/v4.json"
#: The schema of this profile's data rows (the consumer's native rows).
NATIVE_SCHEMA = "https://sediment.so/schemas/training-rows/fireworks-sft-row/v1.json"

INFO = ProfileInfo(
    consumer="fireworks",
    version=1,
    target="sft",
    objective="sft",
    population="sft",
    canonical_schema=SFT_SCHEMA_ID,
    native_schema=NATIVE_SCHEMA,
    validated_with=(),
    validation=VALIDATION,
    support=SUPPORT,
    description="SFT samples as Fireworks SFT messages rows with assistant weights (format only)",
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
    """One SFT sample as a Fireworks messages row; an unsupported role refuses the export."""
    row_id = row["metadata"]["completion_id"]
    messages = [*row["prompt"], *row["completion"]]
    check_roles(messages, row_id)
    body = {"messages": [weighted(m, 0) for m in row["prompt"]] + [weighted(m, 1) for m in row["completion"]]}
    return AdaptedRow(body=body, prompt=row["prompt"], evidence=evidence(row), instance_id=row_id)
