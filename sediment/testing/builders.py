"""Builders of Facts and Rollouts for tests: the constants every builder defaults to (:data:`ORG`,
:data:`REPO`, :data:`T0`, :data:`POLICY`, :data:`PROVENANCE`), :func:`message`, :func:`call`,
:func:`conversation`, :func:`outcome`, :func:`test_result` and :func:`rollout` (built through
real segmentation)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sediment.model.facts import (
    CIOutcome,
    InferenceCall,
    InferenceMessage,
    TestCaseResult,
    TextPart,
    ToolCallPart,
)
from sediment.model.policy import ROLLOUT_IMPLEMENTATION_VERSION, DerivationPolicy, Provenance
from sediment.model.rollout import CommitRef, Rollout, segment_calls, tool_sets
from sediment.split import Split

ORG = "acme"
REPO = "owner/repo"
T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
POLICY = DerivationPolicy()
PROVENANCE = Provenance(policy_version=ROLLOUT_IMPLEMENTATION_VERSION, quarantine_revision=0,
                        policy_digest=POLICY.digest)



def message(role: str, *parts: Any, finish_reason: str | None = None) -> InferenceMessage:
    """A message from parts (plain strings become text parts)."""
    typed = tuple(TextPart(content=p) if isinstance(p, str) else p for p in parts)
    return InferenceMessage(role=role, parts=typed, finish_reason=finish_reason)


def call(session_id: str, index: int, inputs: Sequence[InferenceMessage],
         outputs: Sequence[InferenceMessage], *, org_id: str = ORG, **fields: Any) -> InferenceCall:
    """The recorded call ``{session_id}-c{index}`` of ``session_id``, observed ``index`` seconds
    after :data:`T0` (``fields``: any other ``InferenceCall`` field)."""
    return InferenceCall(
        inference_call_id=f"{session_id}-c{index}", org_id=org_id, session_id=session_id,
        input_messages=tuple(inputs), output_messages=tuple(outputs),
        observed_at=T0 + timedelta(seconds=index), **fields,
    )


def conversation(session_id: str, prompt: str = "fix the bug", turns: int = 2,
                 *, org_id: str = ORG) -> list[InferenceCall]:
    """A replaying tool loop of ``turns`` calls that continues as one segment."""
    history = [message("user", prompt)]
    calls = []
    for index in range(turns):
        output = message("assistant", ToolCallPart(id=f"{session_id}-t{index}", name="edit",
                                                   arguments={"path": "a.py", "text": f"step {index}"}))
        calls.append(call(session_id, index, history, [output], org_id=org_id))
        history = [*history, output]
    return calls


def outcome(outcome_id: str, sha: str, result: str = "passed", *, run_id: str = "1",
            attempt: int | None = 1, repo: str = REPO, org_id: str = ORG,
            minutes: int = 0, **fields: Any) -> CIOutcome:
    """A GitHub Actions run attempt's ``result`` on ``sha`` (workflow ``tests`` on ``main``),
    captured ``minutes`` after :data:`T0` (``fields``: any other ``CIOutcome`` field)."""
    base: dict[str, Any] = {
        "workflow_name": "tests", "workflow_id": "77", "workflow_path": ".github/workflows/ci.yml",
        "branch": "main", "provider": "github_actions",
    }
    base.update(fields)
    return CIOutcome(
        outcome_id=outcome_id, org_id=org_id, run_id=run_id, run_attempt=attempt, repo=repo,
        commit_sha=sha, result=result, captured_at=T0 + timedelta(minutes=minutes), **base,
    )


def test_result(test_id: str, sha: str, outcome: str = "passed", *, run_id: str = "1", attempt: int = 1,
                repo: str = REPO, org_id: str = ORG, provider: str = "github_actions", **fields: Any) -> TestCaseResult:
    """A recorded pytest result of ``test_id`` on ``sha`` in one run attempt (ids and locators
    deterministic from the arguments)."""
    import hashlib

    base: dict[str, Any] = {"runner": "pytest", "name": test_id.rsplit("::", 1)[-1], "captured_at": T0,
                            "report_sha256": hashlib.sha256(f"{sha}{run_id}{attempt}".encode()).hexdigest(),
                            "locator": f"testsuites/testsuite[0]/testcase[{test_id}]"}
    base.update(fields)
    return TestCaseResult(
        test_result_id=f"tr-{sha[:7]}-{run_id}-{attempt}-{test_id}", org_id=org_id, provider=provider,
        run_id=run_id, run_attempt=attempt, repo=repo, commit_sha=sha, test_id=test_id, outcome=outcome, **base,
    )


test_result.__test__ = False  # type: ignore[attr-defined]  # a builder, not a pytest test


def rollout(session_id: str, *, calls: Sequence[InferenceCall] | None = None,
            commits: Sequence[str | CommitRef] = (), outcomes: Sequence[CIOutcome] = (),
            split: Split = "train", org_id: str = ORG, repo: str = REPO, **fields: Any) -> Rollout:
    """A Rollout built through real segmentation of ``calls`` (a two-call loop by default)."""
    calls = list(calls) if calls is not None else conversation(session_id, org_id=org_id)
    segments, _ = segment_calls(calls)
    refs = tuple(c if isinstance(c, CommitRef) else CommitRef(repo=repo, commit_sha=c) for c in commits)
    values: dict[str, Any] = {
        "org_id": org_id, "session_id": session_id, "segments": segments, "commits": refs,
        "attribution_source": "git_notes", "terminal_outcomes": tuple(outcomes),
        "provenance": PROVENANCE, "split": split, "tool_sets": tool_sets(calls),
    }
    values.update(fields)
    return Rollout(**values)

