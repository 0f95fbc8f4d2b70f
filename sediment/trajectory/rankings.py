"""Rankings: the derived quality index kept apart from the canonical records.

Ranking reads one compact :func:`summarize` row per record (the library keeps them in
``index.sqlite``), never the records themselves, so adding an attempt re-ranks its task without
touching a canonical shard. Every function here is a pure function of the *set* of summaries:
the order they arrive in changes nothing.

Precedence within one ``task_key`` and ``environment_key``: the quality tier dominates; then
action-observation coverage, verdict reliability, source confidence and, only between successful
attempts, a small efficiency term (fewer assistant decisions). The four follow-ups are packed into
one integer ``tie_break_score`` whose decimal digits keep that precedence. "Expert" means the
source calls the attempt a demonstration, not that it is optimal; no attempt is called optimal.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from sediment.split import assign_split
from sediment.trajectory import facets
from sediment.trajectory.record import VERIFICATION_STRENGTHS

RANKINGS_VERSION = "1.0"

TIERS: dict[int, str] = {
    1: "independently reproduced successful expert demonstration",
    2: "independently reproduced successful agent completion",
    3: "complete demonstration or rollout with credible source evidence",
    4: "complete rollout with unknown outcome",
    5: "failed, partial or inadequately observed",
}
"""The five quality tiers, best first."""

_RELIABILITY = {name: len(VERIFICATION_STRENGTHS) - 1 - i for i, name in enumerate(VERIFICATION_STRENGTHS)}
_CREDIBLE = frozenset({"independently_reproduced", "source_evaluator"})
PROTECTED_SPLITS = frozenset({"test", "eval", "evaluation", "held-out", "heldout"})
"""Upstream split labels that mark a record as evaluation-only (lower-cased comparison)."""


def summarize(record: Mapping[str, Any], strength: str | None = None) -> dict[str, Any]:
    """The compact, ranking-relevant facts of one canonical record (JSON-safe, flat).
    ``strength``: the record's verification strength when the caller has it from the model."""
    evs = facets.events(record)
    answered: set[str] = set()
    for event in evs:
        link = facets.result_link(event)
        if link is not None:
            answered.add(link)
    calls = 0
    answered_calls = 0
    unanswered_before_final = 0
    last_assistant = max((i for i, e in enumerate(evs) if facets.role(e) == "assistant"), default=-1)
    for index, event in enumerate(evs):
        for call in facets.tool_calls(event):
            calls += 1
            cid = facets.call_id(call)
            if cid is not None and cid in answered:
                answered_calls += 1
            elif index != last_assistant:
                unanswered_before_final += 1
    success = facets.success(record)
    split = facets.split(record)
    src = facets.source(record)
    protected = (split is not None and split.lower() in PROTECTED_SPLITS) or src.get("protected") is True \
        or src.get("evaluation_only") is True
    assistants = sum(1 for e in evs if facets.role(e) == "assistant")
    return {
        "trajectory_id": record.get("trajectory_id"),
        "task_id": record.get("task_id"),
        "task_key": record.get("task_key"),
        "environment_key": facets.environment_key(record),
        "task_family": record.get("task_family"),
        "domain": record.get("domain"),
        "upstream_split": split,
        "source_id": facets.source_id(record),
        "source_url": facets.source_url(record),
        "source_revision": facets.source_revision(record),
        "source_locator": facets.source_locator(record),
        "source_sha256": facets.source_sha256(record),
        "model": facets.model(record),
        "scaffold": facets.scaffold(record),
        "demonstration_provenance": "expert" if facets.is_expert(record) else "agent",
        "success": success,
        "outcome_category": outcome_category(success),
        "reward": facets.reward(record),
        "completeness": facets.completeness(record),
        "verification_strength": strength or facets.verification_strength(record),
        "verification_key": facets.verification_evidence_key(record),
        "event_count": len(evs),
        "assistant_count": assistants,
        "supervised_count": facets.count_supervised(evs),
        "tool_call_count": calls,
        "answered_call_count": answered_calls,
        "unanswered_before_final": unanswered_before_final,
        "missing_field_count": len(facets.missing_fields(record)),
        "interaction_hash": facets.interaction_hash(record),
        "protected": protected,
    }


