"""The demo: a real git repository, five agent Sessions and their CI, exported to every target.

Everything is generated deterministically (fixed times, fixed ids), so the demo's rows are
the same on every machine. The Sessions cover a clean pass, a fail-then-pass retry (a
suspected flake), a failure, a context compaction with only a cancelled run, and a Session
that never committed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sediment.bundle import write_bundle
from sediment.facts import (
    CIOutcome,
    InferenceCall,
    InferenceMessage,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from sediment.mirrors import MirrorRoot, MirrorWriter
from sediment.policy import ROLLOUT_IMPLEMENTATION_VERSION, DerivationPolicy, Provenance
from sediment.rollout import CommitRef, Rollout, segment_calls
from sediment.split import assign_split

ORG = "demo"
REPO = "acme/calc"
_T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _user(text: str) -> InferenceMessage:
    return InferenceMessage(role="user", parts=(TextPart(content=text),))


def _assistant_tool(call_id: str, name: str, arguments: dict[str, Any]) -> InferenceMessage:
    return InferenceMessage(
        role="assistant",
        parts=(ToolCallPart(id=call_id, name=name, arguments=arguments),),
        finish_reason="tool_calls",
    )


def _tool_result(call_id: str, result: Any) -> InferenceMessage:
    return InferenceMessage(role="tool", parts=(ToolCallResponsePart(id=call_id, result=result),))


def _assistant_text(text: str) -> InferenceMessage:
    return InferenceMessage(role="assistant", parts=(TextPart(content=text),), finish_reason="stop")


def agent_calls(session_id: str, task: str, steps: list[tuple[str, dict[str, Any], Any]],
                final: str, *, start: datetime) -> list[InferenceCall]:
    """A tool-using agent loop: every call replays the conversation so far."""
    history = [InferenceMessage(role="system", parts=(TextPart(content="You are a coding agent."),)),
               _user(task)]
    calls: list[InferenceCall] = []
    for index, (tool, arguments, result) in enumerate([*steps, ("", {}, None)]):
        call_id = f"{session_id}-tc{index}"
        output = _assistant_tool(call_id, tool, arguments) if tool else _assistant_text(final)
        calls.append(InferenceCall(
            inference_call_id=f"{session_id}-call{index}", org_id=ORG, session_id=session_id,
            gateway_provider="litellm", model_provider="openai", model="gpt-demo",
            input_messages=tuple(history), output_messages=(output,),
            model_call_id=f"{session_id}-req{index}",
            observed_at=start + timedelta(seconds=30 * index),
            raw={"demo": True},
        ))
        history = [*history, output]
        if tool:
            history.append(_tool_result(call_id, result))
    return calls


@dataclass(frozen=True)
class DemoData:
    rollouts: list[Rollout]
    mirror_root: MirrorRoot
    policy: DerivationPolicy
    fragmented: dict[str, int]


def _outcome(outcome_id: str, sha: str, result: str, run_id: str, attempt: int | None,
             minutes: int, workflow: str = "tests") -> CIOutcome:
    return CIOutcome(
        outcome_id=outcome_id, org_id=ORG, provider="github_actions", run_id=run_id,
        run_attempt=attempt, repo=REPO, commit_sha=sha, branch="main", result=result,
        workflow_name=workflow, workflow_id="9001", workflow_path=".github/workflows/tests.yml",
        run_url=f"https://github.com/{REPO}/actions/runs/{run_id}/attempts/{attempt or 1}",
        provider_result={"passed": "success", "failed": "failure"}.get(result, result),
        source_event_type="github.workflow_run.completed",
        source_event_id=f"delivery-{outcome_id}", captured_at=_T0 + timedelta(minutes=minutes),
        raw={"id": int(run_id), "run_attempt": attempt or 1, "conclusion": result},
    )


def build_demo(mirror_dir: Path) -> DemoData:
    """Create the demo repository under ``mirror_dir`` and the Rollouts that reference it."""
    mirror_dir.mkdir(parents=True, exist_ok=True)
    root = MirrorRoot(mirror_dir)
    git = MirrorWriter(root.mirror_path(ORG, REPO))
    clock = iter(range(int(_T0.timestamp()), int(_T0.timestamp()) + 10_000, 60))

    def commit(files: dict[str, str | None], message: str) -> str:
        return git.commit(files, message, when=next(clock))

    base = commit({"calc.py": "def add(a, b):\n    return a - b\n",
                   "README.md": "# calc\n"}, "Initial calculator")
    policy = DerivationPolicy()
    provenance = Provenance(policy_version=ROLLOUT_IMPLEMENTATION_VERSION, quarantine_revision=0,
                            policy_digest=policy.digest)
    fragmented: dict[str, int] = {}
    rollouts: list[Rollout] = []

    def rollout(session: str, calls: list[InferenceCall], commits: list[str],
                outcomes: list[CIOutcome]) -> None:
        segments, counts = segment_calls(calls)
        for reason, n in counts.items():
            fragmented[reason] = fragmented.get(reason, 0) + n
        rollouts.append(Rollout(
            org_id=ORG, session_id=session, segments=segments,
            commits=tuple(CommitRef(repo=REPO, commit_sha=c) for c in commits),
            attribution_source="git_notes", terminal_outcomes=tuple(outcomes),
            provenance=provenance, split=assign_split(session, policy.split.eval_fraction),
        ))

    # 1. a clean pass over two commits
    c1 = commit({"calc.py": "def add(a, b):\n    return a + b\n"}, "Fix add()")
    c2 = commit({"test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"},
                "Test add()")
    rollout("sess-fix", agent_calls("sess-fix", "add() subtracts instead of adding; fix it.", [
        ("read_file", {"path": "calc.py"}, "def add(a, b):\n    return a - b\n"),
        ("edit_file", {"path": "calc.py", "old": "a - b", "new": "a + b"}, "ok"),
        ("write_file", {"path": "test_calc.py", "content": "def test_add(): ..."}, "ok"),
    ], "Fixed add() and added a test.", start=_T0), [c1, c2],
        [_outcome("o-fix-1", c2, "passed", "101", 1, 20)])

    # 2. a retried run: failure, then pass (suspected flake, reliability 0.0)
    c3 = commit({"calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"},
                "Add sub()")
    rollout("sess-retry", agent_calls("sess-retry", "Add a sub() function.", [
        ("edit_file", {"path": "calc.py", "append": "def sub(a, b): return a - b"}, "ok"),
    ], "Added sub().", start=_T0 + timedelta(hours=1)), [c3],
        [_outcome("o-retry-1", c3, "failed", "102", 1, 80), _outcome("o-retry-2", c3, "passed", "102", 2, 85)])

    # 3. a failure
    c4 = commit({"calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
                            "def div(a, b):\n    return a // b\n"}, "Add div()")
    rollout("sess-fail", agent_calls("sess-fail", "Add true division as div().", [
        ("edit_file", {"path": "calc.py", "append": "def div(a, b): return a // b"}, "ok"),
    ], "Added div().", start=_T0 + timedelta(hours=2)), [c4],
        [_outcome("o-fail-1", c4, "failed", "103", 1, 140)])

    # 4. compacted mid-way (two segments); its only run was cancelled, so no reward
    c5 = commit({"README.md": "# calc\n\nadd, sub and div.\n"}, "Document functions")
    calls = agent_calls("sess-compact", "Document the calculator.", [
        ("read_file", {"path": "README.md"}, "# calc\n"),
        ("edit_file", {"path": "README.md", "append": "add, sub and div."}, "ok"),
    ], "Documented.", start=_T0 + timedelta(hours=3))
    summary = InferenceMessage(role="user", parts=(TextPart(content="[summary] README read; now edit it."),))
    last = calls[-1]
    calls[-1] = last.model_copy(update={"input_messages": (last.input_messages[0], summary)})
    rollout("sess-compact", calls, [c5], [_outcome("o-compact-1", c5, "cancelled", "104", 1, 200)])

    # 5. never committed: rollout rows only
    rollout("sess-explore", agent_calls("sess-explore", "How is the project laid out?", [
        ("list_files", {"path": "."}, ["README.md", "calc.py", "test_calc.py"]),
    ], "Two modules and a README.", start=_T0 + timedelta(hours=4)), [], [])
    _ = base
    return DemoData(rollouts, root, policy, fragmented)


def run_demo(out_dir: Path, export: Callable[[Path, str], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Build the demo under ``out_dir``: mirrors, a bundle, and one export per target."""
    from sediment import export_rlvr_from_bundle

    data = build_demo(out_dir / "mirrors")
    bundle = write_bundle(data.rollouts, out_dir / "bundle", org_id=ORG, policy=data.policy,
                          quarantine_revision=0, fragmented=data.fragmented)
    summaries: dict[str, Any] = {}
    for target in ("sediment", "swe-bench", "nemo-gym"):
        destination = out_dir / "exports" / target
        summaries[target] = (export(destination, target) if export is not None else
                             export_rlvr_from_bundle(bundle, data.mirror_root, destination, target=target))
    return {"bundle": str(bundle), "mirrors": str(data.mirror_root.path), "exports": summaries}
