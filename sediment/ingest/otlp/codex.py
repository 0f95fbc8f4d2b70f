"""Codex CLI: a patch approval is a ``codex.tool_decision`` event (attribute ``event.name``); the
patch it approved is the ``arguments`` of the ``codex.tool_result`` with the same ``call_id`` in
the same batch.

- Only patches decide an edit: ``apply_patch``, and ``exec_command`` whose ``cmd`` (its
  ``arguments`` are JSON) starts, on its first non-blank line, with ``apply_patch <<`` (a
  provider that exposes the patch tool through the shell). Another tool, or a shell command
  that is not such a patch (or whose result is not in the batch), is skipped as
  ``not_an_edit_tool:<tool_name>``.
- ``decision`` ``approved``, ``approved_for_session`` → accepted; ``denied``, ``abort`` →
  rejected; another value (``timed_out``, …) is skipped as ``not_a_decision:<value>``.
- ``explicit`` ← ``source`` is ``user`` (any case: Codex sends ``User`` and ``Config``).
- One decision per file the patch names (lines beginning, at column 0, ``*** Update File: ``,
  ``*** Add File: `` or ``*** Delete File: ``; in order, each once); one with ``file_path`` ``""``
  when it names none or the result is not in the batch. Codex has no interactive reject, so
  its rejects are rare and path-less.
- ``session_id`` ← ``conversation.id`` (the record's, else the resource's); ``user_id`` ← the
  resource's ``user.id``; ``call_id`` ← ``call_id``; ``interaction_mode`` ``agent``;
  ``occurred_at`` ← ``timeUnixNano``, else ``observedTimeUnixNano`` (Codex sends the first as
  ``"0"``); ``raw`` ← ``{"decision": record, "result": result record or null}``.

Of two results for one ``call_id`` in a batch the first is joined.
"""

from __future__ import annotations

from typing import Any, Final

from sediment.ingest.otlp.batch import Batch, Emitted, Skip, build, occurred, session_of, user_of
from sediment.ingest.otlp.envelope import LogRecord, Refused
from sediment.ingest.otlp.provenance import provenance
from sediment.ingest.reading.json_text import RecordProblem, read_json
from sediment.model.facts import DeveloperDecision

DECISION: Final = "codex.tool_decision"
RESULT: Final = "codex.tool_result"
PATCH_TOOL: Final = "apply_patch"
SHELL_TOOL: Final = "exec_command"
ACCEPT: Final = frozenset({"approved", "approved_for_session"})
REJECT: Final = frozenset({"denied", "abort"})
MARKERS: Final = ("*** Update File: ", "*** Add File: ", "*** Delete File: ")
CONVERSATION: Final = "conversation.id"
PATHS: Final = {
    "session_id": f"attributes[{CONVERSATION}]",
    "user_id": "resource.attributes[user.id]",
    "call_id": "attributes[call_id]",
    "occurred_at": "timeUnixNano",
}


def check_result(record: LogRecord) -> None:
    record.check_event_name()
    record.attributes.identifier("call_id", required=True)
    record.attributes.text("arguments")


def results(records: list[LogRecord]) -> dict[str, LogRecord]:
    """The batch's tool results by ``call_id`` (the first of each; unreadable ones join nothing)."""
    found: dict[str, LogRecord] = {}
    for record in records:
        if record.attributes.loose_text("event.name") != RESULT:
            continue
        try:
            check_result(record)
        except Refused:
            continue
        key = record.attributes.identifier("call_id")
        assert key is not None
        found.setdefault(key, record)
    return found


def patch_paths(patch: str | None) -> list[str]:
    """The files a V4A patch names, in order, each once."""
    if patch is None:
        return []
    paths: list[str] = []
    for line in patch.splitlines():
        for marker in MARKERS:
            if line.startswith(marker):
                path = line[len(marker):].strip()
                if path and path not in paths:
                    paths.append(path)
                break
    return paths


def shell_patch(arguments: str | None) -> str | None:
    """The patch an ``exec_command`` runs through ``apply_patch <<``, else None."""
    if arguments is None:
        return None
    try:
        parsed = read_json(arguments)
    except RecordProblem:
        return None
    command = parsed.get("cmd") if isinstance(parsed, dict) else None
    if not isinstance(command, str) or not command.lstrip().partition("\n")[0].startswith("apply_patch <<"):
        return None
    return command


def translate(record: LogRecord, batch: Batch) -> Emitted:
    attributes = record.attributes
    tool = attributes.text("tool_name", required=True)
    if tool not in (PATCH_TOOL, SHELL_TOOL):
        raise Skip(f"not_an_edit_tool:{tool}")
    verdict = attributes.text("decision", required=True)
    if verdict not in ACCEPT | REJECT:
        raise Skip(f"not_a_decision:{verdict}")
    source = attributes.text("source")
    call_id = attributes.identifier("call_id")
    result = batch.index("codex_results", results).get(call_id) if call_id is not None else None
    arguments = result.attributes.text("arguments") if result is not None else None
    patch = shell_patch(arguments) if tool == SHELL_TOOL else arguments
    if tool == SHELL_TOOL and patch is None:
        raise Skip(f"not_an_edit_tool:{SHELL_TOOL}")
    if result is not None:
        batch.joined.add(result.position)
    fields: dict[str, Any] = {
        "org_id": batch.org_id,
        "session_id": session_of(record, CONVERSATION),
        "user_id": user_of(record, record_too=False),
        "agent_harness": "codex",
        "accepted": verdict in ACCEPT,
        "explicit": source is not None and source.casefold() == "user",
        "interaction_mode": "agent",
        "call_id": call_id,
        "occurred_at": occurred(record, observed_too=True),
        "captured_at": batch.captured_at,
        "raw": {"decision": provenance(record.record),
                "result": provenance(result.record) if result is not None else None},
    }
    decisions = tuple(build(DeveloperDecision, {**fields, "file_path": path}, PATHS, "decision_id")
                      for path in patch_paths(patch) or [""])
    return Emitted(decisions)
