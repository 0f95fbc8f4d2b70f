"""Target ``verdicts``: one row per Rollout with its resolved CI verdict."""

from __future__ import annotations

from collections.abc import Sequence

from sediment.ci_resolution import RESOLVER_SKIP_REASONS
from sediment.export import Population, ProjectedRow, TargetInfo, hookimpl
from sediment.export.evidence import RolloutEvidence, reward_source
from sediment.export.representation import REPRESENTATION_REASONS

SCHEMA_ID = "https://example.com/schemas/sediment-verdict-row/v1.json"


@hookimpl
def describe_target() -> TargetInfo:
    return TargetInfo(populations={"rollouts": SCHEMA_ID}, needs_mirrors=False,
                      description="Example: one verdict row per Rollout")


@hookimpl
def skip_reasons(population: Population) -> Sequence[str]:
    return (*RESOLVER_SKIP_REASONS, *REPRESENTATION_REASONS, "no_verdict")


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
