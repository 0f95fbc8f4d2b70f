"""``--json`` on ``mirror add|fetch|list``: one JSON object on stdout, warnings and errors on
stderr, the exit codes of docs/cli.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sediment.demo import ORG, REPO, write_inputs


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=env,
                          timeout=180, check=False)


@pytest.fixture
def operator(tmp_path: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env |= {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": ORG,
            "SEDIMENT_CAPTURE_TIME": "2026-03-03T09:00:00Z"}
    return {"env": env, "inputs": write_inputs(tmp_path / "inputs"), "tmp": tmp_path}


def test_mirror_add_fetch_list_json(operator: dict[str, Any]) -> None:
    env, origin = operator["env"], str(operator["inputs"].origin)
    added = run(env, "mirror", "add", REPO, origin, "--json")
    assert added.returncode == 0, added.stderr
    report = json.loads(added.stdout)
    assert list(report) == ["repo", "repository_id", "path", "stored", "already_seen", "restated", "git_ai_notes",
                            "unbound_attestations", "problems"]
    assert report["repo"] == REPO and report["repository_id"] is None  # no webhook named its id: legacy
    assert report["stored"] == 12 and report["already_seen"] == 0 and report["problems"] == []
    assert report["restated"] == 0
    assert Path(report["path"]).is_dir()
    assert "mirrored" not in added.stderr and "session-commit" not in added.stderr

    fetched = run(env, "mirror", "fetch", "--json")
    assert fetched.returncode == 0, fetched.stderr
    [again] = json.loads(fetched.stdout)["mirrors"]
    assert (again["repo"], again["path"], again["stored"], again["already_seen"]) == (REPO, report["path"], 0, 12)

    listed = run(env, "mirror", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == {"mirrors": [{"repo": REPO, "repository_id": None, "path": report["path"]}]}
    assert run(env, "mirror", "list").stdout == f"{REPO}\t{report['path']}\n"  # the text form is unchanged


def test_mirror_json_errors_stay_one_line_on_stderr(operator: dict[str, Any]) -> None:
    env, tmp = operator["env"], operator["tmp"]
    failed = run(env, "mirror", "add", REPO, str(tmp / "no-such-origin"), "--json")
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.count("\n") == 1 and failed.stderr.startswith("error: ")
    bad = run(env, "mirror", "add", REPO, str(tmp / "x"), "--repository-id", "abc", "--json")
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1
    empty = run(env, "mirror", "list", "--json")
    assert empty.returncode == 0 and json.loads(empty.stdout) == {"mirrors": []}
