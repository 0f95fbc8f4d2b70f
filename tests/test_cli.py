"""The CLI as users run it: a real process, its exit codes, stdout and stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sediment.bundle.write import write_bundle
from sediment.testing import ORG, POLICY, GitRepo, outcome, rollout


def sediment(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_") or k == "SEDIMENT_LOAD_PLUGINS"}
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True,
                          env=environ, timeout=120, check=False)


@pytest.fixture
def bundle(tmp_path: Path, git_repo: GitRepo) -> Path:
    git_repo.commit({"a.py": "1\n"})
    sha = git_repo.commit({"a.py": "2\n"})
    rollouts = [rollout("s1", commits=[sha], outcomes=[outcome("o1", sha)]), rollout("s2")]
    return write_bundle(rollouts, tmp_path / "bundle", org_id=ORG, policy=POLICY, quarantine_revision=0)


def test_targets_json_lists_builtins_with_vocabularies() -> None:
    result = sediment("targets", "--json")
    assert result.returncode == 0, result.stderr
    listed = {t["name"]: t for t in json.loads(result.stdout)["targets"]}
    assert {"sediment", "swe-bench", "nemo-gym"} <= set(listed)
    assert listed["swe-bench"]["skip_reasons"]["tasks"][9:12] == [
        "no_attributed_commit", "missing_verifier_evidence", "failed_reference_patch"]
    assert listed["nemo-gym"]["files"] == {"rollouts": ["rollouts.jsonl", "rollouts.train.jsonl", "rollouts.eval.jsonl"]}
    assert listed["sediment"]["schema_ids"]["tasks"].endswith("/sediment-rlvr-task/v3.json")


def test_export_json_summary(tmp_path: Path, bundle: Path) -> None:
    mirrors = tmp_path / "mirrors"
    result = sediment("export", "rlvr", "--target", "sediment", "--from", str(bundle), "--out",
                      str(tmp_path / "out"), "--json", env={"SEDIMENT_MIRROR_PATH": str(mirrors)})
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert list(summary) == ["target", "rollouts", "task_rows", "task_skipped", "rollout_rows",
                             "rollout_skipped", "fragmented", "written", "manifests"]
    assert summary["rollouts"] == 2 and summary["task_skipped"] == {"no_attributed_commit": 1}
    assert summary["manifests"] == {"openenv": [str(tmp_path / "out" / "environment.yaml")]}
    validated = sediment("schema", "validate", *summary["written"])
    assert validated.returncode == 0, validated.stderr


def test_export_table_and_nothing_written(tmp_path: Path) -> None:
    empty = write_bundle([], tmp_path / "empty", org_id=ORG, policy=POLICY, quarantine_revision=0)
    result = sediment("export", "rlvr", "--target", "nemo-gym", "--from", str(empty), "--out", str(tmp_path / "o"))
    assert result.returncode == 0, result.stderr
    assert "nothing written (empty projections leave existing files untouched)" in result.stderr
    # an empty bundle says why and what would change it, in one line
    assert "nothing written: no rollouts in the evidence: ingest the Sessions' calls" in result.stderr
    assert result.stdout == ""


def test_missing_target_lists_choices(tmp_path: Path, bundle: Path) -> None:
    result = sediment("export", "rlvr", "--from", str(bundle), "--out", str(tmp_path / "o"))
    assert result.returncode == 2
    assert "--target choices: nemo-gym, sediment, swe-bench" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_target(tmp_path: Path, bundle: Path) -> None:
    result = sediment("export", "rlvr", "--target", "trl", "--from", str(bundle), "--out", str(tmp_path / "o"))
    assert result.returncode == 2
    assert "unsupported RLVR target: trl; installed targets: nemo-gym, sediment, swe-bench" in result.stderr


def test_missing_mirror_root(tmp_path: Path, bundle: Path) -> None:
    result = sediment("export", "rlvr", "--target", "swe-bench", "--from", str(bundle), "--out", str(tmp_path / "o"))
    assert result.returncode == 1
    assert "SEDIMENT_MIRROR_PATH is not set; the export needs mirrors" in result.stderr
    assert not (tmp_path / "o").exists()


def test_claimed_directory_exit_code(tmp_path: Path, bundle: Path) -> None:
    args = ("export", "rlvr", "--from", str(bundle), "--out", str(tmp_path / "o"))
    assert sediment(*args, "--target", "nemo-gym").returncode == 0
    result = sediment(*args, "--target", "nemo-gym")
    assert result.returncode == 3
    assert "already contains nemo-gym artifacts" in result.stderr and "Traceback" not in result.stderr


def test_invalid_bundle_exit_code(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "manifest.json").write_text("[]")
    result = sediment("export", "rlvr", "--target", "nemo-gym", "--from", str(tmp_path / "b"), "--out", str(tmp_path / "o"))
    assert result.returncode == 4
    assert "bundle manifest must be a JSON object" in result.stderr


def test_schema_validate_reports_bad_rows(tmp_path: Path) -> None:
    bad = tmp_path / "rows.jsonl"
    bad.write_text(json.dumps({"schema_id": "https://sediment.so/schemas/training-rows/nemo-gym-rollout/v4.json"}) + "\n")
    result = sediment("schema", "validate", str(bad))
    assert result.returncode == 6
    assert "rows.jsonl:1:" in result.stderr and "required" in result.stderr


def test_demo_runs_into_a_fresh_directory(tmp_path: Path) -> None:
    result = sediment("demo", "--out", str(tmp_path / "demo"))
    assert result.returncode == 0, result.stderr
    exports = tmp_path / "demo" / "exports"
    files = sorted(str(p.relative_to(exports)) for p in exports.rglob("*.jsonl"))
    assert files == ["diff-sft/diff_sft.eval.jsonl", "diff-sft/diff_sft.train.jsonl", "dpo/dpo.train.jsonl",
                     "nemo-gym/rollouts.eval.jsonl", "nemo-gym/rollouts.train.jsonl",
                     "recovery/recovery.eval.jsonl", "recovery/recovery.train.jsonl",
                     "sediment/rollouts.eval.jsonl", "sediment/rollouts.train.jsonl",
                     "sediment/tasks.eval.jsonl", "sediment/tasks.train.jsonl",
                     "sft/sft.eval.jsonl", "sft/sft.train.jsonl",
                     "swe-bench/tasks.eval.jsonl", "swe-bench/tasks.train.jsonl"]
    assert sediment("schema", "validate", *(str(exports / f) for f in files)).returncode == 0
    profiles = tmp_path / "demo" / "profiles"
    assert sorted(p.name for p in profiles.iterdir()) == [
        "fireworks-dpo-v3", "fireworks-sft-v2", "harbor-tasks-v1", "hf-chat-messages-v1", "hf-chat-prompts-v1",
        "hf-trl-dpo-v4", "hf-trl-sft-v3", "nemo-gym-rollouts-v2", "nemo-gym-swebench-tasks-v1", "swe-bench-tasks-v2",
        "verifiers-tasks-v1"]
    # the demo's one DPO pair answers with a tool call: Fireworks' text-only DPO format refuses it, whole
    refused = "profile fireworks-dpo-v3 wrote nothing: profile fireworks-dpo-v3: Fireworks DPO v3 supports documented text messages only"
    assert refused in result.stderr
    assert not list((profiles / "fireworks-dpo-v3").glob("*.json*"))
    assert "Profile export · hf-trl-sft-v3 (objective sft)" in result.stderr
    for directory in (d for d in profiles.iterdir() if d.name != "fireworks-dpo-v3"):
        names = {p.name for p in directory.iterdir()}
        assert {"data.train.jsonl", "evidence.train.jsonl", "compatibility.json"} <= names, directory.name
    evidence = sorted(str(p) for p in profiles.glob("*/evidence*.jsonl"))
    assert sediment("schema", "validate", *evidence).returncode == 0
    assert "Profile export · nemo-gym-rollouts-v2 (target nemo-gym)" in result.stderr
    assert "Recovery export · objective recovery" in result.stderr
    again = sediment("demo", "--out", str(tmp_path / "demo"))
    assert again.returncode == 2 and "not empty" in again.stderr


def test_profiles_json_lists_builtins_with_their_claims() -> None:
    result = sediment("profiles", "--json")
    assert result.returncode == 0, result.stderr
    listed = {p["id"]: p for p in json.loads(result.stdout)["profiles"]}
    nemo = listed["nemo-gym-rollouts-v2"]
    assert (nemo["target"], nemo["population"]) == ("nemo-gym", "rollouts")
    assert ["nemo-gym", "0.7.0"] in nemo["validated_with"]
    assert nemo["skip_reasons"][:2] == ["non_finite_number", "unrepresentable_unicode"]
    assert "token ids" in nemo["support"]
    assert json.loads(result.stdout)["retired"] == {"fireworks-dpo-v1": "fireworks-dpo-v3",
                                                   "fireworks-dpo-v2": "fireworks-dpo-v3",
                                                   "fireworks-sft-v1": "fireworks-sft-v2",
                                                   "hf-trl-dpo-v1": "hf-trl-dpo-v4", "hf-trl-dpo-v2": "hf-trl-dpo-v4",
                                                   "hf-trl-dpo-v3": "hf-trl-dpo-v4",
                                                   "hf-trl-sft-v1": "hf-trl-sft-v3", "hf-trl-sft-v2": "hf-trl-sft-v3",
                                                   "nemo-gym-rollouts-v1": "nemo-gym-rollouts-v2",
                                                   "swe-bench-tasks-v1": "swe-bench-tasks-v2"}


@pytest.mark.parametrize(("args", "message"), [
    (("--target", "nemo-gym", "--profile", "trl-v9"), "unsupported profile: trl-v9; installed profiles: "),
    (("--target", "nemo-gym", "--profile", "nemo-gym-rollouts-v1"),
     "profile nemo-gym-rollouts-v1 is retired; use nemo-gym-rollouts-v2"),
    (("--target", "sediment", "--profile", "nemo-gym-rollouts-v2"),
     "profile nemo-gym-rollouts-v2 adapts rows of target nemo-gym, not sediment; use --target nemo-gym"),
])
def test_unknown_retired_and_mismatched_profiles(tmp_path: Path, bundle: Path, args: tuple[str, ...],
                                                 message: str) -> None:
    result = sediment("export", "rlvr", *args, "--from", str(bundle), "--out", str(tmp_path / "o"))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "o").exists()


def test_settings_for_a_plugin_that_is_not_installed(tmp_path: Path, bundle: Path) -> None:
    result = sediment("export", "rlvr", "--target", "nemo-gym", "--from", str(bundle), "--out", str(tmp_path / "o"),
                      "--set", "nobody.field=1")
    assert result.returncode == 1
    assert "settings name plugins that are not installed: nobody" in result.stderr


def test_a_command_collects_garbage_at_batch_thresholds_and_serve_at_the_interpreters(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``main`` raises the cyclic collector's thresholds for a batch command; ``serve`` puts the
    interpreter's own back before it starts serving."""
    import gc
    import sys

    import uvicorn

    import sediment.cli as cli
    from sediment.cli import collector

    before = gc.get_threshold()
    seen: list[tuple[int, ...]] = []

    class Server:
        def __init__(self, config: Any) -> None:
            seen.append(gc.get_threshold())

        def run(self, sockets: Any = None) -> None:
            return None

    monkeypatch.setattr(uvicorn, "Server", Server)
    for name, value in (("SEDIMENT_HOME", str(tmp_path)), ("SEDIMENT_ORG_ID", "org")):
        monkeypatch.setenv(name, value)

    def run(*args: str) -> None:
        monkeypatch.setattr(sys, "argv", ["sediment", *args])
        try:
            cli.main()
        except SystemExit as done:
            assert done.code in (0, None)

    try:
        run("targets")
        assert gc.get_threshold() == collector.BATCH != collector.INTERPRETER
        run("serve", "--port", "0")
        assert seen == [collector.INTERPRETER]
    finally:
        gc.set_threshold(*before)
