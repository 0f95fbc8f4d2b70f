"""Importer ``openhands``: OpenHands evaluation output, runtime histories and resolver output.

Three shapes, told apart by their keys:

- evaluation output (``output.jsonl`` rows: ``instance_id``, ``instruction``, ``instance``,
  ``metadata``, ``history``, ``metrics``, ``test_result``, ``error``); the task id is the
  instance id (no attempt suffix); the outcome is ``test_result.report.resolved`` when the
  harness ran, else unknown (a ``git_patch`` alone is a submission, not a verdict);
- a runtime history (a JSON file that is a bare list of events): no task id, so the task is
  named by the file;
- resolver output (rows with ``issue``, ``history``, ``success``, ``result_explanation``):
  ``success`` is the outcome, but its evidence is an LLM-written explanation
  (``llm_judgement``), weaker than tests.

Events follow the event stream: the agent's ``system`` action is the system prompt; user
``message`` actions are user turns; ``recall`` actions and observations inject context (user
events, never supervised); every other agent action is an assistant decision with one tool call
(the function name and call id of ``tool_call_metadata``, the model's exact arguments text
from its recorded response when present, else the action's ``args``); observations are tool
results linked by ``cause`` (native), else the call id, else adjacency (recorded). An error
containing "maximum iteration" makes the record ``truncated``; another error ``incomplete``.
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
    parsed_units,
    required_text,
    text_or_none,
)

SOURCE_ID = "openhands"
URL = "https://github.com/All-Hands-AI/OpenHands"
VERSION = "1"
_CONTEXT_ACTIONS = ("recall",)
_OLD_FORMAT_KEYS = ("action", "observation", "source", "id")


@hookimpl
def describe_importer() -> ImporterInfo:
    return ImporterInfo(description="OpenHands evaluation output, runtime histories and resolver output",
                        patterns=("*.jsonl", "*.json"), source_id=SOURCE_ID)


@hookimpl
def import_source(path: Path) -> Any:
    digest = kit.file_sha256(path)
    units = parsed_units(path) if kit.logical_name(path.name).endswith(".jsonl") else _whole(path)
    yield from convert_units(path, units, lambda unit, value: convert(path, unit, value, digest))


def _whole(path: Path) -> Any:
    try:
        data = kit.read_input(path)
    except OSError as exc:  # corrupt, truncated or a bomb when compressed
        yield kit.ImportRefusal(path, 1, "(file)", str(exc))
        return
    unit = kit.SourceUnit(path, 1, kit.logical_name(path.name), data)
    try:
        yield unit, kit.parse_json(data)
    except ValueError as exc:
        yield kit.ImportRefusal(path, 1, "(record)", kit.describe_json_error(exc))


def _arguments_text(metadata: dict[str, Any], call_id: str | None) -> str | None:
    """The model's exact arguments text for ``call_id`` in the recorded response, if any."""
    response = metadata.get("model_response")
    if not isinstance(response, dict) or not isinstance(response.get("choices"), list):
        return None
    for choice in response["choices"]:
        message = choice.get("message") if isinstance(choice, dict) else None
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict) and call.get("id") == call_id:
                function = call.get("function")
                if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                    return str(function["arguments"])
    return None


