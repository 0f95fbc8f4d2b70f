"""Run inside .venv-consumers: load exported SWE-bench rows with the real packages.

Usage: python check_swebench.py TASKS.jsonl...   Prints one JSON line per file.
"""

import json
import sys
import typing

from datasets import load_dataset
from swebench.harness.utils import load_swebench_dataset
from swebench.types import SWEbenchInstance

for path in sys.argv[1:]:
    with open(path, encoding="ascii") as handle:
        rows = [json.loads(line) for line in handle]
    ids = [row["instance_id"] for row in rows]
    loaded = load_swebench_dataset(path, instance_ids=ids)
    hints = typing.get_type_hints(SWEbenchInstance)
    wrong = sorted({k for row in loaded for k, v in row.items() if k in hints and not isinstance(v, hints[k])})
    dataset = load_dataset("json", data_files=path, split="train")
    print(json.dumps({
        "path": path,
        "instance_ids": [row["instance_id"] for row in loaded],
        "typed_keys": sorted(k for k in rows[0] if k in hints),
        "wrong_types": wrong,
        "arrow_columns": dataset.column_names,
        "arrow_patch_equal": dataset["patch"] == [row["patch"] for row in rows],
        "arrow_problem_equal": dataset["problem_statement"] == [row["problem_statement"] for row in rows],
        "arrow_metadata_equal": dataset["metadata"][0]["ci_resolution"]["commit_sha"]
        == rows[0]["metadata"]["ci_resolution"]["commit_sha"],
    }))
