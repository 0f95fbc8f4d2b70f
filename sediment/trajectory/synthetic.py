"""Generated canonical records in the seed's field layout, for tests and the benchmark.

Records are a pure function of ``(seed, index)``; a generated record is labelled as such in its
``source`` (``source_id`` ``synthetic``), so it can never pass for imported data.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

_OUTCOMES = (True, False, None)
_COMPLETENESS = ("complete", "complete", "complete", "truncated", "incomplete")


def _id(prefix: str, *parts: object) -> str:
    return f"{prefix}:" + hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:24]


def record(seed: int, index: int, *, tasks: int = 7, text_bytes: int = 200) -> dict[str, Any]:
    """One generated record: a system and user event, then assistant calls answered by tool events."""
    rng = random.Random(f"{seed}:{index}")
    task = rng.randrange(tasks)
    tid = _id("trajectory", "synthetic", seed, index)
    events: list[dict[str, Any]] = [
        {"event_id": f"{tid}/e0", "role": "system", "content": "You are a coding agent.", "tool_calls": [],
         "supervised": False, "source_metadata": {}, "missing_fields": []},
        {"event_id": f"{tid}/e1", "role": "user", "content": f"Fix issue {task}.", "tool_calls": [],
         "supervised": False, "source_metadata": {}, "missing_fields": []},
    ]
    for turn in range(rng.randrange(1, 6)):
        cid = f"call_{turn}"
        events.append({"event_id": f"{tid}/e{len(events)}", "role": "assistant",
                       "content": "Thinking " + "x" * rng.randrange(text_bytes),
                       "tool_calls": [{"call_id": cid, "name": "bash", "arguments": {"command": f"ls {turn}"}}],
                       "supervised": rng.random() < 0.9, "source_metadata": {}, "missing_fields": []})
        events.append({"event_id": f"{tid}/e{len(events)}", "role": "tool", "content": "file " * rng.randrange(1, 40),
                       "tool_calls": [], "tool_result_of": cid, "supervised": False, "source_metadata": {},
                       "missing_fields": []})
    success = _OUTCOMES[rng.randrange(3)]
    executable = success is not None and rng.random() < 0.7
    return {
        "schema_version": "1.0",
        "trajectory_id": tid,
        "task_id": f"task-{task}",
        "task_key": f"synthetic:task-{task}",
        "source": {"source_id": "synthetic", "url": None, "revision": f"rev-{seed}", "locator": f"row {index}",
                   "sha256": None},
        "task_family": "synthetic",
        "domain": "software-engineering",
        "split": "test" if task == 0 else "train",
        "events": events,
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}],
        "artifacts": [],
        "provenance": {"demonstrator": "expert" if rng.random() < 0.2 else "agent", "scaffold": "synthetic-agent",
                       "model": rng.choice(["model-a", "model-b"])},
        "outcome": {"success": success, "status": None if success is None else ("resolved" if success else "failed"),
                    "reward": None if success is None else float(success), "termination_reason": "submitted"},
        "verification": {"method": "tests" if executable else ("label" if success is not None else None),
                         "executable": executable, "independently_reproduced": executable and rng.random() < 0.3,
                         "evidence": []},
        "completeness": _COMPLETENESS[rng.randrange(len(_COMPLETENESS))],
        "missing_fields": [],
        "transformations": [],
        "raw_record": {"index": index},
        "metadata": {},
    }


def records(seed: int, count: int, **options: Any) -> list[dict[str, Any]]:
    return [record(seed, i, **options) for i in range(count)]
