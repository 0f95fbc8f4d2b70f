"""Importer ``swe-agent-traj``: SWE-agent ``.traj`` files, text-action and function-calling.

One record per file. The events are the file's ``history`` (the model's conversation, the
demonstration included): ``is_demo`` turns are never supervised. SWE-agent can stop writing
``history`` before the last step(s) its ``trajectory`` records (typically the final ``submit``):
each such step is appended as an assistant event (``response`` as its text, ``action`` as one
call, as for a text action) followed by its ``observation`` as the tool result, recorded as an
``append-trajectory-steps`` transformation. When ``history``'s agent turns do not line up with
the first steps (an ``action`` differs), nothing is appended: the loss is declared in
``missing_fields`` and the record is ``incomplete``. In a function-calling file,
assistant ``tool_calls`` keep their ids (a reused id is namespaced, the original kept) and
``tool`` turns link through ``tool_call_ids``. In a text-action file, each assistant turn's
``action`` (the command line the agent ran) becomes one call with the command text as its
arguments, and the observation turn right after it (a ``user`` turn in the file) becomes its
tool result: adjacency linking, recorded as a transformation with the original role kept.

The task id is the file name up to its first dot (SWE-agent names a file by its instance),
or ``replay_config.problem_statement.id`` when present. A ``.traj`` carries no verdict:
``exit_status: submitted`` is never success, so the outcome is unknown. A predictions file
beside it (``all_preds.jsonl``, or ``<name>.all_preds.jsonl``) is joined by ``instance_id``:
its patch is submission evidence, its ``model_name_or_path`` the producer's run.
"""

from __future__ import annotations

import re
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
    parsed_units,
    text_or_none,
)

SOURCE_ID = "swe-agent/traj"
URL = "https://github.com/SWE-agent/SWE-agent"
VERSION = "1"
PREDICTIONS = "all_preds.jsonl"
_SWE_INSTANCE = re.compile(r"^[A-Za-z0-9_.-]+__[A-Za-z0-9_.-]+-\d+$")
#: exit statuses that end a run before it could finish (budget or context exhausted)
_TRUNCATING = ("exit_cost", "exit_context", "exit_total_execution_time")


@hookimpl
def describe_importer() -> ImporterInfo:
    return ImporterInfo(description="SWE-agent .traj files (text-action and function-calling), all_preds.jsonl joined",
                        patterns=("*.traj",), source_id=SOURCE_ID)


@hookimpl
def import_source(path: Path) -> Any:
    if path.name.endswith(PREDICTIONS):
        yield kit.ImportRefusal(path, 0, "(file)", "is a predictions file; it is joined into the .traj beside it")
        return
    digest = kit.file_sha256(path)
    empty = True
    for result in convert_units(path, parsed_units(path), lambda unit, value: convert(path, unit, value, digest)):
        empty = False
        yield result
    if empty:  # a .traj is one trajectory: an empty array holds none, and says so
        yield kit.ImportRefusal(path, 1, "(file)", "holds no trajectory (an empty JSON array)")


def exit_completeness(exit_status: str | None) -> tuple[str, list[kit.MissingField]]:
    """``complete`` for a plain ``submitted``; ``truncated`` when a budget or the context ran out
    (``exit_cost``, ``exit_context``, ``exit_total_execution_time``, or ``submitted (exit_*)``,
    an autosubmission after one); ``incomplete`` for any other exit (errors, format, forfeit)."""
    if exit_status == "submitted":
        return "complete", []
    if exit_status is None:
        return "incomplete", [kit.MissingField(field="outcome.termination_reason", reason="no exit_status recorded")]
    reason = f"the run ended with exit_status {exit_status!r}"
    if exit_status.startswith(_TRUNCATING) or (exit_status.startswith("submitted (") and "exit_" in exit_status):
        return "truncated", [kit.MissingField(field="events", reason=reason)]
    return "incomplete", [kit.MissingField(field="events", reason=reason)]


