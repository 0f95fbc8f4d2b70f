"""Secrets inside an imported trajectory's content, redacted where it is imported.

:func:`redact_trajectory` applies the content pattern set
(:mod:`sediment.ingest.redaction.secret_patterns`) to every event's text and reasoning, every tool
call's arguments (every string leaf, or the argument string), every event's
``source_metadata``, the tool definitions, the record's ``metadata`` and the ``raw_record``
text (its string values: :func:`~sediment.ingest.redaction.content.redact_json_source`).
A record that held a secret gains one ``redact-secrets`` transformation whose detail names
the kinds and how many values of each were replaced (``{"field": "content", "kinds":
{"github_token": 2}}``), and its content-addressed ``trajectory_id`` is computed again from the
redacted record. A record without one comes back as the very object.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sediment.ingest.redaction.content import content_redaction_enabled, redact_found, redact_json_source
from sediment.trajectory.record import Trajectory, Transformation, content_id
from sediment.trajectory.sources import TOOLKIT_VERSION

TRANSFORMATION = "redact-secrets"


def redact_trajectory(record: Trajectory) -> Trajectory:
    """``record`` with the secrets in its content redacted (see the module docstring)."""
    if not content_redaction_enabled():
        return record
    counts: Counter[str] = Counter()

    def redacted(value: Any) -> Any:
        result, found = redact_found(value)
        counts.update(kind for kind, _ in found)
        return result

    events = []
    for event in record.events:
        update: dict[str, Any] = {}
        for name in ("text", "reasoning", "source_metadata"):
            before = getattr(event, name)
            after = redacted(before)
            if after is not before:
                update[name] = after
        calls = []
        for call in event.tool_calls:
            arguments = redacted(call.arguments)
            calls.append(call if arguments is call.arguments else call.model_copy(update={"arguments": arguments}))
        if any(a is not b for a, b in zip(calls, event.tool_calls, strict=True)):
            update["tool_calls"] = calls
        events.append(event.model_copy(update=update) if update else event)
    fields: dict[str, Any] = {}
    if any(a is not b for a, b in zip(events, record.events, strict=True)):
        fields["events"] = events
    if record.tools is not None:
        tools = []
        for tool in record.tools:
            description, parameters = redacted(tool.description), redacted(tool.parameters)
            tools.append(tool if description is tool.description and parameters is tool.parameters
                         else tool.model_copy(update={"description": description, "parameters": parameters}))
        if any(a is not b for a, b in zip(tools, record.tools, strict=True)):
            fields["tools"] = tools
    metadata = redacted(record.metadata)
    if metadata is not record.metadata:
        fields["metadata"] = metadata
    raw = record.raw_record
    if raw.encoding == "utf-8":
        content, found = redact_json_source(raw.content)
        if found:
            counts.update(kind for kind, _ in found)
            fields["raw_record"] = raw.model_copy(update={"content": content})
    if not fields:
        return record
    detail = {"field": "content", "kinds": dict(sorted(counts.items()))}
    fields["transformations"] = [*record.transformations,
                                 Transformation(name=TRANSFORMATION, version=TOOLKIT_VERSION, detail=detail)]
    changed = record.model_copy(update=fields)
    return changed.model_copy(update={"trajectory_id": content_id(changed.model_dump(mode="python"))})
