"""Objective ``dpo``: preference pairs (Direct Preference Optimization) from attributed completions.

The unit of evidence is an :class:`~sediment.plugin.AttributedCompletion` (one recorded
completion bound to one file of a commit it produced, with its decisions and CI). Two
completions answering the *same prompt* (same org, model and exact input messages: the
bucket) become a pair when the recipe labels one ``chosen`` and the other ``rejected``:

- ``dpo_human`` v2 (default): an explicit accept is chosen, an explicit reject rejected (a
  reject wins among a completion's decisions); CI never decides direction.
- ``dpo_outcome`` v2: the resolved CI verdict of the completion's commit, ``passed`` chosen,
  ``failed`` rejected; a suspected flake is unreliable; decisions never decide direction.

Per bucket (ascending key) at most ``max_pairs_per_bucket`` pairs (3) are evaluated,
chosen-major over sorted call ids; a pair that declines still consumes its slot. Rows are
``dpo-pair`` v5 (``dpo[.train|.eval].jsonl``); a pair whose members sit on different sides of
the split goes to ``eval``. See ``docs/dpo.md``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

from pydantic import Field

from sediment.plugin import (
    REPRESENTATION_REASONS,
    RESOLVER_SKIP_REASONS,
    Declined,
    DiagnosedRow,
    ExportContext,
    ObjectiveInfo,
    PluginSettings,
    PopulationInfo,
    ProjectedRow,
    PromptBucket,
    Recipe,
    hookimpl,
    schemas_in,
)

from .diagnosis import diagnose
from .pairing import (
    DPO_POLICY_VERSION,
    DPO_RECIPES,
    DPO_SKIP_REASONS,
    PAIR_SCHEMA_ID,
    DPOPolicy,
    project_pairs,
)

__all__ = ["DPO_POLICY_VERSION", "DPO_SKIP_REASONS", "PAIR_SCHEMA_ID", "DPOPolicy", "DPOSettings", "project_pairs"]

#: The objective's own reasons (the registry puts the CI resolver's and the two representation
#: reasons first, giving :data:`DPO_SKIP_REASONS` exactly).
OWN_SKIP_REASONS: tuple[str, ...] = tuple(r for r in DPO_SKIP_REASONS
                                          if r not in RESOLVER_SKIP_REASONS and r not in REPRESENTATION_REASONS)

DESCRIPTION = "Preference pairs: two completions of one exact prompt, one chosen, one rejected."
HELP = """\
Buckets attributed completions by (org, model, exact input messages); in each bucket a
completion the recipe labels chosen is paired with one it labels rejected, at most
max_pairs_per_bucket pairs evaluated per bucket (chosen-major over sorted call ids; a
declined pair keeps its slot). dpo_human (default) labels by explicit developer decisions
(a reject wins), dpo_outcome by the resolved CI verdict of the completion's commit. Writes
dpo.jsonl, or dpo.train.jsonl / dpo.eval.jsonl when the bundle's policy has an eval split (a
pair whose members' Sessions sit on different sides goes to eval). A row's tools are the tool
definitions both calls' requests declared ([] when none were declared or recorded); a pair
whose calls declared different tools is declined as tools_differ. Confidence knobs come
from SEDIMENT_LABEL_CONFIDENCE_* and the [label-confidence] table of --config; see
docs/dpo.md and docs/confidence.md.

Examples:

  sediment export dpo --from bundle --out exports/dpo

  sediment export dpo --recipe dpo_outcome --from bundle --out exports/dpo-outcome

  sediment export dpo --from bundle --set dpo.max_pairs_per_bucket=1 --out exports/dpo-1
"""


class DPOSettings(PluginSettings):
    """``--set dpo.max_pairs_per_bucket=N`` (default 3) and ``--set
    dpo.label_confidence=upstream`` (the upstream formula, for byte parity)."""

    max_pairs_per_bucket: int = Field(default=3, ge=1, description="pairs evaluated per bucket (declines included)")
    label_confidence: Literal["label", "upstream"] = Field(
        default="label",
        description="label: min(chosen, 1 - rejected), the confidence in the pair's labels; "
                    "upstream: min(chosen, rejected), sediment 0.6.1's value")


#: What would change the main reasons (the summary's hint when every completion is skipped).
REMEDIES: dict[str, str] = {
    "no_label_source": "dpo_human labels by developers' explicit accepts and rejects (ingest Claude Code transcripts "
                       "or decision events), dpo_outcome by the commits' CI verdicts (ingest CI webhooks): try "
                       "`--recipe dpo_outcome` or `--recipe dpo_human`",
    "unreliable_ci_resolution": "the commit's CI run flipped between attempts (a suspected flake); a clean "
                                "re-run, once ingested, settles it",
    "bucket_capped": "more pairs of one prompt than the cap: `--set dpo.max_pairs_per_bucket=N` (default 3)",
    "tools_differ": "the two calls of a pair declared different tools (or one's transcript did not record "
                    "them), so the model did not see the same prompt: only calls made with the same tool "
                    "definitions pair (docs/dpo.md)",
    "model_absent": "the recorded calls name no model: capture them where the request is recorded (a gateway, OTLP)",
}


@hookimpl
def describe_objective() -> ObjectiveInfo:
    return ObjectiveInfo(
        title="DPO",
        unit="attributed completion",
        units="completions",
        recipes=tuple(Recipe(name, version, text) for name, version, text in DPO_RECIPES),
        populations={"dpo": PopulationInfo(PAIR_SCHEMA_ID, OWN_SKIP_REASONS, label="pair", fields_under="metadata")},
        direct_needs_mirrors=False,
        from_needs_mirrors=False,
        supports_from=True,
        description=DESCRIPTION,
        remedies=REMEDIES,
        help=HELP,
        prompt_buckets=True,  # the report's dpo_bucket_sparsity and dpo_near_duplicate_buckets
    )


@hookimpl
def plugin_settings() -> type[PluginSettings]:
    return DPOSettings


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    return schemas_in(__name__)


@hookimpl
def project_evidence(context: ExportContext, settings: DPOSettings) -> Iterator[ProjectedRow | Declined]:
    policy = DPOPolicy(label_confidence=context.label_confidence, max_pairs_per_bucket=settings.max_pairs_per_bucket,
                       recipe_id=context.recipe.name, label_confidence_formula=settings.label_confidence)
    # admission is per Session: the context spreads runs of Sessions over the export's workers
    for item in project_pairs(context.session_runs, policy):
        if isinstance(item, str):
            yield Declined(item)
        else:
            yield ProjectedRow(item["metadata"]["split"], item)


def _policy(context: ExportContext, settings: DPOSettings) -> DPOPolicy:
    return DPOPolicy(label_confidence=context.label_confidence, max_pairs_per_bucket=settings.max_pairs_per_bucket,
                     recipe_id=context.recipe.name, label_confidence_formula=settings.label_confidence)


@hookimpl
def diagnose_evidence(context: ExportContext, settings: DPOSettings) -> Iterator[DiagnosedRow | PromptBucket]:
    """The prompt buckets and pairs ``sediment report dataset-diagnostics`` reads (:mod:`.diagnosis`)."""
    yield from diagnose(context.attributed_completions(), _policy(context, settings))
