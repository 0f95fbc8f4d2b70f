"""Hook specifications of the export plugin contract.

Each docstring is the reference for its hook. Targets implement ``describe_target``,
``skip_reasons``, ``eligible`` and ``project_row``; manifest plugins implement
``write_manifest``. Calls for one target reach that target's implementation only (the
registry dispatches through a subset hook caller), so ``firstresult`` hooks see exactly one
implementation. Implementations are marked with :data:`hookimpl`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from sediment.export.evidence import RolloutEvidence
    from sediment.export.rows import Population, ProjectedRow, TargetInfo
    from sediment.export.writer import PublishedExport

PROJECT_NAME = "sediment"
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
#: Marker for plugin hook implementations: ``@hookimpl def eligible(...)``.
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec(firstresult=True)
def describe_target() -> TargetInfo | None:
    """Declare that this plugin is an export target, and what it writes.

    Called once per plugin when the registry is built. The target's name is its
    entry-point (plugin) name.

    :return: the target's :class:`~sediment.export.rows.TargetInfo`; a plugin that is not a
        target (a manifest plugin) does not implement this hook.
    """


@hookspec(firstresult=True)
def skip_reasons(population: Population) -> Sequence[str] | None:
    """Return the closed skip vocabulary of one of the target's populations, in a fixed order.

    Called once per declared population when the registry is built. Every reason the
    pipeline counts for this population must be in it: the target's own reasons, the CI
    resolver's reasons when the target consults CI evidence, and the representation reasons
    ``non_finite_number`` and ``unrepresentable_unicode``. Counting anything else is a plugin
    bug and stops the export.

    :param population: ``"tasks"`` or ``"rollouts"``.
    :return: the vocabulary, without duplicates.
    """


@hookspec(firstresult=True)
def eligible(population: Population, evidence: RolloutEvidence) -> str | None:
    """Decide whether a Rollout can produce rows for one population, before projecting it.

    Called for the chosen target only, once per Rollout and population, in export order.
    If the implementation reads ``evidence.ci`` (or anything derived from it), the CI
    resolver's skip counts for this Rollout are added to the population's tally, whether
    or not rows are emitted.

    :param population: the population being projected.
    :param evidence: the Rollout and everything projection may read (CI resolution, mirrors,
        verifier commands), computed lazily and shared between populations.
    :return: ``None`` when eligible, else exactly one reason from the vocabulary.
    """


@hookspec(firstresult=True)
def project_row(population: Population, evidence: RolloutEvidence) -> Sequence[ProjectedRow]:  # type: ignore[empty-body]
    """Project an eligible Rollout into the rows of one population.

    Called for the chosen target only, after :func:`eligible` returned ``None``. The
    pipeline checks every returned row for representability (non-finite numbers, unpaired
    surrogates, anywhere in the emitted value) and declines a bad row with one count; it
    routes each row to the file of its ``split``.

    :param population: the population being projected.
    :param evidence: as for :func:`eligible`.
    :return: the rows, in emission order (for example one per segment).
    """


@hookspec
def write_manifest(target: str, out_dir: Path, published: PublishedExport) -> Path | None:
    """Write a manifest beside the published rows (for example ``environment.yaml``).

    Called on every manifest plugin after the row files were published, in registration
    order; all results are collected. A manifest must be written atomically and must never
    be written when it would describe nothing.

    :param target: the name of the target that was exported.
    :param out_dir: the output directory.
    :param published: the files just published, per population and split, with row counts.
    :return: the path written, or ``None`` when this plugin wrote nothing.
    """
