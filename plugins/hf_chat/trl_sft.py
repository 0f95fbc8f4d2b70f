"""Profile ``hf-trl-sft-v3``: Sediment SFT samples (``sft-sample`` v4) as TRL's conversational
prompt-completion rows, for ``trl.SFTTrainer`` through ``datasets`` 5.2.0 and TRL 1.16.0.

One canonical sample becomes ``{"prompt": [...], "completion": [...], "tools": [...]}``: the
sample's trainer messages with ``thinking`` renamed ``reasoning_content``
(:mod:`sediment_hf_chat.trainer_rows`), and the function tools the call's request declared, in
chat-template shape (TRL passes them to the chat template, which renders them into the
prompt); the metadata goes to the evidence sidecar, not into the row (TRL would read extra
columns). A sample whose call declared a tool that is not a function (a provider's built-in
tool, which chat templates cannot render) is declined as ``non_function_tool``. Files are
ordered by the data row's SHA-256. A ``README.md`` card declares the three columns as lists
of ``json`` so ``datasets.load_dataset(DIR)`` gives the rows back exactly.

``hf-trl-sft-v2`` (rows of ``sft-sample`` v3, whose ``tools`` were always ``[]``) and upstream's
``hf-trl-sft-v1`` (validated with trl 1.13.0) are retired.
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

PROFILE_ID = "hf-trl-sft-v3"
SFT_SCHEMA_ID = "https://sediment.so/schemas/training-rows/sft-sample/v4.json"
#: The schema of this profile's data rows (the consumer's native rows).
NATIVE_SCHEMA = "https://sediment.so/schemas/training-rows/hf-trl-sft-row/v3.json"
SKIP_REASONS = (NON_FUNCTION_TOOL,)
REEXPORT = "and re-export canonical evidence with SFT schema v4 (the rows keep the recorded tool definitions)"
COLUMNS = ("prompt", "completion", "tools")
FEATURES = features(COLUMNS)

INFO = ProfileInfo(
    consumer="hf-trl",
    version=3,
    target="sft",
    objective="sft",
    population="sft",
    canonical_schema=SFT_SCHEMA_ID,
    native_schema=NATIVE_SCHEMA,
    validated_with=TRL_VALIDATED_WITH,
    validation=("datasets.load_dataset on the export directory through its README.md card and "
                "datasets.Dataset.from_list with List(Json()) columns (rows equal to the JSONL rows after the "
                "Arrow round trip), trl.data_utils.is_conversational on every row, and "
                "trl.data_utils.maybe_apply_chat_template through an in-memory tokenizer (the rendered prompt "
                "holds every prompt text and every declared tool's name and parameters, the rendered completion every "
                "completion text)"),
    support=("conversational prompt-completion rows for TRL's SFTTrainer (completion-only loss); reasoning as "
             "reasoning_content, tool calls with object arguments, tool results as tool messages; tools are the "
             "function tools the call's request declared ([] when it declared none or a transcript did not "
             "record them); training not run"),
    skip_reasons=SKIP_REASONS,
    remedies={"non_function_tool": "the call declared a provider's built-in tool, which a chat template cannot "
                                   "render: the canonical `sediment export sft` rows keep it"},
    retires=("hf-trl-sft-v1", "hf-trl-sft-v2"),
    retirement_notes={"hf-trl-sft-v1": REEXPORT, "hf-trl-sft-v2": REEXPORT},
    description="SFT samples and their tools as TRL prompt-completion rows (datasets 5.2.0, TRL 1.16.0)",
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


@hookimpl
def adapt_row(row: Mapping[str, Any]) -> AdaptedRow | str:
    """One SFT sample as a prompt-completion row, or ``non_function_tool``."""
    if not function_tools_only(row):
        return NON_FUNCTION_TOOL
    body = {"prompt": trainer_messages(row["prompt"]), "completion": trainer_messages(row["completion"]),
            "tools": copy.deepcopy(list(row["tools"]))}
    return AdaptedRow(body=body, prompt=row["prompt"], evidence=evidence(row, tool_definitions(row)),
                      instance_id=row["metadata"]["completion_id"])


@hookimpl
def write_manifest(published: PublishedExport) -> Path | None:
    return card.write_card(published, PROFILE_ID, INFO, FEATURES,
                           "Sediment SFT samples as TRL prompt-completion rows (hf-trl-sft-v3)")
