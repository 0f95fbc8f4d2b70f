"""The values that cross the plugin boundary: what plugins declare, and what they return.

Targets declare a :class:`TargetInfo`, profiles a :class:`ProfileInfo`, manifest writers a
:class:`ManifestInfo`. Targets return :class:`ProjectedRow` lists; profiles return an
:class:`AdaptedRow` or a skip reason. Published files are described by
:class:`PublishedExport`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sediment.split import Split

#: RLVR row populations. Each is published as ``<population>.jsonl`` (or its split files).
Population = Literal["tasks", "rollouts"]
POPULATIONS: tuple[Population, ...] = ("tasks", "rollouts")
SPLIT_ORDER: tuple[Split, ...] = ("train", "eval")

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


@dataclass(frozen=True)
class PopulationInfo:
    """One population a target writes.

    :param schema_id: the ``$id`` of the JSON Schema every row of it validates against; the
        schema is registered by a plugin (``register_schemas``), usually the target itself.
    :param skip_reasons: the target's own reasons for declining a Rollout, in a fixed order.
        The registry puts the core's reasons first (CI resolver, then representation).
    """

    schema_id: str
    skip_reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "skip_reasons", tuple(self.skip_reasons))
        _check_reasons(self.skip_reasons, f"population {self.schema_id}")


@dataclass(frozen=True)
class TargetInfo:
    """What a target declares about itself (``describe_target``).

    :param populations: the row populations it writes, in publication order (``tasks``
        before ``rollouts``).
    :param needs_mirrors: whether projection reads repository mirrors (reference patches).
    :param description: one line for ``sediment targets``.
    """

    populations: Mapping[Population, PopulationInfo]
    needs_mirrors: bool
    description: str = ""

    def __post_init__(self) -> None:
        unknown = set(self.populations) - set(POPULATIONS)
        if unknown or not self.populations:
            raise ValueError(f"populations must be a non-empty subset of {POPULATIONS}, got {sorted(unknown)}")
        if any(not isinstance(p, PopulationInfo) for p in self.populations.values()):
            raise ValueError("each population is declared with a PopulationInfo")


@dataclass(frozen=True)
class ProjectedRow:
    """One emitted row: its JSON body (keys in emitted order) and the side of the split it goes to."""

    split: Split
    body: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class Dependency:
    """A consumer package at the exact version a profile was validated against."""

    package: str
    version: str


@dataclass(frozen=True)
class ProfileInfo:
    """What a consumer profile declares (``describe_profile``): an immutable, versioned adapter
    from one canonical row population to the native input of one consumer release.

    The profile id is its plugin (entry-point) name, for example ``nemo-gym-rollouts-v2``.

    :param consumer: the consumer's name, e.g. ``nemo-gym``.
    :param version: the profile version; a different adaptation is a new profile id.
    :param target: the target whose rows it adapts.
    :param population: which of that target's populations.
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
    :param objective: the export objective whose rows it adapts (``rlvr``: ``sediment export rlvr``).
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
    objective: str = "rlvr"

    def __post_init__(self) -> None:
        for name in ("validated_with", "skip_reasons", "retires"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.population not in POPULATIONS:
            raise ValueError(f"population must be one of {POPULATIONS}, got {self.population!r}")
        _check_reasons(self.skip_reasons, f"profile for {self.consumer}")

    def record(self, profile_id: str) -> dict[str, Any]:
        """The profile record published in ``compatibility.json``."""
        return {
            "id": profile_id,
            "consumer": self.consumer,
            "objective": self.objective,
            "version": self.version,
            "target": self.target,
            "population": self.population,
            "canonical_schema": self.canonical_schema,
            "validated_with": [[d.package, d.version] for d in self.validated_with],
            "validation": self.validation,
            "support": self.support,
        }


@dataclass(frozen=True)
class AdaptedRow:
    """One consumer-native row a profile made from one canonical row.

    :param body: the native row, keys in emitted order.
    :param prompt: what a model is prompted with in this row; its digest must not appear on
        both sides of the split (a train row and an eval row with the same exact prompt stop
        the export).
    :param evidence: profile-specific evidence for the sidecar row (for example the inference
        call ids the row was hydrated from); plain JSON values.
    """

    body: dict[str, Any] = field(repr=False)
    prompt: Any = field(repr=False)
    evidence: Mapping[str, Any] = field(default_factory=dict)


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

    ``target`` is the target whose rows were projected; ``profile`` the consumer profile that
    adapted them, or ``None`` for a target export. Stems are populations for a target export
    and ``data`` / ``evidence`` for a profile export.
    """

    out_dir: Path
    split_enabled: bool
    target: str
    profile: str | None = None
    files: dict[str, dict[Split | None, tuple[Path, int]]] = field(default_factory=dict)

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
