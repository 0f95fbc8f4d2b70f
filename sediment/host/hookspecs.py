"""Hook specifications of the plugin contract, version 2.

Each docstring is the reference for its hook; ``docs/plugins.md`` is generated from them.
Every hook is called on **one plugin at a time**: the registry dispatches through a subset
hook caller that reaches that plugin's implementation only, so each hook returns that
plugin's answer (``firstresult``). A plugin's kind follows from the ``describe_*`` hook it
implements: an **objective** is what ``sediment export NAME`` exports (its unit of evidence,
recipes, populations and vocabularies), a **target** projects Rollouts into one canonical row
contract of an objective, a **profile** adapts one target's rows to one consumer release, a
**manifest** writer adds a file beside published rows, an **importer** reads one source format
into canonical trajectory records. Implementations are marked with
:data:`sediment.plugin.hookimpl` and may accept any subset of a hook's arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from sediment.evidence.context import ExportContext
    from sediment.evidence.rollout import RolloutEvidence
    from sediment.host.declarations import (
        AdaptedRow,
        Declined,
        ImporterInfo,
        ManifestInfo,
        NotDerived,
        ObjectiveInfo,
        Population,
        ProfileInfo,
        ProjectedRow,
        PublishedExport,
        TargetInfo,
    )
    from sediment.host.diagnosis import Diagnosis
    from sediment.settings import PluginSettings
    from sediment.trajectory.record import Trajectory
    from sediment.trajectory.sources import ImportRefusal
    from sediment.trajectory.store_source import StoreSource

PROJECT_NAME = "sediment"
#: The version of the plugin contract these hooks define.
CONTRACT_VERSION = 2
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
#: Marker for plugin hook implementations: ``@hookimpl def eligible(...)``.
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


# --- declarations (called once per plugin when the registry is built) --------------------


@hookspec(firstresult=True)
def describe_objective() -> ObjectiveInfo | None:
    """Declare that this plugin is an export objective: its unit of evidence, its recipes (the
    default first), its row populations with their schema ids and skip reasons, or the
    populations its targets write, and what an export of it reads (mirrors, ``--from``).

    Called once when the registry is built. The objective's name is its plugin (entry-point)
    name; ``sediment export NAME`` runs it, with its recipes as the ``--recipe`` choices. The
    registry prefixes each population's vocabulary with the core's reasons, as for targets. An
    objective without targets implements ``project_evidence``; one with targets does not (its
    chosen target projects).

    :return: an :class:`~sediment.plugin.ObjectiveInfo`; only objectives implement this hook.
    """


@hookspec(firstresult=True)
def describe_target() -> TargetInfo | None:
    """Declare that this plugin is an export target: its populations, their row schemas and
    its own skip reasons, and whether it reads mirrors.

    Called once when the registry is built. The target's name is its plugin (entry-point)
    name. The registry prefixes each population's vocabulary with the core's reasons: the CI
    resolver's, then the representation reasons. Its optional ``remedies`` (as an objective's
    and a profile's) say, per reason of its vocabulary, what would change it; an export that
    writes no row ends with the dominant reason's.

    :return: a :class:`~sediment.plugin.TargetInfo`; a plugin that is not a target does not
        implement this hook.
    """


@hookspec(firstresult=True)
def describe_profile() -> ProfileInfo | None:
    """Declare that this plugin is a consumer profile: the target population it adapts (or the
    population of an objective without targets, named as its ``target``), the consumer release
    it was validated against, its support claim and its skip reasons.

    Called once when the registry is built. The profile id is its plugin (entry-point) name.
    The registry checks that the target (or objective) exists and that the canonical schema is
    the one it declares for the population.

    :return: a :class:`~sediment.plugin.ProfileInfo`; only profiles implement this hook.
    """


@hookspec(firstresult=True)
def describe_manifest() -> ManifestInfo | None:
    """Declare that this plugin writes a manifest beside published rows, and its file names.

    Called once when the registry is built. A plugin implementing ``write_manifest`` must
    implement this hook: the declared names are what makes a directory holding such a file
    belong to an export.

    :return: a :class:`~sediment.plugin.ManifestInfo`.
    """


@hookspec(firstresult=True)
def plugin_settings() -> type[PluginSettings] | None:
    """Declare the typed settings this plugin receives as the ``settings`` argument.

    Called once when the registry is built. The CLI builds the instance from ``--set``
    flags, environment variables and the ``--config`` TOML file (``docs/plugins.md``). An
    export validates the settings of every plugin it will call before it claims its output
    directory, and a missing or invalid value stops it there with one line naming the field: a
    field without a default is required, and a field typed :data:`~sediment.plugin.ReadableFile`
    must name a regular file the process can read (a ``field_validator`` may check its content).

    :return: a subclass of :class:`~sediment.plugin.PluginSettings`; without this hook the
        plugin receives an empty settings object.
    """


@hookspec(firstresult=True)
def register_schemas() -> Sequence[Mapping[str, Any]] | None:
    """Contribute the JSON Schemas (draft 2020-12) of the rows this plugin emits.

    Called once when the registry is built. Each schema carries a unique ``$id``; two
    plugins registering the same id is an error naming both. ``sediment schema validate``
    and :func:`sediment.testing.read_rows` validate rows against every registered schema.
    :func:`sediment.plugin.schemas_in` loads a package folder of ``*.json`` files.

    :return: the schemas, each a JSON object.
    """


# --- objectives (called for the chosen objective, once per export) -----------------------


@hookspec(firstresult=True)
def project_evidence(context: ExportContext,  # type: ignore[empty-body]
                     settings: PluginSettings) -> Iterable[ProjectedRow | Declined | NotDerived]:
    """Project the export's evidence into rows of this objective's own populations.

    Called once per export on the chosen objective only (objectives without targets), inside
    the claimed and locked output directory. The implementation pulls what it reads from
    ``context`` (for example ``context.rollouts()``, streamed one unit at a time, which also
    drives the progress bar) and should yield as it goes: rows are staged as they arrive.

    The pipeline checks every row for representability (a bad row is declined with one count),
    counts every :class:`~sediment.plugin.Declined` against the population's closed vocabulary
    (a reason outside it is a plugin bug), routes each row to the file of its population and
    ``split``, and publishes nothing if the iteration raises.

    The core's reasons are in every vocabulary: an objective that reads ``evidence.ci`` yields
    its resolver counts itself (``Declined(reason, count)`` for each of ``evidence.ci.skipped``),
    in the unit it documents.
    An objective that derives its own units (``unit_skip_reasons``: Recovery derives CI
    transitions from ``context.ci_outcomes()``, ``context.resolve_ci`` and ``context.mirror``)
    yields :class:`~sediment.plugin.NotDerived` for evidence that did not become a unit (the
    resolver's counts among them), and hands its units out through ``context.derived(units)``.

    :param context: the export's evidence, recipe, split and mirrors (``ExportContext``).
    :param settings: this plugin's settings.
    :return: an iterable (usually a generator) of rows and declines, in emission order.
    """


@hookspec(firstresult=True)
def diagnose_evidence(context: ExportContext,  # type: ignore[empty-body]
                      settings: PluginSettings) -> Iterable[Diagnosis]:
    """Describe the dataset this objective would write, for ``sediment report dataset-diagnostics``.

    Optional; an objective that implements it takes part in the report (docs/reports.md).
    Called once per report on that objective only, with a context like an export's (the recipe
    the report asks for, the evidence read directly from the fact store), outside any output
    directory: nothing is written. The implementation reads the evidence as
    ``project_evidence`` does and yields :class:`~sediment.plugin.DiagnosedRow` for every row
    the export would write, :class:`~sediment.plugin.PromptBucket` for every prompt bucket
    holding a labelled member (objectives that pair completions of one prompt and declare
    ``ObjectiveInfo.prompt_buckets``), and
    :class:`~sediment.plugin.FloorCandidate` for every unit that passed every check but the
    Confidence floor. The report aggregates them without knowing the objective.

    :param context: the evidence, recipe and split (``ExportContext``).
    :param settings: this plugin's settings.
    :return: an iterable (usually a generator) of those records, in any order.
    """


# --- targets (called for the chosen target, per Rollout and population) ------------------


@hookspec(firstresult=True)
def eligible(population: Population, evidence: RolloutEvidence, settings: PluginSettings) -> str | None:
    """Decide whether a Rollout can produce rows for one population, before projecting it.

    Called on the chosen target only, once per Rollout and population, in export order. If
    the implementation reads ``evidence.ci`` (or anything derived from it), the CI
    resolver's skip counts for this Rollout are added to the population's tally, whether or
    not rows are emitted.

    :param population: the population being projected.
    :param evidence: the Rollout and everything projection may read (CI resolution, mirrors,
        verifier commands, the calls' recorded context), computed lazily and shared between
        populations.
    :param settings: this plugin's settings.
    :return: ``None`` when eligible, else exactly one of the target's own reasons.
    """


@hookspec(firstresult=True)
def project_row(population: Population, evidence: RolloutEvidence,  # type: ignore[empty-body]
                settings: PluginSettings) -> Sequence[ProjectedRow]:
    """Project an eligible Rollout into the rows of one population.

    Called on the chosen target only, after ``eligible`` returned ``None``. The pipeline
    checks every returned row for representability (non-finite numbers, unpaired
    surrogates, anywhere in the emitted value) and declines a bad row with one count; it
    routes each row to the file of its ``split``.

    :param population: the population being projected.
    :param evidence: as for ``eligible``.
    :param settings: this plugin's settings.
    :return: the rows, in emission order (for example one per segment).
    """


# --- profiles (called for the chosen profile, per canonical row) --------------------------


@hookspec(firstresult=True)
def adapt_row(row: Mapping[str, Any], evidence: RolloutEvidence | None,  # type: ignore[empty-body]
              settings: PluginSettings, index: int) -> AdaptedRow | str:
    """Adapt one canonical row to the consumer's native row, or decline it.

    Called on the chosen profile only, for every canonical row of its target population (or,
    for a profile of an objective without targets, of that objective's population) that was
    emitted and validated against the canonical schema, in export order. The adaptation must
    never invent evidence: a row that cannot be represented natively is declined with a reason
    from the profile's vocabulary, or, when the consumer cannot do without it, refuses the
    whole export by raising :class:`~sediment.plugin.IncompatibleRow` (nothing is published).
    The pipeline checks the adapted row for representability, writes it to
    ``data[.train|.eval].jsonl`` and links it to its canonical row in the evidence sidecar. A
    profile that declares ``writes_directories`` returns each kept row with its
    :class:`~sediment.plugin.TaskDirectory` (``AdaptedRow.directory``), published beside the files.

    :param row: the canonical row, as the target (or objective) emitted it (read only).
    :param evidence: the Rollout the row came from, with the recorded calls' context
        (``evidence.rollout``; for example the output messages, model and tool definitions of
        each Turn); ``None`` for rows of an objective without targets (their evidence is in
        the row).
    :param settings: this plugin's settings.
    :param index: the row's position in its data file if it is kept (0-based, per split side).
    :return: an :class:`~sediment.plugin.AdaptedRow`, or one skip reason.
    """


# --- manifests (called on every manifest plugin after publication) -----------------------


@hookspec(firstresult=True)
def write_manifest(published: PublishedExport, settings: PluginSettings) -> Path | None:
    """Write a manifest beside the published rows (for example ``environment.yaml``).

    Called after a target or profile export published its files, on each manifest plugin in
    turn, in plugin-name order. A manifest must be written atomically
    (:func:`sediment.plugin.atomic_write_bytes`), only under a file name the plugin
    declared, and never when it would describe nothing.

    :param published: the export that was just published: its target, its profile (or
        ``None``), the output directory and the files per stem and split with row counts.
    :param settings: this plugin's settings.
    :return: the path written, or ``None`` when this plugin wrote nothing for this export.
    """


# --- importers (trajectory-library sources; called for the chosen importer, per file) -----


@hookspec(firstresult=True)
def describe_importer() -> ImporterInfo | None:
    """Declare that this plugin is a trajectory importer: one source format read into
    canonical :class:`~sediment.plugin.Trajectory` records.

    Called once when the registry is built. The format's name is the plugin (entry-point)
    name; ``import_records(FORMAT, paths)`` runs it.

    :return: an :class:`~sediment.plugin.ImporterInfo` (description, the file-name patterns
        it reads in a directory, its ``source_id``); only importers implement this hook.
    """


@hookspec(firstresult=True)
def import_source(path: Path) -> Iterable[Trajectory | ImportRefusal]:  # type: ignore[empty-body]
    """Read one source file into canonical records.

    Called on the chosen importer only, once per file, in the order given (a directory's
    files in name order). Read it streaming (``trajectory_kit.read_units``), build each record
    with ``trajectory_kit.build`` (both of ``sediment.plugin.trajectory_kit``), and refuse what cannot be stored
    exactly with an :class:`~sediment.plugin.ImportRefusal` naming line and field, keeping
    the good records around it. Never manufacture a missing observation or outcome.

    :param path: the file.
    :return: an iterable (usually a generator) of records and refusals, in file order.
    """


@hookspec(firstresult=True)
def import_store(source: StoreSource) -> Iterable[Trajectory | ImportRefusal]:  # type: ignore[empty-body]
    """Read Sediment's own Rollouts straight from the fact store (optional; an importer only).

    Called on the chosen importer only, when the import reads the store instead of files
    (``--from-store``). The core derives the org's Rollouts one Session at a time; convert each
    as its bundle line would be, with a ``source`` naming the store (the org, the quarantine
    revision as the immutable revision, no file digest).

    :param source: a :class:`~sediment.plugin.trajectory_kit.StoreSource`.
    :return: an iterable of records and refusals, in Session order.
    """
