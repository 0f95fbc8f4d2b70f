"""Claude Code: a permission decision is a ``claude_code.tool_decision`` event (its name is the
record's *body*; the ``event.name`` attribute is the bare ``tool_decision``), and the path of
the file it concerns is in the ``claude_code.tool_result`` that shares its ``tool_use_id`` in
the same batch (``tool_input``, a JSON text, needs ``OTEL_LOG_TOOL_DETAILS=1`` on the client).

- Only the edit tools (``Edit``, ``Write``, ``MultiEdit``, ``NotebookEdit``) decide an edit;
  another tool's decision is skipped as ``not_an_edit_tool:<tool_name>``.
- ``decision`` ``accept`` / ``reject`` → ``accepted``; another value is skipped as
  ``not_a_decision:<value>``.
- ``source`` ``user_permanent``, ``user_temporary``, ``user_abort``, ``user_reject`` (someone
  answered the prompt) → ``explicit``; ``config``, ``hook`` → implicit; any other value, or
  none, is implicit too (never a made-up human gesture), with the warning
  ``claude_code_unknown_source:<value>`` (``claude_code_source_absent``).
- ``session_id`` ← the record's ``session.id``, else the resource's; ``user_id`` ← the
  resource's ``user.id``, else the record's (an anonymous per-installation hash);
  ``call_id`` ← ``tool_use_id``; ``interaction_mode`` ``agent``; ``occurred_at`` ← ``timeUnixNano``.
- ``file_path`` ← the result's ``tool_input`` ``file_path`` (``notebook_path`` for a notebook),
  exactly as sent: an absolute path on the developer's machine (:mod:`sediment.git.edit_paths`
  derives the repository path). ``""`` when the batch holds no result for the call (a rejected
  call has none; a result can fall into the next batch), when the result has no
  ``tool_input`` (warning ``claude_code_tool_input_absent``) or when it cannot be read
  (``claude_code_tool_input_unreadable``).
- ``raw`` ← ``{"decision": record, "result": result record or null}`` (see :mod:`.provenance`).

Of two results for one ``tool_use_id`` in a batch the first is joined.
"""

from __future__ import annotations

from typing import Any, Final

from sediment.ingest.otlp.batch import Batch, Emitted, Skip, build, occurred, session_of, user_of
from sediment.ingest.otlp.envelope import LogRecord, Refused
from sediment.ingest.otlp.provenance import provenance
from sediment.ingest.reading.json_text import RecordProblem, read_json
from sediment.model.facts import DeveloperDecision

DECISION: Final = "claude_code.tool_decision"
RESULT: Final = "claude_code.tool_result"
EDIT_TOOLS: Final = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
EXPLICIT_SOURCES: Final = frozenset({"user_permanent", "user_temporary", "user_abort", "user_reject"})
IMPLICIT_SOURCES: Final = frozenset({"config", "hook"})
PATHS: Final = {
    "session_id": "attributes[session.id]",
    "user_id": "attributes[user.id]",
    "call_id": "attributes[tool_use_id]",
    "occurred_at": "timeUnixNano",
}


def results(records: list[LogRecord]) -> dict[str, LogRecord]:
    """The batch's tool results by ``tool_use_id`` (the first of each; results whose attributes
    cannot be read join nothing, and are refused on their own)."""
    found: dict[str, LogRecord] = {}
    for record in records:
        if record.body_text != RESULT:
            continue
        try:
            check_result(record)
        except Refused:
            continue
        key = record.attributes.identifier("tool_use_id")
        assert key is not None
        found.setdefault(key, record)
    return found


def check_result(record: LogRecord) -> None:
    """A tool result is read by the decision it joins; here only its shape is checked."""
    record.check_body()
    record.attributes.identifier("tool_use_id", required=True)
    record.attributes.text("tool_input")


def _file_path(result: LogRecord, warnings: list[str]) -> str:
    tool_input = result.attributes.text("tool_input")
    if tool_input is None:
        warnings.append("claude_code_tool_input_absent")
        return ""
    try:
        parsed = read_json(tool_input)
    except RecordProblem:
        warnings.append("claude_code_tool_input_unreadable")
        return ""
    if not isinstance(parsed, dict):
        warnings.append("claude_code_tool_input_unreadable")
        return ""
    path = parsed.get("file_path") or parsed.get("notebook_path")
    if not isinstance(path, str):
        if path is not None:
            warnings.append("claude_code_tool_input_unreadable")
        return ""
    return path


def translate(record: LogRecord, batch: Batch) -> Emitted:
    attributes = record.attributes
    tool = attributes.text("tool_name", required=True)
    if tool not in EDIT_TOOLS:
        raise Skip(f"not_an_edit_tool:{tool}")
    verdict = attributes.text("decision", required=True)
    if verdict not in ("accept", "reject"):
        raise Skip(f"not_a_decision:{verdict}")
    source = attributes.text("source")
    warnings: list[str] = []
    if source is None:
        warnings.append("claude_code_source_absent")
    elif source not in EXPLICIT_SOURCES | IMPLICIT_SOURCES:
        warnings.append(f"claude_code_unknown_source:{source}")
    call_id = attributes.identifier("tool_use_id")
    result = batch.index("claude_code_results", results).get(call_id) if call_id is not None else None
    file_path = ""
    if result is not None:
        batch.joined.add(result.position)
        file_path = _file_path(result, warnings)
    fields: dict[str, Any] = {
        "org_id": batch.org_id,
        "session_id": session_of(record),
        "user_id": user_of(record, record_too=True),
        "agent_harness": "claude-code",
        "file_path": file_path,
        "accepted": verdict == "accept",
        "explicit": source in EXPLICIT_SOURCES,
        "interaction_mode": "agent",
        "call_id": call_id,
        "occurred_at": occurred(record),
        "captured_at": batch.captured_at,
        "raw": {"decision": provenance(record.record),
                "result": provenance(result.record) if result is not None else None},
    }
    return Emitted((build(DeveloperDecision, fields, PATHS, "decision_id"),), tuple(warnings))
