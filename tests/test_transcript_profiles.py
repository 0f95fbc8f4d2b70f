"""Transcript-only teams: ``hf-chat-messages-v1`` and ``verifiers-tasks-v1`` admit segments
rebuilt from real client transcripts when ``admit_transcripts`` is set, keeping each call's
capture in the evidence sidecar; by default they decline them as ``transcript_capture``, as
before. The transcripts are the shared fixtures (``../shared/fixtures/inputs``, or
``$SEDIMENT_INPUT_FIXTURES``): without them these tests skip, except under CI, where they fail.
"""

from __future__ import annotations

import json
import os
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sediment.ingest.transcripts import translate_transcript
from sediment.model.facts import InferenceCall
from sediment.model.rollout import Rollout
from sediment.testing import (
    ExportResult,
    MirrorRoot,
    conversation,
    outcome,
    rollout,
    run_export,
    snapshot,
    unavailable,
)

ROOT = Path(__file__).resolve().parent.parent
INPUTS = Path(os.environ.get("SEDIMENT_INPUT_FIXTURES") or ROOT.parent / "shared" / "fixtures" / "inputs")
CLAUDE = INPUTS / "claude_code" / "git-ai.example-claude-code.jsonl"
CODEX = INPUTS / "codex_rollout" / "localpush.rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
SHA = "b" * 40
#: profile -> the target whose rows it adapts
PROFILES = {"hf-chat-messages-v1": "sediment", "verifiers-tasks-v1": "nemo-gym"}


@pytest.fixture(autouse=True)
def _fixtures() -> None:
    if CLAUDE.is_file() and CODEX.is_file():
        return
    unavailable(f"the shared transcript fixtures not found under {INPUTS} (set SEDIMENT_INPUT_FIXTURES)")


def transcript_rollout(path: Path, client: str) -> tuple[Rollout, list[InferenceCall]]:
    """The Rollout of one real transcript's calls, its commit passing CI."""
    result = translate_transcript(path, client, org_id="acme", captured_at=datetime(2026, 3, 3, tzinfo=UTC))  # type: ignore[arg-type]
    calls = [f for f in result.facts if isinstance(f, InferenceCall)]
    assert calls and all(c.capture is not None for c in calls)
    [session] = {c.session_id for c in calls}
    return rollout(session, calls=calls, commits=[SHA], outcomes=[outcome(f"o-{session}", SHA, "passed")]), calls


def export(rollouts: list[Rollout], out: Path, profile: str, admit: bool | None) -> ExportResult:
    mirrors = out.parent / f"{out.name}-mirrors"
    mirrors.mkdir()
    settings = None if admit is None else {profile: {"admit_transcripts": admit}}
    return run_export(rollouts, out, target=PROFILES[profile], profile=profile, mirrors=MirrorRoot(mirrors),
                      settings=settings)


def settings_of(out: Path) -> dict[str, Any]:
    return json.loads((out / "compatibility.json").read_text(encoding="ascii"))["settings"]


def marker(call: InferenceCall) -> dict[str, Any]:
    assert call.capture is not None
    return {"source": call.capture.source, "lacks": list(call.capture.lacks)}


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("admit", [None, False])
def test_by_default_transcript_segments_are_declined(tmp_path: Path, profile: str, admit: bool | None) -> None:
    claude, _ = transcript_rollout(CLAUDE, "claude-code")
    codex, _ = transcript_rollout(CODEX, "codex")
    result = export([claude, codex], tmp_path / "out", profile, admit)
    assert (result.summary["rows"], result.summary["skipped"]) == (0, {"transcript_capture": 2})


def test_chat_messages_admit_transcripts_with_the_capture_in_the_sidecar(tmp_path: Path) -> None:
    claude, claude_calls = transcript_rollout(CLAUDE, "claude-code")
    codex, codex_calls = transcript_rollout(CODEX, "codex")
    wire = rollout("wire", calls=conversation("wire"), commits=[SHA], outcomes=[outcome("o-wire", SHA, "passed")])
    result = export([claude, codex, wire], tmp_path / "out", "hf-chat-messages-v1", True)
    assert (result.summary["rows"], result.summary["skipped"]) == (3, {})
    rows = {r["session_id"]: r for r in result.rows["data.jsonl"]}
    sidecar = {line["instance_id"]: line["evidence"] for line in result.rows["evidence.jsonl"]}
    for rolled, calls in ((claude, claude_calls), (codex, codex_calls)):
        row = rows[rolled.session_id]
        assert row["tools"] == []  # a transcript records none
        # the conversation is the transcript's: its first prompt text and the last call's answer
        first_text = next(p.content for p in calls[0].input_messages[0].parts if hasattr(p, "content"))
        assert first_text in row["messages"][0]["content"]
        assert row["messages"][-1]["role"] == "assistant"
        evidence = sidecar[row["instance_id"]]
        turns = rolled.segments[row["segment_index"]]
        by_id = {c.inference_call_id: c for c in calls}
        assert evidence["inference_call_ids"] == [t.inference_call_id for t in turns]
        assert evidence["captures"] == [marker(by_id[t.inference_call_id]) for t in turns]
    assert "captures" not in sidecar[rows["wire"]["instance_id"]]  # a wire-recorded segment has no marker
    assert settings_of(tmp_path / "out") == {"admit_transcripts": True}


def test_verifiers_tasks_admit_transcripts_with_the_capture_in_the_sidecar(tmp_path: Path) -> None:
    claude, claude_calls = transcript_rollout(CLAUDE, "claude-code")
    codex, codex_calls = transcript_rollout(CODEX, "codex")
    result = export([claude, codex], tmp_path / "out", "verifiers-tasks-v1", True)
    assert (result.summary["rows"], result.summary["skipped"]) == (2, {})
    by_session = {r["sediment"]["session_id"]: r for r in result.rows["data.jsonl"]}
    evidence = {line["evidence"]["inference_call_id"]: line["evidence"] for line in result.rows["evidence.jsonl"]}
    for rolled, calls in ((claude, claude_calls), (codex, codex_calls)):
        params = by_session[rolled.session_id]["responses_create_params"]
        assert params["tools"] == [] and params["input"]
        first = rolled.segments[0][0]
        assert evidence[first.inference_call_id]["capture"] == marker(
            next(c for c in calls if c.inference_call_id == first.inference_call_id))
    assert settings_of(tmp_path / "out")["admit_transcripts"] is True


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_admitted_transcript_exports_are_byte_identical_repeated_and_shuffled(tmp_path: Path, profile: str) -> None:
    rollouts = [transcript_rollout(CLAUDE, "claude-code")[0], transcript_rollout(CODEX, "codex")[0]]
    export(rollouts, tmp_path / "first", profile, True)
    first = snapshot(tmp_path / "first")
    for seed in (1, 2):
        shuffled = list(rollouts)
        random.Random(seed).shuffle(shuffled)
        export(shuffled, tmp_path / f"again-{seed}", profile, True)
        assert snapshot(tmp_path / f"again-{seed}") == first
