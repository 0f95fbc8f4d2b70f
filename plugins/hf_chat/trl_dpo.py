"""Profile ``hf-trl-dpo-v3``: Sediment DPO pairs (``dpo-pair`` v4) as TRL's conversational
preference rows, for ``trl.DPOTrainer`` through ``datasets`` 5.2.0 and TRL 1.16.0.

One canonical pair becomes ``{"prompt": [...], "chosen": [...], "rejected": [...], "tools": []}``
(explicit prompt; trainer messages with ``thinking`` renamed ``reasoning_content``, see
:mod:`sediment_hf_chat.trainer_rows`); the metadata goes to the evidence sidecar. Nothing is
declined; files are ordered by the data row's SHA-256. A ``README.md`` card declares the four
columns as lists of ``json``.

Upstream's ``hf-trl-dpo-v2`` (trl 1.13.0) and ``hf-trl-dpo-v1`` (DPO recipe v1 / schema v3
rows) are retired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sediment.plugin import AdaptedRow, ManifestInfo, ProfileInfo, PublishedExport, hookimpl, schemas_in

from . import card
from .trainer_rows import TRL_VALIDATED_WITH, UPSTREAM_VERSIONS, evidence, features, trainer_messages

PROFILE_ID = "hf-trl-dpo-v3"
DPO_SCHEMA_ID = "https://sediment.so/schemas/training-rows/dpo-pair/v4.json"
#: The schema of this profile's data rows (the consumer's native rows).
NATIVE_SCHEMA = "https://sediment.so/schemas/training-rows/hf-trl-dpo-row/v3.json"
COLUMNS = ("prompt", "chosen", "rejected", "tools")
FEATURES = features(COLUMNS)
REEXPORT = "and re-export canonical evidence with DPO recipe v2/schema v4"

INFO = ProfileInfo(
    consumer="hf-trl",
    version=3,
    target="dpo",
    objective="dpo",
    population="dpo",
    canonical_schema=DPO_SCHEMA_ID,
    native_schema=NATIVE_SCHEMA,
    validated_with=TRL_VALIDATED_WITH,
    validation=("datasets.load_dataset on the export directory through its README.md card and "
                "datasets.Dataset.from_list with List(Json()) columns (rows equal to the JSONL rows after the "
                "Arrow round trip), trl.data_utils.is_conversational on every row, and "
                "trl.data_utils.maybe_apply_chat_template through an in-memory tokenizer (the rendered prompt "
                "holds every prompt text and ends with the generation prompt; chosen and rejected render their "
                "own texts)"),
    support=("conversational preference rows with an explicit prompt for TRL's DPOTrainer; reasoning as "
             "reasoning_content, tool calls with object arguments; tools is always []; the pair's labels and "
             "confidence are in the evidence sidecar's metadata; training not run"),
    retires=("hf-trl-dpo-v1", "hf-trl-dpo-v2"),
    retirement_notes={"hf-trl-dpo-v1": REEXPORT,
                      "hf-trl-dpo-v2": f"(the same rows; v2 was validated with {UPSTREAM_VERSIONS})"},
    description="DPO pairs as TRL conversational preference rows (datasets 5.2.0, TRL 1.16.0)",
    row_order="row_sha256",
)


@hookimpl
def describe_profile() -> ProfileInfo:
    return INFO


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    """The schema of this profile's data rows (the package folder holds its siblings' too)."""
    return schemas_in(__package__ or __name__, ids=(NATIVE_SCHEMA,))


@hookimpl
def describe_manifest() -> ManifestInfo:
    return card.manifest(PROFILE_ID)


def pair_id(metadata: Mapping[str, Any]) -> str:
    """``<chosen completion id>><rejected completion id>``: the pair the sidecar line names."""
    return f"{metadata['chosen_completion_id']}>{metadata['rejected_completion_id']}"


@hookimpl
def adapt_row(row: Mapping[str, Any]) -> AdaptedRow:
    """One DPO pair as a preference row."""
    body = {"prompt": trainer_messages(row["prompt"]), "chosen": trainer_messages(row["chosen"]),
            "rejected": trainer_messages(row["rejected"]), "tools": []}
    return AdaptedRow(body=body, prompt=row["prompt"], evidence=evidence(row), instance_id=pair_id(row["metadata"]))


@hookimpl
def write_manifest(published: PublishedExport) -> Path | None:
    return card.write_card(published, PROFILE_ID, INFO, FEATURES,
                           "Sediment DPO pairs as TRL preference rows (hf-trl-dpo-v3)")
