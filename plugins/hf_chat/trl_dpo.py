"""Profile ``hf-trl-dpo-v4``: Sediment DPO pairs (``dpo-pair`` v5) as TRL's conversational
preference rows, for ``trl.DPOTrainer`` through ``datasets`` 5.2.0 and TRL 1.16.0.

One canonical pair becomes ``{"prompt": [...], "chosen": [...], "rejected": [...], "tools": [...]}``
(explicit prompt; trainer messages with ``thinking`` renamed ``reasoning_content``, see
:mod:`sediment_hf_chat.trainer_rows`; ``tools`` the function tools both calls' requests
declared, in chat-template shape: ``DPOTrainer`` passes a row's ``tools`` to the chat template
for the prompt and both completions); the metadata goes to the evidence sidecar. A pair whose
calls declared a provider's built-in tool (which chat templates cannot render) is declined as
``non_function_tool``; files are ordered by the data row's SHA-256. A ``README.md`` card
declares the four columns as lists of ``json``.

``hf-trl-dpo-v3`` (rows of ``dpo-pair`` v4, whose ``tools`` were always ``[]``), upstream's
``hf-trl-dpo-v2`` (trl 1.13.0) and ``hf-trl-dpo-v1`` (DPO recipe v1 / schema v3 rows) are
retired.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sediment.plugin import AdaptedRow, ManifestInfo, ProfileInfo, PublishedExport, hookimpl, schemas_in

from . import card
from .trainer_rows import (
    NON_FUNCTION_TOOL,
    TRL_VALIDATED_WITH,
    evidence,
    features,
    function_tools_only,
    tool_definitions,
    trainer_messages,
)

PROFILE_ID = "hf-trl-dpo-v4"
DPO_SCHEMA_ID = "https://sediment.so/schemas/training-rows/dpo-pair/v5.json"
#: The schema of this profile's data rows (the consumer's native rows).
NATIVE_SCHEMA = "https://sediment.so/schemas/training-rows/hf-trl-dpo-row/v4.json"
COLUMNS = ("prompt", "chosen", "rejected", "tools")
FEATURES = features(COLUMNS)
REEXPORT = ("and re-export canonical evidence with DPO recipe v2/schema v5 (the pairs keep the recorded tool "
            "definitions)")

INFO = ProfileInfo(
    consumer="hf-trl",
    version=4,
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
                "holds every prompt text and every declared tool's name, description and parameters, and ends with "
                "the generation prompt; chosen and rejected render their own texts)"),
    support=("conversational preference rows with an explicit prompt for TRL's DPOTrainer; reasoning as "
             "reasoning_content, tool calls with object arguments; tools are the function tools both calls' "
             "requests declared ([] when they declared none or a transcript did not record them); the pair's "
             "labels and confidence are in the evidence sidecar's metadata; training not run"),
    skip_reasons=(NON_FUNCTION_TOOL,),
    remedies={NON_FUNCTION_TOOL: "the calls declared a provider's built-in tool, which a chat template cannot "
                                 "render: the canonical `sediment export dpo` rows keep it"},
    retires=("hf-trl-dpo-v1", "hf-trl-dpo-v2", "hf-trl-dpo-v3"),
    retirement_notes={"hf-trl-dpo-v1": REEXPORT, "hf-trl-dpo-v2": REEXPORT, "hf-trl-dpo-v3": REEXPORT},
    description="DPO pairs and their tools as TRL conversational preference rows (datasets 5.2.0, TRL 1.16.0)",
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
def adapt_row(row: Mapping[str, Any]) -> AdaptedRow | str:
    """One DPO pair as a preference row, or ``non_function_tool``."""
    if not function_tools_only(row):
        return NON_FUNCTION_TOOL
    body = {"prompt": trainer_messages(row["prompt"]), "chosen": trainer_messages(row["chosen"]),
            "rejected": trainer_messages(row["rejected"]), "tools": copy.deepcopy(list(row["tools"]))}
    return AdaptedRow(body=body, prompt=row["prompt"], evidence=evidence(row, tool_definitions(row)),
                      instance_id=pair_id(row["metadata"]))


@hookimpl
def write_manifest(published: PublishedExport) -> Path | None:
    return card.write_card(published, PROFILE_ID, INFO, FEATURES,
                           "Sediment DPO pairs as TRL preference rows (hf-trl-dpo-v4)")
