"""A setting an export needs is checked before the output directory is claimed (real processes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sediment.bundle.write import write_bundle
from sediment.testing import ORG, POLICY, GitRepo, outcome, rollout

ENVIRONMENTS = ('[repos."owner/repo"]\nversion = "0.1"\nimage_per_instance = true\n'
                'test_command = "python -m pytest -rA"\nlog_parser = "parse_log_pytest"\n')


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


@pytest.mark.parametrize("profile", ["swe-bench-tasks-v2", "nemo-gym-swebench-tasks-v1", "harbor-tasks-v1"])
def test_a_missing_or_unreadable_environments_setting_refuses_the_export(tmp_path: Path, bundle: Path,
                                                                        profile: str) -> None:
    out = tmp_path / "out"
    args = ("export", "rlvr", "--target", "swe-bench", "--profile", profile, "--from", str(bundle),
            "--out", str(out), "--mirrors", str(tmp_path / "mirrors"))
    not_toml = tmp_path / "notes.txt"
    not_toml.write_text("just words\n")
    cases = [
        ((), f"plugin {profile} setting environments: Field required (from its defaults; set it with --set "
             f"{profile}.environments=VALUE or $SEDIMENT_SWE_BENCH_ENVIRONMENTS_FILE)"),
        (("--set", f"{profile}.environments=/typo.toml"),
         f"plugin {profile} setting environments: cannot read /typo.toml: No such file or directory "
         f"(from --set {profile}.environments;"),
        (("--set", f"{profile}.environments={not_toml}"), f"{not_toml} is not a TOML file"),
    ]
    for extra, message in cases:
        result = sediment(*args, *extra)
        assert result.returncode == 1, result.stderr
        [line] = result.stderr.splitlines()  # no WARNING log line, no table: one error line
        assert line.startswith("error: ") and message in line, line
        assert not out.exists(), "the output directory was claimed"
    environments = tmp_path / "environments.toml"
    environments.write_text(ENVIRONMENTS)
    configured = sediment(*args, env={"SEDIMENT_SWE_BENCH_ENVIRONMENTS_FILE": str(environments)})
    assert configured.returncode == 0, configured.stderr
    assert (out / ".sediment-rlvr-target").read_text() == f"profile:{profile}\n"
