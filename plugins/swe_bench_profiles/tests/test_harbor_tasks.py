"""Profile harbor-tasks-v1 through real exports on a real mirror, and its scripts run in a real
checkout without docker: unchanged 0, after solution/solve.sh 1, with a PASS_TO_PASS test broken 0."""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest

from sediment.testing import ORG, GitRepo, MirrorRoot, conversation, outcome, rollout, run_export, snapshot, test_result

PROFILE = "harbor-tasks-v1"
ENVIRONMENTS = ('[repos."owner/repo"]\nversion = "0.1"\nimage = "ghcr.io/owner/repo-eval:0.1"\n'
                'test_command = "python -m pytest -rA -p no:cacheprovider"\nlog_parser = "parse_log_pytest"\n'
                'install = ["pip install -e ."]\ncpus = 2\nmemory_mb = 4096\n')
OPS = "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a // b\n"
TESTS = ("from ops import add, div\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_div():\n    assert div(7, 2) == 3.5\n")


@pytest.fixture
def history(git_repo: GitRepo) -> dict[str, str]:
    """A real-shaped repository: a module, its tests, and a fix that makes division true division
    and adds a test for it (so the reference patch has a source part and a test part)."""
    base = git_repo.commit({"ops.py": OPS, "tests/test_ops.py": TESTS, "README.md": "ops\n",
                            "tests/old_test.py": "def test_gone():\n    assert True\n"})
    fix = git_repo.commit({"ops.py": OPS.replace("a // b", "a / b"), "tests/old_test.py": None,
                           "tests/test_ops.py": TESTS + "\n\ndef test_quarter():\n    assert div(1, 4) == 0.25\n"})
    return {"base": base, "fix": fix}


def results(base: str, fix: str, *extra: Any) -> tuple[Any, ...]:
    return (test_result("tests/test_ops.py::test_div", base, "failed", run_id="3"),
            test_result("tests/test_ops.py::test_add", base, run_id="3"),
            test_result("tests/test_ops.py::test_div", fix, run_id="9"),
            test_result("tests/test_ops.py::test_quarter", fix, run_id="9"),
            test_result("tests/test_ops.py::test_add", fix, run_id="9"), *extra)


def task(session: str, history: dict[str, str], **fields: Any) -> Any:
    fix = history["fix"]
    values: dict[str, Any] = {"commits": [fix], "test_results": results(history["base"], fix),
                              "outcomes": [outcome(f"{session}-o1", fix, run_id="9")]}
    values.update(fields)
    return rollout(session, **values)


@pytest.fixture
def settings(tmp_path: Path) -> dict[str, dict[str, Any]]:
    path = tmp_path / "environments.toml"
    path.write_text(ENVIRONMENTS)
    return {PROFILE: {"environments": str(path)}}


def export(rollouts: list[Any], out: Path, mirrors: MirrorRoot, settings: Any, **kwargs: Any) -> Any:
    return run_export(rollouts, out, target="swe-bench", profile=PROFILE, mirrors=mirrors, settings=settings,
                      **kwargs)


def local_python() -> dict[str, str]:
    """This test's Python environment for the scripts (what the image's would be)."""
    environment = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                       PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    environment.pop("PYTHONPATH", None)
    return environment


def checkout(origin: Path, commit: str, into: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(origin), str(into)], check=True)
    subprocess.run(["git", "checkout", "-q", commit], cwd=into, check=True)
    return into


def reward(task_dir: Path, testbed: Path, log: Path) -> str:
    """Run the task's tests/test.sh against ``testbed``; the reward it wrote."""
    reward_file = log.with_suffix(".reward")
    environment = dict(local_python(), SEDIMENT_TESTBED=str(testbed), SEDIMENT_REWARD_FILE=str(reward_file))
    run = subprocess.run(["bash", str(task_dir / "tests" / "test.sh")], env=environment, capture_output=True,
                         text=True, timeout=300, check=False)
    log.write_text(run.stdout + run.stderr)
    assert run.returncode == 0, run.stderr
    return reward_file.read_text().strip()


def solve(task_dir: Path, testbed: Path) -> None:
    subprocess.run(["bash", str(task_dir / "solution" / "solve.sh")], check=True, capture_output=True,
                   env=dict(local_python(), SEDIMENT_TESTBED=str(testbed)))


def rewards(task_dir: Path, origin: Path, base: str, breaking: tuple[str, str, str], work: Path) -> dict[str, str]:
    """Rewards of the unchanged checkout, the reference solution, and the reference with a change
    (file, old, new) that breaks a PASS_TO_PASS test."""
    found = {}
    unchanged = checkout(origin, base, work / "unchanged")
    found["unchanged"] = reward(task_dir, unchanged, work / "unchanged.log")
    solved = checkout(origin, base, work / "solved")
    solve(task_dir, solved)
    found["reference"] = reward(task_dir, solved, work / "solved.log")
    broken = checkout(origin, base, work / "broken")
    solve(task_dir, broken)
    path, old, new = breaking
    (broken / path).write_text((broken / path).read_text().replace(old, new))
    found["breaks PASS_TO_PASS"] = reward(task_dir, broken, work / "broken.log")
    return found


