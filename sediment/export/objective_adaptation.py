"""Consumer-profile exports of an objective without targets (SFT, DPO): the objective's own
rows of one population, adapted row by row.

The objective projects exactly as its canonical export does (the same declines, counted as
``canonical_skipped``); every representable row of the profile's population is validated
against the canonical schema and handed to the profile's ``adapt_row`` (with no Rollout:
``evidence`` is ``None``). Rows of the objective's other populations are not written. A kept
row goes to ``data[.train|.eval].jsonl`` with its evidence line in ``evidence[...]`` (as for
target profiles, :mod:`sediment.export.adaptation`); a profile declaring ``row_order =
"row_sha256"`` has each file sorted by the data row's SHA-256, then by its evidence line,
holding the adapted rows in memory within :data:`~sediment.export.rows.PROFILE_MATERIALIZATION_BUDGET`
bytes. The exact-prompt check between train and eval, ``compatibility.json`` and the summary
are the target profiles' own.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sediment.errors import CapacityError, PluginError
from sediment.export.adaptation import (
    CANONICAL,
    PROFILE,
    ProfileProjection,
    evidence_row,
    profile_summary,
    refuse_prompt_overlap,
    row_field,
)
from sediment.export.projection import UNITS_TALLY, ObjectiveProjection, Tally, ordered_counts
from sediment.export.registry import Objective, Profile
from sediment.export.representation import representation_problem
from sediment.export.rows import PROFILE_MATERIALIZATION_BUDGET, Declined, ProjectedRow, PublishedExport
from sediment.export.settings import PluginSettings
from sediment.export.writer import PROFILE_CLAIM_PREFIX, RowFiles, encode_row
from sediment.records import canonical_digest, canonical_json
from sediment.validation import SchemaSet


class _Held:
    """The adapted rows of a ``row_sha256``-ordered export, with their encoded size."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.bytes = 0
        self.rows: list[tuple[str, str, str, dict[str, Any], dict[str, Any]]] = []

    def add(self, split: str, body: dict[str, Any], sidecar: dict[str, Any]) -> None:
        self.bytes += len(encode_row(body)) + len(encode_row(sidecar))
        if self.bytes > self.budget:
            raise CapacityError(f"consumer profile materialization exceeds byte budget ({self.budget} bytes); "
                                "nothing was published")
        self.rows.append((split, sidecar["row_sha256"], canonical_json(sidecar), body, sidecar))

    def sorted(self) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        return [(split, body, sidecar) for split, _, _, body, sidecar in sorted(self.rows, key=lambda r: r[:3])]


class ObjectiveProfileProjection(ObjectiveProjection):
    """A profile export of an objective without targets."""

    def __init__(self, objective: Objective, objective_settings: PluginSettings, profile: Profile,
                 settings: PluginSettings, schemas: SchemaSet, *, split_enabled: bool,
                 budget: int | None = None) -> None:
        super().__init__(objective, objective_settings)
        self.profile = profile
        self.profile_settings = settings
        self.schemas = schemas
        self.split_enabled = split_enabled
        self.claim = PROFILE_CLAIM_PREFIX + profile.name
        self.population = profile.info.population
        self.schema_id = profile.info.canonical_schema
        self.stems = ProfileProjection.stems
        self.budget = PROFILE_MATERIALIZATION_BUDGET if budget is None else budget
        self._positions: Counter[str] = Counter()
        self._read: Counter[str] = Counter()

    def run(self, context: Any, files: RowFiles, tally: Tally) -> None:
        """Adapt every representable canonical row of the population the objective yields."""
        held = _Held(self.budget) if self.profile.info.row_order == "row_sha256" else None
        for item in self.objective.project(context, self.settings):
            if isinstance(item, ProjectedRow):
                population = self._population(item.population, "row")
                if item.split not in ("train", "eval") or not isinstance(item.body, dict):
                    raise PluginError(f"objective {self.objective.name!r} yielded a {population} row without a "
                                      "train/eval split or a JSON object body")
                if population != self.population:
                    continue
                problem = representation_problem(item.body)
                if problem is not None:
                    self.objective.count(tally.skips(CANONICAL), population, [problem])
                    continue
                self._adapt(item, files, tally, held)
            elif isinstance(item, Declined):
                population = self._population(item.population, "decline")
                if population == self.population:
                    self.objective.count(tally.skips(CANONICAL), population, [item.reason] * item.count)
            else:
                self.count_not_derived(item, tally)
        if held is not None:
            for split, body, sidecar in held.sorted():
                files.add("data", split, body)  # type: ignore[arg-type]
                files.add("evidence", split, sidecar)  # type: ignore[arg-type]

    def _adapt(self, row: ProjectedRow, files: RowFiles, tally: Tally, held: _Held | None) -> None:
        problems = self.schemas.errors(row.body, self.schema_id)
        if problems:
            raise PluginError(f"objective {self.objective.name!r} emitted a {self.population} row that violates "
                              f"{self.schema_id}: {problems[0]}")
        named = row_field(row.body, "split")
        if named is not None and named != row.split:
            raise PluginError(f"objective {self.objective.name!r} routed a {self.population} row to {row.split} whose "
                              f"split field says {named!r}")
        tally.emitted[CANONICAL] += 1
        side = row.split if self.split_enabled else "all"
        adapted = self.profile.adapt(row.body, None, self.profile_settings, self._read[side])
        self._read[side] += 1
        if isinstance(adapted, str):
            self.profile.count(tally.skips(PROFILE), [adapted])
            return
        problem = representation_problem(adapted.body) or representation_problem(
            {"prompt": adapted.prompt, "evidence": dict(adapted.evidence)})
        if problem is not None:
            self.profile.count(tally.skips(PROFILE), [problem])
            return
        prompt_sha256 = canonical_digest({"prompt": adapted.prompt})
        sidecar = evidence_row(self.profile.name, row.body, self.schema_id, adapted, row.split, prompt_sha256)
        if sidecar["instance_id"] is None:
            raise PluginError(f"profile {self.profile.name!r} adapted a row without an instance_id and named none "
                              "(AdaptedRow.instance_id)")
        if held is not None:
            held.add(row.split, adapted.body, sidecar)
        else:
            files.add("data", row.split, adapted.body)
            files.add("evidence", row.split, sidecar)
        self._positions[side] += 1
        tally.emitted["data"] += 1
        tally.prompts.setdefault(side, set()).add(prompt_sha256)
        tally.reward_sources[row_field(row.body, "reward_source") or "absent"] += 1

    def before_publish(self, tally: Tally) -> None:
        refuse_prompt_overlap(tally)

    def summary(self, units: int, tally: Tally, published: PublishedExport) -> dict[str, Any]:
        units_key = self.objective.info.units
        summary = profile_summary(self.profile, self.profile_settings, self.objective.name, units_key, units, tally,
                                  self._positions, self.objective.vocabularies[self.population], published)
        summary = {"objective": self.objective.name, **summary}
        if self.objective.unit_vocabulary:
            summary[f"{units_key}_skipped"] = ordered_counts(tally.skips(UNITS_TALLY), self.objective.unit_vocabulary)
        return summary
