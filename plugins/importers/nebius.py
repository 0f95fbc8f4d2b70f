"""Importer ``nebius-swe-agent``: nebius/SWE-agent-trajectories rows.

Each row: ``instance_id`` (task id plus a ``_<k>`` attempt suffix), ``model_name``,
``target`` (resolved), ``trajectory`` (``role`` system/user/ai, ``text``, ``mask``,
``system_prompt``, ``cutoff_date``), ``exit_status``, ``generated_patch``, ``eval_logs``.
``mask`` becomes ``supervised`` one to one (a mask on a non-``ai`` turn is refused). The
actions are embedded in the ``ai`` text and the observations arrive as ``user`` turns: no
structured tool call exists, so none is invented and the omission is declared. ``target`` is
the outcome, with the published ``eval_logs`` as ``test_log`` evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sediment.plugin import ImporterInfo, hookimpl
from sediment.plugin import trajectory_kit as kit

from ._common import Refused, array, mapping, records_of, required_text, source, text_or_none
from .swe_agent import exit_completeness

SOURCE_ID = "nebius/swe-agent-trajectories"
URL = "https://huggingface.co/datasets/nebius/SWE-agent-trajectories"
VERSION = "1"
ROLES: dict[str, kit.Role] = {"system": "system", "user": "user", "ai": "assistant"}


@hookimpl
def describe_importer() -> ImporterInfo:
    return ImporterInfo(description="nebius SWE-agent trajectories (per-message mask)",
                        patterns=("*.json", "*.jsonl"), source_id=SOURCE_ID)


@hookimpl
def import_source(path: Path) -> Any:
    return records_of(path, convert)


def convert(unit: kit.SourceUnit, row: Any, digest: str) -> kit.Trajectory:
    row = mapping(row, "(record)")
    instance_id = required_text(row.get("instance_id"), "instance_id")
    task_id, attempt = kit.split_attempt(instance_id)
    events = []
    for index, turn in enumerate(array(row.get("trajectory"), "trajectory")):
        where = f"trajectory.{index}"
        turn = mapping(turn, where)
        role = turn.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise Refused(f"{where}.role", f"unknown role {role!r}")
        mask = turn.get("mask")
        if not isinstance(mask, bool):
            raise Refused(f"{where}.mask", f"expected true or false, found {mask!r}")
        if mask and role != "ai":
            raise Refused(f"{where}.mask", f"a {role} turn is masked for loss; only ai turns may be")
        text = text_or_none(turn.get("text"), f"{where}.text")
        prompt = text_or_none(turn.get("system_prompt"), f"{where}.system_prompt")
        meta = {k: turn[k] for k in ("cutoff_date",) if turn.get(k) is not None}
        if text is None and prompt is not None:
            text = prompt
            meta["text_from"] = "system_prompt"
        elif prompt is not None:
            meta["system_prompt"] = prompt
        events.append(kit.Event(event_id=f"event:{index}", role=ROLES[role], text=text,
                                source_metadata=meta, supervised=mask))
    target = row.get("target")
    if target is not None and not isinstance(target, bool):
        raise Refused("target", f"expected true, false or null, found {target!r}")
    exit_status = text_or_none(row.get("exit_status"), "exit_status")
    completeness, exit_missing = exit_completeness(exit_status)
    missing = [kit.MissingField(field="tools", reason="the dataset publishes no tool definitions"),
               kit.MissingField(field="events.tool_calls",
                                reason="actions are embedded in the ai text; the source has no structured tool calls"),
               *exit_missing]
    logs = text_or_none(row.get("eval_logs"), "eval_logs")
    evidence = []
    if logs:
        evidence.append(kit.TrajectoryEvidence(kind="test_log",
                                               summary=f"eval_logs ({len(logs)} characters), target={target}"))
    elif target is not None:
        evidence.append(kit.TrajectoryEvidence(kind="source_label", summary=f"target={target}"))
    patch = text_or_none(row.get("generated_patch"), "generated_patch")
    raw, redactions = kit.raw_record_of(unit.data)
    model = text_or_none(row.get("model_name"), "model_name")
    return kit.build(
        task_id=task_id, task_key=f"swe:{task_id}",
        source=source(SOURCE_ID, URL, unit, digest),
        task_family=None, domain="software-engineering", split=None,
        events=events, tools=None,
        provenance=kit.TrajectoryProvenance(demonstrator="agent", producer="nebius", scaffold="SWE-agent", model=model,
                                  attempt=attempt, source_metadata={"instance_id": instance_id}),
        outcome=kit.Outcome(success=target, status=exit_status,
                            termination_reason=exit_status, source_metadata={"target": target}),
        verification=kit.Verification(method="swe-bench-harness" if logs else "source-label",
                                      executable=bool(logs), evidence=evidence),
        completeness=completeness, missing_fields=missing,
        transformations=[*redactions, kit.Transformation(name="import-nebius-swe-agent", version=VERSION)],
        raw_record=raw, metadata={"has_generated_patch": bool(patch)})
