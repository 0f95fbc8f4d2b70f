"""Run inside .venv-consumers/swebench: check exported swe-bench-tasks rows with swebench's own code.

Usage: python check_tasks.py ROWS.jsonl GRADES.json
GRADES.json is a list of {"instance_id", "model_patch", "log"} (a log file path). Prints one
JSON object: per row what make_test_spec built, what load_swebench_dataset read back, what
check_task_repo said of a task-repo layout written from the row; per grade, get_eval_report's
verdict; and the parser names swebench knows.
"""

import json
import pathlib
import sys
import tempfile

import swebench
from swebench.harness.constants import EvalType
from swebench.harness.grading import get_eval_report
from swebench.harness.log_parsers import PARSER_REGISTRY
from swebench.harness.utils import load_swebench_dataset, make_test_spec
from swebench.task.checks import check_task_repo, errors, expected_image
from swebench.task.repo import AS_FILE, dump_tests, dump_yaml

rows_path, grades_path = sys.argv[1], sys.argv[2]
rows = [json.loads(line) for line in pathlib.Path(rows_path).read_text(encoding="utf-8").splitlines()]
by_id = {row["instance_id"]: row for row in rows}
report = {"swebench": swebench.__version__, "parsers": sorted(PARSER_REGISTRY),
          "eval_types": [e.value for e in EvalType], "rows": [], "grades": []}
loaded = {i["instance_id"]: i for i in load_swebench_dataset(rows_path, instance_ids=list(by_id))}
for row in rows:
    spec = make_test_spec(row)
    repo = pathlib.Path(tempfile.mkdtemp()) / "taskrepo"
    task = repo / "tasks" / row["instance_id"]
    task.mkdir(parents=True)
    (repo / "sweb.yaml").write_text(dump_yaml({"datasets": ["sediment/demo"], "splits": ["test"]}))
    meta = {k: row[k] for k in ("instance_id", "repo", "version", "base_commit", "environment_setup_commit",
                                 "created_at", "image", "log_parser", "eval_type")}
    meta.update(split="test", datasets=["sediment/demo"])
    (task / "task.yaml").write_text(dump_yaml(meta))
    (task / "tests.json").write_text(dump_tests({"FAIL_TO_PASS": json.loads(row["FAIL_TO_PASS"]),
                                                 "PASS_TO_PASS": json.loads(row["PASS_TO_PASS"])}))
    for column, name in AS_FILE.items():
        (task / name).write_text(row[column])
    (task / "Dockerfile").write_text("FROM python:3.11\n")
    report["rows"].append({
        "instance_id": row["instance_id"],
        "spec_fail_to_pass": spec.FAIL_TO_PASS,
        "spec_pass_to_pass": spec.PASS_TO_PASS,
        "spec_image": spec.image,
        "expected_image": expected_image(row["instance_id"]),
        "spec_log_parser": spec.log_parser,
        "spec_eval_type": spec.eval_type.value if hasattr(spec.eval_type, "value") else spec.eval_type,
        "eval_script_lines": len(spec.eval_script_list),
        "loaded_equal": {k: loaded[row["instance_id"]].get(k) == v for k, v in row.items() if k != "metadata"},
        "task_repo_errors": [str(p) for p in errors(check_task_repo(repo))],
    })
for grade in json.loads(pathlib.Path(grades_path).read_text(encoding="utf-8")):
    spec = make_test_spec(by_id[grade["instance_id"]])
    prediction = {"instance_id": grade["instance_id"], "model_name_or_path": "sediment-test",
                  "model_patch": grade["model_patch"]}
    result = get_eval_report(spec, prediction, grade["log"], include_tests_status=True)[grade["instance_id"]]
    report["grades"].append({"instance_id": grade["instance_id"], "label": grade.get("label"),
                             "resolved": result["resolved"], "tests_status": result.get("tests_status")})
print(json.dumps(report))
