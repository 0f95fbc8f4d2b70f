"""The values that cross the plugin boundary: what plugins declare, and what they return.

Objectives declare an :class:`ObjectiveInfo` (with its :class:`Recipe` list), targets a
:class:`TargetInfo`, profiles a :class:`ProfileInfo`, manifest writers a
:class:`ManifestInfo`. Targets return :class:`ProjectedRow` lists; an objective without
targets yields :class:`ProjectedRow` and :class:`Declined` values (and, when it derives its
own units of evidence, :class:`NotDerived` values); profiles return an
:class:`AdaptedRow` or a skip reason. Published files are described by
:class:`PublishedExport`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sediment.evidence.recipe import Recipe, check_word
from sediment.split import Split

#: A row population: the base name of its files (``<population>.jsonl``, or its split files).
#: An objective declares the populations it, or its targets, may write.
Population = str
SPLIT_ORDER: tuple[Split, ...] = ("train", "eval")
#: The file stems of a profile export; no objective may name a population after them.
PROFILE_STEMS: tuple[str, ...] = ("data", "evidence")

_REASON = re.compile(r"^[a-z][a-z0-9_]*$")


def jsonl_names(stem: str) -> tuple[str, str, str]:
    """``<stem>.jsonl``, ``<stem>.train.jsonl``, ``<stem>.eval.jsonl``."""
    return (f"{stem}.jsonl", f"{stem}.train.jsonl", f"{stem}.eval.jsonl")


def _check_reasons(reasons: tuple[str, ...], where: str) -> None:
    bad = [r for r in reasons if not isinstance(r, str) or not _REASON.fullmatch(r)]
    duplicated = sorted({r for r in reasons if reasons.count(r) > 1})
    if bad or duplicated:
        raise ValueError(f"{where}: skip reasons must be unique snake_case words: malformed {bad}, "
                         f"duplicated {duplicated}")


def _check_remedies(remedies: Mapping[str, str], where: str) -> dict[str, str]:
    """``remedies`` as a dict: each a snake_case reason → one non-empty printable line."""
    checked = dict(remedies)
    for reason, text in checked.items():
        if not isinstance(reason, str) or not _REASON.fullmatch(reason):
            raise ValueError(f"{where}: a remedy is keyed by a skip reason (snake_case), got {reason!r}")
        if not isinstance(text, str) or not text.strip() or not text.isprintable():
            raise ValueError(f"{where}: the remedy of {reason} must be one non-empty line of text")
    return checked


@dataclass(frozen=True)
class PopulationInfo:
    """One population a target writes.

    :param schema_id: the ``$id`` of the JSON Schema every row of it validates against; the
        schema is registered by a plugin (``register_schemas``), usually the target itself.
    :param skip_reasons: the target's (or objective's) own reasons for declining evidence, in a
        fixed order. The registry puts the core's reasons first (CI resolver, then representation).
    :param label: for an objective's own population, the singular noun its rows are counted by
        in summaries (``sample`` gives ``sample_rows`` and ``sample_skipped``); default: the
        population name. A target's populations take the label their objective declares.
    :param fields_under: for rows whose top level is a consumer's shape, the key of the object
        that keeps Sediment's own fields (``instance_id``, ``split``, ``reward_source``), e.g.
        ``"metadata"``; a profile export reads them at the top level first, then there. Empty
        (the default): only at the top level.
    """

    schema_id: str
    skip_reasons: tuple[str, ...] = ()
    label: str = ""
    fields_under: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "skip_reasons", tuple(self.skip_reasons))
        _check_reasons(self.skip_reasons, f"population {self.schema_id}")
        if self.label:
            check_word(self.label, f"population {self.schema_id} label")
        if self.fields_under:
            check_word(self.fields_under, f"population {self.schema_id} fields_under")


@dataclass(frozen=True)
class TargetInfo:
    """What a target declares about itself (``describe_target``).

    :param populations: the row populations it writes: a non-empty subset of the populations
        its objective declares for targets (RLVR: ``tasks``, ``rollouts``), published in the
        objective's order.
    :param needs_mirrors: whether projection reads repository mirrors (reference patches).
    :param description: one line for ``sediment targets``.
    :param objective: the objective whose canonical row contract this is (``sediment export
        OBJECTIVE --target NAME``). Contract v2 targets name none: they belong to the installed
        objective that declares itself the default (RLVR).
    :param remedies: optional, per skip reason of its vocabulary (its own, or the core's it
        knows better in its context), one short line saying what would change it: a recipe, a
        setting, a missing ingest or mirror. When every unit of an export is skipped, the export
        ends with the dominant reason and its remedy (``nothing_written`` in the summary).
    :param writes_directories: every kept row also writes one directory of files
        (:attr:`AdaptedRow.directory`, a :class:`TaskDirectory`), published beside the data and
        evidence files: ``<out>/<name>/`` unsplit, ``<out>/<train|eval>/<name>/`` split. Only
        with ``row_order="export"``.
    """

    populations: Mapping[Population, PopulationInfo]
    needs_mirrors: bool
    description: str = ""
    objective: str | None = None
    remedies: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "remedies", _check_remedies(self.remedies, "a target"))
        if not self.populations:
            raise ValueError("a target writes at least one population")
        if any(not isinstance(p, PopulationInfo) for p in self.populations.values()):
            raise ValueError("each population is declared with a PopulationInfo")


@dataclass(frozen=True)
class ObjectiveInfo:
    """What an export objective declares (``describe_objective``). Its name is its plugin
    (entry-point) name, and ``sediment export NAME`` runs it.

    An objective either has **targets** (``target_populations``): each target is one canonical
    row contract of it, and the chosen target projects every unit of evidence (a Rollout) through
    ``eligible`` / ``project_row``; or it has **its own populations** (``populations``) and
    projects them itself in ``project_evidence``, pulling what it reads from the
    :class:`~sediment.plugin.ExportContext`. Either way the core writes the rows: one claimed
    output directory, a generation lock, private staging, atomic per-file publication.

    :param title: how messages and tables name it (``RLVR``, ``SFT``).
    :param unit: its unit of evidence, in words (``Rollout``, ``attributed completion``).
    :param units: the summary key counting the units it read (``rollouts``), a snake_case word.
    :param recipes: its recipes, the default first (the ``--recipe`` choices).
    :param populations: its own row populations (file base name → schema id, own skip reasons
        and count label), in publication order; empty for an objective with targets.
    :param target_populations: for an objective with targets, the populations a target may write
        (name → count label, e.g. ``{"tasks": "task"}``), in publication order.
    :param direct_needs_mirrors: a direct export (from the fact store) reads repository mirrors.
    :param from_needs_mirrors: an export ``--from`` a bundle reads mirrors (a target that needs
        them adds its own need).
    :param supports_from: whether ``--from BUNDLE`` is offered.
    :param default_objective: targets and profiles that name no objective belong to this one; at
        most one installed objective may say so (RLVR, the objective of contract v2).
    :param description: one line for ``sediment export --help`` and ``sediment objectives``.
    :param help: the paragraphs of ``sediment export NAME --help`` after that line.
    :param unit_skip_reasons: for an objective that derives its units of evidence itself from
        what the export context offers (Recovery: CI transitions from CI outcomes and mirrors),
        its own closed vocabulary for evidence that did not become a unit, in a fixed order
        (yielded as :class:`NotDerived`, reported as ``<units>_skipped``). The registry puts the
        CI resolver's reasons in front, since such an objective resolves CI while deriving its
        units; its populations' vocabularies then start with the representation reasons alone.
        Empty (the default): the units are Rollouts the core derived.
    :param remedies: optional, per skip reason of its vocabulary (its own, or the core's it
        knows better in its context), one short line saying what would change it: a recipe, a
        setting, a missing ingest or mirror. When every unit of an export is skipped, the export
        ends with the dominant reason and its remedy (``nothing_written`` in the summary).
    :param prompt_buckets: its ``diagnose_evidence`` yields
        :class:`~sediment.plugin.PromptBucket` records (completions paired within exact-prompt
        buckets). ``sediment report dataset-diagnostics`` then gives it two sections,
        ``<name>_bucket_sparsity`` and ``<name>_near_duplicate_buckets`` (``-`` becomes ``_``),
        and a ``--<name>-near-duplicate-threshold`` option; an objective that does not declare
        it and yields a PromptBucket is refused.
    :param sessions_independent: for an objective with its own populations, its
        ``project_evidence`` reads one Session at a time (:meth:`~sediment.plugin.ExportContext.rollouts`
        or :meth:`~sediment.plugin.ExportContext.attributed_completions`, in order) and what it yields for a
        Session depends on that Session alone: no pairing, counting or budget across Sessions. An
        export with ``--workers`` N then projects contiguous runs of Sessions in N processes and
        concatenates their rows in export order, the same bytes as one process. Default off.
    """

    title: str
    unit: str
    units: str
    recipes: tuple[Recipe, ...]
    populations: Mapping[Population, PopulationInfo] = field(default_factory=dict)
    target_populations: Mapping[Population, str] = field(default_factory=dict)
    direct_needs_mirrors: bool = True
    from_needs_mirrors: bool = False
    supports_from: bool = True
    default_objective: bool = False
    description: str = ""
    help: str = ""
    unit_skip_reasons: tuple[str, ...] = ()
    remedies: Mapping[str, str] = field(default_factory=dict)
    prompt_buckets: bool = False
    sessions_independent: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "remedies", _check_remedies(self.remedies, f"objective {self.title}"))
        object.__setattr__(self, "recipes", tuple(self.recipes))
        object.__setattr__(self, "populations", dict(self.populations))
        object.__setattr__(self, "target_populations", dict(self.target_populations))
        object.__setattr__(self, "unit_skip_reasons", tuple(self.unit_skip_reasons))
        _check_reasons(self.unit_skip_reasons, f"objective {self.title} units")
        if self.sessions_independent and (self.target_populations or self.unit_skip_reasons):
            raise ValueError("sessions_independent is for an objective that projects Sessions' Rollouts or attributed "
                             "completions itself (its own populations, no unit_skip_reasons)")
        if self.unit_skip_reasons and self.target_populations:
            raise ValueError("an objective with targets projects Rollouts; only one without targets derives its "
                             "own units (unit_skip_reasons)")
        if not self.title.strip() or not self.unit.strip():
            raise ValueError("an objective declares its title and its unit of evidence")
        check_word(self.units, "units")
        if not self.recipes or any(not isinstance(r, Recipe) for r in self.recipes):
            raise ValueError("an objective declares at least one Recipe, the default first")
        names = [r.name for r in self.recipes]
        if len(set(names)) != len(names):
            raise ValueError(f"recipe names must be unique, got {names}")
        if bool(self.populations) == bool(self.target_populations):
            raise ValueError("an objective declares either its own populations or the populations of its targets")
        for name, info in self.populations.items():
            check_word(name, "a population name")
            if not isinstance(info, PopulationInfo):
                raise ValueError("each population is declared with a PopulationInfo")
        for name, label in self.target_populations.items():
            check_word(name, "a population name")
            check_word(label, f"the label of population {name}")
        if self.unit_skip_reasons and self.units in {self.label(p) for p in self.populations}:
            raise ValueError(f"units {self.units!r} is also a population's label: {self.units}_skipped would name "
                             "both vocabularies")
        reserved = sorted(set(self.population_names) & set(PROFILE_STEMS))
        if reserved:
            raise ValueError(f"populations {reserved} are the file stems of profile exports")

    @property
    def has_targets(self) -> bool:
        return bool(self.target_populations)

    @property
    def population_names(self) -> tuple[Population, ...]:
        """Every population it or its targets may write, in publication order."""
        return tuple(self.populations or self.target_populations)

    def label(self, population: Population) -> str:
        """The noun a population's rows are counted by (``task`` → ``task_rows``)."""
        if population in self.target_populations:
            return self.target_populations[population]
        return self.populations[population].label or population

    @property
    def default_recipe(self) -> Recipe:
        return self.recipes[0]

    def recipe(self, name: str | None) -> Recipe:
        """The recipe called ``name`` (the default for ``None``)."""
        if name is None:
            return self.default_recipe
        for recipe in self.recipes:
            if recipe.name == name:
                return recipe
        raise KeyError(name)


