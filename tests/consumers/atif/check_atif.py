"""Run inside .venv-consumers/atif: validate exported ATIF documents with the atif package's own models.

Usage: python check_atif.py FILE.json...   Prints one JSON object per file: whether
``atif.Trajectory.model_validate`` accepted it (or the first error), its schema version, the
number of steps, the step sources, the tool calls and observation results it holds, how many
steps are copied context, and whether ``to_json_dict()`` gives the document back.
"""

import json
import sys

from atif import Trajectory
from pydantic import ValidationError

for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    try:
        trajectory = Trajectory.model_validate(document)
    except ValidationError as exc:
        print(json.dumps({"file": path, "valid": False, "error": str(exc).splitlines()[0:3]}))
        continue
    steps = trajectory.steps
    print(json.dumps({
        "file": path,
        "valid": True,
        "schema_version": trajectory.schema_version,
        "steps": len(steps),
        "sources": [s.source for s in steps],
        "tool_calls": sum(len(s.tool_calls or []) for s in steps),
        "results": sum(len(s.observation.results) if s.observation else 0 for s in steps),
        "copied_context": sum(1 for s in steps if s.is_copied_context),
        "round_trip": trajectory.to_json_dict() == document,
    }))
