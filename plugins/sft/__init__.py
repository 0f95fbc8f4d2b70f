"""Objective ``sft``: supervised fine-tuning samples, one per recorded completion worth imitating.

The unit of evidence is an attributed completion (an inference call bound to one file of a commit
it produced, with its developer decisions and CI outcomes: docs/attributed-completions.md). The
objective has no targets: it writes one population, ``sft`` (rows ``sft-sample`` v4, files
``sft.jsonl`` or ``sft.train.jsonl`` / ``sft.eval.jsonl``), from
``ExportContext.attributed_completions()``, one Session at a time, the same from a bundle as
directly from the fact store.

Recipes ``sft_curated`` v1 (the default: a developer's explicit accept, or an accepted edit that
survived) and ``sft_verified`` v1 (a clean resolved CI pass of the commit); rules in
:mod:`sediment_sft.eligibility`, projection in :mod:`sediment_sft.samples`, and docs/sft.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sediment.plugin import (
    Declined,
    DiagnosedRow,
    ExportContext,
    FloorCandidate,
    ObjectiveInfo,
    PluginSettings,
    PopulationInfo,
    ProjectedRow,
    Recipe,
    hookimpl,
    schemas_in,
)

from .diagnosis import diagnose
from .eligibility import CURATED, VERIFIED
from .samples import SCHEMA_ID, SKIP_REASONS, project_session

POPULATION = "sft"
RECIPES = (
    Recipe(CURATED, 1, "a developer's explicit accept, or an accepted edit retained at 0.8 or more; "
                       "no CI failure; Confidence at least 0.6"),
    Recipe(VERIFIED, 1, "a clean resolved CI pass of the commit (no flake); no explicit reject; "
                        "Confidence at least 0.6"),
)
DESCRIPTION = "Supervised fine-tuning samples: one per recorded completion the evidence says to imitate."
HELP = """\
One row per inference call: its whole input as trainer messages (prompt), its output as
assistant messages (completion), the tool definitions its request declared (tools; [] when
it declared none or a transcript did not record them), and the evidence under metadata
(eligibility source, label confidence, CI reliability, provenance, split, repository
identity, attribution source, git-note observation ids). A call is eligible through one of its attributed files;
calls with several keep the one with the highest Confidence. Every call that yields no row is
counted once under one skip reason. From a bundle (--from, version 4) no mirror is read.
See docs/sft.md.

Examples:

  sediment export sft --from bundle --out exports/sft

  sediment export sft --recipe sft_verified --out exports/sft-verified
"""


#: What would change the main reasons (the summary's hint when every completion is skipped).
REMEDIES: dict[str, str] = {
    "no_eligibility_source": "sft_curated reads developers' accepts (ingest Claude Code transcripts or decision "
                             "events), sft_verified a clean CI pass of the commit (ingest CI webhooks): try "
                             "`--recipe sft_verified` or `--recipe sft_curated`",
    "unreliable_ci_resolution": "the commit's CI run flipped between attempts (a suspected flake); a clean "
                                "re-run, once ingested, settles it",
    "below_confidence_floor": "the Confidence is below the recipe's 0.6 floor: more evidence (decisions, CI) raises "
                              "it; the ladder's knobs are the [label-confidence] table (docs/confidence.md)",
    "model_absent": "the recorded calls name no model: capture them where the request is recorded (a gateway, OTLP)",
}


@hookimpl
def describe_objective() -> ObjectiveInfo:
    return ObjectiveInfo(
        title="SFT",
        unit="attributed completion",
        units="attributed_completions",
        recipes=RECIPES,
        populations={POPULATION: PopulationInfo(SCHEMA_ID, SKIP_REASONS, label="sample", fields_under="metadata")},
        direct_needs_mirrors=True,
        from_needs_mirrors=False,
        supports_from=True,
        description=DESCRIPTION,
        remedies=REMEDIES,
        help=HELP,
        sessions_independent=True,  # one Session's samples read that Session alone
    )


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    return schemas_in(__name__)


@hookimpl
def project_evidence(context: ExportContext, settings: PluginSettings) -> Iterator[ProjectedRow | Declined]:
    policy = context.label_confidence
    for completions in context.attributed_completions():
        yield from project_session(completions, context.recipe, policy)


@hookimpl
def diagnose_evidence(context: ExportContext, settings: PluginSettings) -> Iterator[DiagnosedRow | FloorCandidate]:
    """The rows and floor candidates ``sediment report dataset-diagnostics`` reads (:mod:`.diagnosis`)."""
    yield from diagnose(context.attributed_completions(), context.recipe, context.label_confidence)
