"""Profiles that hand a consumer the model's exact request decline the rows of calls rebuilt
from a client transcript, counting them as ``transcript_capture``; the canonical rows keep them
(with their ``capture`` marker).

The calls are the shared fixtures' real transcripts (see tests/test_ingest_transcripts.py):
without them these tests skip, saying why, except under CI, where they fail.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sediment.git.mirror_root import MirrorRoot
from sediment.ingest.transcripts import translate_transcript
from sediment.model.facts import InferenceCall
from sediment.model.rollout import Rollout
from sediment.testing import outcome, rollout, run_export, unavailable

ROOT = Path(__file__).resolve().parent.parent
INPUTS = Path(os.environ.get("SEDIMENT_INPUT_FIXTURES") or ROOT.parent / "shared" / "fixtures" / "inputs")
CLAUDE = INPUTS / "claude_code" / "git-ai.claude-code-with-thinking.jsonl"
CODEX = INPUTS / "codex_rollout" / "localpush.rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
SHA = "c" * 40
LATER = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _fixtures() -> None:
    if CLAUDE.is_file() and CODEX.is_file():
        return
    unavailable(f"the shared transcript fixtures not found under {INPUTS} (set SEDIMENT_INPUT_FIXTURES)")


def transcript_calls(path: Path, client: str) -> list[InferenceCall]:
    result = translate_transcript(path, client, org_id="acme", captured_at=LATER)  # type: ignore[arg-type]
    return [f for f in result.facts if isinstance(f, InferenceCall)]


def verified(calls: list[InferenceCall]) -> Rollout:
    return rollout(calls[0].session_id, calls=calls, commits=[SHA], outcomes=[outcome("o1", SHA)])


def wire(calls: list[InferenceCall]) -> list[InferenceCall]:
    """The same calls as if a gateway had recorded them (the control)."""
    return [c.model_copy(update={"capture": None}) for c in calls]


@pytest.mark.parametrize(("target", "profile"), [("nemo-gym", "nemo-gym-rollouts-v2"),
                                                 ("nemo-gym", "verifiers-tasks-v1"),
                                                 ("sediment", "hf-chat-messages-v1")])
@pytest.mark.parametrize(("path", "client"), [(CLAUDE, "claude-code"), (CODEX, "codex")])
def test_wire_profiles_decline_transcript_rows(tmp_path: Path, mirror_root: MirrorRoot, target: str, profile: str,
                                               path: Path, client: str) -> None:
    calls = transcript_calls(path, client)
    declined = run_export([verified(calls)], tmp_path / "t", target=target, profile=profile, mirrors=mirror_root)
    assert declined.summary["rows"] == 0 and declined.summary["skipped"] == {"transcript_capture": 1}
    assert declined.summary["canonical_rows"] == 1
    control = run_export([verified(wire(calls))], tmp_path / "w", target=target, profile=profile, mirrors=mirror_root)
    assert "transcript_capture" not in control.summary["skipped"]


def test_canonical_rows_carry_the_marker_and_wire_rows_do_not(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    calls = transcript_calls(CLAUDE, "claude-code")
    marked = run_export([verified(calls)], tmp_path / "t", target="sediment", mirrors=mirror_root)
    [row] = [r for name, rows in marked.rows.items() if name.startswith("rollouts") for r in rows]
    assert [t["capture"]["source"] for t in row["turns"]] == ["transcript:claude-code@2.0.69"] * 2
    plain = run_export([verified(wire(calls))], tmp_path / "w", target="sediment", mirrors=mirror_root)
    [row] = [r for name, rows in plain.rows.items() if name.startswith("rollouts") for r in rows]
    assert all("capture" not in t for t in row["turns"])
