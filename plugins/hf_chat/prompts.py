"""Profile ``hf-chat-prompts-v1``: Sediment task rows as prompt-only rows for GRPO-style
trainers (TRL's ``GRPOTrainer``, ``RLOOTrainer``) through Hugging Face ``datasets``.

One canonical task row becomes one row::

    {"prompt": [{"role": "user", "content": <problem_statement>}], "instance_id", "repo",
     "base_commit", "reference_patch", "reward_source", "verification_command", "split"}

The trainer passes every column but ``prompt`` to the reward functions: the repository, base
commit and reference patch to verify against, the recorded CI verdict (``reward_source``)
and the operator's verification command (null when none is configured). Sediment computes no
reward. Declines: ``empty_problem_statement`` (blank or whitespace-only) and
``timestamp_like_text`` (a field ``datasets`` would read back as a timestamp).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sediment.plugin import AdaptedRow, ManifestInfo, ProfileInfo, PublishedExport, hookimpl, schemas_in

from . import card

PROFILE_ID = "hf-chat-prompts-v1"
TASK_SCHEMA_ID = "https://sediment.so/schemas/training-rows/sediment-rlvr-task/v3.json"
#: The schema of this profile's data rows (the consumer's native rows).
NATIVE_SCHEMA = "https://sediment.so/schemas/training-rows/hf-chat-prompt-row/v1.json"
SKIP_REASONS: tuple[str, ...] = ("empty_problem_statement", "timestamp_like_text")

#: Every column, in row order, as the card declares it.
FEATURES: list[card.Feature] = [
    card.struct_list("prompt", [card.string("role"), card.string("content")]),
    card.string("instance_id"),
    card.string("repo"),
    card.string("base_commit"),
    card.string("reference_patch"),
    card.string("reward_source"),
    card.string("verification_command"),
    card.string("split"),
]

INFO = ProfileInfo(
    consumer="hf-datasets-trl",
    version=1,
    target="sediment",
    population="tasks",
    canonical_schema=TASK_SCHEMA_ID,
    native_schema=NATIVE_SCHEMA,
    validated_with=card.VALIDATED_WITH,
    validation=("datasets.load_dataset on the export directory through its README.md card (exactly the "
                "published train/eval splits, rows equal to the JSONL rows after the Arrow round trip), "
                "trl.data_utils.is_conversational on every row, and trl.data_utils.maybe_apply_chat_template "
                "through an in-memory tokenizer (the prompt renders with the generation prompt)"),
    support=("prompt-only rows for GRPO-style trainers: the task's first user message as a one-message "
             "conversational prompt, with the repository, base commit, reference patch, recorded CI verdict "
             "(reward_source) and configured verification command as reward-function columns; the reward must "
             "come from running the verification, none is computed or invented here; no token ids"),
    skip_reasons=SKIP_REASONS,
    description="Sediment tasks as prompt-only rows (GRPO) for datasets and TRL",
)


@hookimpl
def describe_profile() -> ProfileInfo:
    """The profile declaration."""
    return INFO


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    """The schema of this profile's data rows (the package folder holds its siblings' too)."""
    return schemas_in(__package__ or __name__, ids=(NATIVE_SCHEMA,))


@hookimpl
def describe_manifest() -> ManifestInfo:
    """The dataset card this profile writes beside its rows."""
    return card.manifest(PROFILE_ID)


@hookimpl
def adapt_row(row: Mapping[str, Any]) -> AdaptedRow | str:
    """One task as a prompt-only row, or the reason it cannot be one."""
    statement = row["problem_statement"]
    if not statement.strip():
        return "empty_problem_statement"
    prompt = [{"role": "user", "content": statement}]
    verification = row.get("verification")
    body: dict[str, Any] = {
        "prompt": prompt,
        "instance_id": row["instance_id"],
        "repo": row["repo"],
        "base_commit": row["base_commit"],
        "reference_patch": row["reference_patch"],
        "reward_source": row["reward_source"],
        "verification_command": verification["verification_command"] if verification else None,
        "split": row["split"],
    }
    if card.retyped_text(body, ()) is not None:
        return "timestamp_like_text"
    return AdaptedRow(body=body, prompt=prompt,
                      evidence={"verified_commit": row["ci_resolution"]["commit_sha"]})


@hookimpl
def write_manifest(published: PublishedExport) -> Path | None:
    """``README.md`` beside this profile's published rows (nothing for any other export)."""
    return card.write_card(published, PROFILE_ID, INFO, FEATURES,
                           "Sediment tasks as prompt-only rows (hf-chat-prompts-v1)")
