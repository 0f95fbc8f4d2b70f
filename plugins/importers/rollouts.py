"""Importer ``sediment-rollouts``: Sediment's own Rollouts, from a bundle directory or the store.

Give the bundle directory (or its ``manifest.json``). The bundle is opened and fully
validated first (a bad bundle is one refusal). From the fact store (``import_store``), the
core derives the org's Rollouts one Session at a time and each is converted exactly as its
bundle line would be; only ``source`` differs (``sediment/store``, the org, the quarantine
revision, no file digest). Each Rollout segment becomes one record: a
segment is one model context, so an assistant decision's context is exactly the events
before it. Per Turn, its ``new_messages`` become events (text parts joined, reasoning parts as
``reasoning``, tool calls structured, each tool-call response its own tool event linked by
its call id), then the call's output (``output_messages``, else the ``completion`` with the
Turn's ``tool_calls``) one supervised assistant event. A request sends the previous call's
output again: when its text and calls match, it is not repeated; an assistant message among
``new_messages`` that no recorded call produced is context, never supervised.

The outcome comes from the resolved CI evidence of the Session's last attributed commit with
a verdict (``passed`` is success, ``failed`` failure, no verdict unknown), with its
reliability; the evidence keeps the CI outcome ids it rests on. A verdict backed by more than
one agreeing run and not suspected flaky counts as independently reproduced. The raw record is
the Rollout's bundle line, byte for byte (shared by its segments).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sediment.plugin import (
    ImporterInfo,
    InferenceMessage,
    ReasoningPart,
    Rollout,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    Turn,
    hookimpl,
    resolve_ci,
    segment_instance_id,
)
from sediment.plugin import trajectory_kit as kit

from ._common import declare_unanswered, event_omissions, refusal

SOURCE_ID = "sediment/bundle"
STORE_SOURCE_ID = "sediment/store"
VERSION = "1"
ROLES: dict[str, kit.Role] = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
                              "tool": "tool"}


@hookimpl
def describe_importer() -> ImporterInfo:
    return ImporterInfo(description="Sediment's own Rollouts from a bundle (outcome from resolved CI evidence)",
                        patterns=("manifest.json",), source_id=SOURCE_ID)


@hookimpl
def import_source(path: Path) -> Any:
    directory = path.parent if path.is_file() else path
    try:
        bundle = kit.open_bundle(directory)
    except kit.BundleError as exc:
        yield kit.ImportRefusal(path, 0, "(bundle)", str(exc))
        return
    rollouts_path = directory / kit.BUNDLE_ROLLOUTS
    digest = kit.file_sha256(rollouts_path)
    revision = f"quarantine-revision:{bundle.manifest.quarantine_revision}"
    with rollouts_path.open("rb") as lines:
        for number, (rollout, line) in enumerate(zip(bundle, lines, strict=True), start=1):
            unit = kit.SourceUnit(rollouts_path, number, f"{kit.BUNDLE_ROLLOUTS}:{number}", line.rstrip(b"\n"))
            try:
                source = kit.Source(source_id=SOURCE_ID, url=None, revision=revision, locator=unit.locator,
                                    file_sha256=digest)
                yield from convert(rollout, bundle.repositories, source, unit.data)
            except ValueError as exc:  # TrajectoryError, a model's ValidationError
                yield refusal(rollouts_path, number, exc)


@hookimpl
def import_store(source: kit.StoreSource) -> Any:
    where = Path(f"store:{source.org_id}")
    revision = f"quarantine-revision:{source.quarantine_revision}"
    for number, (rollout, line) in enumerate(source.rollouts(), start=1):
        origin = kit.Source(source_id=STORE_SOURCE_ID, url=None, revision=revision,
                            locator=f"store:{rollout.org_id}/{rollout.session_id}", file_sha256=None)
        try:
            yield from convert(rollout, source.repositories, origin, line)
        except ValueError as exc:  # TrajectoryError, a model's ValidationError
            yield refusal(where, number, exc)


def _text(parts: list[str]) -> str | None:
    return "".join(parts) if parts else None


def _message_events(message: InferenceMessage, index: int, calls: kit.CallIds, *, output: bool,
                    meta: dict[str, Any]) -> list[dict[str, Any]]:
    role = ROLES.get(message.role)
    if role is None:
        raise kit.TrajectoryError(f"message role {message.role!r} is not a chat role")
    texts: list[str] = []
    reasoning: list[str] = []
    tool_calls: list[kit.TrajectoryToolCall] = []
    results: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.content)
        elif isinstance(part, ReasoningPart):
            reasoning.append(part.content)
        elif isinstance(part, ToolCallPart):
            tool_calls.append(kit.TrajectoryToolCall(call_id=calls.assign(part.id, index, len(tool_calls)),
                                           original_call_id=part.id, name=part.name or "unnamed",
                                           arguments=part.arguments))
        elif isinstance(part, ToolCallResponsePart):
            result = part.result
            text = result if isinstance(result, str) else json.dumps(result, sort_keys=True, ensure_ascii=True)
            results.append({"role": "tool", "text": text, "tool_result_of": calls.result_of(part.id),
                            "source_metadata": {"tool_call_id": part.id,
                                                **({} if isinstance(result, str) else {"result_json": True})}})
    events: list[dict[str, Any]] = []
    if texts or reasoning or tool_calls or not results:
        events.append({"role": role, "text": _text(texts), "reasoning": _text(reasoning) if reasoning else None,
                       "tool_calls": tool_calls if role == "assistant" else [],
                       "source_metadata": {**meta, **({"finish_reason": message.finish_reason}
                                                      if message.finish_reason else {})},
                       "supervised": output and role == "assistant"})
        if tool_calls and role != "assistant":
            raise kit.TrajectoryError(f"a {role} message carries tool calls")
    return events + results


def _output_signature(turn: Turn) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What the call produced: its text and its calls (id, name), to recognise it when resent."""
    outputs = [m for m in turn.output_messages if m.role == "assistant"]
    if outputs:
        text = "".join(p.content for m in outputs for p in m.parts if isinstance(p, TextPart))
        calls = tuple((p.id, p.name) for m in outputs for p in m.parts if isinstance(p, ToolCallPart))
        return text, calls
    return turn.completion, tuple((c.id, c.name) for c in turn.tool_calls)


