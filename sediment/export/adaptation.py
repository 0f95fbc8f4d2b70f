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
from typing import Any

from sediment.errors import PluginError, ProfileError
from sediment.export.evidence import RolloutEvidence
from sediment.export.projection import Tally, ordered_counts, project_population
from sediment.export.registry import COMPATIBILITY_FILE, Objective, Profile, Target
from sediment.export.representation import representation_problem
from sediment.export.rows import AdaptedRow, PublishedExport
from sediment.export.settings import PluginSettings
from sediment.export.writer import PROFILE_CLAIM_PREFIX, RowFiles, atomic_write_bytes
from sediment.records import canonical_digest, canonical_json
from sediment.validation import SchemaSet

EVIDENCE_SCHEMA_ID = "https://sediment.so/schemas/profile-rows/profile-evidence/v1.json"
EVIDENCE_SCHEMA_VERSION = 1
CANONICAL = "canonical"
PROFILE = "profile"


def row_field(row: Any, key: str) -> Any:
    """A canonical row's field at top level, else under ``metadata`` (NeMo-shaped rows)."""
    if key in row:
        return row[key]
    metadata = row.get("metadata")
    return metadata.get(key) if isinstance(metadata, dict) else None


def evidence_row(profile: str, canonical: dict[str, Any], schema_id: str, adapted: AdaptedRow,
                 split: str, prompt_sha256: str) -> dict[str, Any]:
    """The sidecar line of one data line (keys in this order)."""
    return {
        "profile": profile,
        "instance_id": row_field(canonical, "instance_id") or adapted.instance_id,
        "split": split,
        "row_sha256": canonical_digest(adapted.body),
        "source_row_sha256": canonical_digest(canonical),
        "canonical_schema": schema_id,
        "prompt_sha256": prompt_sha256,
        "evidence": dict(adapted.evidence),
        "schema_id": EVIDENCE_SCHEMA_ID,
        "schema_version": EVIDENCE_SCHEMA_VERSION,
    }


class ProfileProjection:
    """A profile export: the target's rows of one population, adapted row by row."""

    parallel_safe = False  # adapted rows carry their position in their file
    stems: tuple[str, ...] = ("data", "evidence")

    def __init__(self, target: Target, target_settings: PluginSettings, profile: Profile,
                 settings: PluginSettings, schemas: SchemaSet, *, split_enabled: bool, objective: Objective) -> None:
        self.target = target
        self.objective = objective
        self.target_settings = target_settings
        self.profile = profile
        self.settings = settings
        self.schemas = schemas
        self.split_enabled = split_enabled
        self.claim = PROFILE_CLAIM_PREFIX + profile.name
        self.population = profile.info.population
        self.schema_id = profile.info.canonical_schema
        self._positions: Counter[str] = Counter()

    def project(self, evidence: RolloutEvidence, files: RowFiles, tally: Tally) -> None:
        rows = project_population(self.target, self.population, evidence, self.target_settings,
                                  tally.skips(CANONICAL))
        for row in rows:
            problems = self.schemas.errors(row.body, self.schema_id)
            if problems:
                raise PluginError(f"target {self.target.name!r} emitted a {self.population} row that violates "
                                  f"{self.schema_id}: {problems[0]}")
            tally.emitted[CANONICAL] += 1
            side = row.split if self.split_enabled else "all"
            adapted = self.profile.adapt(row.body, evidence, self.settings, self._positions[side])
            if isinstance(adapted, str):
                self.profile.count(tally.skips(PROFILE), [adapted])
                continue
            problem = representation_problem(adapted.body) or representation_problem(
                {"prompt": adapted.prompt, "evidence": dict(adapted.evidence)})
            if problem is not None:
                self.profile.count(tally.skips(PROFILE), [problem])
                continue
            prompt_sha256 = canonical_digest({"prompt": adapted.prompt})
            sidecar = evidence_row(self.profile.name, row.body, self.schema_id, adapted, row.split, prompt_sha256)
            files.add("data", row.split, adapted.body)
            files.add("evidence", row.split, sidecar)
            self._positions[side] += 1
            tally.emitted["data"] += 1
            tally.prompts.setdefault(side, set()).add(prompt_sha256)
            tally.reward_sources[row_field(row.body, "reward_source") or "absent"] += 1

    def before_publish(self, tally: Tally) -> None:
        refuse_prompt_overlap(tally)

    def summary(self, rollouts: int, tally: Tally, published: PublishedExport) -> dict[str, Any]:
        return profile_summary(self.profile, self.settings, self.target.name, self.objective.info.units, rollouts,
                               tally, self._positions, self.target.vocabularies[self.population], published)


def refuse_prompt_overlap(tally: Tally) -> None:
    """Refuse an export whose train and eval rows share an exact prompt."""
    overlap = len(tally.prompts.get("train", set()) & tally.prompts.get("eval", set()))
    if overlap:
        raise ProfileError(f"consumer export has {overlap} exact prompts in both train and eval; "
                           "nothing was published (select a coherent cohort, or derive with another split)")


def profile_summary(profile: Profile, settings: PluginSettings, owner: str, units_key: str, units: int,
                    tally: Tally, positions: Counter[str], canonical_vocabulary: tuple[str, ...],
                    published: PublishedExport) -> dict[str, Any]:
    """The summary of a profile export (``owner``: the target, or the objective without targets,
    whose rows were adapted); writes ``compatibility.json`` when rows were published."""
    summary: dict[str, Any] = {
        "profile": profile.name,
        "target": owner,
        units_key: units,
        "rows": tally.emitted["data"],
        "skipped": ordered_counts(tally.skips(PROFILE), profile.vocabulary),
        "canonical_rows": tally.emitted[CANONICAL],
        "canonical_skipped": ordered_counts(tally.skips(CANONICAL), canonical_vocabulary),
        "diagnostics": {
            "rows_by_split": {side: count for side in ("train", "eval", "all") if (count := positions[side])},
            "reward_sources": dict(sorted(tally.reward_sources.items())),
            "exact_prompt_overlap": 0,
            "semantic_task_overlap": "not_assessed",
        },
        "compatibility": None,
    }
    if published.rows("data"):
        summary["compatibility"] = str(write_compatibility(published, profile, settings, summary))
    return summary


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
    path = published.out_dir / COMPATIBILITY_FILE
    atomic_write_bytes(path, (canonical_json(document) + "\n").encode("ascii"))
    os.chmod(path, 0o600)
    return path


def read_compatibility(directory: Path) -> dict[str, Any]:
    """The ``compatibility.json`` of a profile export directory."""
    loaded: dict[str, Any] = json.loads((directory / COMPATIBILITY_FILE).read_text(encoding="ascii"))
    return loaded
