"""NeMo Gym rollout rows (``nemo-gym-rollout`` v4): one row per segment.

A boundary mapping, not a native NeMo Gym response: no resource server or environment is
inferred. ``reward`` is exactly 1.0 for a resolved pass, 0.0 for a resolved failure, and
absent otherwise; reliability never changes it. Projects without mirrors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sediment.plugin import (
    ROLLOUT_SKIP_REASONS,
    Population,
    PopulationInfo,
    ProjectedRow,
    RolloutEvidence,
    TargetInfo,
    hookimpl,
    plain,
    put_optional,
    reward_source,
    schemas_in,
    segment_instance_id,
    turn_row,
)

SCHEMA_ID = "https://sediment.so/schemas/training-rows/nemo-gym-rollout/v4.json"
REWARDS = {"passed": 1.0, "failed": 0.0}


@hookimpl
def describe_target() -> TargetInfo:
    return TargetInfo(
        populations={"rollouts": PopulationInfo(SCHEMA_ID, ROLLOUT_SKIP_REASONS, fields_under="metadata")},
        needs_mirrors=False,
        description="NeMo Gym rollout boundary rows with categorical CI reward",
    )


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    return schemas_in(__package__ or __name__)


@hookimpl
def eligible(population: Population, evidence: RolloutEvidence) -> str | None:
    return None if evidence.rollout.segments else "no_segments"


def verification_repo(evidence: RolloutEvidence) -> str | None:
    """The selected resolution's repo; else the single repo of the outcomes (or commits)."""
    selected = evidence.reward_resolution
    if selected is not None:
        return selected.repo
    rollout = evidence.rollout
    repos = {o.repo for o in rollout.terminal_outcomes} or {c.repo for c in rollout.commits}
    return next(iter(repos)) if len(repos) == 1 else None


@hookimpl
def project_row(population: Population, evidence: RolloutEvidence) -> Sequence[ProjectedRow]:
    rollout = evidence.rollout
    selected = evidence.reward_resolution
    verification = evidence.verification(verification_repo(evidence))
    observation_ids = evidence.observation_ids([selected]) if selected else []
    rows = []
    for index, segment in enumerate(rollout.segments):
        metadata: dict[str, Any] = {
            "instance_id": segment_instance_id(rollout.org_id, rollout.session_id, index),
            "recipe_id": evidence.recipe.name,
            "recipe_version": evidence.recipe.version,
        }
        put_optional(metadata, "reward_source", reward_source(selected))
        metadata |= {
            "org_id": rollout.org_id,
            "session_id": rollout.session_id,
            "segment_index": index,
        }
        put_optional(metadata, "verification", verification)
        metadata["verifier_results"] = evidence.verifier_results()
        put_optional(metadata, "ci_resolution", plain(selected) if selected else None)
        metadata |= {
            "attribution_source": rollout.attribution_source,
            "split": rollout.split,
            "provenance": plain(rollout.provenance),
            "session_commit_observation_ids": observation_ids,
            "repository_identity": plain(selected.repository_identity) if selected else None,
            "schema_id": SCHEMA_ID,
            "schema_version": 4,
        }
        turns = [turn_row(t) for t in segment]
        row: dict[str, Any] = {
            "responses_create_params": {"input": turns[0]["new_messages"]},
            "response": {"turns": turns},
        }
        put_optional(row, "reward", REWARDS[selected.verdict] if selected and selected.verdict else None)
        row["metadata"] = metadata
        rows.append(ProjectedRow(rollout.split, row))
    return rows
