"""The example third-party profile in examples/, installed through the real entry-point path and
used through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sediment.testing import ORG, POLICY, call, message, outcome, rollout, write_bundle

EXAMPLE = Path(__file__).parents[1] / "examples" / "third_party_profile"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A dist-info with the example's own entry points, as `pip install` would leave it."""
    site = tmp_path / "site"
    dist = site / "sediment_plain_chat-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: sediment-plain-chat\nVersion: 0.1.0\n")
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    entries = "".join(f"{k} = {v}\n" for k, v in project["entry-points"]["sediment"].items())
    (dist / "entry_points.txt").write_text(f"[sediment]\n{entries}")
    return site


def sediment(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ["PYTHONPATH"] = os.pathsep.join([str(site), str(EXAMPLE / "src")])
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=environ,
                          timeout=120, check=False)


def test_listed_by_sediment_profiles(site: Path) -> None:
    result = sediment(site, "profiles", "--json")
    assert result.returncode == 0, result.stderr
    listed = {p["id"]: p for p in json.loads(result.stdout)["profiles"]}
    example = listed["plain-chat-v1"]
    assert example["origin"]["distribution"] == "sediment-plain-chat"
    assert example["skip_reasons"] == ["non_finite_number", "unrepresentable_unicode", "no_reward", "no_answer"]
    assert example["settings"] == {"separator": {"required": False, "env": "SEDIMENT_PLAIN_CHAT_V1_SEPARATOR",
                                                 "default": "\n"}}


def test_exports_through_the_cli_with_settings(site: Path, tmp_path: Path) -> None:
    sha = "e" * 40
    answered = [call("s1", 0, [message("user", "Fix", "add()")], [message("assistant", "Done", "fixed")])]
    rollouts = [rollout("s1", calls=answered, commits=[sha], outcomes=[outcome("o1", sha)]),
                rollout("s2", commits=[sha], outcomes=[outcome("o2", sha, run_id="2")]),  # ends with a tool call
                rollout("s3")]
    bundle = write_bundle(rollouts, tmp_path / "bundle", org_id=ORG, policy=POLICY, quarantine_revision=0)
    out = tmp_path / "out"
    result = sediment(site, "export", "rlvr", "--target", "nemo-gym", "--profile", "plain-chat-v1", "--from",
                      str(bundle), "--out", str(out), "--set", "plain-chat-v1.separator= ", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["skipped"] == {"no_reward": 1, "no_answer": 1} and summary["rows"] == 1
    [data] = [Path(p) for p in summary["written"] if Path(p).name.startswith("data")]
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    assert rows == [{"prompt": "Fix add()", "answer": "Done fixed", "reward": 1.0}]
    [evidence] = [p for p in summary["written"] if Path(p).name.startswith("evidence")]
    validated = sediment(site, "schema", "validate", evidence)
    assert validated.returncode == 0, validated.stderr
    compatibility = json.loads((out / "compatibility.json").read_text())
    assert compatibility["profile"]["id"] == "plain-chat-v1" and compatibility["settings"] == {"separator": " "}
