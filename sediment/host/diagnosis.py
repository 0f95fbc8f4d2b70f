"""What an objective tells the dataset-diagnostics report about its dataset (``diagnose_evidence``).

The report (:mod:`sediment.reports.dataset_diagnostics`) never looks inside an objective: an
objective that implements the ``diagnose_evidence`` hook yields these records over the same
evidence and recipe an export would read, and the report aggregates them. The records name
label sources, models, prompts and Confidence values, never an objective:

- :class:`DiagnosedRow`: one row the objective would write (its id, model, split, prompt,
  label sources and the Confidence values the report summarizes);
- :class:`PromptBucket`: one group of completions answering one exact prompt before pairing
  (an objective whose rows pair completions of one prompt yields one per bucket holding at
  least one labelled member);
- :class:`FloorCandidate`: one unit that passed every check but the Confidence floor, with its
  Confidence (the floor-exclusion section counts how many the floor removes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, order=True)
class Stratum:
    """The label sources a row, bucket or candidate is grouped under (``None``: not applicable):
    a pair's ``chosen_label_source`` and ``rejected_label_source``, a sample's ``eligibility_source``."""

    chosen_label_source: str | None = None
    rejected_label_source: str | None = None
    eligibility_source: str | None = None

    @property
    def sort_key(self) -> tuple[str, str, str]:
        return (self.chosen_label_source or "", self.rejected_label_source or "", self.eligibility_source or "")


@dataclass(frozen=True)
class DiagnosedRow:
    """One row the objective would write.

    :param row_id: how the report names the row (a completion id, ``"<chosen>><rejected>"`` for a pair).
    :param prompt: the row's prompt as JSON values (its trainer messages).
    :param metrics: the row's Confidence values the report summarizes, in the objective's order
        (e.g. ``label_confidence``, then ``confidence_margin``).
    """

    row_id: str
    org_id: str
    model: str
    split: str
    prompt: Any
    stratum: Stratum
    metrics: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PromptBucket:
    """One bucket of completions of one exact prompt, after deduplication and labelling, before
    pairing: ``chosen`` and ``rejected`` labelled members, and the most pairs it may emit."""

    org_id: str
    model: str
    stratum: Stratum
    chosen: int
    rejected: int
    max_pairs: int

    @property
    def members(self) -> int:
        return self.chosen + self.rejected

    @property
    def cap_hit(self) -> bool:
        """More possible pairs than the cap lets it emit (a bucket exactly at the cap is not hit)."""
        return self.chosen * self.rejected > self.max_pairs


@dataclass(frozen=True)
class FloorCandidate:
    """One unit (a completion and its label source) that passed every check but the floor."""

    org_id: str
    model: str
    completion_id: str
    stratum: Stratum
    confidence: float
    floor: float

    @property
    def excluded(self) -> bool:
        """Below the floor (strictly)."""
        return self.confidence < self.floor


Diagnosis = DiagnosedRow | PromptBucket | FloorCandidate
