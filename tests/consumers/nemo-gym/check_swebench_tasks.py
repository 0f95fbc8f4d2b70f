"""Run inside .venv-consumers/nemo-gym: validate task rows for the swebench resources server
with nemo-gym's own TaskData schema and request model.

Usage: python check_swebench_tasks.py ROWS.jsonl...   Prints one JSON object per file.
"""

import json
import sys

from nemo_gym.base_resources_server import BaseRunRequest
from nemo_gym.task_data import find_server_dir, load_task_data_schema, validate_jsonl_rows

adapter = load_task_data_schema(find_server_dir("swebench"))
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    result = validate_jsonl_rows("swebench", adapter, path, lines)
    requests = [BaseRunRequest.model_validate(json.loads(line)) for line in lines]
    print(json.dumps({"path": path, "rows": result.rows, "error_rows": result.error_rows,
                      "errors": [str(e)[:300] for e in result.errors], "unknown_keys": dict(result.unknown_keys),
                      "input_classes": [type(r.responses_create_params.input[0]).__name__ for r in requests]}))