def _events(history: list[Any]) -> tuple[list[kit.Event], list[kit.Transformation]]:
    calls = kit.CallIds()
    events: list[kit.Event] = []
    by_action_id: dict[str, str] = {}  # action event id -> call id
    adjacent = 0
    old_format = not any(isinstance(e, dict) and "source" in e for e in history)
    seen_action = False
    for index, item in enumerate(history):
        where = f"history.{index}"
        item = mapping(item, where)
        meta: dict[str, Any] = {k: item[k] for k in ("id", "timestamp", "source", "cause", "success")
                                if item.get(k) is not None}
        args = obj(item.get("args"))
        tool_meta = obj(item.get("tool_call_metadata"))
        message = text_or_none(item.get("message"), f"{where}.message") if "message" in item else None
        tool_calls: list[kit.TrajectoryToolCall] = []
        link = None
        missing: list[kit.MissingField] = []
        if "action" in item:
            action = required_text(item.get("action"), f"{where}.action")
            meta["action"] = action
            source = item.get("source")
            if old_format:
                source = "user" if action == "message" and not seen_action else "agent"
            seen_action = True
            if action == "system":
                role: kit.Role = "system"
                text = text_or_none(args.get("content", message), f"{where}.args.content")
            elif source != "agent" or action in _CONTEXT_ACTIONS:
                role = "user"
                text = text_or_none(args.get("content", item.get("content", message)), f"{where}.args.content")
            else:
                role = "assistant"
                thought = args.get("thought", item.get("thought"))
                text = text_or_none(thought, f"{where}.thought")
                if action == "message":
                    text = text_or_none(args.get("content", item.get("content", message)), f"{where}.content")
                else:
                    original = tool_meta.get("tool_call_id")
                    if original is not None and not isinstance(original, str):
                        raise Refused(f"{where}.tool_call_metadata.tool_call_id", "expected text")
                    function_name = tool_meta.get("function_name")
                    name = function_name if isinstance(function_name, str) and function_name else action
                    exact = _arguments_text(tool_meta, original)
                    arguments: str | dict[str, Any] = exact if exact is not None else (
                        {k: v for k, v in args.items() if k != "thought"} if "args" in item
                        else {k: v for k, v in item.items() if k not in ("action", "thought")})
                    call_id = calls.assign(original, index, 0)
                    tool_calls.append(kit.TrajectoryToolCall(call_id=call_id, original_call_id=original or None,
                                                   name=name, arguments=arguments))
                    if "id" in item:
                        by_action_id[str(item["id"])] = call_id
                    if message:
                        meta["message"] = message
        elif "observation" in item:
            observation = required_text(item.get("observation"), f"{where}.observation")
            meta["observation"] = observation
            text = text_or_none(item.get("content", message), f"{where}.content")
            if observation in _CONTEXT_ACTIONS:
                role = "user"
            else:
                role = "tool"
                cause = item.get("cause")
                if cause is not None and str(cause) in by_action_id:
                    link = by_action_id[str(cause)]
                elif isinstance(tool_meta.get("tool_call_id"), str):
                    link = calls.result_of(tool_meta["tool_call_id"])
                if link is None and events and events[-1].role == "assistant" and events[-1].tool_calls:
                    link = events[-1].tool_calls[-1].call_id
                    adjacent += 1
                if link is None:
                    missing.append(kit.MissingField(field="tool_result_of",
                                                    reason="the observation names no earlier action"))
        else:
            raise Refused(where, "is neither an action nor an observation")
        events.append(kit.Event(event_id=f"event:{index}", role=role, text=text, tool_calls=tool_calls,
                                tool_result_of=link, source_metadata=meta, missing_fields=missing,
                                supervised=role == "assistant"))
    transformations = calls.transformations()
    if adjacent:
        transformations.append(kit.Transformation(name="link-adjacent", version=VERSION,
                                                  detail={"links": adjacent}))
    return declare_unanswered(events), transformations


def _completeness(events: list[kit.Event], error: str | None) -> tuple[kit.Completeness, list[kit.MissingField]]:
    if error:
        kind: kit.Completeness = "truncated" if "maximum iteration" in error else "incomplete"
        return kind, [kit.MissingField(field="events", reason=f"the run ended with an error: {error}")]
    last = next((e for e in reversed(events) if e.role == "assistant"), None)
    if last is not None and (any(c.name == "finish" for c in last.tool_calls)
                             or last.source_metadata.get("action") == "finish"):
        return "complete", []
    return "incomplete", [kit.MissingField(field="events", reason="the history does not end in a finish action")]


def _model(metadata: dict[str, Any]) -> str | None:
    config = metadata.get("llm_config")
    if isinstance(config, dict) and isinstance(config.get("model"), str):
        return str(config["model"])
    return None


def convert(path: Path, unit: kit.SourceUnit, value: Any, digest: str) -> kit.Trajectory:
    if isinstance(value, list):
        return _runtime(path, unit, value, digest)
    row = mapping(value, "(record)")
    if "issue" in row:
        return _resolver(unit, row, digest)
    if "instance_id" in row:
        return _evaluation(unit, row, digest)
    raise Refused("(record)", "is not an OpenHands evaluation row, resolver row or event history")


def _common(unit: kit.SourceUnit, digest: str, history: Any, error: str | None) -> dict[str, Any]:
    events, transformations = _events(array(history, "history"))
    completeness, missing = _completeness(events, error)
    raw, redactions = kit.raw_record_of(unit.data)
    return {
        "source": kit.Source(source_id=SOURCE_ID, url=URL, revision=None, locator=unit.locator, file_sha256=digest),
        "events": events, "tools": None, "completeness": completeness,
        "missing_fields": [*event_omissions(events), *missing,
                           kit.MissingField(field="tools", reason="OpenHands output does not carry tool definitions")],
        "transformations": [*transformations, *redactions],
        "raw_record": raw,
    }


