"""The issue's check, through the real commands: a real transcript, a real git repository whose
``refs/notes/sediment`` binds the transcript's Session to a commit, a CI outcome of that commit;
``ingest transcripts``, ``mirror add``, ``derive`` and ``export rlvr`` give Rollout rows whose
turns are the transcript's model turns, in order, each marked with its capture source.

The transcripts are the shared fixtures (see tests/test_ingest_transcripts.py): without them
these tests skip, saying why, except under CI, where they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from sediment.git.mirror_writer import MirrorWriter
from sediment.testing import unavailable

ROOT = Path(__file__).resolve().parent.parent
INPUTS = Path(os.environ.get("SEDIMENT_INPUT_FIXTURES") or ROOT.parent / "shared" / "fixtures" / "inputs")
CLAUDE = INPUTS / "claude_code" / "git-ai.example-claude-code.jsonl"
CODEX = INPUTS / "codex_rollout" / "localpush.rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
ORG = "acme"
REPO = "owner/app"


@pytest.fixture
def transcripts() -> None:
    """The real transcripts: a test reading them skips without them (fails under CI); the help
    test runs either way."""
    if CLAUDE.is_file() and CODEX.is_file():
        return
    unavailable(f"the shared transcript fixtures not found under {INPUTS} (set SEDIMENT_INPUT_FIXTURES)")


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=env,
                            timeout=180, check=False)
    assert result.returncode == 0, result.stderr
    return result


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def pipeline(tmp_path: Path, client: str, transcript: Path, session: str, tool: str) -> list[dict[str, Any]]:
    """Run the commands; the rollout rows of ``session``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env |= {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": ORG,
            "SEDIMENT_CAPTURE_TIME": "2026-03-03T09:00:00Z"}
    git = MirrorWriter(tmp_path / "origin.git")
    base = git.commit({"README.md": "app\n"}, "start", when=1_700_000_000)
    change = git.commit({"README.md": "app\n", "src/colors.css": ":root { --green: #7cff7c; }\n"}, "colors",
                        when=1_700_000_600, parents=[base])
    git.add_note(change, [{"tool": tool, "session_id": session, "stamped_at": "2026-02-23T20:00:00Z"}])
    outcome = tmp_path / "ci.json"
    outcome.write_text(json.dumps({"provider": "other", "run_id": "7", "run_attempt": 1, "repo": REPO,
                                   "commit_sha": change, "branch": "main", "result": "passed",
                                   "workflow_name": "tests"}))
    report = json.loads(run(env, "ingest", "transcripts", client, str(transcript), "--json").stdout)
    assert report["failed"] == 0 and report["stored"]["inference_calls"] > 0
    again = json.loads(run(env, "ingest", "transcripts", client, str(transcript), "--json").stdout)
    assert again["stored"] == {} and again["duplicates"] == report["stored"]
    run(env, "ingest", "ci", str(outcome))
    run(env, "mirror", "add", REPO, str(tmp_path / "origin.git"))
    run(env, "derive", "--out", str(tmp_path / "bundle"))
    summary = json.loads(run(env, "export", "rlvr", "--target", "sediment", "--from", str(tmp_path / "bundle"),
                             "--out", str(tmp_path / "out"), "--json").stdout)
    assert summary["task_rows"] == 1 and summary["rollout_rows"] == 1
    rows = [json.loads(line) for name in summary["written"] if "rollouts" in name
            for line in Path(name).read_text().splitlines()]
    tasks = [json.loads(line) for name in summary["written"] if "tasks" in name
             for line in Path(name).read_text().splitlines()]
    assert len(tasks) == 1 and session in tasks[0]["instance_id"] and tasks[0]["attribution_source"] == "git_notes"
    assert tasks[0]["reward_source"] == "resolved_ci_pass" and "src/colors.css" in tasks[0]["reference_patch"]
    assert run(env, "schema", "validate", *summary["written"]).returncode == 0
    assert [r["session_id"] for r in rows] == [session]
    return rows


