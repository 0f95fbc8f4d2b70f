"""Edit retention (docs/evidence.md, Edit retention): how much of an applied agent edit is still in the
file when its Session ends, as a score in [0, 1] on the edit's DeveloperDecision.

Two sources, in this precedence:

- the vendor's own grade: Copilot's ``survival_rate_four_gram`` lands on the decision at capture
  (``sediment ingest otlp``) and is never overwritten;
- a derived fill, computed when evidence is assembled and never stored: a decision with a
  ``call_id`` and no score takes :func:`four_gram_containment` of the EditObservation of the
  same ``(org_id, agent_harness, session_id, call_id)`` (the edit's applied text against the
  file's text at Session end).

Everything here is a pure function of its arguments: the same decisions and observations, in
any order, give the same result.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from sediment.model.facts import DeveloperDecision, EditObservation

GRAM = 4
"""The containment's n: character 4-grams (overlapping windows)."""

SCORER_NON_FINITE = "edit_retention_scorer_non_finite"
"""The warning when a scorer returned something other than a finite number: the decision stays unfilled."""

Scorer = Callable[[str, str], object]
EditKey = tuple[str, str, str, str]


def _grams(text: str) -> Counter[str]:
    return Counter(text[i:i + GRAM] for i in range(len(text) - GRAM + 1))


@dataclass(frozen=True)
class RetentionFigures:
    """How one containment score came about: the ``rule`` that decided it (``containment``, or
    an edge case: ``nothing_applied``, ``file_gone``, ``short_applied``, ``short_observed``), the
    applied text's 4-gram count, how many of them the observed text still holds (both 0 for an
    edge case) and the ``score``."""

    rule: str
    applied_grams: int
    kept_grams: int
    score: float


def retention_figures(applied: str, observed: str) -> RetentionFigures:
    """:func:`four_gram_containment` of ``applied`` against ``observed``, with its figures."""
    if applied == "":
        return RetentionFigures("nothing_applied", 0, 0, 1.0)
    if observed == "":
        return RetentionFigures("file_gone", 0, 0, 0.0)
    if len(applied) < GRAM:
        return RetentionFigures("short_applied", 0, 0, 1.0 if applied in observed else 0.0)
    if len(observed) < GRAM:
        return RetentionFigures("short_observed", 0, 0, 0.0)
    wanted = _grams(applied)
    held = _grams(observed)
    kept = sum(min(count, held[gram]) for gram, count in wanted.items())
    total = len(applied) - GRAM + 1
    return RetentionFigures("containment", total, kept, kept / total)


def four_gram_containment(applied: str, observed: str) -> float:
    """The share of ``applied``'s character 4-grams that ``observed`` still holds, in [0, 1].

    Counted with multiplicity over overlapping windows: the sum over the distinct 4-grams g of
    ``applied`` of ``min(count in applied, count in observed)``, divided by the number of
    4-grams of ``applied``. Directional: a snippet kept intact inside a large file scores 1.
    The edge cases, in this order: nothing applied scores 1.0; a file gone (``observed`` empty)
    0.0; an applied text shorter than 4 characters 1.0 when it is a substring of ``observed``,
    else 0.0; an observed text shorter than 4 characters 0.0. Characters are code points.
    """
    return retention_figures(applied, observed).score


def edit_key(fact: DeveloperDecision | EditObservation) -> EditKey | None:
    """The key a decision and an observation of one edit share; None for a decision without a call."""
    if fact.call_id is None:
        return None
    return (fact.org_id, fact.agent_harness, fact.session_id, fact.call_id)


@dataclass(frozen=True)
class RetentionFill:
    """Decisions with their derived retention filled in, in the order given."""

    decisions: tuple[DeveloperDecision, ...]
    #: How many decisions got a derived score.
    filled: int = 0
    #: Warnings by name (:data:`SCORER_NON_FINITE`).
    warnings: Counter[str] = field(default_factory=Counter)


def _first_observations(observations: Iterable[EditObservation]) -> dict[EditKey, EditObservation]:
    """The observation of each edit; when a key has several (from several sources), the earliest
    ``(occurred_at, captured_at, observation_id)`` wins, so input order never matters."""
    found: dict[EditKey, EditObservation] = {}
    for observation in sorted(observations, key=lambda o: (o.occurred_at, o.captured_at, o.observation_id)):
        key = edit_key(observation)
        if key is not None:
            found.setdefault(key, observation)
    return found


def observation_of(decision: DeveloperDecision, observations: Iterable[EditObservation]) -> EditObservation | None:
    """The EditObservation :func:`fill_edit_retention` reads for ``decision`` (``None``: none, or
    a decision without a call)."""
    key = edit_key(decision)
    return None if key is None else _first_observations(observations).get(key)


def _clamped(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    score = float(value)
    if not math.isfinite(score):
        return None
    return min(1.0, max(0.0, score))


def fill_edit_retention(decisions: Sequence[DeveloperDecision], observations: Iterable[EditObservation], *,
                        scorer: Scorer = four_gram_containment) -> RetentionFill:
    """``decisions`` with ``edit_retention_score`` derived where it is missing.

    A decision that has a score keeps it (the vendor's grade); one without a ``call_id``, or
    whose edit has no observation, stays as it is. Otherwise the score is ``scorer(applied_text,
    observed_file_text)`` clamped to [0, 1]; a scorer result that is not a finite number leaves
    the decision unfilled and counts :data:`SCORER_NON_FINITE`. The decisions are copies: the
    stored Facts never change.
    """
    edits = _first_observations(observations)
    warnings: Counter[str] = Counter()
    filled = 0
    result: list[DeveloperDecision] = []
    for decision in decisions:
        key = edit_key(decision)
        observation = edits.get(key) if key is not None and decision.edit_retention_score is None else None
        if observation is None:
            result.append(decision)
            continue
        score = _clamped(scorer(observation.applied_text, observation.observed_file_text))
        if score is None:
            warnings[SCORER_NON_FINITE] += 1
            result.append(decision)
            continue
        filled += 1
        result.append(decision.model_copy(update={"edit_retention_score": score}))
    return RetentionFill(tuple(result), filled, warnings)
