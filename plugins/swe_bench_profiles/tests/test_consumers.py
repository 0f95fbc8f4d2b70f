"""The demo's gradable SWE-bench tasks in the consumers' own code: swebench 5.0.2 builds their
test specs, reloads them and checks a task-repo layout, and **grades real runs without docker**:
each row's base commit is checked out from the demo repository, the patch under test and the
row's test patch applied, the row's test command run, and the captured log fed to
get_eval_report. nemo-gym 0.7.0 validates the NeMo Gym swebench task rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sediment.testing import run_consumer, run_demo

ROOT = Path(__file__).parents[3]
CHECKS = ROOT / "tests" / "consumers"
START, END = ">>>>> Start Test Output", ">>>>> End Test Output"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "demo"
    run_demo(out)
    return out


def rows(directory: Path, into: Path) -> tuple[Path, list[dict[str, Any]]]:
    """Every data row of a profile export (both split sides), written to one file ``into``."""
    lines = [line for p in sorted(directory.glob("data*.jsonl")) for line in p.read_text(encoding="utf-8").splitlines()]
    into.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return into, [json.loads(line) for line in lines]


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def run_tests(row: dict[str, Any], origin: Path, patch: str, workdir: Path) -> Path:
    """What the eval script does, in a real checkout: apply the patch under test and the test
    patch at the base commit, run the test command between the markers; the log's path."""
    checkout = workdir / "testbed"
    subprocess.run(["git", "clone", "-q", str(origin), str(checkout)], check=True)
    git("checkout", "-q", row["base_commit"], cwd=checkout)
    for diff in (patch, row["test_patch"]):
        if diff:
            subprocess.run(["git", "apply", "-"], input=diff, text=True, cwd=checkout, check=True)
    environment = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                       PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    environment.pop("PYTHONPATH", None)
    tested = subprocess.run(["bash", "-c", row["eval_script"].split(f": '{START}'\n")[1].split(f"\n: '{END}'")[0]],
                            cwd=checkout, env=environment, capture_output=True, text=True, timeout=300)
    log = workdir / "test_output.txt"
    log.write_text(f"+ : '{START}'\n{tested.stdout}{tested.stderr}\n+ : '{END}'\n"
                   f">>>>> Test Exit Code: {tested.returncode}\n")
    return log


def breaking_patch(row: dict[str, Any], origin: Path, workdir: Path) -> str:
    """The reference patch plus a change that breaks one PASS_TO_PASS test (mul multiplies no more)."""
    assert "tests/test_ops.py::test_mul" in json.loads(row["PASS_TO_PASS"])
    checkout = workdir / "breaking"
    subprocess.run(["git", "clone", "-q", str(origin), str(checkout)], check=True)
    git("checkout", "-q", row["base_commit"], cwd=checkout)
    subprocess.run(["git", "apply", "-"], input=row["patch"], text=True, cwd=checkout, check=True)
    mul = checkout / "mul.py"
    mul.write_text(mul.read_text().replace("return a * b", "return a + b"))
    return git("diff", cwd=checkout)


def test_swebench_specs_reload_and_grade_real_runs(demo: Path, consumer_python: Callable[[str], Path],
                                                   tmp_path: Path) -> None:
    python = consumer_python("swebench")
    path, tasks = rows(demo / "profiles" / "swe-bench-tasks-v2", tmp_path / "tasks.jsonl")
    assert tasks, "the demo yields at least one gradable task"
    origin = demo / "inputs" / "origin" / "calc.git"
    grades = []
    for number, row in enumerate(tasks):
        for label, patch in (("reference", row["patch"]), ("empty", ""),
                             ("breaks PASS_TO_PASS", breaking_patch(row, origin, tmp_path / f"b{number}"))):
            workdir = tmp_path / f"{number}-{label.replace(' ', '-')}"
            workdir.mkdir()
            grades.append({"instance_id": row["instance_id"], "label": label, "model_patch": patch,
                           "log": str(run_tests(row, origin, patch, workdir))})
    (tmp_path / "grades.json").write_text(json.dumps(grades))
    [report] = run_consumer(python, CHECKS / "swebench" / "check_tasks.py", path, tmp_path / "grades.json",
                            home=tmp_path / "hf")
    assert report["swebench"] == "5.0.2"
    for row, seen in zip(tasks, report["rows"], strict=True):
        assert seen["spec_fail_to_pass"] == json.loads(row["FAIL_TO_PASS"]) != []
        assert seen["spec_pass_to_pass"] == json.loads(row["PASS_TO_PASS"])
        assert seen["spec_log_parser"] == row["log_parser"] in report["parsers"]
        assert seen["spec_eval_type"] == row["eval_type"] in report["eval_types"]
        assert seen["spec_image"] == row["image"] == seen["expected_image"]
        assert all(seen["loaded_equal"].values()), seen["loaded_equal"]
        assert seen["task_repo_errors"] == []
    verdicts = {(g["instance_id"], g["label"]): g["resolved"] for g in report["grades"]}
    for row in tasks:
        assert verdicts[(row["instance_id"], "reference")] is True
        assert verdicts[(row["instance_id"], "empty")] is False
        assert verdicts[(row["instance_id"], "breaks PASS_TO_PASS")] is False


def test_the_parser_names_sediment_accepts_are_swebench_s(demo: Path, consumer_python: Callable[[str], Path],
                                                          tmp_path: Path) -> None:
    from sediment_swe_bench_profiles.environments import SWE_BENCH_LOG_PARSERS

    path, _ = rows(demo / "profiles" / "swe-bench-tasks-v2", tmp_path / "tasks.jsonl")
    (tmp_path / "none.json").write_text("[]")
    [report] = run_consumer(consumer_python("swebench"), CHECKS / "swebench" / "check_tasks.py", path,
                            tmp_path / "none.json", home=tmp_path / "hf")
    assert set(report["parsers"]) == SWE_BENCH_LOG_PARSERS


def test_nemo_gym_swebench_server_accepts_every_row(demo: Path, consumer_python: Callable[[str], Path],
                                                    tmp_path: Path) -> None:
    path, tasks = rows(demo / "profiles" / "nemo-gym-swebench-tasks-v1", tmp_path / "tasks.jsonl")
    assert tasks
    [report] = run_consumer(consumer_python("nemo-gym"), CHECKS / "nemo-gym" / "check_swebench_tasks.py", path,
                            home=tmp_path)
    assert report["rows"] == len(tasks) and report["error_rows"] == 0, report["errors"]
    assert report["input_classes"] == ["NeMoGymEasyInputMessage"] * len(tasks)
