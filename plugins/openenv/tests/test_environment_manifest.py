"""environment.yaml (docs/exports.md, environment.yaml) through real exports of the sediment target."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from sediment import export_rlvr_from_rollouts
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.git.mirror_root import MirrorRoot
from sediment.settings import SettingsSources
from sediment.testing import GitRepo, outcome, rollout


@pytest.fixture
def commit(git_repo: GitRepo) -> str:
    git_repo.commit({"a.py": "1\n"})
    return git_repo.commit({"a.py": "2\n"})


def run(rollouts: list[Any], mirrors: MirrorRoot, out: Path, target: str = "sediment",
        split: bool = False) -> dict[str, Any]:
    """Export as the CLI does: plugin settings from the environment (``SEDIMENT_OPENENV_*``)."""
    return export_rlvr_from_rollouts(rollouts, mirrors, out, target=target, split_enabled=split,
                                     settings=SettingsSources.load(), verifier_commands=VerifierCommands.empty())


def manifest(out: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((out / "environment.yaml").read_text())
    return loaded


def test_no_task_rows_no_manifest(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    summary = run([rollout("s1")], mirror_root, tmp_path / "out")
    assert summary["manifests"] == {}
    assert not (tmp_path / "out" / "environment.yaml").exists()


def test_reward_block_and_runtime_reference(tmp_path: Path, mirror_root: MirrorRoot, commit: str) -> None:
    rollouts = [rollout("s1", commits=[commit], outcomes=[outcome("o1", commit, "failed", attempt=1),
                                                          outcome("o2", commit, "passed", attempt=2)]),
                rollout("s2", commits=[commit], outcomes=[outcome("o3", commit, run_id="9")])]
    summary = run(rollouts, mirror_root, tmp_path / "out")
    assert summary["manifests"] == {"openenv": [str(tmp_path / "out" / "environment.yaml")]}
    text = (tmp_path / "out" / "environment.yaml").read_text()
    assert text.splitlines()[:3] == ["spec_version: hf-rl-env-0.1", "experimental: true", "environments:"]
    doc = manifest(tmp_path / "out")
    [env] = doc["environments"]
    assert list(env) == ["id", "reward", "runtime_reference"]
    assert env["reward"] == {"kind": "ci", "pass_value": 1.0, "fail_value": 0.0}
    assert env["runtime_reference"] == {"kind": "ci_workflow", "repo": "owner/repo", "workflow_name": "tests",
                                        "workflow_path": ".github/workflows/ci.yml"}
    assert [p.name for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("second", [
    {"workflow_path": None},
    {"workflow_path": ""},
    {"workflow_path": ".github/workflows/other.yml", "workflow_id": "78", "workflow_name": "other"},
])
def test_runtime_reference_absent_when_workflows_disagree(tmp_path: Path, mirror_root: MirrorRoot,
                                                          commit: str, second: dict[str, Any]) -> None:
    rollouts = [rollout("s1", commits=[commit], outcomes=[outcome("o1", commit)]),
                rollout("s2", commits=[commit], outcomes=[outcome("o2", commit, run_id="2", **second)])]
    run(rollouts, mirror_root, tmp_path / "out")
    assert "runtime_reference" not in manifest(tmp_path / "out")["environments"][0]


def test_two_workflows_in_one_resolution_drop_the_reference(tmp_path: Path, mirror_root: MirrorRoot,
                                                            commit: str) -> None:
    outcomes = [outcome("o1", commit), outcome("o2", commit, run_id="2", workflow_id="78", workflow_name="lint",
                                               workflow_path=".github/workflows/lint.yml")]
    run([rollout("s1", commits=[commit], outcomes=outcomes)], mirror_root, tmp_path / "out")
    assert "runtime_reference" not in manifest(tmp_path / "out")["environments"][0]


def test_frameworks_from_operator_settings(tmp_path: Path, mirror_root: MirrorRoot, commit: str,
                                           monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    r = [rollout("s1", commits=[commit], outcomes=[outcome("o1", commit)])]
    monkeypatch.setenv("SEDIMENT_OPENENV_IMAGE", " ghcr.io/acme/env:1 ")
    monkeypatch.setenv("SEDIMENT_OPENENV_PACKAGE", "acme-env")
    monkeypatch.setenv("SEDIMENT_NEMO_GYM_RESOURCES_SERVER", "swebench")
    monkeypatch.setenv("SEDIMENT_NEMO_GYM_CONFIG", "conf.yaml")
    with caplog.at_level(logging.WARNING):
        run(r, mirror_root, tmp_path / "a")
    env = manifest(tmp_path / "a")["environments"][0]
    assert list(env["frameworks"]) == ["openenv", "nemo_gym"]
    assert env["frameworks"]["openenv"] == {"image": "ghcr.io/acme/env:1"}
    assert env["frameworks"]["nemo_gym"] == {"resources_server": "swebench", "config": "conf.yaml"}
    assert "openenv_runtime_ambiguous_config" in caplog.text

    monkeypatch.setenv("SEDIMENT_OPENENV_IMAGE", "   ")
    monkeypatch.delenv("SEDIMENT_NEMO_GYM_RESOURCES_SERVER")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        run(r, mirror_root, tmp_path / "b")
    env = manifest(tmp_path / "b")["environments"][0]
    assert env["frameworks"] == {"openenv": {"package": "acme-env"}}
    assert "nemo_gym_config_without_resources_server" in caplog.text

    monkeypatch.delenv("SEDIMENT_OPENENV_PACKAGE")
    monkeypatch.delenv("SEDIMENT_NEMO_GYM_CONFIG")
    run(r, mirror_root, tmp_path / "c")
    assert "frameworks" not in manifest(tmp_path / "c")["environments"][0]


def test_splits_listed_only_when_split_enabled(tmp_path: Path, mirror_root: MirrorRoot, commit: str) -> None:
    r = [rollout("s1", commits=[commit], outcomes=[outcome("o1", commit)], split="eval")]
    run(r, mirror_root, tmp_path / "a", split=True)
    assert manifest(tmp_path / "a")["environments"][0]["splits"] == ["eval"]
    run(r, mirror_root, tmp_path / "b", split=False)
    assert "splits" not in manifest(tmp_path / "b")["environments"][0]


@pytest.mark.parametrize("target", ["swe-bench", "nemo-gym"])
def test_other_targets_never_write_it(tmp_path: Path, mirror_root: MirrorRoot, commit: str, target: str) -> None:
    r = [rollout("s1", commits=[commit], outcomes=[outcome("o1", commit)])]
    summary = run(r, mirror_root, tmp_path / "out", target=target)
    assert summary["manifests"] == {}
    assert not (tmp_path / "out" / "environment.yaml").exists()


def test_settings_from_flags_and_config_file(tmp_path: Path, mirror_root: MirrorRoot, commit: str) -> None:
    config = tmp_path / "sediment.toml"
    config.write_text('[plugins.openenv]\npackage = "from-file"\nnemo_gym_resources_server = "swebench"\n')
    sources = SettingsSources.load(config_file=config, environ={}, overrides=["openenv.image=from-flag"])
    r = [rollout("s1", commits=[commit], outcomes=[outcome("o1", commit)])]
    export_rlvr_from_rollouts(r, mirror_root, tmp_path / "out", target="sediment", split_enabled=False,
                              settings=sources, verifier_commands=VerifierCommands.empty())
    env = manifest(tmp_path / "out")["environments"][0]
    assert env["frameworks"] == {"openenv": {"image": "from-flag"}, "nemo_gym": {"resources_server": "swebench"}}
