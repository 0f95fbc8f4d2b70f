"""Sediment task rows (``sediment-rlvr-task`` v3) and rollout rows (``sediment-rlvr-rollout`` v4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sediment.plugin import (
    ROLLOUT_SKIP_REASONS,
    TASK_REMEDIES,
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
    task_basis,
    task_ineligibility,
    task_instance_id,
    task_skip_reasons,
    turn_row,
)

TASK_SCHEMA_ID = "https://sediment.so/schemas/training-rows/sediment-rlvr-task/v3.json"
ROLLOUT_SCHEMA_ID = "https://sediment.so/schemas/training-rows/sediment-rlvr-rollout/v4.json"


@hookimpl
def describe_target() -> TargetInfo:
    return TargetInfo(
        populations={"tasks": PopulationInfo(TASK_SCHEMA_ID, task_skip_reasons()),
                     "rollouts": PopulationInfo(ROLLOUT_SCHEMA_ID, ROLLOUT_SKIP_REASONS)},
        needs_mirrors=True,
        remedies=TASK_REMEDIES,
        description="Sediment audit format: verifiable tasks with reference patches, and rollouts",
    )


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    return schemas_in(__package__ or __name__)


@hookimpl
def eligible(population: Population, evidence: RolloutEvidence) -> str | None:
    if population == "tasks":
        return task_ineligibility(evidence)
    return None if evidence.rollout.segments else "no_segments"


@hookimpl
def project_row(population: Population, evidence: RolloutEvidence) -> Sequence[ProjectedRow]:
    return [task_row(evidence)] if population == "tasks" else rollout_rows(evidence)


def task_row(evidence: RolloutEvidence) -> ProjectedRow:
    rollout = evidence.rollout
    basis = task_basis(evidence)
    resolution = basis.resolution
    row: dict[str, Any] = {
        "instance_id": task_instance_id(evidence, basis),
        "recipe_id": evidence.recipe.name,
        "recipe_version": evidence.recipe.version,
        "reward_source": reward_source(resolution),
        "repo": resolution.repo,
        "base_commit": basis.patch.base_commit,
        "problem_statement": evidence.problem_statement,
        "reference_patch": basis.patch.patch,
    }
    put_optional(row, "verification", evidence.verification(resolution.repo))
    row |= {
        "verifier_results": evidence.verifier_results(resolution),
        "ci_resolution": plain(resolution),
        "attribution_source": rollout.attribution_source,
        "split": rollout.split,
        "provenance": plain(rollout.provenance),
        "session_commit_observation_ids": evidence.observation_ids([resolution]),
        "repository_identity": plain(resolution.repository_identity),
        "schema_id": TASK_SCHEMA_ID,
        "schema_version": 3,
    }
    return ProjectedRow(rollout.split, row)


def rollout_rows(evidence: RolloutEvidence) -> list[ProjectedRow]:
    rollout = evidence.rollout
    resolutions = evidence.ci.resolutions
    selected = evidence.reward_resolution
    shared_tail: dict[str, Any] = {
        "verifier_results": evidence.verifier_results(),
        "ci_resolutions": [plain(r) for r in resolutions],
        "attribution_source": rollout.attribution_source,
        "split": rollout.split,
        "provenance": plain(rollout.provenance),
        "session_commit_observation_ids": evidence.observation_ids(resolutions),
        "repository_identity": plain(selected.repository_identity) if selected else None,
        "schema_id": ROLLOUT_SCHEMA_ID,
        "schema_version": 4,
    }
    rows = []
    for index, segment in enumerate(rollout.segments):
        row: dict[str, Any] = {
            "instance_id": segment_instance_id(rollout.org_id, rollout.session_id, index),
            "recipe_id": evidence.recipe.name,
            "recipe_version": evidence.recipe.version,
        }
        put_optional(row, "reward_source", reward_source(selected))
        put_optional(row, "ci_resolution", plain(selected) if selected else None)
        row |= {
            "org_id": rollout.org_id,
            "session_id": rollout.session_id,
            "segment_index": index,
            "turns": [turn_row(t) for t in segment],
        }
        row |= shared_tail
        rows.append(ProjectedRow(rollout.split, row))
    return rows
