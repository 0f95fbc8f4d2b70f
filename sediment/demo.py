"""The demo: the whole path on a generated repository, agent Sessions and CI webhooks.

It writes real input files — an origin git repository with ``refs/notes/sediment``, a
gateway call log (OpenAI Chat request/response pairs) and GitHub ``workflow_run`` webhook
deliveries — then runs them through the same code the commands use: mirror add, ingest into
the embedded SQLite store, derive a bundle, export every target. Everything is generated
deterministically (fixed times and ids), so the rows are the same on every machine.

Sessions: a clean pass over two commits; a fail-then-pass retry (a suspected flake); a
failure; a context compaction whose only run was cancelled; a Session bound by Jaccard
similarity (no git note); and a Session that never committed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sediment.mirrors import MirrorRoot, MirrorWriter

ORG = "demo"
REPO = "acme/calc"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SYSTEM = "You are a coding agent working in the acme/calc repository."

CALC_V1 = "def add(a, b):\n    return a - b\n"
CALC_V2 = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
SUB = "\n\ndef sub(a, b):\n    return a - b\n"
DIV = "\n\ndef div(a, b):\n    return a // b\n"
MUL = "def mul(a, b):\n    \"\"\"Multiply a by b.\"\"\"\n    return a * b\n"
README = "# calc\n\nadd, sub and div.\n"


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Step:
    """One agent call's output: a tool call (name, arguments, the tool's result) or final text."""

    tool: str = ""
    arguments: dict[str, Any] | None = None
    result: str = ""
    text: str = ""


def session_calls(session: str, task: str, steps: list[Step], start: datetime,
                  compact_before: int | None = None) -> list[dict[str, Any]]:
    """OpenAI Chat request/response pairs of a replaying tool loop (one per call)."""
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
    records = []
    for index, step in enumerate(steps):
        if index == compact_before:
            history = [history[0], {"role": "user", "content": f"[summary of earlier turns] {task}"}]
        if step.tool:
            call_id = f"call_{session}_{index}"
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": step.tool, "arguments": json.dumps(step.arguments or {})}}]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": step.text}
            finish = "stop"
        moment = start + timedelta(seconds=40 * index)
        records.append({
            "session_id": session,
            "observed_at": _iso(moment),
            "headers": {"x-sediment-session": session},
            "request": {"model": "gpt-4.1-mini", "messages": list(history),
                        "tools": [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
                                  for n in ("read_file", "write_file", "run_tests")]},
            "response": {
                "id": f"chatcmpl-{session}-{index}", "object": "chat.completion",
                "created": int(moment.timestamp()), "model": "gpt-4.1-mini-2025-04-14",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 120 + 60 * index, "completion_tokens": 40, "total_tokens": 160 + 60 * index},
            },
        })
        history = [*history, message]
        if step.tool:
            history.append({"role": "tool", "tool_call_id": f"call_{session}_{index}", "content": step.result})
    return records


def workflow_run(run_id: int, attempt: int, sha: str, conclusion: str, at: datetime) -> dict[str, Any]:
    """A GitHub ``workflow_run`` webhook delivery (headers and payload)."""
    run = {
        "id": run_id, "name": "tests", "node_id": f"WFR_demo{run_id}", "head_branch": "main", "head_sha": sha,
        "path": ".github/workflows/tests.yml", "display_title": "tests", "run_number": run_id - 100,
        "event": "push", "status": "completed", "conclusion": conclusion, "workflow_id": 9001,
        "check_suite_id": 5000 + run_id, "url": f"https://api.github.com/repos/{REPO}/actions/runs/{run_id}",
        "html_url": f"https://github.com/{REPO}/actions/runs/{run_id}", "pull_requests": [],
        "created_at": _iso(at - timedelta(minutes=3)), "updated_at": _iso(at), "run_attempt": attempt,
        "run_started_at": _iso(at - timedelta(minutes=3)),
        "head_commit": {"id": sha, "tree_id": "0" * 40, "message": "demo", "timestamp": _iso(at)},
        "repository": {"id": 424242, "name": "calc", "full_name": REPO},
    }
    return {
        "headers": {"X-GitHub-Event": "workflow_run",
                    "X-GitHub-Delivery": f"00000000-0000-4000-8000-{run_id:06d}{attempt:06d}"},
        "payload": {"action": "completed", "workflow_run": run,
                    "workflow": {"id": 9001, "name": "tests", "path": ".github/workflows/tests.yml"},
                    "repository": {"id": 424242, "name": "calc", "full_name": REPO, "private": False,
                                   "owner": {"login": "acme"}},
                    "sender": {"login": "github-actions[bot]"}},
    }


@dataclass(frozen=True)
class DemoInputs:
    origin: Path
    calls: Path
    webhooks: list[Path]


def write_inputs(directory: Path) -> DemoInputs:
    """Write the origin repository, the call log and the webhook deliveries under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    origin = directory / "origin" / "calc.git"
    git = MirrorWriter(origin)
    calls: list[dict[str, Any]] = []
    deliveries: list[dict[str, Any]] = []

    def when(hours: float, minutes: float = 0) -> datetime:
        return T0 + timedelta(hours=hours, minutes=minutes)

    def commit(files: dict[str, str | None], message: str, at: datetime, session: str | None) -> str:
        sha = git.commit(files, message, when=int(at.timestamp()))
        if session is not None:
            git.add_note(sha, [{"tool": "codex", "session_id": session, "stamped_at": _iso(at)}])
        return sha

    commit({"calc.py": CALC_V1, "README.md": "# calc\n"}, "Initial calculator", when(-24), None)

    # 1. a clean pass over two commits (git notes)
    calls += session_calls("sess-fix", "add() subtracts instead of adding; fix it and add a test.", [
        Step("read_file", {"path": "calc.py"}, CALC_V1),
        Step("write_file", {"path": "calc.py", "content": CALC_V2}, "ok"),
        Step("write_file", {"path": "test_calc.py", "content": TEST}, "ok"),
        Step("run_tests", {"command": "pytest -q"}, "1 passed"),
        Step(text="Fixed add() and added a regression test."),
    ], when(0))
    commit({"calc.py": CALC_V2}, "Fix add()", when(0, 10), "sess-fix")
    c2 = commit({"test_calc.py": TEST}, "Test add()", when(0, 11), "sess-fix")
    deliveries.append(workflow_run(101, 1, c2, "success", when(0, 20)))

    # 2. a retried run: failure, then success on attempt 2 (suspected flake)
    calls += session_calls("sess-retry", "Add a sub() function.", [
        Step("write_file", {"path": "calc.py", "content": CALC_V2 + SUB}, "ok"),
        Step(text="Added sub()."),
    ], when(1))
    c3 = commit({"calc.py": CALC_V2 + SUB}, "Add sub()", when(1, 10), "sess-retry")
    deliveries += [workflow_run(102, 1, c3, "failure", when(1, 20)),
                   workflow_run(102, 2, c3, "success", when(1, 30))]

    # 3. a failure
    calls += session_calls("sess-fail", "Add true division as div().", [
        Step("write_file", {"path": "calc.py", "content": CALC_V2 + SUB + DIV}, "ok"),
        Step(text="Added div()."),
    ], when(2))
    c4 = commit({"calc.py": CALC_V2 + SUB + DIV}, "Add div()", when(2, 10), "sess-fail")
    deliveries.append(workflow_run(103, 1, c4, "failure", when(2, 20)))

    # 4. compacted mid-way (two segments); its only run was cancelled, so no reward
    calls += session_calls("sess-compact", "Document the calculator's functions in the README.", [
        Step("read_file", {"path": "README.md"}, "# calc\n"),
        Step("read_file", {"path": "calc.py"}, CALC_V2 + SUB + DIV),
        Step("write_file", {"path": "README.md", "content": README}, "ok"),
        Step(text="Documented add, sub and div."),
    ], when(3), compact_before=2)
    c5 = commit({"README.md": README}, "Document functions", when(3, 10), "sess-compact")
    deliveries.append(workflow_run(104, 1, c5, "cancelled", when(3, 20)))

    # 5. no git note: bound by Jaccard similarity of its edit to the commit's diff
    calls += session_calls("sess-mul", "Create mul.py with a documented mul(a, b).", [
        Step("write_file", {"path": "mul.py", "content": MUL}, "ok"),
        Step(text=MUL),
    ], when(4))
    c6 = commit({"mul.py": MUL}, "Add mul()", when(4, 5), None)
    deliveries.append(workflow_run(105, 1, c6, "success", when(4, 15)))

    # 6. never committed: rollout rows only
    calls += session_calls("sess-explore", "How is the project laid out?", [
        Step("read_file", {"path": "README.md"}, README),
        Step(text="calc.py holds the functions; test_calc.py tests add()."),
    ], when(5))

    call_log = directory / "calls.jsonl"
    call_log.write_text("".join(json.dumps(r) + "\n" for r in calls), encoding="utf-8")
    hooks = directory / "webhooks"
    hooks.mkdir()
    paths = []
    for delivery in deliveries:
        run = delivery["payload"]["workflow_run"]
        path = hooks / f"workflow_run-{run['id']}-{run['run_attempt']}.json"
        path.write_text(json.dumps(delivery, indent=2) + "\n", encoding="utf-8")
        paths.append(path)
    return DemoInputs(origin, call_log, paths)