def test_a_harbor_task_directory(tmp_path: Path, mirror_root: MirrorRoot, git_repo: GitRepo,
                                 history: dict[str, str], settings: dict[str, Any]) -> None:
    result = export([task("s1", history)], tmp_path / "out", mirror_root, settings)
    assert result.summary["skipped"] == {} and result.summary["rows"] == 1
    [row] = result.rows["data.jsonl"]
    name = row["task"]
    directory = tmp_path / "out" / name
    assert name == row["instance_id"] == f"acme-s1-{history['fix'][:7]}"
    files = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())
    assert files == ["environment/Dockerfile", "environment/repo.tar.gz", "instruction.md", "solution/reference.patch",
                     "solution/solve.sh", "task.toml", "tests/files/tests/test_ops.py", "tests/selected_tests.txt",
                     "tests/test.sh"]
    assert row["files"] == {f: hashlib.sha256((directory / f).read_bytes()).hexdigest() for f in files}
    [canonical] = run_export([task("s1", history)], tmp_path / "canonical", target="swe-bench",
                             mirrors=mirror_root).rows["tasks.jsonl"]
    assert (directory / "instruction.md").read_bytes() == canonical["problem_statement"].encode()  # verbatim
    assert {f: oct((directory / f).stat().st_mode & 0o777) for f in ("tests/test.sh", "solution/solve.sh", "task.toml")} \
        == {"tests/test.sh": "0o755", "solution/solve.sh": "0o755", "task.toml": "0o644"}
    config = tomllib.loads((directory / "task.toml").read_text())
    assert config["source"] == "sediment"
    assert config["verifier"] == {"timeout_sec": 1800.0} and config["agent"] == {"timeout_sec": 3600.0}
    assert config["environment"] == {"build_timeout_sec": 1800.0, "workdir": "/testbed", "cpus": 2, "memory_mb": 4096}
    meta = config["metadata"]
    assert (meta["instance_id"], meta["repo"], meta["base_commit"], meta["verified_commit"], meta["split"]) == (
        name, "owner/repo", history["base"], history["fix"], "train")
    assert meta["fail_to_pass"] == row["FAIL_TO_PASS"] == ["tests/test_ops.py::test_div", "tests/test_ops.py::test_quarter"]
    assert meta["pass_to_pass"] == row["PASS_TO_PASS"] == ["tests/test_ops.py::test_add"]
    assert (directory / "tests/selected_tests.txt").read_text().splitlines() == [*meta["fail_to_pass"],
                                                                              *meta["pass_to_pass"]]
    dockerfile = (directory / "environment/Dockerfile").read_text().splitlines()
    assert [line for line in dockerfile if not line.startswith("#")][:3] == [
        "FROM ghcr.io/owner/repo-eval:0.1", "ADD repo.tar.gz /testbed/", "WORKDIR /testbed"]
    assert dockerfile[-1] == "RUN pip install -e ." and "://" not in "".join(dockerfile)
    with tarfile.open(directory / "environment/repo.tar.gz") as archive:  # the base commit's tree, exactly
        members = {m.name: archive.extractfile(m).read() for m in archive if m.isfile()}  # type: ignore[union-attr]
    assert members == {"ops.py": OPS.encode(), "tests/test_ops.py": TESTS.encode(), "README.md": b"ops\n",
                       "tests/old_test.py": b"def test_gone():\n    assert True\n"}
    test_script = (directory / "tests/test.sh").read_text()
    assert "rm -f -- tests/old_test.py" in test_script  # the verified commit deleted it
    assert 'REWARD_FILE="${SEDIMENT_REWARD_FILE:-/logs/verifier/reward.txt}"' in test_script
    patch = (directory / "solution/reference.patch").read_text()
    assert patch.startswith("diff --git a/ops.py b/ops.py") and "tests/" not in patch
    [evidence] = result.rows["evidence.jsonl"]
    assert evidence["instance_id"] == name and evidence["evidence"]["reference_checked"] is False
    compatibility = json.loads((tmp_path / "out" / "compatibility.json").read_text())
    assert compatibility["profile"]["writes_directories"] is True
    assert compatibility["directories"][name]["files"] == len(files)


def test_rewards_in_a_real_checkout_without_docker(tmp_path: Path, mirror_root: MirrorRoot, git_repo: GitRepo,
                                                   history: dict[str, str], settings: dict[str, Any]) -> None:
    export([task("s1", history)], tmp_path / "out", mirror_root, settings)
    [directory] = [p for p in (tmp_path / "out").iterdir() if p.is_dir() and not p.name.startswith(".")]
    found = rewards(directory, git_repo.path, history["base"], ("ops.py", "return a + b", "return a - b"), tmp_path)
    assert found == {"unchanged": "0", "reference": "1", "breaks PASS_TO_PASS": "0"}
    assert "PASSED tests/test_ops.py::test_quarter" in (tmp_path / "solved.log").read_text()
    assert "FAILED tests/test_ops.py::test_add" in (tmp_path / "broken.log").read_text()