@dataclass(frozen=True)
class ProjectedRow:
    """One emitted row: its JSON body (keys in emitted order) and the side of the split it goes to.

    An objective that projects its own populations names the row's ``population`` (it may leave
    it out when it declares only one).
    """

    split: Split
    body: dict[str, Any] = field(repr=False)
    population: Population | None = None


@dataclass(frozen=True)
class Declined:
    """Evidence an objective without targets declined: ``count`` times one skip reason of a
    population's vocabulary (``population`` may be left out when the objective has one)."""

    reason: str
    count: int = 1
    population: Population | None = None

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ValueError(f"a Declined count is a positive integer, got {self.count!r}")


@dataclass(frozen=True)
class NotDerived:
    """Evidence that did not become a unit of an objective that derives its own units (for
    Recovery: a CI transition that is not a recovery pair): ``count`` times one reason of the
    objective's ``unit_skip_reasons`` (its ``<units>_skipped`` in the summary)."""

    reason: str
    count: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ValueError(f"a NotDerived count is a positive integer, got {self.count!r}")


@dataclass(frozen=True)
class Dependency:
    """A consumer package at the exact version a profile was validated against."""

    package: str
    version: str


#: How a profile orders its data rows (:attr:`ProfileInfo.row_order`).
PROFILE_ROW_ORDERS: tuple[str, ...] = ("export", "row_sha256")
#: The most encoded JSON (data rows plus evidence lines) a ``row_sha256``-ordered profile
#: export holds in memory: 64 MiB.
PROFILE_MATERIALIZATION_BUDGET = 64 * 1024 * 1024


