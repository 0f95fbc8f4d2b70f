"""Generated canonical records (valid ``Trajectory`` 1.0), for tests and the benchmark.

Records are a pure function of ``(seed, index)``; a generated record names its origin in its
``source`` (``source_id`` ``synthetic``), so it can never pass for imported data.
"""

from __future__ import annotations

import random
from typing import Any

from sediment.trajectory import facets
from sediment.trajectory.record import RawRecord, build

_OUTCOMES = (True, False, None)
_COMPLETENESS = ("complete", "complete", "complete", "truncated", "incomplete")


def fields(seed: int, index: int, *, tasks: int = 7, text_bytes: int = 200) -> dict[str, Any]:
    """The fields of one generated record (everything but ``trajectory_id``): a system and a
    user event, then assistant calls each answered by a tool event."""
    rng = random.Random(f"{seed}:{index}")
    task = rng.randrange(tasks)
    events: list[dict[str, Any]] = [
        {"event_id": "event:0", "role": "system", "text": "You are a coding agent."},
        {"event_id": "event:1", "role": "user", "text": f"Fix issue {task}."},
    ]
    for turn in range(rng.randrange(1, 6)):
        cid = f"call_{turn}"
        events.append({"event_id": f"event:{len(events)}", "role": "assistant",
                       "text": "Thinking " + "x" * rng.randrange(text_bytes),
                       "tool_calls": [{"call_id": cid, "original_call_id": cid, "name": "bash",
                                       "arguments": {"command": f"ls {turn}"}}],
                       "supervised": rng.random() < 0.9})
        events.append({"event_id": f"event:{len(events)}", "role": "tool", "text": "file " * rng.randrange(1, 40),
                       "tool_result_of": cid})
    success = _OUTCOMES[rng.randrange(3)]
    executable = success is not None and rng.random() < 0.7
    reproduced = executable and rng.random() < 0.3
    evidence: list[dict[str, Any]] = []
    if executable:
        evidence.append({"kind": "test_execution", "independent": reproduced, "summary": "tests ran"})
    elif success is not None:
        evidence.append({"kind": "source_label", "summary": "the source says so"})
    completeness = _COMPLETENESS[rng.randrange(len(_COMPLETENESS))]
    raw = f'{{"seed": {seed}, "index": {index}}}'.encode()
    return {
        "task_id": f"task-{task}",
        "task_key": f"synthetic:task-{task}",
        "source": {"source_id": "synthetic", "url": None, "revision": f"rev-{seed}", "locator": f"row {index}"},
        "task_family": "synthetic",
        "domain": "software-engineering",
        "split": "test" if task == 0 else "train",
        "events": events,
        "tools": [{"name": "bash", "description": "run a command", "parameters": {"type": "object"}}],
        "provenance": {"demonstrator": "expert" if rng.random() < 0.2 else "agent", "scaffold": "synthetic-agent",
                       "model": rng.choice(["model-a", "model-b"])},
        "outcome": {"success": success, "status": None if success is None else ("resolved" if success else "failed"),
                    "reward": None if success is None else float(success), "termination_reason": "submitted"},
        "verification": {"method": "tests" if executable else ("label" if success is not None else "none"),
                         "executable": executable, "independently_reproduced": reproduced, "evidence": evidence},
        "completeness": completeness,
        "missing_fields": [] if completeness == "complete" else [{"field": "events", "reason": f"run {completeness}"}],
        "raw_record": RawRecord.of(raw),
    }


def rebuild(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """The JSON object of the valid record built from ``base`` with ``changes``."""
    return facets.as_record(build(**{**base, **changes}))


def record(seed: int, index: int, **options: Any) -> dict[str, Any]:
    return rebuild(fields(seed, index, **options))


def records(seed: int, count: int, **options: Any) -> list[dict[str, Any]]:
    return [record(seed, i, **options) for i in range(count)]