def test_split_exports_put_each_side_in_its_folder(tmp_path: Path, mirror_root: MirrorRoot,
                                                   history: dict[str, str], settings: dict[str, Any]) -> None:
    held_out = task("s2", history, split="eval", calls=conversation("s2", "make division exact"))
    result = export([task("s1", history), held_out], tmp_path / "out", mirror_root, settings, split_enabled=True)
    assert result.summary["rows"] == 2
    [train], [held] = result.rows["data.train.jsonl"], result.rows["data.eval.jsonl"]
    assert (tmp_path / "out" / "train" / train["task"] / "task.toml").is_file()
    assert (tmp_path / "out" / "eval" / held["task"] / "task.toml").is_file()


def test_declines_are_counted(tmp_path: Path, mirror_root: MirrorRoot, git_repo: GitRepo, history: dict[str, str],
                              settings: dict[str, Any]) -> None:
    base, fix = history["base"], history["fix"]
    rollouts = [
        task("no-base", history, test_results=results(base, fix)[2:]),
        task("spaced", history, test_results=results(base, fix, test_result("tests/t.py::test a", base, run_id="3"),
                                                     test_result("tests/t.py::test a", fix, run_id="9"))),
        task("good", history),
        task("a session/with a slash", history),  # hostile ids are normal: its instance id names no directory
    ]
    result = export(rollouts, tmp_path / "out", mirror_root, settings)
    assert result.summary["skipped"] == {"base_test_results_absent": 1, "instance_id_not_a_directory_name": 1,
                                         "test_id_unnameable": 1}
    assert [r["task"] for r in result.rows["data.jsonl"]] == [f"acme-good-{fix[:7]}"]
    django = tmp_path / "django.toml"
    django.write_text(ENVIRONMENTS.replace("parse_log_pytest", "parse_log_django"))
    other = export(rollouts, tmp_path / "django", mirror_root, {PROFILE: {"environments": str(django)}})
    assert other.summary["skipped"] == {"base_test_results_absent": 1, "instance_id_not_a_directory_name": 1,
                                        "log_parser_unsupported": 2}
    tests_only = git_repo.commit({"tests/test_ops.py": TESTS + "\n\ndef test_more():\n    assert True\n"})
    only = rollout("only", commits=[tests_only], outcomes=[outcome("o1", tests_only, run_id="19")],
                   test_results=(test_result("tests/test_ops.py::test_more", tests_only, run_id="19"),
                                 test_result("tests/test_ops.py::test_add", fix, run_id="13")))
    assert export([only], tmp_path / "only", mirror_root, settings).summary["skipped"] == {"no_source_change": 1}


def test_reference_check_declines_what_its_scripts_do_not_reproduce(
        tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str], settings: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    base, fix = history["base"], history["fix"]
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    ghost = results(base, fix, test_result("tests/test_ops.py::test_ghost", base, "failed", run_id="3"),
                    test_result("tests/test_ops.py::test_ghost", fix, run_id="9"))  # CI said so; no such test
    checked = {PROFILE: {**settings[PROFILE], "check_reference": True, "check_path": str(Path(sys.executable).parent)}}
    result = export([task("good", history), task("ghost", history, test_results=ghost)], tmp_path / "out",
                    mirror_root, checked)
    assert result.summary["skipped"] == {"reference_not_reproduced": 1}
    [row] = result.rows["data.jsonl"]
    assert row["task"] == f"acme-good-{fix[:7]}"
    assert result.rows["evidence.jsonl"][0]["evidence"]["reference_checked"] is True
    unchecked = export([task("ghost", history, test_results=ghost)], tmp_path / "unchecked", mirror_root, settings)
    assert unchecked.summary["rows"] == 1  # without the setting, nothing is run


def test_deterministic_over_repeats_and_shuffles(tmp_path: Path, mirror_root: MirrorRoot,
                                                 history: dict[str, str], settings: dict[str, Any]) -> None:
    rollouts = [task(f"s{i}", history, test_results=tuple(random.Random(i).sample(results(history["base"],
                                                                                          history["fix"]), 5)))
                for i in range(4)]
    export(rollouts, tmp_path / "a", mirror_root, settings)
    export(list(reversed(rollouts)), tmp_path / "b", mirror_root, settings)

    def tree(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
                if p.is_file() and not p.name.startswith(".")}

    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
    assert tree(tmp_path / "a") == tree(tmp_path / "b") and len(tree(tmp_path / "a")) == 4 * 9 + 3


def test_the_archive_is_the_commit_tree_with_modes(tmp_path: Path, git_repo: GitRepo) -> None:
    from sediment.plugin import tree_archive

    sha = git_repo.commit({"run.sh": "#!/bin/sh\n", "a/b/c.txt": "c\n"})
    mirror = git_repo.root.open(ORG, git_repo.repo) or pytest.fail("no mirror")
    packed = tree_archive(mirror, sha)
    assert packed == tree_archive(mirror, sha)
    with tarfile.open(fileobj=io.BytesIO(packed)) as archive:
        assert [(m.name, m.isdir()) for m in archive] == [("a", True), ("a/b", True), ("a/b/c.txt", False),
                                                          ("run.sh", False)]
        assert {m.uid for m in archive} == {0}
