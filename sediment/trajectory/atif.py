"""Export a canonical record as an ATIF document (``ATIF-v1.7`` or ``ATIF-v1.8``).

ATIF (the Agent Trajectory Interchange Format of Harbor / Terminal-Bench) keeps the
interaction, not what is known about it. The mapping:

- a system or user event becomes a ``system`` / ``user`` step with its text as ``message``;
- an assistant event becomes an ``agent`` step: ``message`` (its text, ``""`` when it has
  none), ``reasoning_content``, ``tool_calls`` (``tool_call_id`` is the record's call id,
  ``arguments`` an object), ``is_copied_context: true`` when it is not supervised;
- a tool event answering a call of the agent step just before it becomes one
  ``observation.results`` entry of that step (``source_call_id`` = the call id); any other
  tool event becomes a ``system`` step whose observation holds the result, so order is kept;
- the provenance becomes ``agent`` (``name`` = scaffold, ``version``, ``model_name``), the
  published tools ``agent.tool_definitions`` (OpenAI function specs).

Whatever ATIF cannot hold goes beside the file, in the sidecar (:func:`sidecar`, written as
``<name>.outcome.json``): identity, source, provenance, ``outcome``, ``verification``,
``completeness`` and ``missing_fields``, where each loss of the export is declared — among
them the outcome and verification themselves (not in the ATIF document), call arguments that
are not a JSON object (kept as text in the call's ``extra.arguments_text``), a missing text
(``extra.text_null``), events' source metadata and ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sediment.records import decode_record
from sediment.trajectory.record import Event, MissingField, Trajectory

AtifVersion = Literal["ATIF-v1.7", "ATIF-v1.8"]
ATIF_VERSIONS: tuple[AtifVersion, ...] = ("ATIF-v1.7", "ATIF-v1.8")
#: The sidecar's format tag.
SIDECAR_FORMAT = "sediment-atif-sidecar/1"
SIDECAR_SUFFIX = ".outcome.json"


@dataclass(frozen=True)
class AtifExport:
    """An exported document, its sidecar, and every loss (also listed in the sidecar)."""

    document: dict[str, Any]
    sidecar: dict[str, Any]
    losses: list[MissingField]


def _arguments(value: dict[str, Any] | str) -> tuple[dict[str, Any], str | None]:
    """An arguments object for ATIF, and the source text when the source gave text."""
    if isinstance(value, dict):
        return value, None
    try:
        parsed = decode_record(value)
    except ValueError:
        return {}, value
    return (parsed, value) if isinstance(parsed, dict) else ({}, value)


def _message(event: Event) -> tuple[str, dict[str, Any]]:
    if event.text is None:
        return "", {"text_null": True}
    return event.text, {}


def export_atif(record: Trajectory, version: AtifVersion = "ATIF-v1.8") -> AtifExport:
    """The ATIF document of ``record`` and its sidecar; raises ``ValueError`` for an unknown version."""
    if version not in ATIF_VERSIONS:
        raise ValueError(f"unknown ATIF version {version!r} (known: {', '.join(ATIF_VERSIONS)})")
    losses: list[MissingField] = [
        MissingField(field="outcome", reason="ATIF has no outcome; it is in the sidecar"),
        MissingField(field="verification", reason="ATIF has no verification; it is in the sidecar"),
        MissingField(field="completeness", reason="ATIF has no completeness; it is in the sidecar"),
        MissingField(field="raw_record", reason="the source's raw record is not exported"),
    ]
    steps: list[dict[str, Any]] = []
    open_calls: set[str] = set()  # calls of the last step, if it is an agent step
    for index, event in enumerate(record.events):
        where = f"events.{index}"
        if event.role == "tool":
            result: dict[str, Any] = {"content": event.text if event.text is not None else ""}
            if event.text is None:
                result["extra"] = {"text_null": True}
            if event.tool_result_of is not None:
                result["source_call_id"] = event.tool_result_of
            if event.tool_result_of is not None and event.tool_result_of in open_calls:
                steps[-1].setdefault("observation", {"results": []})["results"].append(result)
                continue
            losses.append(MissingField(field=where, reason="a tool result outside its calling step is written as "
                                                           "a system step's observation"))
            steps.append({"step_id": len(steps) + 1, "source": "system", "message": "",
                          "observation": {"results": [result]}, "extra": {"sediment_role": "tool"}})
            open_calls = set()
            continue
        message, extra = _message(event)
        step: dict[str, Any] = {"step_id": len(steps) + 1,
                                "source": "agent" if event.role == "assistant" else event.role,
                                "message": message}
        if event.role == "assistant":
            if event.reasoning is not None:
                step["reasoning_content"] = event.reasoning
            if event.tool_calls:
                calls = []
                for position, call in enumerate(event.tool_calls):
                    arguments, text = _arguments(call.arguments)
                    entry: dict[str, Any] = {"tool_call_id": call.call_id, "function_name": call.name,
                                             "arguments": arguments}
                    call_extra: dict[str, Any] = {}
                    if text is not None:
                        call_extra["arguments_text"] = text
                        if not arguments and text.strip() not in ("{}", ""):
                            losses.append(MissingField(
                                field=f"{where}.tool_calls.{position}.arguments",
                                reason="not a JSON object; ATIF arguments are {} and the text is in "
                                       "extra.arguments_text"))
                    if call.original_call_id != call.call_id:
                        call_extra["original_call_id"] = call.original_call_id  # null: the source gave none
                    if call_extra:
                        entry["extra"] = call_extra
                    calls.append(entry)
                step["tool_calls"] = calls
            if not event.supervised:
                step["is_copied_context"] = True
            if record.provenance.model is not None:
                step["model_name"] = record.provenance.model
        if extra:
            step["extra"] = extra
        steps.append(step)
        open_calls = {c.call_id for c in event.tool_calls} if event.role == "assistant" else set()
    with_metadata = sum(1 for e in record.events if e.source_metadata)
    if with_metadata:
        losses.append(MissingField(field="events.source_metadata",
                                   reason=f"the source metadata of {with_metadata} events is not exported"))
    agent: dict[str, Any] = {"name": record.provenance.scaffold or record.provenance.producer or "unknown",
                             "version": record.provenance.scaffold_version or "unknown"}
    if not record.provenance.scaffold_version:
        losses.append(MissingField(field="agent.version", reason="the record names no scaffold version"))
    if record.provenance.model is not None:
        agent["model_name"] = record.provenance.model
    if record.tools is not None:
        agent["tool_definitions"] = [
            {"type": "function", "function": {
                "name": t.name, **({"description": t.description} if t.description is not None else {}),
                **({"parameters": t.parameters} if t.parameters is not None else {})}}
            for t in record.tools]
    document: dict[str, Any] = {"schema_version": version, "session_id": record.trajectory_id,
                                "trajectory_id": record.trajectory_id, "agent": agent, "steps": steps,
                                "extra": {"task_id": record.task_id, "task_key": record.task_key}}
    return AtifExport(document=document, sidecar=sidecar(record, version, losses), losses=losses)


def sidecar(record: Trajectory, version: str, losses: list[MissingField]) -> dict[str, Any]:
    """What ATIF cannot hold, beside the file: identity, outcome, verification, losses."""
    plain = record.model_dump(mode="python")
    return {
        "format": SIDECAR_FORMAT,
        "atif_version": version,
        "trajectory_id": record.trajectory_id,
        **{key: plain[key] for key in ("task_id", "task_key", "task_family", "domain", "split", "source",
                                       "provenance", "outcome", "verification", "completeness")},
        "missing_fields": [*plain["missing_fields"], *({"field": m.field, "reason": m.reason} for m in losses)],
    }


def sidecar_path(path: Path) -> Path:
    """``trajectory.json`` → ``trajectory.outcome.json``."""
    return path.with_name(path.name.split(".")[0] + SIDECAR_SUFFIX)


def write_atif(record: Trajectory, path: Path, version: AtifVersion = "ATIF-v1.8") -> AtifExport:
    """Write the ATIF document to ``path`` and its sidecar beside it (sorted keys, UTF-8)."""
    exported = export_atif(record, version)
    path.write_text(json.dumps(exported.document, sort_keys=True, ensure_ascii=True, indent=1) + "\n",
                    encoding="utf-8")
    sidecar_path(path).write_text(json.dumps(exported.sidecar, sort_keys=True, ensure_ascii=True, indent=1) + "\n",
                                  encoding="utf-8")
    return exported
