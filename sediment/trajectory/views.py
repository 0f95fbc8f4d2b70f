"""SFT views: projections of a canonical record that never mutate or truncate it.

``full_trajectory`` gives one sample per record with an event-level loss mask;
``assistant_turns`` gives one sample per supervised assistant decision whose context is
exactly ``events[:i]`` for the decision at index ``i`` (never the target, its observation, a
later decision, the outcome or an evaluator's explanation: those live in ``metadata`` and the
``model_input`` holds only the context and the source-published tools). No tokenizer, chat
template, truncation or packing is imposed; a consumer maps the event mask to token positions.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

from sediment.trajectory import facets

FULL = "full-trajectory"
TURN = "assistant-turn"


def _suffix(trajectory_id: str) -> str:
    return trajectory_id.split(":", 1)[1] if ":" in trajectory_id else trajectory_id


def _is_target(event: Mapping[str, Any]) -> bool:
    return facets.role(event) == "assistant" and facets.supervised(event)


def _tool_definitions(record: Mapping[str, Any]) -> list[Any] | None:
    """The source-published tools; ``None`` when the source published none (the record declares
    that in ``missing_fields``): never an invented empty list."""
    tools = record.get("tools")
    return copy.deepcopy(tools) if isinstance(tools, list) else None


def _metadata(record: Mapping[str, Any], extra: Mapping[str, Any] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "source": copy.deepcopy(dict(facets.source(record))),
        "task_family": record.get("task_family"),
        "domain": record.get("domain"),
        "upstream_split": record.get("split"),
        "provenance": copy.deepcopy(dict(facets.provenance(record))),
        "outcome": copy.deepcopy(dict(facets.outcome(record))),
        "verification": copy.deepcopy(dict(facets.verification(record))),
        "completeness": record.get("completeness"),
        "missing_fields": copy.deepcopy(facets.missing_fields(record)),
    }
    if extra:
        meta.update(copy.deepcopy(dict(extra)))
    return meta


def full_trajectory(record: Mapping[str, Any], extra_metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The one full-trajectory sample of ``record`` (events deep-copied; the record is untouched)."""
    events = copy.deepcopy(facets.events(record))
    mask = [_is_target(e) for e in events]
    trajectory_id = str(record["trajectory_id"])
    return {
        "view": FULL,
        "sample_id": f"full:{_suffix(trajectory_id)}",
        "trajectory_id": trajectory_id,
        "task_id": record.get("task_id"),
        "task_key": record.get("task_key"),
        "events": events,
        "target_event_ids": [e["event_id"] for e, m in zip(events, mask, strict=True) if m],
        "model_input": {"events": copy.deepcopy(events), "tool_definitions": _tool_definitions(record)},
        "loss_mask": mask,
        "supervised_targets": [copy.deepcopy(e) for e, m in zip(events, mask, strict=True) if m],
        "metadata": _metadata(record, extra_metadata),
    }


def assistant_turns(record: Mapping[str, Any], extra_metadata: Mapping[str, Any] | None = None
                    ) -> Iterator[dict[str, Any]]:
    """One assistant-turn sample per supervised assistant event, in event order."""
    events = facets.events(record)
    trajectory_id = str(record["trajectory_id"])
    for index, event in enumerate(events):
        if not _is_target(event):
            continue
        context = copy.deepcopy(events[:index])
        yield {
            "view": TURN,
            "sample_id": f"turn:{_suffix(trajectory_id)}:{index}",
            "trajectory_id": trajectory_id,
            "task_id": record.get("task_id"),
            "task_key": record.get("task_key"),
            "target_event_id": event["event_id"],
            "target_index": index,
            "context": context,
            "target": copy.deepcopy(event),
            "model_input": {"events": copy.deepcopy(context), "tool_definitions": _tool_definitions(record)},
            "supervised_target": copy.deepcopy(event),
            "metadata": {"parent_sample_id": f"full:{_suffix(trajectory_id)}", **_metadata(record, extra_metadata)},
        }


def chat_message(event: Mapping[str, Any]) -> dict[str, Any]:
    """One event as an OpenAI-style chat message (every message has the same keys).

    The record's roles are the chat roles; the event's reasoning is ``reasoning_content``;
    tool-call arguments become a JSON string, as chat APIs carry them (a string argument as is)."""
    role = facets.role(event) or ""
    calls = []
    for call in facets.tool_calls(event):
        arguments = call.get("arguments")
        calls.append({"id": facets.call_id(call) or "", "type": "function",
                      "function": {"name": str(call.get("name") or ""),
                                   "arguments": arguments if isinstance(arguments, str)
                                   else facets.canonical_json(arguments).decode()}})
    return {"role": role, "content": facets.text(event), "reasoning_content": facets.reasoning(event),
            "tool_calls": calls, "tool_call_id": facets.result_link(event)}


def turn_chat_messages(sample: Mapping[str, Any]) -> dict[str, Any]:
    """An assistant-turn sample as ``{"prompt": [...], "completion": [...]}`` chat messages:
    the prompt is the context, the completion the one supervised target."""
    return {"prompt": [chat_message(e) for e in sample["model_input"]["events"]],
            "completion": [chat_message(sample["supervised_target"])]}


_FLAT = frozenset({"view", "sample_id", "trajectory_id", "task_id", "task_key", "target_event_id", "target_index",
                   "target_event_ids", "loss_mask"})


def arrow_row(sample: Mapping[str, Any]) -> dict[str, Any]:
    """A view sample in the form an Arrow table holds without loss: the flat fields (ids, index,
    mask) as they are, every structured field (events, targets, model input, metadata, whose
    shapes vary by source) as its canonical JSON text under ``<name>_json``.
    :func:`from_arrow_row` gives the sample back exactly."""
    row: dict[str, Any] = {}
    for key, value in sample.items():
        if key in _FLAT:
            row[key] = value
        else:
            row[f"{key}_json"] = facets.canonical_json(value).decode()
    return row


def from_arrow_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """The view sample of an :func:`arrow_row`."""
    import orjson

    return {(key[:-5] if key.endswith("_json") else key): (orjson.loads(value) if key.endswith("_json") else value)
            for key, value in row.items()}