def _evaluation(unit: kit.SourceUnit, row: dict[str, Any], digest: str) -> kit.Trajectory:
    instance_id = required_text(row.get("instance_id"), "instance_id")
    error = text_or_none(row.get("error"), "error")
    metadata = obj(row.get("metadata"))
    test_result = obj(row.get("test_result"))
    report: dict[str, Any] | None = test_result["report"] if isinstance(test_result.get("report"), dict) else None
    resolved = report.get("resolved") if report else None
    success = resolved if isinstance(resolved, bool) else None
    evidence = []
    if report is not None:
        evidence.append(kit.TrajectoryEvidence(kind="test_execution", summary=f"harness report: resolved={resolved}",
                                     detail={"report": report}))
    elif isinstance(test_result.get("git_patch"), str):
        evidence.append(kit.TrajectoryEvidence(kind="submission",
                                     summary=f"test_result.git_patch ({len(test_result['git_patch'])} characters)"))
    common = _common(unit, digest, row.get("history"), error)
    split = metadata.get("data_split") if isinstance(metadata.get("data_split"), str) else None
    return kit.build(
        task_id=instance_id, task_key=f"swe:{instance_id}", task_family=None,
        domain="software-engineering" if isinstance(row.get("instance"), dict) else None, split=split,
        provenance=kit.TrajectoryProvenance(
            demonstrator="agent", producer="OpenHands",
            scaffold=metadata.get("agent_class") if isinstance(metadata.get("agent_class"), str) else "OpenHands",
            scaffold_version=metadata.get("git_commit") if isinstance(metadata.get("git_commit"), str) else None,
            model=_model(metadata),
            source_metadata={k: metadata[k] for k in ("eval_output_dir", "dataset", "max_iterations", "start_time")
                             if metadata.get(k) is not None}),
        outcome=kit.Outcome(success=success, status="resolved" if success else "unresolved" if success is False
                            else None, termination_reason=error),
        verification=kit.Verification(method="swe-bench-harness" if report is not None else "none",
                                      executable=report is not None, evidence=evidence),
        metadata={"metrics": {k: row["metrics"][k] for k in ("accumulated_cost",)
                              if isinstance(row.get("metrics"), dict) and k in row["metrics"]}},
        **{**common, "transformations": [*common["transformations"],
                                         kit.Transformation(name="import-openhands-evaluation", version=VERSION)]})


def _runtime(path: Path, unit: kit.SourceUnit, history: list[Any], digest: str) -> kit.Trajectory:
    stem = path.name.split(".")[0]
    common = _common(unit, digest, history, None)
    return kit.build(
        task_id=stem, task_key=f"openhands:{stem}", task_family=None, domain=None, split=None,
        provenance=kit.TrajectoryProvenance(demonstrator="agent", producer="OpenHands", scaffold="OpenHands"),
        outcome=kit.Outcome(success=None),
        verification=kit.Verification(method="none"),
        metadata={},
        **{**common, "missing_fields": [*common["missing_fields"],
                                        kit.MissingField(field="task_id", reason="a bare history names no task; "
                                                         "the file name stands for it")],
           "transformations": [*common["transformations"],
                               kit.Transformation(name="import-openhands-history", version=VERSION)]})


def _resolver(unit: kit.SourceUnit, row: dict[str, Any], digest: str) -> kit.Trajectory:
    issue = mapping(row.get("issue"), "issue")
    owner = required_text(issue.get("owner"), "issue.owner")
    repo = required_text(issue.get("repo"), "issue.repo")
    number = issue.get("number")
    if not isinstance(number, int) or isinstance(number, bool):
        raise Refused("issue.number", f"expected an integer, found {number!r}")
    success = row.get("success")
    if success is not None and not isinstance(success, bool):
        raise Refused("success", f"expected true, false or null, found {success!r}")
    explanation = text_or_none(row.get("result_explanation"), "result_explanation")
    error = text_or_none(row.get("error"), "error")
    evidence = []
    if success is not None:
        evidence.append(kit.TrajectoryEvidence(kind="llm_judgement", summary=explanation,
                                     detail={"comment_success": row.get("comment_success")}))
    common = _common(unit, digest, row.get("history"), error)
    task_id = f"{owner}/{repo}#{number}"
    issue_type = text_or_none(row.get("issue_type"), "issue_type")
    return kit.build(
        task_id=task_id, task_key=f"github-{issue_type or 'issue'}:{task_id}", task_family="openhands-resolver",
        domain="software-engineering", split=None,
        provenance=kit.TrajectoryProvenance(demonstrator="agent", producer="OpenHands resolver", scaffold="OpenHands"),
        outcome=kit.Outcome(success=success, status=None if success is None else ("success" if success else "failure"),
                            termination_reason=error),
        verification=kit.Verification(method="llm-judgement" if evidence else "none", executable=False,
                                      evidence=evidence),
        metadata={"base_commit": row.get("base_commit")},
        **{**common, "transformations": [*common["transformations"],
                                         kit.Transformation(name="import-openhands-resolver", version=VERSION)]})