def outcome_category(success: bool | None) -> str:
    """``success``, ``failure`` or ``unknown`` (a missing verdict is never a failure)."""
    return "unknown" if success is None else ("success" if success else "failure")


def structurally_eligible(summary: Mapping[str, Any]) -> tuple[bool, list[str]]:
    """The causal action-observation gate: something to supervise, and every call but a final
    one (a submit that ends through the external outcome) answered by a recorded observation."""
    reasons = []
    if summary["supervised_count"] < 1:
        reasons.append("no supervised assistant event")
    if summary["unanswered_before_final"] > 0:
        reasons.append(f"{summary['unanswered_before_final']} tool call(s) before the last decision have no result")
    if summary["completeness"] not in {"complete", "incomplete", "truncated"}:
        reasons.append("completeness not recorded")
    return not reasons, reasons


def coverage(summary: Mapping[str, Any]) -> float:
    """Share of tool calls answered by a linked observation. Without structured calls: 1.0 when
    the record holds observations beside its decisions, else 0.0."""
    if summary["tool_call_count"]:
        return float(summary["answered_call_count"]) / float(summary["tool_call_count"])
    return 1.0 if summary["event_count"] > summary["assistant_count"] > 0 else 0.0


def source_confidence(summary: Mapping[str, Any]) -> float:
    """How well the source pins what it published, 0.0 to 1.0 in steps of 0.25: an immutable
    revision, a file SHA-256, a locator, and no declared omissions each add 0.25."""
    score = 0.0
    for present in (summary["source_revision"], summary["source_sha256"], summary["source_locator"],
                    summary["missing_field_count"] == 0):
        if present:
            score += 0.25
    return score


def quality_tier(summary: Mapping[str, Any]) -> tuple[int, list[str]]:
    """The tier (1 best .. 5) and the sentences that explain it."""
    reasons: list[str] = []
    eligible, gate = structurally_eligible(summary)
    strength = summary["verification_strength"]
    category = summary["outcome_category"]
    complete = summary["completeness"] == "complete"
    if category == "failure":
        return 5, ["the source's verdict is failure"]
    if not complete:
        return 5, [f"completeness is {summary['completeness'] or 'not recorded'}"]
    if not eligible:
        return 5, ["inadequately observed: " + "; ".join(gate)]
    if category == "success" and strength == "independently_reproduced":
        expert = summary["demonstration_provenance"] == "expert"
        reasons.append("success independently reproduced")
        reasons.append("expert demonstration" if expert else "recorded agent completion")
        return (1 if expert else 2), reasons
    if category == "success" and strength in _CREDIBLE:
        return 3, ["complete, and the source's own evaluator reports success"]
    if category == "success":
        return 4, [f"success is only {strength} (no executable evidence): ranked with unknown outcomes"]
    return 4, ["complete, but no verdict was recorded (unknown, not failure)"]


def tie_break_score(summary: Mapping[str, Any]) -> int:
    """Digits, most significant first: coverage (0-1000), verdict reliability (0-3), source
    confidence (0-100), efficiency (0-999; successful attempts only: 999 minus assistant decisions)."""
    cov = round(coverage(summary) * 1000)
    reliability = _RELIABILITY[summary["verification_strength"]]
    confidence = round(source_confidence(summary) * 100)
    efficiency = max(0, 999 - summary["assistant_count"]) if summary["outcome_category"] == "success" else 0
    return ((cov * 10 + reliability) * 1000 + confidence) * 1000 + efficiency


def _collapse_key(summary: Mapping[str, Any]) -> tuple[Any, ...]:
    return (summary["task_key"], summary["environment_key"], summary["interaction_hash"], summary["success"],
            repr(summary["reward"]), summary["completeness"], summary["verification_key"])