def _message_signature(message: InferenceMessage) -> tuple[str, tuple[tuple[str, str], ...]]:
    return ("".join(p.content for p in message.parts if isinstance(p, TextPart)),
            tuple((p.id, p.name) for p in message.parts if isinstance(p, ToolCallPart)))


def _turn_events(turn: Turn, previous: Turn | None, start: int, calls: kit.CallIds) -> list[dict[str, Any]]:
    """The events a Turn adds: its new input messages (the previous call's output, which the
    request sends again, is not repeated), then its own output as one supervised decision."""
    events: list[dict[str, Any]] = []
    messages = list(turn.new_messages)
    if previous is not None and messages and messages[0].role == "assistant" \
            and _message_signature(messages[0]) == _output_signature(previous):
        messages = messages[1:]
    for message in messages:
        events.extend(_message_events(message, start + len(events), calls, output=False,
                                      meta={"resent": True} if message.role == "assistant" else {}))
    meta = {"inference_call_id": turn.inference_call_id,
            **({"model": turn.model} if turn.model else {}),
            **({"observed_at": turn.observed_at.isoformat()} if turn.observed_at else {})}
    outputs = [m for m in turn.output_messages if m.role == "assistant"]
    if outputs:
        for message in outputs:
            events.extend(_message_events(message, start + len(events), calls, output=True, meta=meta))
    else:
        index = start + len(events)
        tool_calls = [kit.TrajectoryToolCall(call_id=calls.assign(c.id, index, n), original_call_id=c.id,
                                   name=c.name or "unnamed", arguments=c.arguments)
                      for n, c in enumerate(turn.tool_calls)]
        events.append({"role": "assistant", "text": turn.completion, "tool_calls": tool_calls,
                       "source_metadata": meta, "supervised": True})
    return events


