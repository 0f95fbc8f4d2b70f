"""Importer ``atif-v1``: ATIF documents (``ATIF-v1.0`` ... ``ATIF-v1.8``).

One record per document: a ``.json`` file holding one document, each element of a ``.json``
file holding a top-level array of documents (as agent-data-protocol publishes a dataset's ATIF;
read element by element, a bad element refused alone), or each line of a ``.jsonl``. Steps are flattened
so that an assistant decision's context is exactly the events before it: a ``system`` /
``user`` step becomes one event, an ``agent`` step one assistant event followed by one tool
event per ``observation.results`` entry (linked natively by ``source_call_id``), a system
step's observation results tool events after it. ``is_copied_context: true`` steps are never
supervised. Embedded ``subagent_trajectories`` are not flattened (declared).

ATIF holds no outcome, verification, task id or completeness. When a Sediment sidecar
(``<name>.outcome.json``, as the ATIF export writes) lies beside the file and names the
document, those come from it; otherwise the outcome is unknown, the task is named by
``extra.task_id``, the ``session_id`` or the file, and the omissions are declared. A
call's ``extra.arguments_text`` (the source's exact argument text, kept by the export)
restores the text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sediment.plugin import ImporterInfo, hookimpl
from sediment.plugin import trajectory_kit as kit

from ._common import (
    Refused,
    array,
    convert_units,
    declare_unanswered,
    event_omissions,
    mapping,
    obj,
    openai_tools,
    parsed_units,
    required_text,
    text_or_none,
)

SOURCE_ID = "atif"
URL = "https://github.com/harbor-framework/harbor"
VERSION = "1"
SIDECAR_FORMAT = "sediment-atif-sidecar/1"
SOURCES: dict[str, kit.Role] = {"system": "system", "user": "user", "agent": "assistant"}


@hookimpl
def describe_importer() -> ImporterInfo:
    return ImporterInfo(description="ATIF trajectories (v1.0 to v1.8), with a Sediment outcome sidecar when present",
                        patterns=("*.json", "*.jsonl"), source_id=SOURCE_ID)


@hookimpl
def import_source(path: Path) -> Any:
    if kit.logical_name(path.name).endswith(".outcome.json"):
        return
    digest = kit.file_sha256(path)
    yield from convert_units(path, parsed_units(path), lambda unit, value: convert(path, unit, value, digest))


def _sidecar(path: Path, document_id: str | None) -> dict[str, Any] | None:
    candidate = path.with_name(path.name.split(".")[0] + ".outcome.json")
    if not candidate.is_file() or document_id is None:
        return None
    try:
        value = kit.parse_json(kit.read_input(candidate))
    except OSError as exc:
        raise Refused(f"({candidate.name})", str(exc)) from None
    except ValueError as exc:
        raise Refused(f"({candidate.name})", kit.describe_json_error(exc)) from None
    if not isinstance(value, dict) or value.get("format") != SIDECAR_FORMAT:
        raise Refused(f"({candidate.name})", f"is not a {SIDECAR_FORMAT} sidecar")
    return value if value.get("trajectory_id") == document_id else None


def _message(value: Any, where: str) -> tuple[str | None, dict[str, Any]]:
    if isinstance(value, str):
        return value, {}
    parts = array(value, where)
    texts = [p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
    if len(texts) == len(parts) and all(isinstance(t, str) for t in texts):
        return "".join(str(t) for t in texts), {"content_parts": len(parts)}
    raise Refused(where, "content parts other than text are not supported")


def _events(steps: list[Any]) -> tuple[list[kit.Event], kit.CallIds]:
    calls = kit.CallIds()
    events: list[kit.Event] = []

    def add(**fields: Any) -> None:
        events.append(kit.Event(event_id=f"event:{len(events)}", **fields))

    for index, step in enumerate(steps):
        where = f"steps.{index}"
        step = mapping(step, where)
        source = step.get("source")
        if not isinstance(source, str) or source not in SOURCES:
            raise Refused(f"{where}.source", f"unknown step source {source!r}")
        extra = obj(step.get("extra"))
        meta = {k: step[k] for k in ("step_id", "timestamp", "model_name", "metrics", "llm_call_count")
                if step.get(k) is not None}
        text, parts = _message(step.get("message", ""), f"{where}.message")
        meta.update(parts)
        if extra.get("text_null") is True and text == "":
            text = None
        copied = step.get("is_copied_context") is True
        if copied:
            meta["is_copied_context"] = True
        if extra.get("sediment_role") != "tool":
            tool_calls = []
            if source == "agent":
                for position, call in enumerate(array(step.get("tool_calls") or [], f"{where}.tool_calls")):
                    call = mapping(call, f"{where}.tool_calls.{position}")
                    call_extra = obj(call.get("extra"))
                    arguments: Any = call.get("arguments")
                    if not isinstance(arguments, dict):
                        raise Refused(f"{where}.tool_calls.{position}.arguments", "expected an object")
                    if isinstance(call_extra.get("arguments_text"), str):
                        arguments = call_extra["arguments_text"]
                    original = required_text(call.get("tool_call_id"), f"{where}.tool_calls.{position}.tool_call_id")
                    tool_calls.append(kit.TrajectoryToolCall(
                        call_id=calls.assign(original, len(events), position),
                        original_call_id=call_extra.get("original_call_id", original),
                        name=required_text(call.get("function_name"), f"{where}.tool_calls.{position}.function_name"),
                        arguments=arguments))
            elif step.get("tool_calls"):
                raise Refused(f"{where}.tool_calls", f"a {source} step carries tool calls")
            add(role=SOURCES[source], text=text,
                reasoning=text_or_none(step.get("reasoning_content"), f"{where}.reasoning_content"),
                tool_calls=tool_calls, source_metadata=meta, supervised=source == "agent" and not copied)
        observation = step.get("observation")
        if observation is None:
            continue
        for position, result in enumerate(array(mapping(observation, f"{where}.observation").get("results"),
                                                f"{where}.observation.results")):
            result = mapping(result, f"{where}.observation.results.{position}")
            content, parts = _message(result.get("content") if result.get("content") is not None else "",
                                      f"{where}.observation.results.{position}.content")
            if obj(result.get("extra")).get("text_null") is True and content == "":
                content = None
            answered = result.get("source_call_id")
            link = calls.result_of(answered) if isinstance(answered, str) else None
            missing = [] if link is not None else [kit.MissingField(
                field="tool_result_of", reason="the result names no call of this trajectory")]
            add(role="tool", text=content, tool_result_of=link,
                source_metadata={"step_id": step.get("step_id"), **parts}, missing_fields=missing)
    return declare_unanswered(events), calls


def convert(path: Path, unit: kit.SourceUnit, value: Any, digest: str) -> kit.Trajectory:
    doc = mapping(value, "(record)")
    version = required_text(doc.get("schema_version"), "schema_version")
    if not version.startswith("ATIF-v1."):
        raise Refused("schema_version", f"{version!r} is not an ATIF v1 version")
    agent = mapping(doc.get("agent"), "agent")
    steps = array(doc.get("steps"), "steps")
    if not steps:
        raise Refused("steps", "an ATIF trajectory has at least one step")
    events, calls = _events(steps)
    document_id = doc.get("trajectory_id") if isinstance(doc.get("trajectory_id"), str) else None
    side = _sidecar(path, document_id)
    extra = obj(doc.get("extra"))
    missing = event_omissions(events)
    tools = (openai_tools(agent["tool_definitions"], "agent.tool_definitions")
             if agent.get("tool_definitions") is not None else None)
    if tools is None:
        missing.append(kit.MissingField(field="tools", reason="the document publishes no tool definitions"))
    if doc.get("subagent_trajectories"):
        missing.append(kit.MissingField(field="events", reason="embedded subagent trajectories are not flattened"))
    raw, redactions = kit.raw_record_of(unit.data)
    transformations = [*calls.transformations(), *redactions]
    if side is not None:
        fields: dict[str, Any] = {k: side[k] for k in ("task_id", "task_key", "task_family", "domain", "split",
                                                       "outcome", "verification", "completeness")}
        provenance = side["provenance"]
        missing.extend(kit.MissingField(**m) for m in array(side.get("missing_fields", []), "(sidecar).missing_fields")
                       if isinstance(m, dict))
        transformations.append(kit.Transformation(name="join-atif-sidecar", version=VERSION, detail={
            "file": path.name.split(".")[0] + ".outcome.json", "trajectory_id": side["trajectory_id"]}))
    else:
        task_id = extra.get("task_id") or doc.get("session_id") or document_id or path.name.split(".")[0]
        if not isinstance(task_id, str):
            raise Refused("extra.task_id", "expected text")
        task_key = extra.get("task_key") if isinstance(extra.get("task_key"), str) else f"atif:{task_id}"
        continued = doc.get("continued_trajectory_ref")
        fields = {"task_id": task_id, "task_key": task_key, "task_family": None, "domain": None, "split": None,
                  "outcome": kit.Outcome(success=None), "verification": kit.Verification(method="none"),
                  "completeness": "incomplete" if continued else "complete"}
        if continued:
            missing.append(kit.MissingField(field="events", reason=f"continues in {continued}"))
        missing.append(kit.MissingField(field="outcome", reason="ATIF carries no outcome and no sidecar names it"))
        provenance = kit.TrajectoryProvenance(
            demonstrator="agent", scaffold=text_or_none(agent.get("name"), "agent.name"),
            scaffold_version=text_or_none(agent.get("version"), "agent.version"),
            model=text_or_none(agent.get("model_name"), "agent.model_name"))
    unique = list(dict.fromkeys((m.field, m.reason) for m in missing))
    missing = [kit.MissingField(field=f, reason=r) for f, r in unique]
    return kit.build(
        **fields, source=kit.Source(source_id=SOURCE_ID, url=URL, revision=None, locator=unit.locator,
                                    file_sha256=digest),
        events=events, tools=tools, provenance=provenance, missing_fields=missing,
        transformations=[*transformations, kit.Transformation(name="import-atif", version=VERSION,
                                                              detail={"schema_version": version})],
        raw_record=raw,
        metadata={k: doc[k] for k in ("session_id", "trajectory_id", "notes", "final_metrics")
                  if doc.get(k) is not None})