@dataclass(frozen=True)
class ProfileInfo:
    """What a consumer profile declares (``describe_profile``): an immutable, versioned adapter
    from one canonical row population to the native input of one consumer release.

    The profile id is its plugin (entry-point) name, for example ``nemo-gym-rollouts-v2``.

    :param consumer: the consumer's name, e.g. ``nemo-gym``.
    :param version: the profile version; a different adaptation is a new profile id.
    :param target: the target whose rows it adapts; for an objective without targets (SFT,
        DPO), that objective itself (its name), whose own rows it adapts.
    :param population: which of that target's (or objective's) populations.
    :param canonical_schema: the ``$id`` of the canonical rows it reads (checked at start-up
        against the target's declaration, and per row before adaptation).
    :param validated_with: the consumer packages, at exact versions, whose own loaders and
        validators accept the rows in Sediment's test suite.
    :param validation: the consumer entry points those tests exercise, in words.
    :param support: the support claim, in words: what the rows are good for and what not.
    :param skip_reasons: the profile's own closed skip vocabulary, in a fixed order (the
        registry adds the representation reasons).
    :param retires: ids of earlier profiles this one replaces; asking for one names this one.
    :param description: one line for ``sediment profiles``.
    :param objective: the export objective whose rows it adapts; by default its target's.
    :param retirement_notes: for a retired id, what its users must do beyond asking for this
        profile (appended to the error), e.g. re-export evidence with a newer recipe.
    :param row_order: ``"export"`` (default): data rows in the canonical export order;
        ``"row_sha256"``: each data file sorted by the data row's SHA-256, then by its evidence
        line (the rows are held in memory up to :data:`PROFILE_MATERIALIZATION_BUDGET` bytes;
        ``adapt_row``'s ``index`` is then the row's position in export order).
    :param remedies: optional, per skip reason of its vocabulary (its own, or the core's it
        knows better in its context), one short line saying what would change it: a recipe, a
        setting, a missing ingest or mirror. When every unit of an export is skipped, the export
        ends with the dominant reason and its remedy (``nothing_written`` in the summary).
    :param native_schema: the ``$id`` of the schema its data rows (the consumer's native rows)
        obey, registered by a plugin (``register_schemas``). ``compatibility.json`` records it,
        and ``sediment schema validate`` checks a profile's data files against it. A native row
        never carries the canonical row's ``schema_id``: it is not that row.
    """

    consumer: str
    version: int
    target: str
    population: Population
    canonical_schema: str
    validated_with: tuple[Dependency, ...]
    validation: str
    support: str
    skip_reasons: tuple[str, ...] = ()
    retires: tuple[str, ...] = ()
    description: str = ""
    objective: str | None = None
    retirement_notes: Mapping[str, str] = field(default_factory=dict)
    row_order: str = "export"
    remedies: Mapping[str, str] = field(default_factory=dict)
    writes_directories: bool = False
    native_schema: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "remedies", _check_remedies(self.remedies, f"profile for {self.consumer}"))
        if self.writes_directories and self.row_order != "export":
            raise ValueError(f"profile for {self.consumer}: a profile that writes directories keeps row_order "
                             "'export'")
        for name in ("validated_with", "skip_reasons", "retires"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "retirement_notes", dict(self.retirement_notes))
        check_word(self.population, "a profile's population")
        _check_reasons(self.skip_reasons, f"profile for {self.consumer}")
        if self.row_order not in PROFILE_ROW_ORDERS:
            raise ValueError(f"profile for {self.consumer}: row_order must be one of {list(PROFILE_ROW_ORDERS)}, "
                             f"got {self.row_order!r}")
        stray = sorted(set(self.retirement_notes) - set(self.retires))
        if stray:
            raise ValueError(f"profile for {self.consumer}: retirement_notes name ids it does not retire: {stray}")

    def record(self, profile_id: str, objective: str | None = None) -> dict[str, Any]:
        """The profile record published in ``compatibility.json`` (``objective``: the one the
        registry resolved, when the profile names none)."""
        return {
            "id": profile_id,
            "consumer": self.consumer,
            "objective": self.objective or objective,
            "version": self.version,
            "target": self.target,
            "population": self.population,
            "canonical_schema": self.canonical_schema,
            "validated_with": [[d.package, d.version] for d in self.validated_with],
            "validation": self.validation,
            "support": self.support,
            **({"writes_directories": True} if self.writes_directories else {}),
            **({"native_schema": self.native_schema} if self.native_schema else {}),
        }