def convert(rollout: Rollout, repositories: Any, source: kit.Source, line: bytes) -> Any:
    """The records of one Rollout (one per segment): ``repositories`` is the context CI resolves
    with, ``source`` the origin (each segment's locator gets ``#segN``), ``line`` the Rollout's
    canonical bundle line (the raw record)."""
    result = resolve_ci(rollout.terminal_outcomes, quarantine_revision=rollout.provenance.quarantine_revision,
                        repositories=repositories)
    resolution = kit.select_reward_resolution(result.resolutions, rollout.org_id, rollout.commits)
    evidence = []
    success = None
    if resolution is not None and resolution.verdict is not None:
        success = resolution.verdict == "passed"
        independent = len(resolution.verdict_outcome_ids) > 1 and not resolution.suspected_flake
        evidence.append(kit.TrajectoryEvidence(
            kind="ci", evidence_id=f"ci:{resolution.org_id}/{resolution.repo}@{resolution.commit_sha}",
            reliability=resolution.reliability, independent=independent,
            summary=f"CI {resolution.verdict} on {resolution.repo}@{resolution.commit_sha[:12]}",
            detail={"verdict_outcome_ids": list(resolution.verdict_outcome_ids),
                    "source_outcome_ids": list(resolution.source_outcome_ids),
                    "non_verdict_outcome_ids": list(resolution.non_verdict_outcome_ids),
                    "suspected_flake": resolution.suspected_flake}))
    tool_sets = {s.digest: s.tools for s in rollout.tool_sets}
    raw, redactions = kit.raw_record_of(line)
    for segment_index, segment in enumerate(rollout.segments):
        calls = kit.CallIds()
        fields: list[dict[str, Any]] = []
        for position, turn in enumerate(segment):
            fields.extend(_turn_events(turn, segment[position - 1] if position else None, len(fields), calls))
        events = declare_unanswered([kit.Event(event_id=f"event:{i}", **f) for i, f in enumerate(fields)])
        missing = event_omissions(events)
        digests = {t.tools_digest for t in segment if t.tools_digest is not None}
        tools = None
        if len(digests) == 1 and next(iter(digests)) in tool_sets:
            tools = [kit.TrajectoryToolDefinition(name=t.name, description=t.description, parameters=t.parameters)
                     for t in tool_sets[next(iter(digests))]]
        else:
            missing.append(kit.MissingField(field="tools", reason="the segment's calls declared no single tool list"
                                            if digests else "the calls recorded no tool definitions"))
        if success is None:
            missing.append(kit.MissingField(field="outcome.success",
                                            reason="no attributed commit has a resolved CI verdict"))
        task_id = segment_instance_id(rollout.org_id, rollout.session_id, segment_index)
        models = sorted({t.model for t in segment if t.model})
        yield kit.build(
            task_id=task_id, task_key=f"sediment:{rollout.org_id}-{rollout.session_id}",
            source=kit.Source(**{**source.model_dump(), "locator": f"{source.locator}#seg{segment_index}"}),
            task_family="sediment-session", domain="software-engineering", split=rollout.split,
            events=events, tools=tools,
            provenance=kit.TrajectoryProvenance(demonstrator="agent", producer="sediment",
                                      model=models[0] if len(models) == 1 else None,
                                      source_metadata={"org_id": rollout.org_id, "session_id": rollout.session_id,
                                                       "segment": segment_index,
                                                       "policy_version": rollout.provenance.policy_version,
                                                       "policy_digest": rollout.provenance.policy_digest,
                                                       **({"models": models} if len(models) > 1 else {})}),
            outcome=kit.Outcome(success=success, status=resolution.verdict if resolution else None,
                                reward=None if success is None else (1.0 if success else 0.0),
                                source_metadata={"attribution_source": rollout.attribution_source}),
            verification=kit.Verification(method="ci", executable=bool(evidence),
                                          independently_reproduced=any(e.independent for e in evidence),
                                          evidence=evidence),
            completeness="complete", missing_fields=missing,
            transformations=[*calls.transformations(), *redactions,
                             kit.Transformation(name="import-sediment-rollout", version=VERSION,
                                                detail={"segment": segment_index})],
            raw_record=raw,
            metadata={"commits": [{"repo": c.repo, "commit_sha": c.commit_sha} for c in rollout.commits],
                      "resolver_skips": dict(sorted(result.skipped.items()))})
