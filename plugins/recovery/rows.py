"""A recovery pair as a ``recovery-row`` v3: flat, every key present, in the contract's order.

The inference calls of each side are those attributed to its commit (sorted unique ids; none for
a commit nobody's Session made), each with its attribution evidence. Projection never drops a
pair for missing evidence; it counts it: ``attribution_evidence_absent`` per side call id missing
from that side's evidence, ``inference_call_not_found`` per call id (both sides) the call lookup
does not hold. The pair is ``eval`` when any resolvable call's Session (either side) is on the
eval side of the split, else ``train`` (also when no call resolves).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sediment.plugin import AttributedCall, CallRecord, Recipe, Split, plain

from .transitions import RecoverySample

SCHEMA_ID = "https://sediment.so/schemas/training-rows/recovery-row/v3.json"
SCHEMA_VERSION = 3
EVIDENCE_SCHEMA_ID = "https://sediment.so/schemas/training-rows/recovery-attribution-evidence/v1.json"
#: The projection's own skip reasons, in vocabulary order (the registry puts the
#: representation reasons in front).
PROJECTION_SKIP_REASONS: tuple[str, ...] = ("inference_call_not_found", "attribution_evidence_absent")


@dataclass(frozen=True)
class RecoveryRow:
    """A projected pair: its split side, its row, and what projection counted on it."""

    split: Split
    body: dict[str, Any]
    counted: Counter[str]


def attribution_evidence(calls: Iterable[AttributedCall]) -> list[dict[str, Any]]:
    """One item per ``(inference_call_id, session_id)``, sorted by it: the set of attribution
    sources and of observation ids, each sorted."""
    merged: dict[tuple[str, str], tuple[set[str], set[str]]] = {}
    for call in calls:
        sources, observations = merged.setdefault((call.inference_call_id, call.session_id), (set(), set()))
        sources.add(call.attribution_source)
        observations.update(call.session_commit_observation_ids)
    return [{"inference_call_id": call_id, "session_id": session_id, "attribution_sources": sorted(sources),
             "session_commit_observation_ids": sorted(observations)}
            for (call_id, session_id), (sources, observations) in sorted(merged.items())]


def call_ids(calls: Iterable[AttributedCall]) -> list[str]:
    """Sorted unique ids of the calls attributed to a commit."""
    return sorted({c.inference_call_id for c in calls})


def recovery_row(sample: RecoverySample, *, recipe: Recipe, provenance: Mapping[str, Any],
                 failed_call_ids: Sequence[str], fixed_call_ids: Sequence[str],
                 failed_evidence: Sequence[Mapping[str, Any]], fixed_evidence: Sequence[Mapping[str, Any]],
                 lookup: Mapping[str, CallRecord]) -> RecoveryRow:
    """The row of one pair (keys in the contract's order) and the counts projection made."""
    counted: Counter[str] = Counter()
    for ids, evidence in ((failed_call_ids, failed_evidence), (fixed_call_ids, fixed_evidence)):
        present = {item["inference_call_id"] for item in evidence}
        counted["attribution_evidence_absent"] += sum(1 for i in ids if i not in present)
    resolvable = [lookup[i] for i in (*failed_call_ids, *fixed_call_ids) if i in lookup]
    counted["inference_call_not_found"] += len(failed_call_ids) + len(fixed_call_ids) - len(resolvable)
    split: Split = "eval" if any(record.split == "eval" for record in resolvable) else "train"
    failed, fixed = sample.failed, sample.fixed
    identity = failed.resolution.repository_identity
    body: dict[str, Any] = {
        "org_id": failed.resolution.org_id,
        "recipe_id": recipe.name,
        "recipe_version": recipe.version,
        "repo": failed.resolution.repo,
        "branch": failed.workflow.branch,
        "workflow_name": failed.workflow.workflow_name,
        "workflow_path": failed.workflow.workflow_path,
        "failed_commit_sha": failed.commit.commit_sha,
        "fixed_commit_sha": fixed.commit.commit_sha,
        "failed_outcome_id": failed.outcome.outcome_id,
        "fixed_outcome_id": fixed.outcome.outcome_id,
        "recovery_diff": sample.recovery_diff,
        "failed_inference_call_ids": list(failed_call_ids),
        "fixed_inference_call_ids": list(fixed_call_ids),
        "provenance": dict(provenance),
        "split": split,
        "repository_identity": None if identity is None else plain(identity),
        "failed_attribution_evidence": [dict(item) for item in failed_evidence],
        "fixed_attribution_evidence": [dict(item) for item in fixed_evidence],
        "schema_id": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
    }
    return RecoveryRow(split, body, +counted)
