"""Consumer-profile exports: canonical rows adapted to one consumer release, with evidence.

For each canonical row of the profile's population (projected by its target exactly as a
target export would, then validated against the canonical schema), the profile returns a
native row or a skip reason. Each kept row goes to ``data[.train|.eval].jsonl`` and one
evidence line to ``evidence[.train|.eval].jsonl`` (same file, same line number) linking it
to its canonical row: the SHA-256 of both rows' canonical JSON, the canonical schema, the
instance id and the prompt digest. Before publication, a prompt that occurs on both sides of
the split stops the export (nothing is published). After it, ``compatibility.json`` records
the profile, the consumer versions it was validated with, row counts, skip tallies and
diagnostics.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any, Protocol

from sediment.errors import PluginError, ProfileError
from sediment.evidence.representation import representation_problem
from sediment.evidence.rollout import RolloutEvidence
from sediment.export.projection import Tally, ordered_counts, project_population
from sediment.export.task_directories import tree_record
from sediment.export.writer import PROFILE_CLAIM_PREFIX, RowFiles, atomic_write_bytes
from sediment.host.declarations import AdaptedRow, ProjectedRow, PublishedExport, TaskDirectory
from sediment.host.kinds import COMPATIBILITY_FILE, Objective, Profile, Target
from sediment.records import canonical_digest, canonical_json
from sediment.settings import PluginSettings
from sediment.split import Split
from sediment.validation import SchemaSet

EVIDENCE_SCHEMA_ID = "https://sediment.so/schemas/profile-rows/profile-evidence/v1.json"
EVIDENCE_SCHEMA_VERSION = 1
CANONICAL = "canonical"
PROFILE = "profile"


def row_field(row: Any, key: str, under: str = "") -> Any:
    """A canonical row's field at top level, else in the object at ``under`` (the population's
    declared ``PopulationInfo.fields_under``; empty: top level only)."""
    if key in row:
        return row[key]
    holder = row.get(under) if under else None
    return holder.get(key) if isinstance(holder, dict) else None


def evidence_row(profile: str, canonical: dict[str, Any], schema_id: str, adapted: AdaptedRow,
                 split: str, prompt_sha256: str, *, fields_under: str = "") -> dict[str, Any]:
    """The sidecar line of one data line (keys in this order)."""
    return {
        "profile": profile,
        "instance_id": row_field(canonical, "instance_id", fields_under) or adapted.instance_id,
        "split": split,
        "row_sha256": canonical_digest(adapted.body),
        "source_row_sha256": canonical_digest(canonical),
        "canonical_schema": schema_id,
        "prompt_sha256": prompt_sha256,
        "evidence": dict(adapted.evidence),
        "schema_id": EVIDENCE_SCHEMA_ID,
        "schema_version": EVIDENCE_SCHEMA_VERSION,
    }


class ProfileFiles:
    """The ``data`` and ``evidence`` files of a profile export: a kept row and its evidence line
    go to the same side of the split, at the same line (and its task directory, for a profile
    that writes directories, to that side's folder)."""

    def __init__(self, files: RowFiles) -> None:
        self.files = files

    def add(self, split: Split, body: dict[str, Any], sidecar: dict[str, Any],
            directory: TaskDirectory | None = None) -> None:
        if directory is not None:
            self.files.add_directory(sidecar["profile"], split, directory)
        self.files.add("data", split, body)
        self.files.add("evidence", split, sidecar)


class AdaptedRows(Protocol):
    """Where :class:`RowAdaptation` puts a kept row and its evidence line: the files, or rows
    held to be ordered before they are written."""

    def add(self, split: Split, body: dict[str, Any], sidecar: dict[str, Any],
            directory: TaskDirectory | None = None) -> None: ...


class RowAdaptation:
    """One profile adapting canonical rows of its population, row by row: the step every
    profile export shares, whoever emitted the rows (a target, :class:`ProfileProjection`, or
    an objective without targets,
    :class:`~sediment.export.objective_adaptation.ObjectiveProfileProjection`).

    ``owner`` names the emitter in errors (``target 'nemo-gym'``). :meth:`validate` checks a
    canonical row against the profile's canonical schema; :meth:`adapt` counts it, hands it to
    the profile, declines an unrepresentable result, links a kept row to its evidence line,
    stages both and counts them (rows per side, prompt digests, reward sources); :meth:`summary`
    is the export's summary and writes ``compatibility.json``.
    """

    def __init__(self, profile: Profile, settings: PluginSettings, schemas: SchemaSet, *, owner: str,
                 split_enabled: bool, fields_under: str = "") -> None:
        self.profile = profile
        #: where the population's rows keep Sediment's own fields besides the top level
        self.fields_under = fields_under
        self.settings = settings
        self.schemas = schemas
        self.owner = owner
        self.split_enabled = split_enabled
        self.population = profile.info.population
        self.schema_id = profile.info.canonical_schema
        #: kept rows per split side (``train``/``eval``, or ``all`` without a split)
        self.positions: Counter[str] = Counter()

    def side(self, split: str) -> str:
        """The side of the split a row's file is on: ``all`` when the export writes one file."""
        return split if self.split_enabled else "all"

    def validate(self, row: ProjectedRow) -> None:
        """Refuse a canonical row that violates the profile's canonical schema (a plugin bug)."""
        problems = self.schemas.errors(row.body, self.schema_id)
        if problems:
            raise PluginError(f"{self.owner} emitted a {self.population} row that violates {self.schema_id}: "
                              f"{problems[0]}")

    def adapt(self, row: ProjectedRow, evidence: RolloutEvidence | None, index: int, rows: AdaptedRows,
              tally: Tally) -> None:
        """Adapt one validated canonical row (``index``: what the profile is told of its position);
        a kept row and its evidence line go to ``rows``."""
        tally.emitted[CANONICAL] += 1
        adapted = self.profile.adapt(row.body, evidence, self.settings, index)
        if isinstance(adapted, str):
            self.profile.count(tally.skips(PROFILE), [adapted])
            return
        problem = representation_problem(adapted.body) or representation_problem(
            {"prompt": adapted.prompt, "evidence": dict(adapted.evidence)})
        if problem is not None:
            self.profile.count(tally.skips(PROFILE), [problem])
            return
        prompt_sha256 = canonical_digest({"prompt": adapted.prompt})
        sidecar = evidence_row(self.profile.name, row.body, self.schema_id, adapted, row.split, prompt_sha256,
                               fields_under=self.fields_under)
        if sidecar["instance_id"] is None:
            raise PluginError(f"profile {self.profile.name!r} adapted a row without an instance_id and named none "
                              "(AdaptedRow.instance_id)")
        if (adapted.directory is None) == self.profile.info.writes_directories:
            raise PluginError(f"profile {self.profile.name!r} " + (
                "declares writes_directories but adapted a row without a directory (AdaptedRow.directory)"
                if adapted.directory is None else "returned a directory but does not declare writes_directories"))
        rows.add(row.split, adapted.body, sidecar, adapted.directory)
        side = self.side(row.split)
        self.positions[side] += 1
        tally.emitted["data"] += 1
        tally.prompts.setdefault(side, set()).add(prompt_sha256)
        tally.reward_sources[row_field(row.body, "reward_source", self.fields_under) or "absent"] += 1

    def summary(self, owner: str, units_key: str, units: int, tally: Tally, canonical_vocabulary: tuple[str, ...],
                published: PublishedExport) -> dict[str, Any]:
        """The summary of the export (``owner``: the name of the target, or of the objective
        without targets, whose rows were adapted); writes ``compatibility.json`` when rows were
        published."""
        summary: dict[str, Any] = {
            "profile": self.profile.name,
            "target": owner,
            units_key: units,
            "rows": tally.emitted["data"],
            "skipped": ordered_counts(tally.skips(PROFILE), self.profile.vocabulary),
            "canonical_rows": tally.emitted[CANONICAL],
            "canonical_skipped": ordered_counts(tally.skips(CANONICAL), canonical_vocabulary),
            "diagnostics": {
                "rows_by_split": {side: count for side in ("train", "eval", "all") if (count := self.positions[side])},
                "reward_sources": dict(sorted(tally.reward_sources.items())),
                "exact_prompt_overlap": 0,
                "semantic_task_overlap": "not_assessed",
            },
            "compatibility": None,
        }
        if published.rows("data"):
            summary["compatibility"] = str(write_compatibility(published, self.profile, self.settings, summary))
        return summary


class ProfileProjection:
    """A profile export: the target's rows of one population, adapted row by row."""

    parallel_safe = False  # adapted rows carry their position in their file
    stems: tuple[str, ...] = ("data", "evidence")

    def __init__(self, target: Target, target_settings: PluginSettings, profile: Profile,
                 settings: PluginSettings, schemas: SchemaSet, *, split_enabled: bool, objective: Objective) -> None:
        self.target = target
        self.objective = objective
        self.target_settings = target_settings
        self.claim = PROFILE_CLAIM_PREFIX + profile.name
        population = profile.info.population
        self.adaptation = RowAdaptation(profile, settings, schemas, owner=f"target {target.name!r}",
                                        split_enabled=split_enabled,
                                        fields_under=target.info.populations[population].fields_under)

    def project(self, evidence: RolloutEvidence, files: RowFiles, tally: Tally) -> None:
        adaptation = self.adaptation
        rows = project_population(self.target, adaptation.population, evidence, self.target_settings,
                                  tally.skips(CANONICAL))
        for row in rows:
            adaptation.validate(row)
            index = adaptation.positions[adaptation.side(row.split)]
            adaptation.adapt(row, evidence, index, ProfileFiles(files), tally)

    def before_publish(self, tally: Tally) -> None:
        refuse_prompt_overlap(tally)

    def summary(self, rollouts: int, tally: Tally, published: PublishedExport) -> dict[str, Any]:
        return self.adaptation.summary(self.target.name, self.objective.info.units, rollouts, tally,
                                       self.target.vocabularies[self.adaptation.population], published)


def refuse_prompt_overlap(tally: Tally) -> None:
    """Refuse an export whose train and eval rows share an exact prompt."""
    overlap = len(tally.prompts.get("train", set()) & tally.prompts.get("eval", set()))
    if overlap:
        raise ProfileError(f"consumer export has {overlap} exact prompts in both train and eval; "
                           "nothing was published (select a coherent cohort, or derive with another split)")


def _file_record(path: Path, rows: int) -> dict[str, Any]:
    import hashlib

    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return {"bytes": os.stat(path).st_size, "rows": rows, "sha256": digest.hexdigest()}


def write_compatibility(published: PublishedExport, profile: Profile, settings: PluginSettings,
                        summary: dict[str, Any]) -> Path:
    """``compatibility.json``: sorted compact JSON, mode 0600, written atomically."""
    files = {path.name: _file_record(path, rows)
             for sides in published.files.values() for path, rows in sides.values()}
    document = {
        "profile": profile.record(),
        "settings": settings.model_dump(mode="json"),
        "target": profile.info.target,
        "rows": summary["rows"],
        "skipped": summary["skipped"],
        "canonical_rows": summary["canonical_rows"],
        "canonical_skipped": summary["canonical_skipped"],
        "diagnostics": summary["diagnostics"],
        "files": files,
        "training_execution": "not_run",
    }
    if published.directories:
        document["directories"] = {path.relative_to(published.out_dir).as_posix(): tree_record(path)
                                   for path in published.directories}
    path = published.out_dir / COMPATIBILITY_FILE
    atomic_write_bytes(path, (canonical_json(document) + "\n").encode("ascii"))
    return path


def read_compatibility(directory: Path) -> dict[str, Any]:
    """The ``compatibility.json`` of a profile export directory."""
    loaded: dict[str, Any] = json.loads((directory / COMPATIBILITY_FILE).read_text(encoding="ascii"))
    return loaded
