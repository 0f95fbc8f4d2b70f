"""Every ingest warning code is explained (issue 25): a one-line meaning next to the code in the
human report, and docs/operate.md ("Ingest warnings") lists each code with what to do. A new
code emitted without an explanation fails here."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from sediment.cli.ingest import warning_lines
from sediment.ingest.calls.toolkit import CALL_WARNINGS
from sediment.ingest.warnings import WARNINGS, explain

ROOT = Path(__file__).resolve().parents[1]
#: How ingest code raises a warning: Notes.warn("code"), warnings.append("code" or f"code:…"),
#: warnings["code"] += 1.
_EMITTED = re.compile(r'''(?:\.warn\(|warnings\.append\(f?|warnings\[)"([a-z][a-z0-9_]*)''')
#: A call record (OpenAI chat) whose tool call's arguments are not JSON, answered with two choices.
CALL = {
    "request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
    "response": {"id": "c1", "model": "gpt-4o", "choices": [
        {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "edit", "arguments": "{not json"}}]}},
        {"index": 1, "message": {"role": "assistant", "content": "x"}}]},
    "headers": {"x-sediment-session": "s1"}, "observed_at": "2025-01-01T00:00:00Z",
}


def _emitted_codes() -> set[str]:
    codes: set[str] = set()
    for path in sorted((ROOT / "sediment" / "ingest").rglob("*.py")):
        codes.update(_EMITTED.findall(path.read_text(encoding="utf-8")))
    return codes


def test_every_warning_code_the_ingest_code_raises_is_explained() -> None:
    emitted = _emitted_codes() | set(CALL_WARNINGS)
    assert {"malformed_tool_arguments", "claude_code_unknown_source", "parent_cycle",
            "workflow_run_status_not_completed"} <= emitted, "the scan no longer finds warnings"
    assert sorted(code for code in emitted if explain(code) is None) == []
    # and no explanation outlives its code
    assert sorted(set(WARNINGS) - emitted) == []


def test_every_explanation_is_one_line_with_something_to_do() -> None:
    for code, explained in WARNINGS.items():
        for text in (explained.meaning, explained.action):
            assert text.strip() and "\n" not in text and len(text) < 200, code


def test_the_docs_list_every_warning_code() -> None:
    text = (ROOT / "docs" / "operate.md").read_text(encoding="utf-8")
    section = text.split("### Ingest warnings", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    listed = set(re.findall(r"^\| `([a-z0-9_]+)(?::[A-Z]+)?` \|", section, re.MULTILINE))
    assert listed == set(WARNINGS)


def test_a_detail_code_is_explained_once_by_its_head() -> None:
    lines = warning_lines({"claude_code_unknown_source:robot": 2, "claude_code_unknown_source:cron": 1,
                           "opaque_reasoning": 4, "a_plugins_own_code": 1})
    assert lines == [
        f"  claude_code_unknown_source: {WARNINGS['claude_code_unknown_source'].meaning}",
        f"  opaque_reasoning: {WARNINGS['opaque_reasoning'].meaning}",
        '  (what to do about each: docs/operate.md, "Ingest warnings")',
    ]
    assert warning_lines({}) == [] and warning_lines({"a_plugins_own_code": 1}) == []


def _ingest(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(CALL) + "\n", encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ |= {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": "acme", "COLUMNS": "300"}
    return subprocess.run([sys.executable, "-m", "sediment", "ingest", "calls", "--format", "openai-chat", *flags,
                           str(path)], capture_output=True, text=True, env=environ, timeout=120, check=True)


def test_the_human_report_says_what_each_warning_means(tmp_path: Path) -> None:
    lines = _ingest(tmp_path).stderr.splitlines()
    assert lines[1:] == [
        "warnings: extra_choices_dropped: 1, malformed_tool_arguments: 1",
        f"  extra_choices_dropped: {WARNINGS['extra_choices_dropped'].meaning}",
        "  malformed_tool_arguments: a tool call's arguments were not a JSON object (not JSON, or another JSON "
        "type); stored as {} with the call's id and name kept",
        '  (what to do about each: docs/operate.md, "Ingest warnings")',
    ], lines


def test_the_json_report_keeps_counts_only(tmp_path: Path) -> None:
    result = _ingest(tmp_path, "--json")
    assert json.loads(result.stdout)["warnings"] == {"extra_choices_dropped": 1, "malformed_tool_arguments": 1}
    assert "stored as {}" not in result.stderr
