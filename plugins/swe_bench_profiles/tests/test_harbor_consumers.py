"""The demo's Harbor tasks (profile harbor-tasks-v1) run without docker and loaded by the
consumers' own code, each in its consumer venv: harbor 0.25.0's task model and lint, verifiers
0.4.0's Harbor taskset (its harbor extra, harbor 0.24.0), NeMo Gym 0.7.0's harbor_agent."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sediment.testing import MirrorRoot, bundle_evidence, export_evidence, run_consumer, run_demo

from .test_harbor_tasks import rewards

ROOT = Path(__file__).parents[3]
CHECKS = ROOT / "tests" / "consumers"
PROFILE = "harbor-tasks-v1"
BUILT = "registry.example/sediment-tasks/{instance_id}:1"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "demo"
    run_demo(out)
    return out


def tasks(demo: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The demo's train folder of Harbor tasks and their index rows (the demo has no eval task)."""
    export = demo / "profiles" / PROFILE
    assert not (export / "eval").exists()
    rows = [json.loads(line) for line in (export / "data.train.jsonl").read_text().splitlines()]
    return export / "train", rows


def canonical(demo: Path) -> dict[str, dict[str, Any]]:
    """The demo's canonical swe-bench task rows, by instance id."""
    return {row["instance_id"]: row for path in sorted((demo / "exports" / "swe-bench").glob("tasks*.jsonl"))
            for row in map(json.loads, path.read_text().splitlines())}


def built_images_export(demo: Path, out: Path) -> Path:
    """The demo's tasks exported again from its bundle with setting built_image (what verifiers can run)."""
    settings = {PROFILE: {"environments": str(demo / "inputs" / "swe-bench-environments.toml"), "built_image": BUILT}}
    result = export_evidence(bundle_evidence(demo / "bundle", MirrorRoot(demo / "home" / "mirrors")), out,
                             objective="rlvr", target="swe-bench", profile=PROFILE, settings=settings)
    assert result.summary["rows"] >= 1
    return out / "train"


def test_the_demo_exports_harbor_tasks_that_reward_0_1_0(demo: Path, tmp_path: Path) -> None:
    folder, rows = tasks(demo)
    assert len(rows) >= 1
    origin = demo / "inputs" / "origin" / "calc.git"
    for number, row in enumerate(rows):
        assert "tests/test_ops.py::test_mul" in row["PASS_TO_PASS"]
        work = tmp_path / str(number)
        work.mkdir()
        found = rewards(folder / row["task"], origin, row["base_commit"], ("mul.py", "return a * b", "return a + b"),
                        work)
        assert found == {"unchanged": "0", "reference": "1", "breaks PASS_TO_PASS": "0"}, row["task"]


def test_harbor_loads_and_lints_every_task(demo: Path, consumer_python: Callable[[str], Path], tmp_path: Path) -> None:
    folder, rows = tasks(demo)
    [report] = run_consumer(consumer_python("harbor"), CHECKS / "harbor" / "check_tasks.py", folder, home=tmp_path)
    assert report["harbor"] == "0.25.0"
    assert report["reward_text_path"] == "/logs/verifier/reward.txt" and report["tests_dir"] == "/tests"
    statements = canonical(demo)
    assert [t["name"] for t in report["tasks"]] == report["dataset"] == sorted(r["task"] for r in rows)
    for seen in report["tasks"]:
        row = next(r for r in rows if r["task"] == seen["directory"])
        assert seen["instruction"] == statements[row["instance_id"]]["problem_statement"]
        assert seen["valid_dir"] and seen["dockerfile"] and seen["source"] == "sediment"
        assert (seen["test_script"], seen["solve_script"]) == ("tests/test.sh", "solution/solve.sh")
        assert (seen["verifier_timeout_sec"], seen["agent_timeout_sec"]) == (1800.0, 3600.0)
        assert seen["environment"]["workdir"] == "/testbed" and seen["environment"]["docker_image"] is None
        assert seen["metadata"]["fail_to_pass"] == row["FAIL_TO_PASS"] != []
        assert seen["metadata"]["pass_to_pass"] == row["PASS_TO_PASS"]
        assert seen["metadata"]["base_commit"] == row["base_commit"]
        # a SWE task grades the agent's own work tree: the one default finding is by design
        assert [(f["rule"], f["path"]) for f in seen["lint"]] == [("shared-verifier", "task.toml")]


def test_verifiers_builds_a_task_from_every_directory(demo: Path, consumer_python: Callable[[str], Path],
                                                      tmp_path: Path) -> None:
    python = consumer_python("verifiers-harbor")
    folder, rows = tasks(demo)
    [dockerfile_only] = run_consumer(python, CHECKS / "verifiers-harbor" / "check_tasks.py", folder, home=tmp_path)
    assert dockerfile_only["verifiers"] == "0.4.0"
    assert sorted(dockerfile_only["refused"]) == sorted(r["task"] for r in rows)
    assert all("needs a pullable docker_image" in why for why in dockerfile_only["refused"].values())
    built = built_images_export(demo, tmp_path / "built")
    [report] = run_consumer(python, CHECKS / "verifiers-harbor" / "check_tasks.py", built, home=tmp_path)
    assert report["refused"] == {} and len(report["tasks"]) == len(rows)
    statements = canonical(demo)
    for seen in report["tasks"]:
        row = next(r for r in rows if r["task"] == seen["name"])
        assert seen["prompt"] == statements[row["instance_id"]]["problem_statement"].strip()
        assert (built / seen["task_dir"] / "instruction.md").read_text() == statements[row["instance_id"]][
            "problem_statement"]
        assert seen["image"] == BUILT.replace("{instance_id}", row["instance_id"].lower())
        assert (seen["agent_timeout"], seen["scoring_timeout"]) == (3600.0, 1800.0)
        assert seen["shared_verifier"] is True and seen["upload_environment"] is False
        assert seen["workdir"] == "/testbed"


def test_nemo_gym_harbor_agent_accepts_the_dataset(demo: Path, consumer_python: Callable[[str], Path],
                                                   tmp_path: Path) -> None:
    folder, rows = tasks(demo)
    [report] = run_consumer(consumer_python("nemo-gym-harbor"), CHECKS / "nemo-gym-harbor" / "check_harbor_agent.py",
                            folder, home=tmp_path)
    assert (report["nemo_gym"], report["harbor"], report["datasets"]) == ("0.7.0", "0.25.0", ["sediment"])
    assert [(r["alias"], r["task"], r["resolved"]) for r in report["rows"]] == [
        ("sediment", name, [name]) for name in sorted(r["task"] for r in rows)]


def test_the_demo_archive_is_the_base_commit(demo: Path, tmp_path: Path) -> None:
    """The archive the Dockerfile unpacks equals `git archive` of the base commit, file for file."""
    folder, rows = tasks(demo)
    origin = demo / "inputs" / "origin" / "calc.git"
    for row in rows:
        ours, theirs = tmp_path / row["task"] / "ours", tmp_path / row["task"] / "git"
        ours.mkdir(parents=True)
        theirs.mkdir()
        subprocess.run(["tar", "-xzf", str(folder / row["task"] / "environment" / "repo.tar.gz"), "-C", str(ours)],
                       check=True)
        archive = subprocess.run(["git", "--git-dir", str(origin), "archive", row["base_commit"]], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-xf", "-", "-C", str(theirs)], input=archive, check=True)
        listing = {p.relative_to(ours).as_posix(): p.read_bytes() for p in ours.rglob("*") if p.is_file()}
        assert listing == {p.relative_to(theirs).as_posix(): p.read_bytes() for p in theirs.rglob("*") if p.is_file()}
