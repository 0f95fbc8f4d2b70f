"""Run inside .venv-consumers/verifiers: load exported task rows with verifiers' own code.

Usage: python check_verifiers.py TASKS.jsonl...   Prints one JSON object per file: what
NeMoGymTaskset yielded (task names, the rows it kept) and, per row, what
ResponsesDialect.parse_request made of the request (message classes, roles, texts, tools).
"""

import json
import sys

import verifiers
from verifiers.v1.dialects.responses import ResponsesDialect
from verifiers.v1.tasksets.nemo_gym.taskset import NeMoGymConfig, NeMoGymTaskset


def texts(message):
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return [content] if content else []
    return [getattr(part, "text", "") for part in content or []]


for path in sys.argv[1:]:
    tasks = list(NeMoGymTaskset(NeMoGymConfig(dataset=path)))
    report = {"path": path, "verifiers": verifiers.__version__, "tasks": []}
    for task in tasks:
        request = ResponsesDialect().parse_request(task.data.row["responses_create_params"])
        report["tasks"].append({
            "name": task.data.name,
            "idx": task.data.idx,
            "row_instance_id": task.data.row["instance_id"],
            "prompt_classes": [type(m).__name__ for m in task.data.prompt],
            "prompt_roles": [m.role for m in task.data.prompt],
            "prompt_texts": [t for m in task.data.prompt for t in texts(m)],
            "request_texts": [t for m in request.messages for t in texts(m)],
            "tools": [{"name": t.name, "description": t.description, "parameters": t.parameters,
                       "strict": t.strict} for t in request.tools or []],
            "tool_call_names": [c.name for m in request.messages for c in getattr(m, "tool_calls", None) or []],
            "tool_message_ids": [m.tool_call_id for m in request.messages if type(m).__name__ == "ToolMessage"],
        })
    print(json.dumps(report))
