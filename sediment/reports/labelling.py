"""The evidence behind the label of a row of an objective without targets, for ``sediment explain``:
the completions (recorded inference calls) the row names, the Sessions they belong to, and for
each completion the developer decisions joined to it (each with its edit retention: the vendor's
grade, or the figures of the derived fill) and its attributed files, each with its CI resolution
and the Confidence ladder replayed rung by rung.

Everything is read from generic fields, never from an objective's name: the fields that name a
completion (:data:`COMPLETION_FIELDS`, at top level, under ``metadata`` or its ``source_ids``)
give each completion its role; ``<role>_commit_sha`` / ``<role>_session_commit_observation_ids``
(else the unprefixed field) select the attribution the row is about; the row's ``provenance``
(or its ``provenance.<role>`` entry) says, through :class:`TrainingProvenance`, whether the label
came from the Confidence ladder and under which ladder policy. A row whose provenance is plain
(no ladder policy) gets its completions' decisions and edit retention without a Confidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from sediment.derive.attributed_completions import (
    AttributedCompletion,
    SessionCompletions,
    derive_attributed_completions,
)
from sediment.derive.confidence import Label, LabelConfidencePolicy, label_confidence, pair_confidence
from sediment.derive.edit_retention import observation_of, retention_figures
from sediment.evidence.context import Evidence, export_order
from sediment.evidence.trainer_messages import TrainingProvenance
from sediment.model.facts import DeveloperDecision
from sediment.model.rollout import Rollout
from sediment.records import plain
from sediment.reports.exported_rows import row_field

#: The fields that name a completion a row labels, and the role each gives it, in chain order.
COMPLETION_FIELDS: Mapping[str, str] = {
    "completion_id": "completion", "inference_call_id": "completion",
    "chosen_completion_id": "chosen", "rejected_completion_id": "rejected",
    "failed_inference_call_ids": "failed", "fixed_inference_call_ids": "fixed",
}
_ROLES = tuple(dict.fromkeys(COMPLETION_FIELDS.values()))
#: The role whose ladder value is the confidence in a rejection (its complement).
REJECTED = "rejected"


def named_completions(row: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(role, field, inference_call_id)`` of every completion the row names, in role order then
    call id, each call once (its first field)."""
    found: dict[str, tuple[str, str, str]] = {}
    source_ids = row_field(row, "source_ids")
    containers = [row, row.get("metadata"), source_ids]
    for key, role in COMPLETION_FIELDS.items():
        for container in containers:
            value = container.get(key) if isinstance(container, dict) else None
            ids = [value] if isinstance(value, str) else [v for v in value or [] if isinstance(v, str)]
            for call_id in ids:
                found.setdefault(call_id, (role, key, call_id))
    return sorted(found.values(), key=lambda c: (_ROLES.index(c[0]), c[2]))


def _prefixed(row: dict[str, Any], role: str, key: str) -> Any:
    value = row_field(row, f"{role}_{key}")
    return value if value is not None else row_field(row, key)


def ladder_provenance(row: dict[str, Any], role: str) -> TrainingProvenance | None:
    """The row's :class:`TrainingProvenance` for ``role`` (its ``provenance.<role>`` entry, else
    its provenance), or ``None`` when the provenance is plain: its label is no Confidence."""
    provenance = row_field(row, "provenance")
    if not isinstance(provenance, dict):
        return None
    entry = provenance.get(role)
    try:
        return TrainingProvenance.model_validate(entry if isinstance(entry, dict) else provenance)
    except ValidationError:
        return None


def find_sessions(evidence: Evidence, call_ids: Iterable[str], hints: Iterable[tuple[str, str]] = ()
                  ) -> dict[str, Rollout]:
    """The Rollout holding each of ``call_ids`` (by call id): the hinted ``(org, session)`` units
    first, then every other unit in export order until each call is found."""
    wanted = set(call_ids)
    rollouts = evidence.rollouts
    keys_of = getattr(rollouts, "order_keys", None)
    keys = keys_of() if callable(keys_of) else [(rollouts[i].org_id, rollouts[i].session_id)
                                                 for i in range(len(rollouts))]
    hinted = set(hints)
    order = export_order(rollouts)
    found: dict[str, Rollout] = {}
    for index in [i for i in order if keys[i] in hinted] + [i for i in order if keys[i] not in hinted]:
        if not wanted - set(found):
            break
        rollout = rollouts[index]
        for segment in rollout.segments:
            for turn in segment:
                if turn.inference_call_id in wanted:
                    found.setdefault(turn.inference_call_id, rollout)
    return found


def _decision(decision: DeveloperDecision, stored: DeveloperDecision | None, rollout: Rollout) -> dict[str, Any]:
    """One decision joined to a completion, with where its edit retention came from."""
    retention: dict[str, Any] = {"score": decision.edit_retention_score, "source": None, "observation_id": None,
                                 "figures": None}
    if stored is not None and stored.edit_retention_score is not None:
        retention["source"] = "vendor"
    elif decision.edit_retention_score is not None:
        observation = observation_of(decision, rollout.edit_observations)
        retention["source"] = "derived"
        if observation is not None:
            figures = retention_figures(observation.applied_text, observation.observed_file_text)
            retention["observation_id"] = observation.observation_id
            retention["figures"] = {"rule": figures.rule, "applied_4grams": figures.applied_grams,
                                    "kept_4grams": figures.kept_grams, "containment": figures.score}
    return {"decision_id": decision.decision_id, "accepted": decision.accepted, "explicit": decision.explicit,
            "agent_harness": decision.agent_harness, "interaction_mode": decision.interaction_mode,
            "file_path": decision.file_path, "occurred_at": plain(decision.occurred_at),
            "edit_retention": retention}


