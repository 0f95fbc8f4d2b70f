"""``sediment explain``: one exported row read top-down to the recorded Facts behind it.

:func:`explain` builds the chain as one JSON-ready object (keys in a fixed order, lists sorted
by their ids or in the order the core resolved them, so the same row, store and bundle give the
same bytes): the row and its reward or label, the recipe and policies, the CI resolutions with
every workflow's attempts, the recorded CIOutcome Facts, the attribution, the Session and its
calls; rows of an objective without targets also list the Facts their metadata names and the
evidence behind their label (:mod:`sediment.reports.labelling`: decisions, edit retention,
the Confidence ladder replayed step by step) and every Session their completions belong to.
``verify`` compares the row with its re-derivation and names what changed. The library never
prints: ``sediment.cli.explain`` renders the chain.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sediment.derive.confidence import label_confidence_policy
from sediment.errors import EvidenceGoneError
from sediment.evidence.context import Evidence
from sediment.host.registry import PluginRegistry
from sediment.model.policy import DerivationPolicy
from sediment.model.rollout import Rollout
from sediment.records import canonical_digest, plain
from sediment.reports.exported_rows import RowRef, identity, row_field
from sediment.reports.labelling import label_evidence
from sediment.reports.rederive import Derivation, owner_of, rederive
from sediment.settings import SettingsSources
from sediment.store import FactStore

#: Which fact table holds the ids a row's metadata names, by the key that names them.
ID_TABLES = {
    "completion_id": "inference_calls", "chosen_completion_id": "inference_calls",
    "rejected_completion_id": "inference_calls", "inference_call_id": "inference_calls",
    "failed_inference_call_ids": "inference_calls", "fixed_inference_call_ids": "inference_calls",
    "decision_ids": "developer_decisions", "failed_outcome_id": "ci_outcomes", "fixed_outcome_id": "ci_outcomes",
    "session_commit_observation_ids": "session_commit_observations",
    "chosen_session_commit_observation_ids": "session_commit_observations",
    "rejected_session_commit_observation_ids": "session_commit_observations",
}
OUTCOME_FIELDS = ("provider", "run_id", "run_attempt", "result", "provider_result", "workflow_name", "commit_sha",
                  "source_event_type", "source_event_id", "captured_at")


@dataclass(frozen=True)
class Source:
    """Where the evidence is read from: a bundle (its recorded policy and quarantine revision)
    or the fact store (the default policy, the org's revision now), and the store itself when
    one is configured (for the quarantine state of each Fact)."""

    kind: str
    evidence: Evidence
    policy: DerivationPolicy
    quarantine_revision: int | None
    store: FactStore | None = None
    org_id: str | None = None


def org_of(row: dict[str, Any]) -> str | None:
    """The org a row names (``org_id``, else its verifier results' or CI resolution's)."""
    org = row_field(row, "org_id")
    if isinstance(org, str):
        return org
    for key in ("verifier_results", "ci_resolution"):
        value = row_field(row, key)
        first = value[0] if isinstance(value, list) and value else value
        if isinstance(first, dict) and isinstance(first.get("org_id"), str):
            return str(first["org_id"])
    return None


def _facts(source: Source, table: str, ids: Iterable[str]) -> dict[str, tuple[dict[str, Any], bool]]:
    if source.store is None or source.org_id is None:
        return {}
    return source.store.recorded(table, source.org_id, ids)


def _outcomes(row: dict[str, Any], derivation: Derivation, source: Source) -> list[dict[str, Any]]:
    """Every CIOutcome the row names: what the store (or bundle) recorded, and its state now."""
    carried = {o["outcome_id"]: o for o in row_field(row, "verifier_results") or [] if isinstance(o, dict)}
    named = set(carried)
    for resolution in _resolutions(row):
        named.update(resolution.get("source_outcome_ids") or [])
    for key in ("failed_outcome_id", "fixed_outcome_id"):
        if isinstance(row_field(row, key), str):
            named.add(row_field(row, key))
    bundled = {o.outcome_id: plain(o) for o in derivation.rollout.terminal_outcomes} if derivation.rollout else {}
    stored = _facts(source, "ci_outcomes", named)
    result = []
    for outcome_id in sorted(named):
        record, quarantined = stored.get(outcome_id, (None, None))
        recorded_in = "store" if record is not None else ("bundle" if outcome_id in bundled else None)
        fact = record or bundled.get(outcome_id) or carried.get(outcome_id) or {}
        entry: dict[str, Any] = {"outcome_id": outcome_id}
        entry.update({key: fact.get(key) for key in OUTCOME_FIELDS})
        entry["delivery_id"] = entry.pop("source_event_id")
        entry["recorded_in"] = recorded_in
        entry["quarantined"] = quarantined
        result.append(entry)
    return result


def _resolutions(row: dict[str, Any]) -> list[dict[str, Any]]:
    single = row_field(row, "ci_resolution")
    many = row_field(row, "ci_resolutions")
    found = ([single] if isinstance(single, dict) else []) + [r for r in many or [] if isinstance(r, dict)]
    return found


def _ci(row: dict[str, Any], outcomes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each CI resolution the row carries, each workflow's lineage with its attempts in the
    order the core resolved them, and which attempt supplied the verdict."""
    by_id = {o["outcome_id"]: o for o in outcomes}
    chain = []
    for resolution in _resolutions(row):
        workflows = []
        for workflow in resolution.get("workflow_resolutions") or []:
            non_verdicts = set(workflow.get("non_verdict_outcome_ids") or [])
            attempts = []
            for outcome_id in workflow.get("source_outcome_ids") or []:
                outcome = by_id.get(outcome_id, {})
                role = ("verdict" if outcome_id == workflow.get("verdict_outcome_id") else
                        "non-verdict" if outcome_id in non_verdicts else "superseded")
                attempts.append({"outcome_id": outcome_id, "run_id": outcome.get("run_id"),
                                 "run_attempt": outcome.get("run_attempt"), "result": outcome.get("result"),
                                 "role": role})
            workflows.append({key: workflow.get(key) for key in (
                "provider", "workflow_name", "workflow_path", "branch", "run_id", "verdict", "reliability",
                "suspected_flake", "verdict_outcome_id")} | {"attempts": attempts})
        chain.append({key: resolution.get(key) for key in (
            "repo", "commit_sha", "verdict", "reliability", "suspected_flake", "verdict_outcome_ids",
            "non_verdict_outcome_ids", "provenance")} | {"workflows": workflows})
    return chain


def _attribution(row: dict[str, Any], derivation: Derivation, source: Source) -> dict[str, Any]:
    """The commits the Session was tied to, and how: the notes that bound them, or Jaccard."""
    rollout = derivation.rollout
    sources = row_field(row, "attribution_sources")
    found: dict[str, Any] = {
        "source": row_field(row, "attribution_source") or (sources if isinstance(sources, list) else None)}
    observation_ids = sorted({i for key, table in ID_TABLES.items() if table == "session_commit_observations"
                              for i in row_field(row, key) or []})
    if rollout is None:
        stored = _facts(source, "session_commit_observations", observation_ids)
        found["notes"] = [_observation(i, stored.get(i, (None, None))[0], stored.get(i, (None, None))[1])
                          for i in observation_ids]
        return found
    found["commits"] = [{"repo": c.repo, "commit_sha": c.commit_sha} for c in rollout.commits]
    states = _facts(source, "session_commit_observations",
                    [o.observation_id for o in rollout.session_commit_observations])
    found["notes"] = [_observation(o.observation_id, plain(o), states.get(o.observation_id, (None, None))[1])
                      for o in sorted(rollout.session_commit_observations, key=lambda o: o.observation_id)]
    found["jaccard"] = [{"inference_call_id": f.inference_call_id, "commit_sha": f.commit_sha,
                         "file_path": f.file_path, "similarity_score": f.similarity_score}
                        for f in sorted(rollout.file_attributions,
                                        key=lambda f: (f.commit_sha, f.file_path, f.inference_call_id))]
    found["row_observation_ids"] = observation_ids
    return found


def _observation(observation_id: str, record: dict[str, Any] | None, quarantined: bool | None) -> dict[str, Any]:
    record = record or {}
    return {"observation_id": observation_id, "commit_sha": record.get("commit_sha"),
            "note": record.get("attribution_source"), "source_push_id": record.get("source_push_id"),
            "captured_at": record.get("captured_at"), "quarantined": quarantined}


def _session(rollout: Rollout | None) -> dict[str, Any] | None:
    if rollout is None:
        return None
    calls = []
    for index, segment in enumerate(rollout.segments):
        for turn in segment:
            calls.append({"segment": index, "inference_call_id": turn.inference_call_id,
                          "model_call_id": turn.model_call_id, "model": turn.model,
                          "observed_at": plain(turn.observed_at),
                          "decisions": [d.decision_id for d in turn.decisions]})
    return {"org_id": rollout.org_id, "session_id": rollout.session_id, "split": rollout.split, "calls": calls}


def _referenced(row: dict[str, Any], source: Source) -> list[dict[str, Any]]:
    """The Facts a row's metadata names by id (calls, decisions, outcomes, observations), each
    with what the store recorded and whether it is quarantined now."""
    wanted: dict[str, set[str]] = {}
    nested = row_field(row, "source_ids")
    fields = [row, row.get("metadata") if isinstance(row.get("metadata"), dict) else {},
              nested if isinstance(nested, dict) else {}]
    for container in fields:
        for key, table in ID_TABLES.items():
            value = container.get(key) if isinstance(container, dict) else None
            ids = [value] if isinstance(value, str) else [v for v in value or [] if isinstance(v, str)]
            wanted.setdefault(table, set()).update(ids)
    found = []
    for table in sorted(wanted):
        stored = _facts(source, table, wanted[table])
        for fact_id in sorted(wanted[table]):
            record, quarantined = stored.get(fact_id, (None, None))
            record = record or {}
            found.append({"table": table, "fact_id": fact_id, "recorded": fact_id in stored,
                          "quarantined": quarantined} | {key: record[key] for key in (
                              "session_id", "model", "observed_at", "decision", "decision_type", "source",
                              "captured_at") if key in record})
    return found


def _label(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("reward_source", "reward", "eligibility_source", "chosen_label_source", "rejected_label_source",
            "label_confidence", "confidence_margin", "ci_reliability", "split")
    return {key: row_field(row, key) for key in keys if row_field(row, key) is not None}


def _policy(row: dict[str, Any], source: Source) -> dict[str, Any]:
    provenance = row_field(row, "provenance")
    recorded = provenance if isinstance(provenance, dict) else {}
    chosen = recorded.get("chosen")
    flat: dict[str, Any] = chosen if isinstance(chosen, dict) else recorded
    return {"row": recorded,
            "source": {"kind": source.kind, "policy_digest": source.policy.digest,
                       "policy": source.policy.model_dump(mode="json"),
                       "quarantine_revision": source.quarantine_revision},
            "same_policy": flat.get("policy_digest") == source.policy.digest}


def explain(ref: RowRef, source: Source, registry: PluginRegistry, *, verify: bool = False,
            settings: SettingsSources | None = None) -> dict[str, Any]:
    """The chain of ``ref`` as one object (see the module docstring); with ``verify``, the
    ``verify`` section says whether the row re-derives byte-identical and what changed."""
    owner = owner_of(ref, registry)
    derivation = rederive(ref, owner, source.evidence, registry, settings=settings)
    row = ref.row
    if ref.profile_evidence is not None:
        if derivation.body is None:
            raise EvidenceGoneError(
                f"{ref.where}: its canonical row (sha256 {ref.profile_evidence['source_row_sha256']}) no longer "
                f"derives from the {source.kind}" + _why(derivation))
        row = derivation.body
    facts = _referenced(row, source) if owner.target is None else []
    labelling: dict[str, Any] | None = None
    sessions = [] if derivation.rollout is None else [derivation.rollout]
    if owner.target is None:
        policy = label_confidence_policy(settings or SettingsSources.empty())
        hints = {(source.org_id, str(f["session_id"])) for f in facts if source.org_id is not None
                 and f["table"] == "inference_calls" and isinstance(f.get("session_id"), str)}
        labelling, sessions = label_evidence(row, source.evidence, policy, hints)
    if ref.profile_evidence is None and derivation.body is None and not sessions and not _outcome_ids(row):
        raise EvidenceGoneError(f"{ref.where}: the evidence behind this row is gone from the {source.kind} "
                                "(no Session or recorded Fact it names is left)" + _why(derivation))
    outcomes = _outcomes(row, derivation, source)
    chain: dict[str, Any] = {
        "row": {"file": str(ref.path), "line": ref.line, "kind": owner.label, "objective": owner.objective.name,
                "target": None if owner.target is None else owner.target.name, "population": owner.population,
                "identity": identity(row), "sha256": canonical_digest(row), "label": _label(row)},
        "recipe": {"recipe_id": row_field(row, "recipe_id"), "recipe_version": row_field(row, "recipe_version")},
        "policy": _policy(row, source),
        "ci_resolutions": _ci(row, outcomes),
        "ci_outcomes": outcomes,
        "attribution": _attribution(row, derivation, source),
        "session": _session(derivation.rollout),
        "sessions": [_session(r) for r in sessions],
        "facts": facts,
        "labelling": labelling,
    }
    if ref.profile_evidence is not None:
        chain["row"]["profile"] = {"profile": ref.profile, "evidence": ref.profile_evidence,
                                   "data_sha256": canonical_digest(ref.row)}
    if verify:
        chain["verify"] = compare(ref, row, derivation, outcomes, source)
    return chain


def _outcome_ids(row: dict[str, Any]) -> set[str]:
    ids = {o.get("outcome_id") for o in row_field(row, "verifier_results") or [] if isinstance(o, dict)}
    return {i for i in ids if isinstance(i, str)}


def _why(derivation: Derivation) -> str:
    if not derivation.declined:
        return ""
    reasons = ", ".join(f"{k} ({v})" for k, v in sorted(derivation.declined.items()))
    return f"; its unit now declines: {reasons}"


def compare(ref: RowRef, row: dict[str, Any], derivation: Derivation, outcomes: list[dict[str, Any]],
            source: Source) -> dict[str, Any]:
    """Whether ``row`` re-derives byte-identical, and, when not, what changed as far as the
    evidence shows: quarantined or vanished outcomes, new attempts, a new quarantine revision,
    another reference patch or base commit (a moved mirror ref), other fields."""
    line = derivation.line
    original = ref.text if ref.profile_evidence is None else None
    if ref.profile_evidence is not None:
        same = derivation.body is not None and canonical_digest(derivation.body) == ref.profile_evidence[
            "source_row_sha256"]
    else:
        same = line is not None and line == original
    changes: list[str] = []
    if not same:
        changes = _changes(row, derivation.body, outcomes, source, derivation)
    return {"byte_identical": same, "rederived": derivation.body is not None,
            "rederived_sha256": None if derivation.body is None else canonical_digest(derivation.body),
            "changes": changes}


def _changes(row: dict[str, Any], new: dict[str, Any] | None, outcomes: list[dict[str, Any]], source: Source,
             derivation: Derivation) -> list[str]:
    changes = []
    for outcome in outcomes:
        if outcome["quarantined"]:
            changes.append(f"outcome {outcome['outcome_id']} (run {outcome['run_id']} attempt "
                           f"{outcome['run_attempt']}) is quarantined")
        elif outcome["recorded_in"] is None:
            changes.append(f"outcome {outcome['outcome_id']} is no longer recorded")
    if new is None:
        changes.append("the row no longer derives" + (_why(derivation) or ""))
        return changes
    old_ids, new_ids = _outcome_ids(row), _outcome_ids(new)
    by_id = {o.get("outcome_id"): o for o in row_field(new, "verifier_results") or [] if isinstance(o, dict)}
    for added in sorted(new_ids - old_ids):
        outcome = by_id[added]
        changes.append(f"new attempt: outcome {added} (run {outcome.get('run_id')} attempt "
                       f"{outcome.get('run_attempt')}, {outcome.get('result')})")
    for dropped in sorted(old_ids - new_ids):
        if not any(o["outcome_id"] == dropped and (o["quarantined"] or o["recorded_in"] is None) for o in outcomes):
            changes.append(f"outcome {dropped} no longer counts")
    old_rev = (row_field(row, "provenance") or {}).get("quarantine_revision")
    new_rev = (row_field(new, "provenance") or {}).get("quarantine_revision")
    if old_rev != new_rev:
        changes.append(f"quarantine revision {old_rev} → {new_rev}")
    for key, what in (("base_commit", "base commit"), ("reference_patch", "reference patch"), ("patch", "patch")):
        if row_field(row, key) != row_field(new, key):
            changes.append(f"{what} differs (a moved mirror ref or new commits)")
    differing = sorted(_differing(row, new))
    if differing:
        changes.append("fields that differ: " + ", ".join(differing))
    return changes


def _differing(old: Any, new: Any, prefix: str = "", depth: int = 0) -> set[str]:
    if isinstance(old, dict) and isinstance(new, dict) and depth < 2:
        found: set[str] = set()
        for key in sorted(set(old) | set(new)):
            found |= _differing(old.get(key), new.get(key), f"{prefix}{key}.", depth + 1)
        return found
    return set() if old == new else {prefix.rstrip(".")}