def assign_task_splits(summaries: Iterable[Mapping[str, Any]], eval_fraction: float = 0.1) -> list[dict[str, Any]]:
    """One split per ``task_key`` over every source: ``eval`` when any source holds the task for
    evaluation, else the hashed assignment of the task key (``sediment.split``)."""
    tasks: dict[str, dict[str, set[str]]] = defaultdict(lambda: {"sources": set(), "splits": set(), "protected": set()})
    counts: dict[str, int] = defaultdict(int)
    for s in summaries:
        key = s["task_key"]
        entry = tasks[key]
        entry["sources"].add(s["source_id"] or "")
        if s["upstream_split"]:
            entry["splits"].add(s["upstream_split"])
        if s["protected"]:
            entry["protected"].add(s["source_id"] or "")
        counts[key] += 1
    rows = []
    for key in sorted(tasks):
        entry = tasks[key]
        if entry["protected"]:
            split, reason = "eval", "evaluation-only in source(s): " + ", ".join(sorted(entry["protected"]))
        else:
            split = assign_split(key, eval_fraction)
            reason = f"hash of the task key (eval fraction {eval_fraction})"
        rows.append({"task_key": key, "split": split, "reason": reason, "trajectory_count": counts[key],
                     "source_ids": sorted(entry["sources"]), "upstream_splits": sorted(entry["splits"])})
    return rows


def rank(summaries: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ranking rows (one per retained interaction) and the duplicate-provenance rows.

    Records collapse only when task, environment, causal interaction, outcome, reward,
    completeness and verification evidence all agree; the lowest ``trajectory_id`` is retained
    and the row lists every contributing id. Rows come sorted by task key, environment, rank."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for s in summaries:
        groups[_collapse_key(s)].append(s)
    retained: list[tuple[Mapping[str, Any], list[Mapping[str, Any]]]] = []
    duplicates: list[dict[str, Any]] = []
    for members in groups.values():
        members.sort(key=lambda m: m["trajectory_id"])
        keep = members[0]
        retained.append((keep, members))
        if len(members) > 1:
            for m in members:
                duplicates.append({
                    "retained_trajectory_id": keep["trajectory_id"], "trajectory_id": m["trajectory_id"],
                    "interaction_hash": m["interaction_hash"], "source_id": m["source_id"],
                    "source_url": m["source_url"], "source_revision": m["source_revision"],
                    "source_locator": m["source_locator"], "source_sha256": m["source_sha256"]})
    by_task: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for keep, members in retained:
        tier, reasons = quality_tier(keep)
        eligible, gate = structurally_eligible(keep)
        training = eligible and not keep["protected"]
        eligibility_reasons = list(gate)
        if keep["protected"]:
            eligibility_reasons.append("source holds it for evaluation only")
        row = {
            "trajectory_id": keep["trajectory_id"],
            "task_key": keep["task_key"],
            "environment_key": keep["environment_key"],
            "demonstration_provenance": keep["demonstration_provenance"],
            "outcome_category": keep["outcome_category"],
            "verification_strength": keep["verification_strength"],
            "completeness": keep["completeness"],
            "source_confidence": source_confidence(keep),
            "quality_tier": tier,
            "tie_break_score": tie_break_score(keep),
            "within_task_rank": 0,
            "structurally_eligible": eligible,
            "sft_eligible": training,
            "sft_eligibility_reasons": eligibility_reasons,
            "interaction_hash": keep["interaction_hash"],
            "duplicate_provenance": {"contributing_trajectory_ids": [m["trajectory_id"] for m in members],
                                     "collapsed": len(members) - 1},
            "ranking_reasons": [f"tier {tier}: {TIERS[tier]}", *reasons,
                                f"coverage {coverage(keep):.3f}, verification {keep['verification_strength']}, "
                                f"source confidence {source_confidence(keep):.2f}"],
        }
        by_task[(keep["task_key"], keep["environment_key"])].append(row)
    rows: list[dict[str, Any]] = []
    for key in sorted(by_task):
        ranked = sorted(by_task[key], key=lambda r: (r["quality_tier"], -r["tie_break_score"], r["trajectory_id"]))
        for position, row in enumerate(ranked, start=1):
            row["within_task_rank"] = position
            row["ranking_reasons"].append(f"rank {position} of {len(ranked)} attempt(s) for this task and environment")
            rows.append(row)
    duplicates.sort(key=lambda d: (d["retained_trajectory_id"], d["trajectory_id"]))
    return rows, duplicates
