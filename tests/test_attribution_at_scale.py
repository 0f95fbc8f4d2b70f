"""Attribution on a generated org of hundreds of Sessions, through the real CLI.

The bench synthesizer writes 200 Sessions; every 20th is an abandoned attempt that makes the
edits the next Session makes but commits nothing and has no note. The next Session's commit is
inside its Jaccard window and as similar as a commit can be, yet a note binds that commit to
the next Session: it is never a candidate of the abandoned one (issue 19, item 7).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from synth import Profile, synthesize

#: small calls, so 200 Sessions ingest, derive and export in seconds
PROFILE = Profile("attribution-at-scale", sessions=200, calls=3, user_bytes=512, assistant_bytes=256,
                  uncommitted_every=20)


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=env,
                            timeout=180, check=False)
    assert result.returncode == 0, result.stderr
    return result


def rollouts(bundle: Path) -> list[dict[str, Any]]:
    lines = (bundle / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(json.loads(line)["record_json"]) for line in lines]


@pytest.mark.slow
def test_no_noted_commit_is_credited_to_another_session_at_scale(tmp_path: Path) -> None:
    data = synthesize(PROFILE, tmp_path / "inputs")
    assert len(data.uncommitted) == 10 and len(data.commits) == 190
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env |= {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": "bench",
            "SEDIMENT_CAPTURE_TIME": "2026-07-01T00:00:00Z"}
    run(env, "ingest", "calls", "--format", "openai-chat", *map(str, data.call_files))
    run(env, "ingest", "github", *map(str, data.webhook_files))
    run(env, "mirror", "add", "bench/monorepo", str(data.origin))
    bundle = tmp_path / "bundle"
    run(env, "derive", "--out", str(bundle))

    derived = rollouts(bundle)
    assert len(derived) == PROFILE.sessions
    owners: dict[str, list[str]] = {}
    for rollout in derived:
        for commit in rollout["commits"]:
            owners.setdefault(commit["commit_sha"], []).append(rollout["session_id"])
    assert {sha: sessions for sha, sessions in owners.items() if len(sessions) > 1} == {}
    # each committing Session is bound by its note to exactly its own commit
    by_session = {r["session_id"]: r for r in derived}
    for session, sha in data.commits.items():
        assert by_session[session]["attribution_source"] == "git_notes"
        assert [c["commit_sha"] for c in by_session[session]["commits"]] == [sha]
    # the abandoned Sessions fall back to Jaccard and are bound to nothing: the only commit in
    # their window is the next Session's, which its note binds
    for session in data.uncommitted:
        assert by_session[session]["attribution_source"] == "jaccard"
        assert by_session[session]["commits"] == []
    skipped = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))["skipped"]
    jaccard = {reason: count for reason, count in skipped.items() if reason.startswith("attribution.jaccard_")}
    assert jaccard == {"attribution.jaccard_no_candidate_commit": len(data.uncommitted)}

    summary = json.loads(run(env, "export", "rlvr", "--target", "sediment", "--from", str(bundle), "--out",
                             str(tmp_path / "out"), "--json").stdout)
    verdicts = sum(1 for sha in data.commits.values() if sha in data.verdicts)
    assert summary["task_rows"] == verdicts
    assert summary["task_skipped"] == {"no_attributed_commit": len(data.uncommitted)}
