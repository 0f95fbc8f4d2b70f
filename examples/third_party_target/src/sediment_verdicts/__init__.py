"""Target ``verdicts``: one row per Rollout with its resolved CI verdict.

Written against the public plugin module only (``sediment.plugin``); its row schema ships in
``schemas/`` beside this file and is registered with ``register_schemas``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sediment.plugin import (
    Population,
    PopulationInfo,
    ProjectedRow,
    RolloutEvidence,
    TargetInfo,
    hookimpl,
    reward_source,
    schemas_in,
)

SCHEMA_ID = "https://example.com/schemas/sediment-verdict-row/v1.json"


@hookimpl
def describe_target() -> TargetInfo:
    return TargetInfo(populations={"rollouts": PopulationInfo(SCHEMA_ID, ("no_verdict",))}, needs_mirrors=False,
                      description="Example: one verdict row per Rollout")


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    return schemas_in(__name__)


@hookimpl
def eligible(population: Population, evidence: RolloutEvidence) -> str | None:
    return None if evidence.reward_resolution is not None else "no_verdict"


@hookimpl
def project_row(population: Population, evidence: RolloutEvidence) -> Sequence[ProjectedRow]:
    resolution = evidence.reward_resolution
    assert resolution is not None  # eligible() declined Rollouts without one
    rollout = evidence.rollout
    return [ProjectedRow(rollout.split, {
        "session_id": rollout.session_id,
        "commit_sha": resolution.commit_sha,
        "verdict": resolution.verdict,
        "reward_source": reward_source(resolution),
        "reliability": resolution.reliability,
        "source_outcome_ids": list(resolution.source_outcome_ids),
        "schema_id": SCHEMA_ID,
    })]
