"""Importer ``swe-gym-sampled``: SWE-Gym's sampled OpenHands trajectories (OpenAI chat shape).

One record per row (a JSON array or JSON Lines of rows): ``instance_id`` (task id plus a
``_<k>`` attempt suffix), ``run_id``, ``resolved``, ``messages``, ``tools``, ``test_result``
(``report`` from the SWE-bench harness, ``test_output``, ``git_patch``). ``resolved`` is the
outcome, backed by the harness report (``test_execution`` evidence from the source's
evaluator). A row whose last decision is not a ``finish`` call is ``incomplete``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sediment.plugin import ImporterInfo, hookimpl
from sediment.plugin import trajectory_kit as kit

from ._common import (
    Refused,
    array,
    chat_events,
    event_omissions,
    mapping,
    openai_tools,
    records_of,
    required_text,
    source,
)

SOURCE_ID = "swe-gym/openhands-sampled-trajectories"
URL = "https://huggingface.co/datasets/SWE-Gym/OpenHands-Sampled-Trajectories"
VERSION = "1"


@hookimpl
def describe_importer() -> ImporterInfo:
    return ImporterInfo(description="SWE-Gym sampled OpenHands trajectories (chat messages with test_result)",
                        patterns=("*.json", "*.jsonl"), source_id=SOURCE_ID)


@hookimpl
def import_source(path: Path) -> Any:
    return records_of(path, convert)


def convert(unit: kit.SourceUnit, row: Any, digest: str) -> kit.Trajectory:
    row = mapping(row, "(record)")
    instance_id = required_text(row.get("instance_id"), "instance_id")
    task_id, attempt = kit.split_attempt(instance_id)
    resolved = row.get("resolved")
    if not isinstance(resolved, bool) and resolved is not None:
        raise Refused("resolved", f"expected true, false or null, found {resolved!r}")
    test_result = row.get("test_result")
    report: dict[str, Any] | None = None
    if test_result is not None:
        test_result = mapping(test_result, "test_result")
        if test_result.get("report") is not None:
            report = mapping(test_result["report"], "test_result.report")
    reported = report.get("resolved") if report else None
    if isinstance(reported, bool) and isinstance(resolved, bool) and reported != resolved:
        raise Refused("resolved", f"{resolved} disagrees with test_result.report.resolved {reported}")
    success = resolved if isinstance(resolved, bool) else reported if isinstance(reported, bool) else None
    calls = kit.CallIds()
    events = chat_events(array(row.get("messages"), "messages"), "messages", calls)
    missing = event_omissions(events)
    tools = openai_tools(row["tools"], "tools") if row.get("tools") is not None else None
    if tools is None:
        missing.append(kit.MissingField(field="tools", reason="the row publishes no tool definitions"))
    last = next((e for e in reversed(events) if e.role == "assistant"), None)
    finished = last is not None and any(c.name == "finish" for c in last.tool_calls)
    completeness = "complete" if finished else "incomplete"
    if not finished:
        missing.append(kit.MissingField(field="events", reason="the attempt does not end in a finish call"))
    evidence = []
    if report is not None:
        evidence.append(kit.TrajectoryEvidence(
            kind="test_execution", summary=f"SWE-bench harness report: resolved={reported}",
            detail={"report": report}))
    elif success is not None:
        evidence.append(kit.TrajectoryEvidence(kind="source_label", summary=f"resolved={success}"))
    raw, redactions = kit.raw_record_of(unit.data)
    run_id = row.get("run_id")
    return kit.build(
        task_id=task_id, task_key=f"swe:{task_id}",
        source=source(SOURCE_ID, URL, unit, digest),
        task_family="swe-gym", domain="software-engineering", split=None,
        events=events, tools=tools,
        provenance=kit.TrajectoryProvenance(demonstrator="agent", producer="SWE-Gym", scaffold="OpenHands",
                                  attempt=attempt, source_metadata={"run_id": run_id, "instance_id": instance_id}),
        outcome=kit.Outcome(success=success,
                            status=None if success is None else ("resolved" if success else "unresolved"),
                            source_metadata={"resolved": resolved}),
        verification=kit.Verification(method="swe-bench-harness" if report is not None else "source-label",
                                      executable=report is not None, evidence=evidence),
        completeness=completeness, missing_fields=missing,
        transformations=[*calls.transformations(), *redactions,
                         kit.Transformation(name="import-swe-gym-sampled", version=VERSION)],
        raw_record=raw, metadata={"run_id": run_id})