def _text(content: Any, field: str) -> tuple[str | None, dict[str, Any]]:
    if content is None or isinstance(content, str):
        return content, {}
    parts = array(content, field)
    if all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in parts):
        return "".join(p["text"] for p in parts), {"content_parts": len(parts)}
    raise Refused(field, "content parts other than text are not supported")


def _command_name(action: str) -> str:
    words = action.split()
    return words[0] if words else "action"


def _unrecorded_steps(history: list[Any], steps: list[Any]) -> tuple[int, str | None]:
    """``(first, problem)``: the index of the first ``trajectory`` step ``history`` does not
    record (``len(steps)`` when it records them all), or a problem when the two do not line up."""
    turns = [h for h in history
             if isinstance(h, dict) and h.get("role") == "assistant" and h.get("is_demo") is not True]
    if len(steps) <= len(turns):
        return len(steps), None
    for index, (turn, step) in enumerate(zip(turns, steps, strict=False)):
        recorded, taken = turn.get("action"), step.get("action") if isinstance(step, dict) else None
        if isinstance(recorded, str) and isinstance(taken, str) and recorded.strip() != taken.strip():
            return len(steps), (f"trajectory records {len(steps)} steps and history {len(turns)} agent turns, "
                                f"whose action {index} differs from step {index}'s: the last "
                                f"{len(steps) - len(turns)} steps are not imported")
    return len(turns), None


def _step_events(steps: list[Any], first: int, events: list[kit.Event], calls: kit.CallIds) -> int:
    """Append ``steps[first:]`` (see the module docstring); how many were appended."""
    for number in range(first, len(steps)):
        where = f"trajectory.{number}"
        step = mapping(steps[number], where)
        action = text_or_none(step.get("action"), f"{where}.action")
        thought = text_or_none(step.get("thought"), f"{where}.thought")
        response = text_or_none(step.get("response"), f"{where}.response")
        observation = text_or_none(step.get("observation"), f"{where}.observation")
        index = len(events)
        meta: dict[str, Any] = {"trajectory_step": number}
        text = response if response is not None else thought
        if thought is not None and thought != text:
            meta["thought"] = thought
        tool_calls = []
        if action is not None and action.strip():
            tool_calls.append(kit.TrajectoryToolCall(call_id=calls.assign(None, index, 0), original_call_id=None,
                                           name=_command_name(action), arguments=action))
        events.append(kit.Event(event_id=f"event:{index}", role="assistant", text=text, tool_calls=tool_calls,
                                source_metadata=meta, supervised=True))
        if tool_calls and observation is not None:
            events.append(kit.Event(event_id=f"event:{index + 1}", role="tool", text=observation,
                                    tool_result_of=tool_calls[0].call_id,
                                    source_metadata={"trajectory_step": number, "field": "observation"}))
    return len(steps) - first