#: What a task directory's name must look like: one portable path component.
DIRECTORY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


@dataclass(frozen=True)
class TaskDirectory:
    """A directory of files a profile that ``writes_directories`` publishes for one row.

    :param name: the directory's name: one path component of letters, digits, ``.``, ``_`` and
        ``-``, starting with a letter or digit (at most 200 characters), unique in the export.
    :param files: relative POSIX path → content. No absolute path, no ``..`` or empty
        component, no path that is also another file's directory.
    :param executable: the paths among ``files`` published with mode 0777 less the umask (the others 0666 less it).
    """

    name: str
    files: Mapping[str, bytes] = field(repr=False)
    executable: frozenset[str] = frozenset()

    def problem(self) -> str | None:
        """Why the declaration cannot be published as it stands, or ``None``."""
        if not DIRECTORY_NAME.match(self.name):
            return f"directory name {self.name!r} is not one portable path component"
        if not self.files:
            return f"directory {self.name!r} has no files"
        parents: set[str] = set()
        for path, content in self.files.items():
            parts = path.split("/") if isinstance(path, str) else [""]
            if any(part in ("", ".", "..") or "\0" in part for part in parts):
                return f"directory {self.name!r}: file path {path!r} is not a relative POSIX path"
            if not isinstance(content, bytes):
                return f"directory {self.name!r}: content of {path!r} is not bytes"
            parents.update("/".join(parts[:i]) for i in range(1, len(parts)))
        clash = sorted(parents & set(self.files))
        if clash:
            return f"directory {self.name!r}: {clash[0]!r} is both a file and a directory"
        stray = sorted(set(self.executable) - set(self.files))
        if stray:
            return f"directory {self.name!r}: executable {stray[0]!r} is not one of its files"
        return None


