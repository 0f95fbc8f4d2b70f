"""Objective ``recovery``: how a red CI run was turned green.

The unit of evidence is a CI transition of one workflow definition on one branch: the last clean
failed run, then the next passed run on a descendant commit (:mod:`.transitions`). Each pair
that passes the gates becomes one ``recovery-row`` v3 (:mod:`.rows`): the two commits and runs,
the diff between them (at most 200 changed lines), and the inference calls attributed to each
side with their evidence. Recipe ``recovery_ci`` v1. Files ``recovery.jsonl``, or
``recovery.train.jsonl`` / ``recovery.eval.jsonl`` with an eval split.

Recovery reads CI outcomes and mirrors directly from a direct export's fact store, not
Rollouts, so it has no ``--from``: a bundle holds Rollouts, and the CI history of a branch is
more than the commits its Sessions made (a human's failing commit is the start of many
recoveries). See docs/recovery.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sediment.plugin import (
    Declined,
    ExportContext,
    NotDerived,
    ObjectiveInfo,
    PopulationInfo,
    ProjectedRow,
    Recipe,
    hookimpl,
    schemas_in,
)

from .rows import PROJECTION_SKIP_REASONS, SCHEMA_ID, attribution_evidence, call_ids, recovery_row
from .transitions import DEFAULT_POLICY, DERIVATION_SKIP_REASONS, derive_recovery

RECIPE = Recipe("recovery_ci", 1, "the last clean failed run, then the next passed run of the same workflow "
                                  "definition on a descendant commit, at most 200 changed lines apart")
DESCRIPTION = "Recovery pairs: a failed CI run, the passed run that fixed it, the diff and the calls behind each."
HELP = """\
Directly from the fact store and the mirrors (no --from: Recovery reads every CI outcome of
the org, not a bundle's Rollouts). For each workflow definition (workflow id, else path) on
each branch of each repository, runs are ordered by commit ancestry, then by the CI provider's
own time of each run (capture time only where neither orders two runs, so a backfill gives the
rows live capture gives); the last clean failure and the next clean pass make a pair when the
passing commit descends from the failing one and the diff between them has at most 200 changed
lines. Flaky runs (a flip between attempts) never
pair. Rows name the calls attributed to each commit, with their attribution evidence; the
split follows their Sessions (eval when any is eval). See docs/recovery.md.

Example:

  sediment export recovery --org acme --mirrors ~/.sediment/mirrors --out exports/recovery
"""


#: What would change the main reasons (the summary's hint when no pair is written).
REMEDIES: dict[str, str] = {
    "workflow_identity_absent": "the CI runs name no workflow id or path: ingest deliveries that carry them "
                                "(GitHub workflow_run webhooks do)",
    "mirror_absent": "no mirror of the repository: `sediment mirror add OWNER/REPO SOURCE`, and pass --mirrors",
    "ancestry_check_failed": "the mirror does not hold both commits: `sediment mirror fetch OWNER/REPO`",
    "diff_unavailable": "the mirror cannot give the diff: `sediment mirror fetch OWNER/REPO` (or add it again)",
    "attribution_evidence_absent": "no agent call is attributed to the fixing commit: add the mirror with its git-ai "
                                   "notes (`sediment mirror fetch`) and ingest the agent's calls",
}


@hookimpl
def describe_objective() -> ObjectiveInfo:
    return ObjectiveInfo(
        title="Recovery",
        unit="CI transition",
        units="pairs",
        recipes=(RECIPE,),
        populations={"recovery": PopulationInfo(SCHEMA_ID, PROJECTION_SKIP_REASONS, label="recovery")},
        unit_skip_reasons=DERIVATION_SKIP_REASONS,
        direct_needs_mirrors=True,
        from_needs_mirrors=False,
        supports_from=False,
        description=DESCRIPTION,
        remedies=REMEDIES,
        help=HELP,
    )


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    return schemas_in(__name__)


@hookimpl
def project_evidence(context: ExportContext) -> Iterator[ProjectedRow | Declined | NotDerived]:
    outcomes = context.ci_outcomes()
    resolution = context.resolve_ci(outcomes)
    derived = derive_recovery(outcomes, resolution, context.mirror, DEFAULT_POLICY)
    for reason, count in derived.skipped.items():
        yield NotDerived(reason, count)
    if not derived.samples:
        return
    attributions = context.commit_attributions(
        [run.commit for sample in derived.samples for run in (sample.failed, sample.fixed)])
    provenance = {
        "policy_version": DEFAULT_POLICY.policy_version,
        "quarantine_revision": context.quarantine_revision,
        "policy_digest": DEFAULT_POLICY.digest(ci_policy_digest=context.ci_policy_digest,
                                               derivation_policy_digest=context.derivation_policy_digest),
    }
    for sample in context.derived(derived.samples):
        failed, fixed = attributions.calls(sample.failed.commit), attributions.calls(sample.fixed.commit)
        row = recovery_row(sample, recipe=context.recipe, provenance=provenance,
                           failed_call_ids=call_ids(failed), fixed_call_ids=call_ids(fixed),
                           failed_evidence=attribution_evidence(failed), fixed_evidence=attribution_evidence(fixed),
                           lookup=attributions.calls_by_id)
        for reason, count in row.counted.items():
            yield Declined(reason, count)
        yield ProjectedRow(row.split, row.body)