def _selected(completion: AttributedCompletion, row: dict[str, Any], role: str) -> bool:
    """Whether the row is about this attribution: its commit, or the observations it names."""
    commit = _prefixed(row, role, "commit_sha")
    observations = _prefixed(row, role, "session_commit_observation_ids")
    if isinstance(commit, str):
        return completion.commit_sha == commit
    if isinstance(observations, list) and observations:
        return bool(set(completion.observation_ids) & set(observations))
    return True


def _attribution(completion: AttributedCompletion, found: SessionCompletions,
                 policy: LabelConfidencePolicy | None, role: str) -> dict[str, Any]:
    resolution = found.resolution(completion).resolution
    entry: dict[str, Any] = {
        "repo": completion.repo, "commit_sha": completion.commit_sha, "file_path": completion.file_path,
        "attribution_source": completion.attribution_source, "similarity_score": completion.similarity_score,
        "observation_ids": list(completion.observation_ids),
        "ci": {"outcome_ids": sorted(o.outcome_id for o in completion.ci_outcomes),
               "verdict": None if resolution is None else resolution.verdict,
               "reliability": None if resolution is None else resolution.reliability,
               "suspected_flake": None if resolution is None else resolution.suspected_flake},
        "confidence": None,
    }
    if policy is not None:
        steps = policy.steps(found.confidence_evidence(completion))
        goodness = steps[-1].value if steps else None
        kind: Label = "rejected" if role == REJECTED else "chosen"
        entry["confidence"] = {
            "steps": [{"rung": s.rung, "rule": s.rule, "inputs": dict(s.inputs), "value": s.value} for s in steps],
            "goodness": goodness, "label": kind, "label_confidence": label_confidence(goodness, kind)}
    return entry


def label_evidence(row: dict[str, Any], evidence: Evidence, policy: LabelConfidencePolicy,
                   hints: Iterable[tuple[str, str]] = ()) -> tuple[dict[str, Any], list[Rollout]]:
    """The ``labelling`` section of an objective row's chain, and the Rollouts of the Sessions
    its completions belong to (sorted by org and Session id)."""
    named = named_completions(row)
    rollouts = find_sessions(evidence, [call_id for _, _, call_id in named], hints)
    repositories = evidence.repositories or getattr(evidence.rollouts, "repositories", None)
    derived: dict[tuple[str, str], SessionCompletions] = {}
    completions = []
    for role, key, call_id in named:
        rollout = rollouts.get(call_id)
        recorded = ladder_provenance(row, role)
        entry: dict[str, Any] = {"role": role, "field": key, "inference_call_id": call_id,
                                 "session_id": None if rollout is None else rollout.session_id,
                                 "label_confidence_policy_digest": None if recorded is None
                                 else recorded.label_confidence_policy_digest,
                                 "decisions": [], "attributions": []}
        if rollout is not None:
            unit = (rollout.org_id, rollout.session_id)
            if unit not in derived:
                derived[unit] = derive_attributed_completions(rollout, repositories=repositories,
                                                              ci_policy=policy.ci_resolution)
            found = derived[unit]
            stored = {d.decision_id: d for d in rollout.session_decisions}
            entry["decisions"] = [_decision(d, stored.get(d.decision_id), rollout) for d in
                                  sorted(found.decisions_by_call.get(call_id, ()), key=lambda d: d.decision_id)]
            entry["attributions"] = [
                _attribution(c, found, None if recorded is None else policy, role)
                for c in found.completions if c.inference_call_id == call_id and _selected(c, row, role)]
        completions.append(entry)
    section = {"policy": {"version": policy.policy_version, "digest": policy.digest},
               "completions": completions} | _agreement(row, completions, policy)
    units = {(r.org_id, r.session_id): r for r in rollouts.values()}
    return section, [units[k] for k in sorted(units)]


def _values(completions: list[dict[str, Any]], role: str) -> list[float]:
    return [a["confidence"]["goodness"] for c in completions if c["role"] == role for a in c["attributions"]
            if a["confidence"] is not None and a["confidence"]["goodness"] is not None]


def _agreement(row: dict[str, Any], completions: list[dict[str, Any]], policy: LabelConfidencePolicy
               ) -> dict[str, Any]:
    """What the row records (``label_confidence``, ``confidence_margin``), what the replay gives,
    and whether they agree: a pair (a chosen and a rejected completion) through
    :func:`pair_confidence`; otherwise the row's value is one of its attributions' (an objective
    that reads several attributions of one call keeps one of them, or the least)."""
    recorded = {key: row_field(row, key) for key in ("label_confidence", "confidence_margin")
                if row_field(row, key) is not None}
    digests = {c["label_confidence_policy_digest"] for c in completions} - {None}
    if not digests:
        return {"recorded": recorded, "replayed": None, "same_policy": None, "agrees": None}
    chosen, rejected = _values(completions, "chosen"), _values(completions, REJECTED)
    replayed: dict[str, Any]
    if chosen and rejected:
        pair = pair_confidence(chosen[0], rejected[0])
        replayed = {"label_confidence": pair.label_confidence, "confidence_margin": pair.confidence_margin}
        agrees = all(recorded.get(k) == v for k, v in replayed.items())
    else:
        values = sorted({a["confidence"]["label_confidence"] for c in completions for a in c["attributions"]
                         if a["confidence"] is not None and a["confidence"]["label_confidence"] is not None})
        replayed = {"label_confidence": values}
        agrees = recorded.get("label_confidence") in values
    return {"recorded": recorded, "replayed": replayed, "same_policy": digests == {policy.digest},
            "agrees": agrees}
