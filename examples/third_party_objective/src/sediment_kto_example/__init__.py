"""Objective ``kto``: unpaired preference samples (KTO) from developers' decisions on edits.

An example of a third-party export objective, written against ``sediment.plugin`` only. It has
no targets: it declares one row population of its own (``kto``, rows ``kto-sample`` v1, files
``kto[.train|.eval].jsonl``), one recipe and a closed skip vocabulary, and projects in
``project_evidence``, pulling Rollouts from the export context one at a time.

Recipe ``kto_decisions`` v1: every Turn (one recorded inference call) whose edit a developer
decided on is a sample. The prompt is the call's whole input (the Turn's segment replayed up to
it), the completion its recorded output messages, and the label ``true`` for an explicit
accept, ``false`` for an explicit reject; a reject wins over an accept. Implicit decisions
(auto-applied, retention-inferred) count only with the setting ``include_implicit``. Nothing is
invented: a Turn without a decision, or without output, is declined and counted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import Field

from sediment.plugin import (
    Declined,
    ExportContext,
    ObjectiveInfo,
    PluginSettings,
    PopulationInfo,
    ProjectedRow,
    Recipe,
    Turn,
    hookimpl,
    message_row,
    schemas_in,
)

SCHEMA_ID = "https://example.com/schemas/kto-sample/v1.json"
SCHEMA_VERSION = 1
RECIPE = Recipe("kto_decisions", 1, "explicit accept: desirable, explicit reject: undesirable (a reject wins)")
#: The objective's own reasons, in this order (the registry puts the core's in front).
SKIP_REASONS = ("no_developer_decision", "no_completion")


class KTOSettings(PluginSettings):
    """``--set kto.include_implicit=true`` also labels Turns by implicit decisions."""

    include_implicit: bool = Field(default=False, description="label by implicit decisions too")


@hookimpl
def describe_objective() -> ObjectiveInfo:
    return ObjectiveInfo(
        title="KTO",
        unit="Rollout",
        units="rollouts",
        recipes=(RECIPE,),
        populations={"kto": PopulationInfo(SCHEMA_ID, SKIP_REASONS, label="sample", fields_under="metadata")},
        direct_needs_mirrors=True,
        from_needs_mirrors=False,
        supports_from=True,
        description="Example: unpaired KTO samples, one per Turn a developer accepted or rejected.",
        help="The prompt is the call's whole input, the completion its recorded output, the label the\n"
             "developer's explicit decision (a reject wins). Nothing is invented: a Turn without a\n"
             "decision or without output is declined and counted.\n\n"
             "Example:\n\n"
             "  sediment export kto --from bundle --out exports/kto",
    )


@hookimpl
def plugin_settings() -> type[PluginSettings]:
    return KTOSettings


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    return schemas_in(__name__)


def _label(turn: Turn, settings: KTOSettings) -> tuple[bool, str] | None:
    """``(label, label_source)`` from the Turn's decisions, or ``None`` when none counts."""
    counted = [d for d in turn.decisions if d.explicit or settings.include_implicit]
    if not counted:
        return None
    rejected = [d for d in counted if not d.accepted]
    if rejected:
        return False, "explicit_reject" if any(d.explicit for d in rejected) else "implicit_reject"
    return True, "explicit_accept" if any(d.explicit for d in counted) else "implicit_accept"


@hookimpl
def project_evidence(context: ExportContext, settings: KTOSettings) -> Iterator[ProjectedRow | Declined]:
    for evidence in context.rollouts():
        rollout = evidence.rollout
        for segment in rollout.segments:
            prompt: list[dict[str, Any]] = []
            for turn in segment:
                prompt.extend(message_row(m) for m in turn.new_messages)
                labelled = _label(turn, settings)
                if labelled is None:
                    yield Declined("no_developer_decision")
                    continue
                if not turn.output_messages:
                    yield Declined("no_completion")
                    continue
                label, source = labelled
                yield ProjectedRow(rollout.split, {
                    "prompt": list(prompt),
                    "completion": [message_row(m) for m in turn.output_messages],
                    "label": label,
                    "metadata": {
                        "org_id": rollout.org_id,
                        "session_id": rollout.session_id,
                        "completion_id": turn.inference_call_id,
                        "source_model": turn.model,
                        "recipe_id": context.recipe.name,
                        "recipe_version": context.recipe.version,
                        "label_source": source,
                        "decision_count": len(turn.decisions),
                        "split": rollout.split,
                        "schema_id": SCHEMA_ID,
                        "schema_version": SCHEMA_VERSION,
                    },
                })
