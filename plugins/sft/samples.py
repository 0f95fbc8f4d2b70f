"""SFT samples from one Session's attributed completions (docs/sft.md).

One row per inference call, from the call's attributed completions (ACs; one per attributed
file). Per call, in ascending call id:

1. **Conflicts**: two ACs of one evidence identity (org, evidence sort key) with different
   payloads decline the call: ``conflicting_evidence``.
2. The CI resolver's reasons for the call's ACs (``ambiguous_workflow_verdicts``, the repository
   reasons) are counted, once per call and reason, whether or not the call yields a row.
3. Each AC is judged (:mod:`sediment_sft.eligibility`): abandonment, explicit reject,
   eligibility, Confidence and its floor. A call none of whose ACs passes declines once, with the
   reason of the AC that came closest to a row (the latest stage any of them reached: the
   vocabulary lists the stages in order).
4. The call itself: its recorded call (``inference_call_not_found``), its model
   (``model_absent``), its trainer messages (the mapper's reason). The row's ``tools`` are the
   tool definitions the call's request declared (``sediment.plugin.chat_tools``).
5. Of the ACs that passed, the one with the highest Confidence is kept (equal Confidence: the
   smallest evidence sort key, the first in evidence order); each other counts
   ``duplicate_completion``.

So every call with evidence ends as exactly one row or one decline, and the declines add up
to calls (``duplicate_completion`` and the resolver's reasons are counted beside them).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sediment.plugin import (
    TRAINER_SKIP_REASONS,
    AttributedCompletion,
    CallCapture,
    CIResolution,
    Declined,
    LabelConfidencePolicy,
    ProjectedRow,
    Recipe,
    SessionCompletions,
    TrainerDecline,
    TrainingProvenance,
    capture_row,
    chat_tools,
    map_conversation,
    plain,
    put_optional,
)

from .eligibility import MIN_CONFIDENCE, EligibilitySource, Eligible, eligibility

SCHEMA_ID = "https://sediment.so/schemas/training-rows/sft-sample/v4.json"
SCHEMA_VERSION = 4

#: The objective's own reasons, in contract order: the trainer mapper's structural reasons, then
#: SFT's. The registry puts the CI resolver's and the representation reasons in front.
SFT_REASONS: tuple[str, ...] = (
    "abandoned",
    "explicit_reject",
    "resolved_ci_failure",
    "no_eligibility_source",
    "unreliable_ci_resolution",
    "no_reward_signal",
    "below_confidence_floor",
    "inference_call_not_found",
    "model_absent",
    "duplicate_completion",
    "conflicting_evidence",
)
TRAINER_STRUCTURAL_REASONS: tuple[str, ...] = tuple(
    r for r in TRAINER_SKIP_REASONS if r not in ("non_finite_number", "unrepresentable_unicode"))
SKIP_REASONS: tuple[str, ...] = (*TRAINER_STRUCTURAL_REASONS, *SFT_REASONS)
_STAGE = {reason: index for index, reason in enumerate(SFT_REASONS)}


@dataclass(frozen=True)
class Candidate:
    """An AC that passed every per-AC check."""

    completion: AttributedCompletion
    source: EligibilitySource
    confidence: float
    resolution: CIResolution | None


def _same(a: Any, b: Any) -> bool:
    """Deep equality where floats compare by their bits (NaN equals NaN) and types must match."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _conflicting(completions: tuple[AttributedCompletion, ...]) -> bool:
    by_identity: dict[tuple[Any, ...], dict[str, Any]] = {}
    for completion in completions:
        identity = (completion.org_id, completion.sort_key)
        payload = completion.model_dump(mode="python")
        if identity in by_identity and not _same(by_identity[identity], payload):
            return True
        by_identity.setdefault(identity, payload)
    return False


def judge(completion: AttributedCompletion, found: SessionCompletions, recipe: str,
          policy: LabelConfidencePolicy) -> Candidate | str:
    """One AC's per-AC checks (steps 3 of the module docstring): a candidate, or its reason."""
    resolution = found.resolution(completion).resolution
    eligible = eligibility(completion, resolution, recipe)
    if not isinstance(eligible, Eligible):
        return eligible
    confidence = policy.confidence(found.confidence_evidence(completion))
    if confidence is None:
        return "no_reward_signal"
    if confidence < MIN_CONFIDENCE:
        return "below_confidence_floor"
    return Candidate(completion, eligible.source, confidence, resolution)


def row(candidate: Candidate, body: dict[str, Any], model: str, recipe: Recipe,
        policy: LabelConfidencePolicy, capture: CallCapture | None = None) -> dict[str, Any]:
    """The ``sft-sample`` v4 row: ``prompt``, ``completion``, ``tools``, ``metadata`` (key order as
    emitted); ``metadata.capture`` last, only for a call rebuilt from a client transcript."""
    completion = candidate.completion
    resolution = candidate.resolution
    identity = completion.repository_identity
    metadata: dict[str, Any] = {
        "org_id": completion.org_id,
        "source_model": model,
        "completion_id": completion.inference_call_id,
        "recipe_id": recipe.name,
        "recipe_version": recipe.version,
        "eligibility_source": candidate.source,
        "label_confidence": candidate.confidence,
        "ci_reliability": None if resolution is None else resolution.reliability,
        "provenance": plain(TrainingProvenance.of(completion.provenance, policy)),
        "split": completion.split,
        "repository_identity": None if identity is None else plain(identity),
        "attribution_source": completion.attribution_source,
        "session_commit_observation_ids": list(completion.observation_ids),
        "schema_id": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
    }
    put_optional(metadata, "capture", None if capture is None else capture_row(capture))
    return {**body, "metadata": metadata}


def project_session(found: SessionCompletions, recipe: Recipe,
                    policy: LabelConfidencePolicy) -> Iterator[ProjectedRow | Declined]:
    """Every row and decline of one Session's ACs, calls in ascending id (module docstring)."""
    for call_id, completions in found.by_call():
        if _conflicting(completions):
            yield Declined("conflicting_evidence")
            continue
        resolver = sorted({reason for c in completions for reason, n in found.resolution(c).skipped.items() if n})
        for reason in resolver:
            yield Declined(reason)
        judged = [judge(c, found, recipe.name, policy) for c in completions]
        candidates = [j for j in judged if isinstance(j, Candidate)]
        if not candidates:
            yield Declined(max((j for j in judged if isinstance(j, str)), key=_STAGE.__getitem__))
            continue
        call = found.calls.get(call_id)
        if call is None:
            yield Declined("inference_call_not_found")
            continue
        if call.model is None:
            yield Declined("model_absent")
            continue
        mapped = map_conversation(call.input_messages, call.output_messages)
        if isinstance(mapped, TrainerDecline):
            yield Declined(mapped.reason)
            continue
        kept = min(candidates, key=lambda c: (-c.confidence, c.completion.sort_key))
        if len(candidates) > 1:
            yield Declined("duplicate_completion", len(candidates) - 1)
        body = {**mapped.as_dict(), "tools": chat_tools(call.tools)}
        yield ProjectedRow(kept.completion.split, row(kept, body, call.model, recipe, policy, call.capture))
