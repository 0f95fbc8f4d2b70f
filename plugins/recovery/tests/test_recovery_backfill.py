"""A backfill gives the rows live capture gives (issue 19, item 3): GitHub ``workflow_run``
deliveries of a red commit and the green commit after it, ingested by ``sediment ingest github``
all in one command under one capture time, one per command with increasing capture times, and in
one command in reverse order, export the same Recovery row, byte for byte.

The run ids are chosen so the red run's outcome id sorts after the green run's: ordered by
capture time then outcome id (the upstream rule), a one-command backfill saw the green first and
wrote nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sediment.testing import ORG, REPO, GitRepo, MirrorRoot, RepositoryIdentity

IDENTITY = RepositoryIdentity(provider="github", host="github.com", repository_id="424242")
RED_RUN, GREEN_RUN = 7002, 7004  # natural outcome ids: ci_c37d… (red) sorts after ci_2850… (green)


def delivery(run_id: int, sha: str, conclusion: str, finished: str) -> dict[str, Any]:
    """A ``workflow_run`` ``completed`` delivery as GitHub sends it (envelope with its headers)."""
    return {
        "headers": {"X-GitHub-Event": "workflow_run", "X-GitHub-Delivery": f"00000000-0000-0000-0000-{run_id:012d}"},
        "payload": {
            "action": "completed",
            "workflow_run": {
                "id": run_id, "name": "CI", "head_branch": "main", "head_sha": sha,
                "path": ".github/workflows/ci.yml", "run_number": run_id - 7000, "event": "push",
                "status": "completed", "conclusion": conclusion, "workflow_id": 161335,
                "created_at": finished.replace("05:00Z", "00:00Z"), "run_started_at": finished.replace("05:00Z", "00:00Z"),
                "updated_at": finished, "run_attempt": 1, "pull_requests": [],
                "html_url": f"https://github.com/{REPO}/actions/runs/{run_id}",
            },
            "workflow": {"id": 161335, "name": "CI", "path": ".github/workflows/ci.yml"},
            "repository": {"id": int(IDENTITY.repository_id), "full_name": REPO},
        },
    }


def sediment(tmp: Path, store: str, *args: str, capture: str | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_") or k == "SEDIMENT_LOAD_PLUGINS"}
    environ |= {"SEDIMENT_DATABASE_URL": f"sqlite:///{tmp / store}.db", "SEDIMENT_ORG_ID": ORG,
                "SEDIMENT_HOME": str(tmp / "home"), "SEDIMENT_MIRROR_PATH": str(tmp / "mirrors")}
    if capture is not None:
        environ["SEDIMENT_CAPTURE_TIME"] = capture
    done = subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=environ,
                          timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    return done


def exported(tmp: Path, store: str) -> dict[str, bytes]:
    out = tmp / f"out-{store}"
    sediment(tmp, store, "export", "recovery", "--out", str(out))
    return {p.name: p.read_bytes() for p in sorted(out.glob("recovery*.jsonl"))}


@pytest.mark.slow
def test_a_backfill_gives_the_rows_of_live_capture_whatever_the_batching(tmp_path: Path) -> None:
    (tmp_path / "mirrors").mkdir()
    git = GitRepo(MirrorRoot(tmp_path / "mirrors"), identity=IDENTITY)
    git.commit({"calc.py": "def add(a, b):\n    return a + b\n"}, "base")
    red = git.commit({"calc.py": "def add(a, b):\n    return a - b\n"}, "refactor add")
    green = git.commit({"calc.py": "def add(a, b):\n    return a + b\n"}, "fix add")
    files = []
    for name, body in (("1-red.json", delivery(RED_RUN, red, "failure", "2026-01-05T10:05:00Z")),
                       ("2-green.json", delivery(GREEN_RUN, green, "success", "2026-01-05T11:05:00Z"))):
        path = tmp_path / "deliveries" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(body), encoding="utf-8")
        files.append(str(path))

    # (a) the whole history in one command, one pinned capture time (how every team starts)
    sediment(tmp_path, "batch", "ingest", "github", *files, capture="2026-03-01T09:00:00Z")
    # (b) live capture: one delivery per command, captured as each run completed
    sediment(tmp_path, "live", "ingest", "github", files[0], capture="2026-01-05T10:05:01Z")
    sediment(tmp_path, "live", "ingest", "github", files[1], capture="2026-01-05T11:05:01Z")
    # (c) one command, the files in reverse order
    sediment(tmp_path, "reversed", "ingest", "github", *reversed(files), capture="2026-03-01T09:00:00Z")

    live = exported(tmp_path, "live")
    [line] = live["recovery.train.jsonl"].decode("ascii").splitlines()
    row = json.loads(line)
    assert (row["failed_commit_sha"], row["fixed_commit_sha"]) == (red, green)
    assert row["failed_outcome_id"] > row["fixed_outcome_id"]  # the fixture's point: ids sort the wrong way round
    assert row["repository_identity"] == {"provider": "github", "host": "github.com", "repository_id": "424242"}
    # rows hold no capture time: the files are compared as they are, byte for byte
    assert exported(tmp_path, "batch") == live
    assert exported(tmp_path, "reversed") == live