def _events(history: list[Any], steps: list[Any], first: int
            ) -> tuple[list[kit.Event], list[kit.Transformation], bool]:
    calls = kit.CallIds()
    events: list[kit.Event] = []
    text_calls = adjacent = 0
    pending: str | None = None  # a text-mode call waiting for its observation
    function_calling = any(isinstance(h, dict) and h.get("tool_calls") for h in history)
    for index, item in enumerate(history):
        where = f"history.{index}"
        item = mapping(item, where)
        role = item.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            raise Refused(f"{where}.role", f"unknown role {role!r}")
        text, meta = _text(item.get("content"), f"{where}.content")
        for key in ("message_type", "agent", "is_demo", "tags"):
            if item.get(key) is not None:
                meta[key] = item[key]
        demo = item.get("is_demo") is True
        tool_calls: list[kit.TrajectoryToolCall] = []
        link = None
        event_role = role
        if role == "assistant":
            raw_calls = item.get("tool_calls")
            if raw_calls:
                for position, call in enumerate(array(raw_calls, f"{where}.tool_calls")):
                    call = mapping(call, f"{where}.tool_calls.{position}")
                    function = mapping(call.get("function"), f"{where}.tool_calls.{position}.function")
                    arguments = function.get("arguments")
                    name = function.get("name")
                    original = call.get("id")
                    if not isinstance(arguments, str | dict) or not isinstance(name, str) or not name:
                        raise Refused(f"{where}.tool_calls.{position}.function", "expected a name and arguments")
                    if original is not None and not isinstance(original, str):
                        raise Refused(f"{where}.tool_calls.{position}.id", "expected text")
                    tool_calls.append(kit.TrajectoryToolCall(call_id=calls.assign(original, index, position),
                                                   original_call_id=original or None, name=name,
                                                   arguments=arguments))
                pending = None
            elif not function_calling and isinstance(item.get("action"), str) and item["action"].strip():
                action = item["action"]
                call_id = calls.assign(None, index, 0)
                tool_calls.append(kit.TrajectoryToolCall(call_id=call_id, original_call_id=None,
                                               name=_command_name(action), arguments=action))
                text_calls += 1
                pending = call_id
            else:
                pending = None
            thought = text_or_none(item.get("thought"), f"{where}.thought")
            if thought is not None and thought != text:
                meta["thought"] = thought
        elif role == "tool":
            ids = item.get("tool_call_ids")
            if ids is None:
                ids = [item["tool_call_id"]] if isinstance(item.get("tool_call_id"), str) else []
            ids = array(ids, f"{where}.tool_call_ids")
            if ids and isinstance(ids[0], str):
                link = calls.result_of(ids[0])
                meta["tool_call_ids"] = ids
            pending = None
        elif role == "user" and pending is not None and not demo:
            event_role, link = "tool", pending
            meta["role"] = "user"
            adjacent += 1
            pending = None
        else:
            pending = None
        missing = []
        if event_role == "tool" and link is None:
            missing.append(kit.MissingField(field="tool_result_of", reason="the observation names no earlier call"))
        events.append(kit.Event(event_id=f"event:{index}", role=event_role, text=text, tool_calls=tool_calls,
                                tool_result_of=link, source_metadata=meta, missing_fields=missing,
                                supervised=role == "assistant" and not demo))
    appended = _step_events(steps, first, events, calls)
    transformations = calls.transformations()
    if appended:
        transformations.append(kit.Transformation(name="append-trajectory-steps", version=VERSION,
                                                  detail={"steps": appended, "first": first}))
    if text_calls:
        transformations.append(kit.Transformation(name="text-action-calls", version=VERSION,
                                                  detail={"calls": text_calls}))
    if adjacent:
        transformations.append(kit.Transformation(name="link-adjacent", version=VERSION,
                                                  detail={"links": adjacent}))
    return declare_unanswered(events), transformations, function_calling


def _prediction(path: Path, task_id: str) -> tuple[dict[str, Any], kit.Transformation] | None:
    stem = path.name.split(".")[0]
    for candidate in (path.with_name(f"{stem}.{PREDICTIONS}"), path.with_name(PREDICTIONS)):
        if not candidate.is_file():
            continue
        for item in parsed_units(candidate):
            if isinstance(item, kit.ImportRefusal):
                continue
            unit, row = item
            if isinstance(row, dict) and row.get("instance_id") == task_id:
                return row, kit.Transformation(name="join-predictions", version=VERSION, detail={
                    "file": candidate.name, "line": unit.line, "sha256": kit.file_sha256(candidate)})
    return None


