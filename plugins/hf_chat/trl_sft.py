"""Profile ``hf-trl-sft-v2``: Sediment SFT samples (``sft-sample`` v3) as TRL's conversational
prompt-completion rows, for ``trl.SFTTrainer`` through ``datasets`` 5.2.0 and TRL 1.16.0.

One canonical sample becomes ``{"prompt": [...], "completion": [...], "tools": []}``: the
sample's trainer messages with ``thinking`` renamed ``reasoning_content``
(:mod:`sediment_hf_chat.trainer_rows`); the metadata goes to the evidence sidecar, not into the
row (TRL would read extra columns). Every sample is representable, so nothing is declined;
files are ordered by the data row's SHA-256. A ``README.md`` card declares the three columns
as lists of ``json`` so ``datasets.load_dataset(DIR)`` gives the rows back exactly.

Upstream's ``hf-trl-sft-v1`` (validated with trl 1.13.0) is retired: this profile is the same
row shape, claimed for the releases it is tested against.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sediment.plugin import AdaptedRow, ManifestInfo, ProfileInfo, PublishedExport, hookimpl

from . import card
from .trainer_rows import TRL_VALIDATED_WITH, UPSTREAM_VERSIONS, evidence, features, trainer_messages

PROFILE_ID = "hf-trl-sft-v2"
SFT_SCHEMA_ID = "https://sediment.so/schemas/training-rows/sft-sample/v3.json"
COLUMNS = ("prompt", "completion", "tools")
FEATURES = features(COLUMNS)

INFO = ProfileInfo(
    consumer="hf-trl",
    version=2,
    target="sft",
    objective="sft",
    population="sft",
    canonical_schema=SFT_SCHEMA_ID,
    validated_with=TRL_VALIDATED_WITH,
    validation=("datasets.load_dataset on the export directory through its README.md card and "
                "datasets.Dataset.from_list with List(Json()) columns (rows equal to the JSONL rows after the "
                "Arrow round trip), trl.data_utils.is_conversational on every row, and "
                "trl.data_utils.maybe_apply_chat_template through an in-memory tokenizer (the rendered prompt "
                "holds every prompt text, the rendered completion every completion text)"),
    support=("conversational prompt-completion rows for TRL's SFTTrainer (completion-only loss); reasoning as "
             "reasoning_content, tool calls with object arguments, tool results as tool messages; tools is "
             "always [] (the recorded calls' tool definitions are not inferred); training not run"),
    retires=("hf-trl-sft-v1",),
    retirement_notes={"hf-trl-sft-v1": f"(the same rows; v1 was validated with {UPSTREAM_VERSIONS})"},
    description="SFT samples as TRL conversational prompt-completion rows (datasets 5.2.0, TRL 1.16.0)",
    row_order="row_sha256",
)


@hookimpl
def describe_profile() -> ProfileInfo:
    return INFO


@hookimpl
def describe_manifest() -> ManifestInfo:
    return card.manifest(PROFILE_ID)


@hookimpl
def adapt_row(row: Mapping[str, Any]) -> AdaptedRow:
    """One SFT sample as a prompt-completion row."""
    body = {"prompt": trainer_messages(row["prompt"]), "completion": trainer_messages(row["completion"]),
            "tools": []}
    return AdaptedRow(body=body, prompt=row["prompt"], evidence=evidence(row),
                      instance_id=row["metadata"]["completion_id"])


@hookimpl
def write_manifest(published: PublishedExport) -> Path | None:
    return card.write_card(published, PROFILE_ID, INFO, FEATURES,
                           "Sediment SFT samples as TRL prompt-completion rows (hf-trl-sft-v2)")