@dataclass(frozen=True)
class AdaptedRow:
    """One consumer-native row a profile made from one canonical row.

    :param body: the native row, keys in emitted order.
    :param prompt: what a model is prompted with in this row; its digest must not appear on
        both sides of the split (a train row and an eval row with the same exact prompt stop
        the export).
    :param evidence: profile-specific evidence for the sidecar row (for example the inference
        call ids the row was hydrated from); plain JSON values.
    :param instance_id: the id the sidecar row names, for canonical rows that carry no
        ``instance_id`` (top level or in ``metadata``), e.g. an SFT row's completion id.
    :param directory: the row's :class:`TaskDirectory`: required from a profile that declares
        ``writes_directories``, refused from any other.
    """

    body: dict[str, Any] = field(repr=False)
    prompt: Any = field(repr=False)
    evidence: Mapping[str, Any] = field(default_factory=dict)
    instance_id: str | None = None
    directory: TaskDirectory | None = None


class IncompatibleRow(Exception):
    """Raised by ``adapt_row`` when one canonical row cannot be represented and the profile's
    claim is that every row of the population can (its consumer has no way to skip it): the
    export stops, nothing is published, and the message (one line) is shown with the profile id
    (exit code 9). A row the consumer can do without is declined with a skip reason instead."""


@dataclass(frozen=True)
class ManifestInfo:
    """What a manifest plugin declares (``describe_manifest``).

    :param files: every file name it may write into an output directory (a directory holding
        one of them belongs to an export).
    :param description: one line for ``sediment targets``.
    """

    files: tuple[str, ...]
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", tuple(self.files))
        if not self.files:
            raise ValueError("a manifest plugin declares the files it writes")


