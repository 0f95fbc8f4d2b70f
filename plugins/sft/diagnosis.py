"""What ``sediment report dataset-diagnostics`` reads of the SFT dataset (``diagnose_evidence``).

Every row :func:`sediment_sft.samples.project_session` would write, as a
:class:`~sediment.plugin.DiagnosedRow` (row id: the completion id; stratum: its eligibility
source; metric: ``label_confidence``), and every (call, eligibility source) whose attributed
completions passed every check but the Confidence floor, as a
:class:`~sediment.plugin.FloorCandidate` with the highest Confidence among them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sediment.plugin import (
    DiagnosedRow,
    FloorCandidate,
    LabelConfidencePolicy,
    ProjectedRow,
    Recipe,
    SessionCompletions,
    Stratum,
)

from .eligibility import MIN_CONFIDENCE, Eligible, eligibility
from .samples import project_session


def diagnose_session(found: SessionCompletions, recipe: Recipe, policy: LabelConfidencePolicy
                     ) -> Iterator[DiagnosedRow | FloorCandidate]:
    """The records of one Session's completions under ``recipe``."""
    for item in project_session(found, recipe, policy):
        if isinstance(item, ProjectedRow):
            metadata = item.body["metadata"]
            yield DiagnosedRow(row_id=metadata["completion_id"], org_id=metadata["org_id"],
                               model=metadata["source_model"], split=item.split, prompt=item.body["prompt"],
                               stratum=Stratum(eligibility_source=metadata["eligibility_source"]),
                               metrics={"label_confidence": metadata["label_confidence"]})
    for call_id, completions in found.by_call():
        call = found.calls.get(call_id)
        if call is None or call.model is None:
            continue
        best: dict[str, float] = {}
        for completion in completions:
            eligible = eligibility(completion, found.resolution(completion).resolution, recipe.name)
            if not isinstance(eligible, Eligible):
                continue
            confidence = found.confidence(completion, policy)
            if confidence is None:
                continue
            best[eligible.source] = max(confidence, best.get(eligible.source, confidence))
        for source in sorted(best):
            yield FloorCandidate(org_id=found.org_id, model=call.model, completion_id=call_id,
                                 stratum=Stratum(eligibility_source=source), confidence=best[source],
                                 floor=MIN_CONFIDENCE)


def diagnose(sessions: Iterable[SessionCompletions], recipe: Recipe, policy: LabelConfidencePolicy
             ) -> Iterator[DiagnosedRow | FloorCandidate]:
    for found in sessions:
        yield from diagnose_session(found, recipe, policy)
