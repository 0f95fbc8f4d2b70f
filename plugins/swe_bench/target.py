"""SWE-bench task rows (``swe-bench-task`` v3): six top-level keys, Sediment evidence in metadata.

Only a recorded terminal pass becomes a row; a failure is ``failed_reference_patch``. Fields
Sediment has no Fact for (``test_patch``, ``version``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``) are
never emitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sediment.plugin import (
    TASK_REMEDIES,
    Population,
    PopulationInfo,
    ProjectedRow,
    RolloutEvidence,
    TargetInfo,
    hookimpl,
    plain,
    put_optional,
    schemas_in,
    task_basis,
    task_ineligibility,
    task_instance_id,
    task_skip_reasons,
)

SCHEMA_ID = "https://sediment.so/schemas/training-rows/swe-bench-task/v3.json"


@hookimpl
def describe_target() -> TargetInfo:
    return TargetInfo(
        populations={"tasks": PopulationInfo(SCHEMA_ID, task_skip_reasons("failed_reference_patch"))},
        needs_mirrors=True,
        remedies={**TASK_REMEDIES, "failed_reference_patch": "swe-bench tasks are recorded CI passes only; "
                                                             "`--target sediment` writes failed tasks too"},
        description="SWE-bench task shape from recorded CI passes and mirror reference patches",
    )


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    return schemas_in(__package__ or __name__)


@hookimpl
def eligible(population: Population, evidence: RolloutEvidence) -> str | None:
    return task_ineligibility(
        evidence, accepted_verdicts=("passed",), rejected_verdict_reason="failed_reference_patch"
    )


@hookimpl
def project_row(population: Population, evidence: RolloutEvidence) -> Sequence[ProjectedRow]:
    rollout = evidence.rollout
    basis = task_basis(evidence)
    resolution = basis.resolution
    metadata: dict[str, Any] = {
        "recipe_id": evidence.recipe.name,
        "recipe_version": evidence.recipe.version,
        "reward_source": "resolved_ci_pass",
    }
    put_optional(metadata, "verification", evidence.verification(resolution.repo))
    metadata |= {
        "verifier_results": evidence.verifier_results(resolution),
        "ci_resolution": plain(resolution),
        "attribution_source": rollout.attribution_source,
        "split": rollout.split,
        "provenance": plain(rollout.provenance),
        "session_commit_observation_ids": evidence.observation_ids([resolution]),
        "repository_identity": plain(resolution.repository_identity),
        "schema_id": SCHEMA_ID,
        "schema_version": 3,
    }
    row = {
        "instance_id": task_instance_id(evidence, basis),
        "repo": resolution.repo,
        "base_commit": basis.patch.base_commit,
        "problem_statement": evidence.problem_statement,
        "patch": basis.patch.patch,
        "metadata": metadata,
    }
    return [ProjectedRow(rollout.split, row)]