def convert(path: Path, unit: kit.SourceUnit, doc: Any, digest: str) -> kit.Trajectory:
    doc = mapping(doc, "(record)")
    info = mapping(doc.get("info", {}), "info")
    replay = doc.get("replay_config")
    if isinstance(replay, str):
        try:
            replay = kit.parse_json(replay.encode("utf-8", "surrogatepass"))
        except ValueError:
            replay = None
    config: dict[str, Any] = replay if isinstance(replay, dict) else {}
    statement = config.get("problem_statement")
    task_id = statement.get("id") if isinstance(statement, dict) and isinstance(statement.get("id"), str) else None
    task_id = task_id or path.name.split(".")[0]
    if not task_id:
        raise Refused("(file name)", "names no instance")
    history = array(doc.get("history"), "history")
    steps = array(doc.get("trajectory", []), "trajectory")
    first, unaligned = _unrecorded_steps(history, steps)
    events, transformations, function_calling = _events(history, steps, first)
    exit_status = text_or_none(info.get("exit_status"), "info.exit_status")
    completeness, missing = exit_completeness(exit_status)
    if unaligned is not None:
        completeness = "incomplete" if completeness == "complete" else completeness
        missing = [*missing, kit.MissingField(field="events", reason=unaligned)]
    missing = [*event_omissions(events), *missing,
               kit.MissingField(field="tools", reason="a .traj does not carry the tool definitions")]
    stats: dict[str, Any] = info["model_stats"] if isinstance(info.get("model_stats"), dict) else {}
    tokens = stats.get("tokens_sent")
    api_calls = stats.get("api_calls")
    demonstrator: kit.Demonstrator = ("agent" if isinstance(tokens, int | float) and tokens > 0
                                      else "reference" if api_calls == 0 else "unknown")
    agent: dict[str, Any] = config["agent"] if isinstance(config.get("agent"), dict) else {}
    model_config: dict[str, Any] = agent["model"] if isinstance(agent.get("model"), dict) else {}
    model = model_config.get("name") if isinstance(model_config.get("name"), str) else None
    evidence = []
    submission = text_or_none(info.get("submission"), "info.submission")
    metadata: dict[str, Any] = {"environment": doc.get("environment"), "model_stats": stats,
                                "mode": "function-calling" if function_calling else "text-action"}
    joined = _prediction(path, task_id)
    if joined is not None:
        row, join = joined
        transformations.append(join)
        metadata["prediction"] = {k: row.get(k) for k in ("model_name_or_path", "instance_id")}
        patch = row.get("model_patch") if isinstance(row.get("model_patch"), str) else None
        if patch is not None:
            evidence.append(kit.TrajectoryEvidence(kind="submission",
                                         summary=f"all_preds.jsonl model_patch ({len(patch)} characters)",
                                         detail={"model_name_or_path": row.get("model_name_or_path")}))
    if submission and not evidence:
        evidence.append(kit.TrajectoryEvidence(kind="submission",
                                               summary=f"info.submission ({len(submission)} characters)"))
    for key in ("swe_agent_version", "swe_agent_hash", "swe_rex_version"):
        if isinstance(info.get(key), str):
            metadata[key] = info[key]
    domain = "software-engineering" if _SWE_INSTANCE.match(task_id) else None
    raw, redactions = kit.raw_record_of(unit.data)
    prediction_model = metadata.get("prediction", {}).get("model_name_or_path")
    return kit.build(
        task_id=task_id, task_key=f"swe:{task_id}" if domain else f"swe-agent:{task_id}",
        source=kit.Source(source_id=SOURCE_ID, url=URL, revision=None, locator=unit.locator, file_sha256=digest),
        task_family="swe-bench" if domain else None, domain=domain, split=None,
        events=events, tools=None,
        provenance=kit.TrajectoryProvenance(demonstrator=demonstrator, producer="SWE-agent", scaffold="SWE-agent",
                                  scaffold_version=info.get("swe_agent_version") if isinstance(
                                      info.get("swe_agent_version"), str) else None,
                                  model=model, source_metadata={"run": prediction_model} if prediction_model else {}),
        outcome=kit.Outcome(success=None, status=exit_status, termination_reason=exit_status),
        verification=kit.Verification(method="none", executable=False, evidence=evidence),
        completeness=completeness, missing_fields=missing,
        transformations=[*transformations, *redactions, kit.Transformation(name="import-swe-agent-traj",
                                                                             version=VERSION)],
        raw_record=raw, metadata=metadata)
