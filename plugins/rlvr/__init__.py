"""Objective ``rlvr``: reinforcement learning from verifiable rewards, the CI verdict as reward.

The unit of evidence is a Rollout (one Session's segments, attributed commits and terminal CI
outcomes). RLVR has targets: each is one canonical row contract (``sediment``, ``swe-bench``,
``nemo-gym``, and any third party's), writing ``tasks`` and/or ``rollouts`` rows, and the
chosen target projects every Rollout. Contract v2 targets and profiles name no objective;
RLVR, the objective of that contract, is their default.

It declares its recipe (``rlvr_ci``) and registers the RLVR component schemas its targets'
rows build on (``schemas/``: ``rlvr-turn`` v3, ``rlvr-decision`` v2, ``rlvr-inference-message``
v2). What every target's hooks receive (``RolloutEvidence``, the task and turn helpers) is the
core's target contract, reached through ``sediment.plugin`` (docs/plugins.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sediment.plugin import ObjectiveInfo, Recipe, hookimpl, schemas_in

#: The one recipe: the reward is the resolved CI verdict. Targets write it from
#: ``evidence.recipe`` (the recipe the export runs), never from this module.
RECIPE_ID = "rlvr_ci"
RECIPE_VERSION = 1

DESCRIPTION = "Project Rollouts into RLVR rows for one target, or for one consumer profile of it."
HELP = """\
From a bundle (--from) or directly from the fact store (derived one Session at a time).
Writes <population>.jsonl, or <population>.train.jsonl / .eval.jsonl when the bundle's
policy has an eval split, into a fresh output directory claimed by the target. With
--profile, each canonical row is adapted to the consumer's native format
(data[.train|.eval].jsonl), linked to its canonical row (evidence[...].jsonl), and
described in compatibility.json. Rewards come only from recorded CI verdicts; see
docs/exports.md and docs/plugins.md.

Examples:

  sediment export rlvr --target sediment --from bundle --out exports/sediment

  sediment export rlvr --target nemo-gym --profile nemo-gym-rollouts-v2 --from bundle \\
    --set nemo-gym-rollouts-v2.agent_name=my_agent --out exports/nemo
"""


@hookimpl
def describe_objective() -> ObjectiveInfo:
    return ObjectiveInfo(
        title="RLVR",
        unit="Rollout",
        units="rollouts",
        recipes=(Recipe(RECIPE_ID, RECIPE_VERSION,
                        "reward from the resolved CI verdict of the Rollout's attributed commits"),),
        target_populations={"tasks": "task", "rollouts": "rollout"},
        direct_needs_mirrors=True,
        from_needs_mirrors=False,
        supports_from=True,
        default_objective=True,
        description=DESCRIPTION,
        help=HELP,
    )


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    return schemas_in(__name__)
