"""Consumer-profile exports of an objective without targets (SFT, DPO): the objective's own
rows of one population, adapted row by row.

The objective projects exactly as its canonical export does
(:meth:`~sediment.export.projection.ObjectiveProjection.representable_rows`: the same checks
and declines, counted as ``canonical_skipped``); every representable row of the profile's
population goes through the step target profiles take
(:class:`~sediment.export.adaptation.RowAdaptation`: validated against the canonical schema,
handed to the profile's ``adapt_row`` with no Rollout, ``evidence`` ``None``, and kept with its
evidence line). Rows of the objective's other populations are not written. A profile
declaring ``row_order = "row_sha256"`` has each file sorted by the data row's SHA-256, then by
its evidence line, holding the adapted rows in memory within
:data:`~sediment.host.declarations.PROFILE_MATERIALIZATION_BUDGET` bytes. The exact-prompt check
between train and eval, ``compatibility.json`` and the summary are the target profiles' own.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sediment.errors import CapacityError, PluginError
from sediment.export.adaptation import (
    CANONICAL,
    ProfileFiles,
    ProfileProjection,
    RowAdaptation,
    refuse_prompt_overlap,
    row_field,
)
from sediment.export.projection import UNITS_TALLY, ObjectiveProjection, Tally, ordered_counts
from sediment.export.writer import PROFILE_CLAIM_PREFIX, RowFiles, encode_row
from sediment.host.declarations import PROFILE_MATERIALIZATION_BUDGET, ProjectedRow, PublishedExport, TaskDirectory
from sediment.host.kinds import Objective, Profile
from sediment.records import canonical_json
from sediment.settings import PluginSettings
from sediment.split import Split
from sediment.validation import SchemaSet


class _Held:
    """The adapted rows of a ``row_sha256``-ordered export, with their encoded size."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.bytes = 0
        self.rows: list[tuple[Split, str, str, dict[str, Any], dict[str, Any]]] = []

    def add(self, split: Split, body: dict[str, Any], sidecar: dict[str, Any],
            directory: TaskDirectory | None = None) -> None:
        assert directory is None  # ProfileInfo refuses row_order "row_sha256" with writes_directories
        self.bytes += len(encode_row(body)) + len(encode_row(sidecar))
        if self.bytes > self.budget:
            raise CapacityError(f"consumer profile materialization exceeds byte budget ({self.budget} bytes); "
                                "nothing was published")
        self.rows.append((split, sidecar["row_sha256"], canonical_json(sidecar), body, sidecar))

    def write(self, rows: ProfileFiles) -> None:
        """Write the held rows in their order: side of the split, data row digest, evidence line."""
        for split, _, _, body, sidecar in sorted(self.rows, key=lambda r: r[:3]):
            rows.add(split, body, sidecar)


class ObjectiveProfileProjection(ObjectiveProjection):
    """A profile export of an objective without targets."""

    def __init__(self, objective: Objective, objective_settings: PluginSettings, profile: Profile,
                 settings: PluginSettings, schemas: SchemaSet, *, split_enabled: bool,
                 budget: int | None = None) -> None:
        super().__init__(objective, objective_settings)
        self.parallel_safe = False  # an adapted row carries its position in its file
        self.profile = profile
        self.claim = PROFILE_CLAIM_PREFIX + profile.name
        self.stems = ProfileProjection.stems
        self.budget = PROFILE_MATERIALIZATION_BUDGET if budget is None else budget
        population = profile.info.population
        self.adaptation = RowAdaptation(profile, settings, schemas, owner=f"objective {objective.name!r}",
                                        split_enabled=split_enabled,
                                        fields_under=objective.info.populations[population].fields_under)
        self._read: Counter[str] = Counter()

    def run(self, context: Any, files: RowFiles, tally: Tally) -> None:
        """Adapt every representable canonical row of the population the objective yields."""
        wanted = self.adaptation.population

        def canonical_skips(population: str) -> Counter[str] | None:  # the other populations are not written
            return tally.skips(CANONICAL) if population == wanted else None

        held = _Held(self.budget) if self.profile.info.row_order == "row_sha256" else None
        rows = ProfileFiles(files)
        for _, row in self.representable_rows(context, tally, canonical_skips):
            self._adapt(row, rows if held is None else held, tally)
        if held is not None:
            held.write(rows)

    def _adapt(self, row: ProjectedRow, rows: ProfileFiles | _Held, tally: Tally) -> None:
        adaptation = self.adaptation
        adaptation.validate(row)
        named = row_field(row.body, "split", adaptation.fields_under)
        if named is not None and named != row.split:
            raise PluginError(f"objective {self.objective.name!r} routed a {adaptation.population} row to {row.split} "
                              f"whose split field says {named!r}")
        side = adaptation.side(row.split)
        index = self._read[side]
        self._read[side] += 1
        adaptation.adapt(row, None, index, rows, tally)

    def before_publish(self, tally: Tally) -> None:
        refuse_prompt_overlap(tally)

    def summary(self, units: int, tally: Tally, published: PublishedExport) -> dict[str, Any]:
        units_key = self.objective.info.units
        summary = self.adaptation.summary(self.objective.name, units_key, units, tally,
                                          self.objective.vocabularies[self.adaptation.population], published)
        summary = {"objective": self.objective.name, **summary}
        if self.objective.unit_vocabulary:
            summary[f"{units_key}_skipped"] = ordered_counts(tally.skips(UNITS_TALLY), self.objective.unit_vocabulary)
        return summary
