"""The demo: the whole path on a generated repository, agent Sessions and CI webhooks.

It writes real input files — an origin git repository with ``refs/notes/sediment``, a
gateway call log (OpenAI Chat request/response pairs), GitHub ``workflow_run`` webhook
deliveries and an OTLP/JSON logs export of the developer's decisions on the agent's edits
(an agent shim's ``sediment.tool_decision`` records and the transcript extractor's
``sediment.edit_observation``) — then runs them through the same code the commands use: ingest
into the embedded SQLite store, mirror add (keyed by the GitHub repository id the webhooks
carry), derive a bundle, export every target and objective. Everything is generated
deterministically (fixed times and ids), so the rows are the same on every machine.

Sessions: a clean pass over two commits; a fail-then-pass retry (a suspected flake); a
failure; a context compaction whose only run was cancelled; a Session bound by Jaccard
similarity (no git note); a Session that never committed; then, on top of a human commit that
adds a test suite whose division test fails, a red-to-green fix whose run passes on its second
attempt (one test flipped), a README change where no test changed state, a change that
only adds a test, a red run (pow() multiplies) that another Session turns green, and a human's
failing generated table whose green fix is too large a diff for a recovery. CI runs upload
JUnit reports (in the shape pytest writes), so SWE-bench tasks get FAIL_TO_PASS and
PASS_TO_PASS from recorded per-test results; the demo's operator settings (``demo/inputs/``)
give the evaluation environment. Each webhook delivery is captured as its run completed, as a
live receiver would, so a workflow's runs are in the order they ran.

Decisions: the developer explicitly accepts the clean pass's test and the Jaccard-bound
``mul()``, implicitly accepts the clean pass's fix (its edit survives whole to the Session's end),
explicitly accepts the flaky retry's edit and explicitly rejects the failure's: the SFT export
keeps the first three and declines the last two (a flaky pass drives the Confidence to 0; a
reject vetoes).

DPO: two more Sessions (``sess-dpo-power``, ``sess-dpo-power-loop``) answer one prompt; the
developer explicitly accepts the first answer and rejects the second (in the same
OTLP log), both reach commits, CI passes the first and fails the
second: the DPO export writes that pair and counts the demo's undecided completions as
``no_label_source``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sediment.git.mirror_root import MirrorRoot
from sediment.git.mirror_writer import MirrorWriter

if TYPE_CHECKING:
    from sediment.store import FactStore

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
OPS_TESTS = (
    "from calc import add, div, sub\nfrom mul import mul\n\n\n"
    "def test_sub():\n    assert sub(5, 3) == 2\n\n\n"
    "def test_mul():\n    assert mul(3, 4) == 12\n\n\n"
    "def test_add_floats():\n    assert add(0.5, 0.25) == 0.75\n\n\n"
    "def test_div_exact():\n    assert div(7, 2) == 3.5\n\n\n"
    "def test_clock():\n    assert sum(range(10)) == 45\n"
)
OPS_TESTS_V2 = OPS_TESTS + "\n\ndef test_div_quarter():\n    assert div(1, 4) == 0.25\n"
OPS_TESTS_V3 = OPS_TESTS_V2 + "\n\ndef test_sub_negative():\n    assert sub(-1, -2) == 1\n"
TRUE_DIV = "\n\ndef div(a, b):\n    return a / b\n"
#: The paired Sessions (for DPO): two answers to one prompt, one accepted, one rejected.
PAIRED_TASK = "Create power.py with a documented power(base, exponent)."
POWER = "def power(base, exponent):\n    \"\"\"base raised to exponent.\"\"\"\n    return base ** exponent\n"
POWER_LOOP = ("def power(base, exponent):\n    \"\"\"base raised to exponent.\"\"\"\n    result = 1\n"
              "    for _ in range(exponent):\n        result *= exponent\n    return result\n")
README_V2 = README + "\nRun the tests with `python -m pytest`.\n"
CALC_V3 = CALC_V2 + SUB + TRUE_DIV
POW_BUG = "\n\ndef pow(a, b):\n    return a * b\n"
POW = "\n\ndef pow(a, b):\n    return a ** b\n"
POW_TEST = "from calc import pow\n\n\ndef test_pow():\n    assert pow(2, 3) == 8\n"


def units_table(scale: str) -> str:
    """A generated conversion table of 120 entries (``scale`` is each entry's factor)."""
    return "UNITS = {\n" + "".join(f'    "u{i:03d}": {i}{scale},\n' for i in range(120)) + "}\n"


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


def junit_report(cases: list[tuple[str, str, str]], at: datetime) -> str:
    """A JUnit report as pytest writes one (xunit2): ``(classname, name, outcome)`` per test."""
    failures = sum(1 for *_, outcome in cases if outcome == "failed")
    body = []
    for classname, name, outcome in cases:
        if outcome == "failed":
            body.append(f'<testcase classname="{classname}" name="{name}" time="0.001"><failure message="assert '
                        f'False">def {name}():\n&gt;       assert False\nE       assert False</failure></testcase>')
        else:
            body.append(f'<testcase classname="{classname}" name="{name}" time="0.000" />')
    return ('<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" '
            f'errors="0" failures="{failures}" skipped="0" tests="{len(cases)}" time="0.041" '
            f'timestamp="{at.isoformat(timespec="microseconds")}" hostname="ci">{"".join(body)}</testsuite>'
            "</testsuites>\n")


@dataclass(frozen=True)
class JUnitUpload:
    """One JUnit report a CI run attempt uploaded."""

    path: Path
    run_id: int
    attempt: int
    commit: str


def _otlp_attributes(values: dict[str, str | bool]) -> list[dict[str, Any]]:
    return [{"key": key, "value": {"boolValue": value} if isinstance(value, bool) else {"stringValue": value}}
            for key, value in values.items()]


def decision_log(records: list[tuple[datetime, str, dict[str, str | bool]]]) -> dict[str, Any]:
    """One OTLP/JSON logs export (``ExportLogsServiceRequest``) of an agent shim: each record
    ``(time, event, attributes)``, its event in the body as the shim and the transcript
    extractor send it (docs/evidence.md)."""
    return {"resourceLogs": [{
        "resource": {"attributes": _otlp_attributes({"service.name": "sediment-pi-shim", "user.id": "dev-1"})},
        "scopeLogs": [{"scope": {"name": "sediment"}, "logRecords": [
            {"timeUnixNano": str(int(moment.timestamp()) * 1_000_000_000), "body": {"stringValue": event},
             "attributes": _otlp_attributes(attributes)}
            for moment, event, attributes in records]}],
    }]}


def decision(at: datetime, session: str, tool_call: str, path: str, *, accept: bool, explicit: bool
             ) -> tuple[datetime, str, dict[str, str | bool]]:
    """A shim's record of the developer's decision on one tool call's edit."""
    return (at, "sediment.tool_decision", {"agent": "pi", "session.id": session, "tool_use_id": tool_call,
                                           "tool_name": "write", "decision": "accept" if accept else "reject",
                                           "explicit": explicit, "file_path": path})


def edit_observation(at: datetime, session: str, tool_call: str, path: str, applied: str, observed: str
                     ) -> tuple[datetime, str, dict[str, str | bool]]:
    """The transcript extractor's record of one applied edit and the file at the Session's end."""
    return (at, "sediment.edit_observation", {"agent": "pi", "session.id": session, "tool_use_id": tool_call,
                                              "file_path": path, "applied_text": applied,
                                              "observed_file_text": observed})


@dataclass(frozen=True)
class DemoInputs:
    origin: Path
    calls: Path
    webhooks: list[Path]
    junit: list[JUnitUpload]
    settings: Path
    decisions: Path


def write_inputs(directory: Path) -> DemoInputs:
    """Write the origin repository, the call log and the webhook deliveries under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    origin = directory / "origin" / "calc.git"
    git = MirrorWriter(origin)
    calls: list[dict[str, Any]] = []
    deliveries: list[dict[str, Any]] = []
    reports: list[tuple[int, int, str, list[tuple[str, str, str]], datetime]] = []

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
    reports.append((101, 1, c2, [("test_calc", "test_add", "passed")], when(0, 20)))

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

    def suite(**outcomes: str) -> list[tuple[str, str, str]]:
        names = ["test_sub", "test_mul", "test_add_floats", "test_div_exact", "test_clock", "test_div_quarter"]
        ops = [("tests.test_ops", name, outcomes.get(name, "passed")) for name in names
               if name != "test_div_quarter" or "test_div_quarter" in outcomes]
        return [("test_calc", "test_add", "passed"), *ops]

    # 7. a human adds a test suite; its division test fails (true division is not implemented)
    c7 = commit({"tests/test_ops.py": OPS_TESTS}, "Add operation tests", when(6), None)
    deliveries.append(workflow_run(106, 1, c7, "failure", when(6, 10)))
    reports.append((106, 1, c7, suite(test_div_exact="failed"), when(6, 10)))

    # 8. red to green: true division and a new test; attempt 1 fails on a flaky test, attempt 2 passes
    calls += session_calls("sess-div-fix", "tests/test_ops.py::test_div_exact fails: div() floors. "
                           "Make div() true division and cover a quarter.", [
        Step("read_file", {"path": "tests/test_ops.py"}, OPS_TESTS),
        Step("write_file", {"path": "calc.py", "content": CALC_V2 + SUB + TRUE_DIV}, "ok"),
        Step("write_file", {"path": "tests/test_ops.py", "content": OPS_TESTS_V2}, "ok"),
        Step("run_tests", {"command": "python -m pytest -q"}, "7 passed"),
        Step(text="div() now divides exactly; test_div_quarter covers it."),
    ], when(7))
    c8 = commit({"calc.py": CALC_V2 + SUB + TRUE_DIV, "tests/test_ops.py": OPS_TESTS_V2}, "True division",
                when(7, 10), "sess-div-fix")
    deliveries += [workflow_run(107, 1, c8, "failure", when(7, 20)),
                   workflow_run(107, 2, c8, "success", when(7, 30))]
    reports += [(107, 1, c8, suite(test_clock="failed", test_div_quarter="passed"), when(7, 20)),
                (107, 2, c8, suite(test_div_quarter="passed"), when(7, 30))]

    # 9. a change no test notices: it passes, but nothing went from failing to passing
    calls += session_calls("sess-docs", "Say in the README how to run the tests.", [
        Step("write_file", {"path": "README.md", "content": README_V2}, "ok"),
        Step(text="The README says how to run the tests."),
    ], when(8))
    c9 = commit({"README.md": README_V2}, "Document the tests", when(8, 10), "sess-docs")
    deliveries.append(workflow_run(108, 1, c9, "success", when(8, 20)))
    reports.append((108, 1, c9, suite(test_div_quarter="passed"), when(8, 20)))

    # 10. tests only: a new test passes, but with no source change there is nothing to grade
    calls += session_calls("sess-more-tests", "Add a test that sub() handles negatives.", [
        Step("write_file", {"path": "tests/test_ops.py", "content": OPS_TESTS_V3}, "ok"),
        Step(text="test_sub_negative covers negatives."),
    ], when(9))
    c10 = commit({"tests/test_ops.py": OPS_TESTS_V3}, "Test sub() with negatives", when(9, 10), "sess-more-tests")
    deliveries.append(workflow_run(109, 1, c10, "success", when(9, 20)))
    reports.append((109, 1, c10, [*suite(test_div_quarter="passed"), ("tests.test_ops", "test_sub_negative", "passed")],
                    when(9, 20)))

    after_c10 = [*suite(test_div_quarter="passed"), ("tests.test_ops", "test_sub_negative", "passed")]

    # 11. red: pow() multiplies instead of raising to a power, and its new test says so
    calls += session_calls("sess-pow", "Add pow(a, b) to calc.py, with a test.", [
        Step("write_file", {"path": "calc.py", "content": CALC_V3 + POW_BUG}, "ok"),
        Step("write_file", {"path": "tests/test_pow.py", "content": POW_TEST}, "ok"),
        Step(text="Added pow() and tests/test_pow.py."),
    ], when(10))
    c11 = commit({"calc.py": CALC_V3 + POW_BUG, "tests/test_pow.py": POW_TEST}, "Add pow()", when(10, 10), "sess-pow")
    deliveries.append(workflow_run(110, 1, c11, "failure", when(10, 20)))
    reports.append((110, 1, c11, [*after_c10, ("tests.test_pow", "test_pow", "failed")], when(10, 20)))

    # 12. green: another Session reads the failure and fixes pow(); the next run passes (a recovery)
    calls += session_calls("sess-pow-fix", "tests/test_pow.py::test_pow fails: pow(2, 3) returns 6. Fix pow().", [
        Step("read_file", {"path": "calc.py"}, CALC_V3 + POW_BUG),
        Step("write_file", {"path": "calc.py", "content": CALC_V3 + POW}, "ok"),
        Step("run_tests", {"command": "python -m pytest -q"}, "9 passed"),
        Step(text="pow() now raises a to the power b."),
    ], when(11))
    c12 = commit({"calc.py": CALC_V3 + POW}, "Fix pow()", when(11, 10), "sess-pow-fix")
    deliveries.append(workflow_run(111, 1, c12, "success", when(11, 20)))
    reports.append((111, 1, c12, [*after_c10, ("tests.test_pow", "test_pow", "passed")], when(11, 20)))

    # 13. a human adds a generated table and CI fails; the fix regenerates it whole, a green run
    # 240 changed lines later: more than a recovery's 200-line cap
    c13 = commit({"units.py": units_table("")}, "Add the units table", when(12, 30), None)
    deliveries.append(workflow_run(112, 1, c13, "failure", when(12, 40)))
    c14 = commit({"units.py": units_table(".0")}, "Regenerate the units table as floats", when(13), None)
    deliveries.append(workflow_run(113, 1, c14, "success", when(13, 10)))

    # 14. DPO: two Sessions answer one prompt; the developer accepts the first answer and rejects
    # the second (committed anyway, and CI fails it): one preference pair
    for session, content, at, run_id, conclusion in (("sess-dpo-power", POWER, when(14), 114, "success"),
                                                     ("sess-dpo-power-loop", POWER_LOOP, when(15), 115, "failure")):
        calls += session_calls(session, PAIRED_TASK, [
            Step("write_file", {"path": "power.py", "content": content}, "ok"),
            Step(text="Added power()."),
        ], at)
        sha = commit({"power.py": content}, "Add power()", at + timedelta(minutes=10), session)
        deliveries.append(workflow_run(run_id, 1, sha, conclusion, at + timedelta(minutes=20)))

    # the developer's decisions on the agents' edits, as an agent shim and the transcript extractor send them
    decisions = [
        decision(when(0, 1), "sess-fix", "call_sess-fix_1", "calc.py", accept=True, explicit=False),
        edit_observation(when(0, 4), "sess-fix", "call_sess-fix_1", "calc.py", CALC_V2, CALC_V2),
        decision(when(0, 2), "sess-fix", "call_sess-fix_2", "test_calc.py", accept=True, explicit=True),
        decision(when(1, 1), "sess-retry", "call_sess-retry_0", "calc.py", accept=True, explicit=True),
        decision(when(2, 1), "sess-fail", "call_sess-fail_0", "calc.py", accept=False, explicit=True),
        decision(when(4, 1), "sess-mul", "call_sess-mul_0", "mul.py", accept=True, explicit=True),
        decision(when(4, 2), "sess-mul", "chatcmpl-sess-mul-1", "mul.py", accept=True, explicit=True),
        decision(when(14, 1), "sess-dpo-power", "call_sess-dpo-power_0", "power.py", accept=True, explicit=True),
        decision(when(15, 1), "sess-dpo-power-loop", "call_sess-dpo-power-loop_0", "power.py", accept=False,
                 explicit=True),
    ]
    decision_path = directory / "decisions.otlp.json"
    decision_path.write_text(json.dumps(decision_log(decisions), indent=1) + "\n", encoding="utf-8")

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
    junit_dir = directory / "junit"
    junit_dir.mkdir()
    uploads = []
    for run_id, attempt, sha, cases, at in reports:
        path = junit_dir / f"run-{run_id}-{attempt}.xml"
        path.write_text(junit_report(cases, at), encoding="utf-8")
        uploads.append(JUnitUpload(path, run_id, attempt, sha))
    return DemoInputs(origin, call_log, paths, uploads, write_settings(directory), decision_path)


def write_settings(directory: Path) -> Path:
    """The demo operator's plugin settings and the files they name (``sediment/demo/inputs/``)."""
    data = files("sediment.demo").joinpath("inputs")
    for name in ("swe-bench-environments.toml",):
        (directory / name).write_text(data.joinpath(name).read_text(encoding="utf-8"), encoding="utf-8")
    template = data.joinpath("settings.toml").read_text(encoding="utf-8")
    path = directory / "settings.toml"
    path.write_text(template.replace("{inputs}", directory.as_posix()), encoding="utf-8")
    return path


def delivered_at(delivery: dict[str, Any]) -> datetime:
    """When the demo's receiver captured a ``workflow_run`` delivery: as its run completed, as a
    live receiver would (Recovery orders a workflow's runs by capture time)."""
    return datetime.fromisoformat(delivery["payload"]["workflow_run"]["updated_at"])


def ingest_inputs(inputs: DemoInputs, home: Path, store_url: str | None = None
                  ) -> tuple[FactStore, MirrorRoot, dict[str, Any]]:
    """Ingest the demo's input files into a new store (``store_url``, else a SQLite file under
    ``home``) and mirror root under ``home``, in the
    order ``inputs`` lists them (calls, webhooks, decisions, the mirror and its notes, JUnit
    reports), with the demo's capture times; returns the store, the mirror root and the counts."""
    from sediment.git.mirror_root import mirror_identity
    from sediment.git.repositories import RepositoryContext
    from sediment.ingest.calls import translate_call
    from sediment.ingest.ci.github import translate_github
    from sediment.ingest.git_notes import observe_notes
    from sediment.ingest.junit import RunAttempt, ingest_junit_reports
    from sediment.ingest.otlp import translate_otlp
    from sediment.ingest.reading.files import ingest_files
    from sediment.store import FactStore

    (home / "mirrors").mkdir(parents=True)
    store = FactStore(store_url or f"sqlite:///{home / 'facts.db'}")
    mirrors = MirrorRoot(home / "mirrors")
    captured = T0 + timedelta(days=1)
    calls = ingest_files([str(inputs.calls)], lambda r: translate_call(
        r, format="openai-chat", org_id=ORG, captured_at=captured), store)
    hooks = ingest_files([str(p) for p in inputs.webhooks], lambda r: translate_github(
        r, event=None, org_id=ORG, captured_at=delivered_at(r)), store)
    decided = ingest_files([str(inputs.decisions)], lambda r: translate_otlp(r, org_id=ORG, captured_at=captured),
                           store)
    # the webhooks named the repository's GitHub id: the mirror is keyed by it (docs/operate.md)
    identity = mirror_identity(RepositoryContext.from_store(store, ORG), REPO)
    mirrors.add(ORG, REPO, str(inputs.origin), identity)
    notes = observe_notes(mirrors, store, ORG, REPO, captured, identity)
    reports = [ingest_junit_reports([str(u.path)], store, RunAttempt(ORG, "github_actions", str(u.run_id),
                                                                      u.attempt, REPO, u.commit), captured_at=captured)
               for u in inputs.junit]
    problems = [str(p) for p in calls.problems + hooks.problems + decided.problems] + notes.problems
    problems += [str(p) for r in reports for p in r.problems]
    if problems:
        raise RuntimeError(f"demo inputs failed to ingest: {problems}")
    return store, mirrors, {"calls": calls.as_json(), "webhooks": hooks.as_json(), "decisions": decided.as_json(),
                            "observations": notes.stored, "test_results": sum(r.records for r in reports)}


def run_demo(out: Path) -> dict[str, Any]:
    """The whole path under ``out``: inputs, store, mirror, bundle, then an export for every
    installed target (``exports/<target>/``), every installed objective without targets
    (``exports/<objective>/``: from the bundle, or directly from the store for one that reads no
    bundle) and every installed consumer profile (``profiles/<profile-id>/``), with the demo
    operator's settings file (``inputs/settings.toml``)."""
    from sediment.bundle.read import open_bundle
    from sediment.derive.sessions import derive_bundle
    from sediment.errors import ProfileError
    from sediment.evidence.context import Evidence, store_evidence
    from sediment.export.pipeline import export_objective, export_through_target
    from sediment.host.registry import load_registry
    from sediment.model.policy import DerivationPolicy
    from sediment.settings import SettingsSources

    inputs = write_inputs(out / "inputs")
    home = out / "home"
    store, mirrors, ingested = ingest_inputs(inputs, home)
    bundle_path, _ = derive_bundle(store, ORG, out / "bundle", policy=DerivationPolicy(), mirrors=mirrors)
    bundle = open_bundle(bundle_path)
    registry = load_registry()
    loaded = SettingsSources.load(config_file=inputs.settings, environ={})
    installed = set(registry.objectives) | set(registry.targets) | set(registry.profiles) | set(registry.manifests)
    settings = SettingsSources(config={k: v for k, v in loaded.config.items() if k in installed},
                               config_path=loaded.config_path)

    def export(directory: Path, target: str, profile: str | None = None) -> dict[str, Any]:
        return export_through_target(bundle, mirrors, directory, target=target, profile=profile,
                                         split_enabled=bundle.split_enabled, registry=registry,
                                         settings=settings, fragmented=bundle.manifest.fragmented)

    def own_rows(directory: Path, objective: str, profile: str | None = None) -> dict[str, Any]:
        # an objective without targets: from the bundle, or from the store if it reads no bundle
        evidence = (Evidence(bundle, bundle.split_enabled, mirrors, bundle.manifest.fragmented)
                    if registry.objectives[objective].info.supports_from else store_evidence(store, ORG, mirrors))
        return export_objective(evidence, directory, objective=objective, profile=profile, registry=registry,
                                settings=settings)

    exports = {name: export(out / "exports" / name, name) for name in sorted(registry.targets)}
    for name, objective in sorted(registry.objectives.items()):
        if not objective.has_targets:
            exports[name] = own_rows(out / "exports" / name, name)
    def profile_export(name: str, profile: Any) -> dict[str, Any]:
        directory = out / "profiles" / name
        if profile.info.target in registry.targets:
            return export(directory, profile.info.target, name)
        try:
            return own_rows(directory, profile.objective, name)
        except ProfileError as refused:  # a format-only profile that cannot carry the demo's rows
            return {"profile": name, "target": profile.info.target, "objective": profile.objective,
                    "refused": str(refused), "written": {}}

    profiles = {name: profile_export(name, p) for name, p in sorted(registry.profiles.items())}
    return {
        "inputs": str(inputs.calls.parent), "home": str(home), "bundle": str(bundle_path),
        "ingested": ingested,
        "exports": exports,
        "profiles": profiles,
    }