@dataclass
class PublishedExport:
    """What an export published, per file stem and split side, with row counts.

    ``target`` is the target whose rows were projected (for an objective without targets, the
    objective itself: its name); ``profile`` the consumer profile that adapted them, or
    ``None``; ``objective`` the objective exported. Stems are populations for a canonical export
    and ``data`` / ``evidence`` for a profile export.
    """

    out_dir: Path
    split_enabled: bool
    target: str
    profile: str | None = None
    files: dict[str, dict[Split | None, tuple[Path, int]]] = field(default_factory=dict)
    objective: str = ""
    #: the task directories a profile that writes directories published, in publication order
    directories: list[Path] = field(default_factory=list)

    def rows(self, stem: str) -> int:
        return sum(count for _, count in self.files.get(stem, {}).values())

    def paths(self, stem: str) -> list[Path]:
        return [path for path, _ in self.files.get(stem, {}).values()]

    def sides(self, stem: str) -> list[Split]:
        """The split sides published for ``stem``, train first (none when unsplit)."""
        present = self.files.get(stem, {})
        return [side for side in SPLIT_ORDER if side in present]

    @property
    def written(self) -> dict[str, int]:
        return {str(path): count for sides in self.files.values() for path, count in sides.values()}


@dataclass(frozen=True)
class ImporterInfo:
    """What an importer plugin declares (``describe_importer``).

    :param description: one line for listings.
    :param patterns: the file-name patterns (``fnmatch``) it reads when a directory is given.
    :param source_id: the ``source.source_id`` of the records it writes.
    """

    description: str
    patterns: tuple[str, ...]
    source_id: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "patterns", tuple(self.patterns))
        if not self.patterns:
            raise ValueError("an importer declares the file-name patterns it reads")
        if not self.source_id:
            raise ValueError("an importer declares its source_id")


def claim_file_name(objective: str) -> str:
    """``.sediment-<objective>-target``: the claim of an output directory."""
    return f".sediment-{objective}-target"
