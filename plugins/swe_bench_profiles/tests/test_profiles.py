"""Profiles swe-bench-tasks-v2 and nemo-gym-swebench-tasks-v1 through real exports on a real mirror."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from sediment.testing import GitRepo, MirrorRoot, outcome, rollout, run_export, snapshot, test_result

ENVIRONMENTS = ('[repos."owner/repo"]\nversion = "0.1"\nimage_per_instance = true\n'
                'test_command = "python -m pytest -rA"\nlog_parser = "parse_log_pytest"\ninstall = ["pip install -e ."]\n')


@pytest.fixture
def history(git_repo: GitRepo) -> dict[str, str]:
    base = git_repo.commit({"calc.py": "def div(a, b):\n    return a // b\n",
                            "tests/test_ops.py": "from calc import div\n\n\ndef test_div():\n    assert div(7, 2) == 3.5\n"})
    fix = git_repo.commit({"calc.py": "def div(a, b):\n    return a / b\n",
                           "tests/test_ops.py": "from calc import div\n\n\ndef test_div():\n    assert div(7, 2) == 3.5\n"
                                                "\n\ndef test_quarter():\n    assert div(1, 4) == 0.25\n"})
    return {"base": base, "fix": fix}


@pytest.fixture
def settings(tmp_path: Path) -> dict[str, dict[str, Any]]:
    path = tmp_path / "environments.toml"
    path.write_text(ENVIRONMENTS)
    return {"swe-bench-tasks-v2": {"environments": str(path)},
            "nemo-gym-swebench-tasks-v1": {"environments": str(path)}}


def results(base: str, fix: str) -> tuple[Any, ...]:
    return (test_result("tests/test_ops.py::test_div", base, "failed", run_id="3"),
            test_result("tests/test_ops.py::test_kept", base, run_id="3"),
            test_result("tests/test_ops.py::test_div", fix, run_id="9"),
            test_result("tests/test_ops.py::test_quarter", fix, run_id="9"),
            test_result("tests/test_ops.py::test_kept", fix, run_id="9"),
            test_result("tests/test_ops.py::test_flip", fix, "failed", run_id="9"),
            test_result("tests/test_ops.py::test_flip", fix, run_id="9", attempt=2))


def task(session: str, history: dict[str, str], **fields: Any) -> Any:
    fix = history["fix"]
    values: dict[str, Any] = {"commits": [fix], "test_results": results(history["base"], fix),
                              "outcomes": [outcome(f"{session}-o1", fix, "failed", run_id="9", attempt=1),
                                           outcome(f"{session}-o2", fix, run_id="9", attempt=2)]}
    values.update(fields)
    return rollout(session, **values)


def export(rollouts: list[Any], out: Path, mirrors: MirrorRoot, settings: Any, profile: str = "swe-bench-tasks-v2",
           **kwargs: Any) -> Any:
    return run_export(rollouts, out, target="swe-bench", profile=profile, mirrors=mirrors, settings=settings, **kwargs)


def test_a_gradable_instance(tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str],
                             settings: dict[str, Any]) -> None:
    result = export([task("s1", history)], tmp_path / "out", mirror_root, settings)
    assert result.summary["skipped"] == {} and result.summary["rows"] == 1
    [row] = result.rows["data.jsonl"]
    assert list(row) == ["repo", "instance_id", "base_commit", "patch", "test_patch", "problem_statement",
                         "hints_text", "created_at", "version", "FAIL_TO_PASS", "PASS_TO_PASS",
                         "environment_setup_commit", "image", "eval_script", "log_parser", "eval_type", "metadata"]
    assert all(isinstance(row[k], str) for k in list(row)[:-1])
    assert json.loads(row["FAIL_TO_PASS"]) == ["tests/test_ops.py::test_div", "tests/test_ops.py::test_quarter"]
    assert json.loads(row["PASS_TO_PASS"]) == ["tests/test_ops.py::test_kept"]
    assert row["base_commit"] == row["environment_setup_commit"] == history["base"]
    assert row["patch"].startswith("diff --git a/calc.py b/calc.py") and "tests/" not in row["patch"]
    assert row["test_patch"].startswith("diff --git a/tests/test_ops.py b/tests/test_ops.py")
    assert row["created_at"] == "2026-01-05T12:00:00Z"  # the Session's first call
    assert row["image"] == f"swebench/sweb.eval.x86_64.{row['instance_id']}:latest"
    assert (row["version"], row["log_parser"], row["eval_type"], row["hints_text"]) == (
        "0.1", "parse_log_pytest", "pass_and_fail", "")
    script = row["eval_script"].splitlines()
    assert script[:4] == ["#!/bin/bash", "set -uxo pipefail", "cd /testbed", "pip install -e ."]
    assert script[4] == f"git checkout {history['base']} -- tests/test_ops.py" == script[-1]
    assert script[5] == "git apply -v - <<'EOF_SEDIMENT_TEST_PATCH'"
    start = script.index(": '>>>>> Start Test Output'")
    assert script[start + 1:start + 3] == ["python -m pytest -rA", ": '>>>>> End Test Output'"]
    evidence = row["metadata"]["test_transitions"]
    assert evidence["excluded"] == {"flaky_on_verified": 1}
    assert len(evidence["fail_to_pass_result_ids"]) == 3 and len(evidence["pass_to_pass_result_ids"]) == 2
    assert row["metadata"]["reward_source"] == "resolved_ci_pass"


def test_declines_are_counted(tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str],
                              settings: dict[str, Any]) -> None:
    base, fix = history["base"], history["fix"]
    rollouts = [
        task("no-base", history, test_results=results(base, fix)[2:]),
        task("no-fix", history, test_results=results(base, fix)[:2]),
        task("no-f2p", history, test_results=(test_result("t.py::a", base, run_id="3"),
                                              test_result("t.py::a", fix, run_id="9"))),
        task("good", history),
    ]
    result = export(rollouts, tmp_path / "out", mirror_root, settings)
    assert result.summary["skipped"] == {"verified_test_results_absent": 1, "base_test_results_absent": 1,
                                         "no_fail_to_pass": 1}
    assert [r["instance_id"] for r in result.rows["data.jsonl"]] == [f"acme-good-{fix[:7]}"]
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text(ENVIRONMENTS.replace("owner/repo", "owner/other"))
    unconfigured = export(rollouts, tmp_path / "none", mirror_root,
                          {"swe-bench-tasks-v2": {"environments": str(elsewhere)}})
    assert unconfigured.summary["skipped"] == {"environment_unconfigured": 4}


@pytest.mark.parametrize("profile", ["swe-bench-tasks-v2", "nemo-gym-swebench-tasks-v1"])
def test_environments_are_a_required_readable_setting(tmp_path: Path, mirror_root: MirrorRoot,
                                                      history: dict[str, str], profile: str) -> None:
    from sediment.testing import ConfigurationError

    not_toml = tmp_path / "not.toml"
    not_toml.write_text("[repos\n")
    no_repos = tmp_path / "no-repos.toml"
    no_repos.write_text("[other]\n")
    cases = [({}, "Field required"), ({"environments": str(tmp_path / "typo.toml")}, "cannot read"),
             ({"environments": str(tmp_path)}, "Is a directory"), ({"environments": str(not_toml)}, "is not a TOML file"),
             ({"environments": str(no_repos)}, "has no [repos] table")]
    for values, problem in cases:
        with pytest.raises(ConfigurationError, match=f"plugin {profile} setting environments: .*{re.escape(problem)}") as raised:
            export([task("s1", history)], tmp_path / "out", mirror_root, {profile: values}, profile=profile)
        assert "$SEDIMENT_SWE_BENCH_ENVIRONMENTS_FILE" in str(raised.value)
        assert not (tmp_path / "out").exists()  # refused before the directory was claimed


def test_a_tests_only_change_is_no_task(tmp_path: Path, mirror_root: MirrorRoot, git_repo: GitRepo,
                                        settings: dict[str, Any]) -> None:
    base = git_repo.commit({"calc.py": "x = 1\n"})
    tests_only = git_repo.commit({"tests/test_x.py": "def test_x():\n    assert True\n"})
    r = rollout("s1", commits=[tests_only], outcomes=[outcome("o1", tests_only, run_id="9")],
                test_results=(test_result("tests/test_x.py::test_x", tests_only, run_id="9"),
                              test_result("tests/test_y.py::test_y", base, run_id="3")))
    result = export([r], tmp_path / "out", mirror_root, settings)
    assert result.summary["skipped"] == {"no_source_change": 1}


def test_nemo_gym_swebench_rows(tmp_path: Path, mirror_root: MirrorRoot, history: dict[str, str],
                                settings: dict[str, Any]) -> None:
    result = export([task("s1", history)], tmp_path / "out", mirror_root, settings,
                    profile="nemo-gym-swebench-tasks-v1")
    [row] = result.rows["data.jsonl"]
    fields = ["repo", "instance_id", "base_commit", "patch", "test_patch", "problem_statement", "hints_text",
              "created_at", "version", "FAIL_TO_PASS", "PASS_TO_PASS", "environment_setup_commit", "difficulty",
              "subset", "split"]
    assert list(row) == ["responses_create_params", "agent_ref", *fields, "sediment"]
    assert all(isinstance(row[f], str) for f in fields)
    assert (row["difficulty"], row["subset"], row["split"]) == ("unknown", "sediment", "train")
    assert row["responses_create_params"] == {"input": [{"role": "user", "content": row["problem_statement"]}]}
    assert row["agent_ref"] == {"name": "swebench_agent"}


def test_deterministic_over_repeats_and_shuffles(tmp_path: Path, mirror_root: MirrorRoot,
                                                 history: dict[str, str], settings: dict[str, Any]) -> None:
    rollouts = [task(f"s{i}", history, test_results=tuple(random.Random(i).sample(results(history["base"],
                                                                                          history["fix"]), 7)))
                for i in range(5)]
    export(rollouts, tmp_path / "a", mirror_root, settings)
    shuffled = list(reversed(rollouts))
    export(shuffled, tmp_path / "b", mirror_root, settings)
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