@pytest.mark.slow
@pytest.mark.usefixtures("transcripts")
def test_a_claude_code_transcript_becomes_rollout_rows(tmp_path: Path) -> None:
    entries = lines_of(CLAUDE)
    session = entries[0]["sessionId"]
    rows = pipeline(tmp_path, "claude-code", CLAUDE, session, "claude-code")
    row = rows[0]
    assert row["attribution_source"] == "git_notes" and row["reward_source"] == "resolved_ci_pass"
    turns = row["turns"]
    responses = list(dict.fromkeys(e["message"]["id"] for e in entries if e["type"] == "assistant"))
    assert len(turns) == len(responses) == 13
    # each turn's tool calls are the tool_use blocks of its response, in order
    uses: dict[str, list[str]] = {}
    for entry in entries:
        if entry["type"] == "assistant":
            uses.setdefault(entry["message"]["id"], []).extend(
                b["id"] for b in entry["message"]["content"] if b["type"] == "tool_use")
    assert [[c["id"] for c in t["tool_calls"]] for t in turns] == [uses[r] for r in responses]
    assert turns[0]["new_messages"] == [{"role": "user", "parts": [{"type": "text",
                                                                    "content": "Make the colors green and yellow"}]}]
    for previous, turn in pairwise(turns):
        added = turn["new_messages"]  # the previous response, then the results of its tool calls
        assert added[0]["role"] == "assistant" and [p["id"] for p in added[0]["parts"] if p["type"] == "tool_call"] \
            == [c["id"] for c in previous["tool_calls"]]
        assert [p["id"] for m in added[1:] for p in m["parts"]] == [c["id"] for c in previous["tool_calls"]]
    assert {json.dumps(t["capture"], sort_keys=True) for t in turns} == {json.dumps({
        "source": "transcript:claude-code@1.0.111",
        "lacks": ["exact_request", "system_prompt", "tool_definitions", "sampling_parameters", "token_ids"]},
        sort_keys=True)}
    edits = {b["id"] for e in entries if e["type"] == "assistant" for b in e["message"]["content"]
             if b["type"] == "tool_use" and b["name"] in ("Edit", "MultiEdit")}
    decided = [d for t in turns for d in t["decisions"]]
    assert len(decided) == len(edits) == 3
    assert {(d["accepted"], d["explicit"], d["agent_harness"]) for d in decided} == {(True, False, "claude-code")}


@pytest.mark.slow
@pytest.mark.usefixtures("transcripts")
def test_a_codex_rollout_becomes_rollout_rows(tmp_path: Path) -> None:
    entries = lines_of(CODEX)
    session = entries[0]["payload"]["id"]
    rows = pipeline(tmp_path, "codex", CODEX, session, "codex")
    turns = rows[0]["turns"]
    calls = [e["payload"]["call_id"] for e in entries
             if e["type"] == "response_item" and e["payload"]["type"] == "function_call"]
    assert len(turns) == 6
    assert [c["id"] for t in turns for c in t["tool_calls"]] == calls
    assert [m["role"] for m in turns[0]["new_messages"]][:2] == ["system", "developer"]
    assert all(t["capture"]["source"] == "transcript:codex@0.104.0-alpha.1" for t in turns)
    assert all("tool_definitions" in t["capture"]["lacks"] for t in turns)


def command(tmp_path: Path, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env |= {"SEDIMENT_HOME": str(tmp_path / "sediment"), "SEDIMENT_ORG_ID": ORG,
            "SEDIMENT_CAPTURE_TIME": "2026-03-03T09:00:00Z", "HOME": str(home or tmp_path / "nobody")}
    return subprocess.run([sys.executable, "-m", "sediment", "ingest", "transcripts", *args], capture_output=True,
                          text=True, env=env, timeout=180, check=False)


@pytest.mark.usefixtures("transcripts")
def test_the_default_folder_is_the_clients_own_under_home(tmp_path: Path) -> None:
    missing = command(tmp_path, "codex")
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1
    assert "no codex session folder at" in missing.stderr and ".codex/sessions" in missing.stderr
    home = tmp_path / "home"
    day = home / ".codex" / "sessions" / "2026" / "02" / "23"
    day.mkdir(parents=True)
    (day / CODEX.name).write_bytes(CODEX.read_bytes())
    found = command(tmp_path, "codex", "--json", home=home)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["stored"] == {"inference_calls": 6}


@pytest.mark.usefixtures("transcripts")
def test_usage_and_bad_lines(tmp_path: Path) -> None:
    absent = command(tmp_path, "claude-code", str(tmp_path / "nope.jsonl"))
    assert absent.returncode == 2 and "no such file or folder" in absent.stderr
    unknown = command(tmp_path, "cursor", str(CLAUDE))
    assert unknown.returncode == 2
    lines = CLAUDE.read_text().splitlines()
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("\n".join([*lines[:5], '{"type": "user", "uuid": 7}', *lines[5:]]) + "\n")
    result = command(tmp_path, "claude-code", str(damaged), "--json")
    assert result.returncode == 8
    assert f"{damaged}:6: uuid: expected a non-blank string" in result.stderr
    assert json.loads(result.stdout)["stored"] == {"developer_decisions": 3, "inference_calls": 13}


def test_help_teaches_the_mapping() -> None:
    result = subprocess.run([sys.executable, "-m", "sediment", "ingest", "transcripts", "--help"],
                            capture_output=True, text=True, timeout=60, check=False, env={
                                **{k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")},
                                "COLUMNS": "200"})
    assert result.returncode == 0
    for phrase in ("claude-code", "codex", "~/.claude/projects", "transcript:<client>@<version>", "DeveloperDecisions"):
        assert phrase in result.stdout, phrase