def run_demo(out: Path) -> dict[str, Any]:
    """The whole path under ``out``: inputs, store, mirror, bundle, then an export for every
    installed target (``exports/<target>/``) and every installed consumer profile
    (``profiles/<profile-id>/``), each plugin with its default settings."""
    from sediment.bundle import open_bundle
    from sediment.derive import derive_bundle
    from sediment.export.pipeline import export_rlvr_from_rollouts
    from sediment.export.registry import load_registry
    from sediment.ingest.calls import translate_call
    from sediment.ingest.files import ingest_files
    from sediment.ingest.github import translate_github
    from sediment.observations import observe_notes
    from sediment.policy import DerivationPolicy
    from sediment.store import FactStore

    inputs = write_inputs(out / "inputs")
    home = out / "home"
    (home / "mirrors").mkdir(parents=True)
    store = FactStore(f"sqlite:///{home / 'facts.db'}")
    mirrors = MirrorRoot(home / "mirrors")
    captured = T0 + timedelta(days=1)
    mirrors.add(ORG, REPO, str(inputs.origin))
    notes = observe_notes(mirrors, store, ORG, REPO, captured)
    calls = ingest_files([str(inputs.calls)], lambda r: translate_call(
        r, format="openai-chat", org_id=ORG, captured_at=captured), store)
    hooks = ingest_files([str(p) for p in inputs.webhooks], lambda r: translate_github(
        r, event=None, org_id=ORG, captured_at=captured), store)
    problems = [str(p) for p in calls.problems + hooks.problems] + notes.problems
    if problems:
        raise RuntimeError(f"demo inputs failed to ingest: {problems}")
    bundle_path, _ = derive_bundle(store, ORG, out / "bundle", policy=DerivationPolicy(), mirrors=mirrors)
    bundle = open_bundle(bundle_path)
    registry = load_registry()

    def export(directory: Path, target: str, profile: str | None = None) -> dict[str, Any]:
        return export_rlvr_from_rollouts(bundle, mirrors, directory, target=target, profile=profile,
                                         split_enabled=bundle.split_enabled, registry=registry,
                                         fragmented=bundle.manifest.fragmented)

    exports = {name: export(out / "exports" / name, name) for name in sorted(registry.targets)}
    profiles = {name: export(out / "profiles" / name, p.info.target, name)
                for name, p in sorted(registry.profiles.items())}
    return {
        "inputs": str(inputs.calls.parent), "home": str(home), "bundle": str(bundle_path),
        "ingested": {"calls": calls.as_json(), "webhooks": hooks.as_json(),
                     "observations": notes.stored},
        "exports": exports,
        "profiles": profiles,
    }
