"""The facets of a canonical ``Trajectory`` record that the library, rankings and views read.

A record is handled here as its JSON object (a ``dict``), the form stored in the shards. Every
read of a record's shape goes through this module, so the rest of the library does not depend
on how the record model spells a nested field. Nothing is inferred: an absent facet reads as
``None`` (or an empty list) and is reported as such, never as a default value.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

Record = Mapping[str, Any]

_TRUE_SUCCESS = frozenset({True})


def as_record(value: Any) -> dict[str, Any]:
    """The JSON object of a record: a mapping as is, a pydantic model through its JSON dump."""
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        result = dump(mode="json", by_alias=True)
        if isinstance(result, dict):
            return result
    raise TypeError(f"not a trajectory record: {type(value).__name__}")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def events(record: Record) -> list[dict[str, Any]]:
    value = record.get("events")
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def tools(record: Record) -> list[Any]:
    value = record.get("tools")
    return list(value) if isinstance(value, list) else []


def source(record: Record) -> Mapping[str, Any]:
    return _mapping(record.get("source"))


def provenance(record: Record) -> Mapping[str, Any]:
    return _mapping(record.get("provenance"))


def outcome(record: Record) -> Mapping[str, Any]:
    return _mapping(record.get("outcome"))


def verification(record: Record) -> Mapping[str, Any]:
    return _mapping(record.get("verification"))


def metadata(record: Record) -> Mapping[str, Any]:
    return _mapping(record.get("metadata"))


def source_id(record: Record) -> str | None:
    return _text(source(record).get("source_id"))


def source_revision(record: Record) -> str | None:
    return _text(source(record).get("revision"))


def source_locator(record: Record) -> str | None:
    value = source(record).get("locator")
    if isinstance(value, str):
        return value or None
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode() if value is not None else None


def source_url(record: Record) -> str | None:
    return _text(source(record).get("url"))


def source_sha256(record: Record) -> str | None:
    return _text(source(record).get("sha256"))


def model(record: Record) -> str | None:
    p = provenance(record)
    return _text(p.get("model"))


def scaffold(record: Record) -> str | None:
    p = provenance(record)
    return _text(p.get("scaffold")) or _text(p.get("producer"))


def demonstrator(record: Record) -> str | None:
    p = provenance(record)
    return _text(p.get("demonstrator")) or _text(p.get("demonstrator_class"))


def is_expert(record: Record) -> bool:
    """Expert/reference demonstration (``provenance.demonstrator`` says so); everything else is an agent."""
    value = (demonstrator(record) or "").lower()
    return value in {"expert", "reference", "human", "expert-demonstration", "reference-demonstration"}


def success(record: Record) -> bool | None:
    """``outcome.success``: ``True``, ``False`` or ``None`` (unknown, never failure)."""
    value = outcome(record).get("success")
    return value if isinstance(value, bool) else None


def reward(record: Record) -> float | int | None:
    value = outcome(record).get("reward")
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def completeness(record: Record) -> str | None:
    value = record.get("completeness")
    if isinstance(value, Mapping):
        value = value.get("status")
    return _text(value)


def missing_fields(record: Record) -> list[Any]:
    value = record.get("missing_fields")
    return list(value) if isinstance(value, list) else []


def split(record: Record) -> str | None:
    return _text(record.get("split"))


def environment_key(record: Record) -> str:
    """The environment a record's attempt ran in: ``metadata.environment_key`` when the importer
    recorded one, else ``task_family/domain`` plus ``metadata.environment_version`` when present."""
    meta = metadata(record)
    explicit = _text(meta.get("environment_key"))
    if explicit:
        return explicit
    parts = [_text(record.get("task_family")) or "-", _text(record.get("domain")) or "-"]
    version = meta.get("environment_version")
    if isinstance(version, str) and version:
        parts.append(version)
    return "/".join(parts)


def role(event: Mapping[str, Any]) -> str | None:
    return _text(event.get("role"))


def tool_calls(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    value = event.get("tool_calls")
    return [c for c in value if isinstance(c, Mapping)] if isinstance(value, list) else []


def call_id(call: Mapping[str, Any]) -> str | None:
    return _text(call.get("call_id")) or _text(call.get("id"))


def result_link(event: Mapping[str, Any]) -> str | None:
    """The call id a tool/environment event answers (its tool-result link), if it has one."""
    for key in ("tool_result_of", "result_of", "tool_call_id", "in_reply_to"):
        value = event.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, Mapping):
            inner = call_id(value)
            if inner:
                return inner
    return None


def supervised(event: Mapping[str, Any]) -> bool:
    return event.get("supervised") is True


def event_id(event: Mapping[str, Any]) -> str | None:
    return _text(event.get("event_id"))


def _causal_form(record: Record) -> list[Any]:
    """The causal interaction without identifiers or source metadata: what happened, in order.

    Call ids are replaced by the position of the call, so two recordings of the same actions
    whose sources numbered their calls differently hash the same."""
    positions: dict[str, int] = {}
    form: list[Any] = []
    for event in events(record):
        calls = []
        for call in tool_calls(event):
            cid = call_id(call)
            if cid is not None:
                positions.setdefault(cid, len(positions))
            calls.append([call.get("name"), call.get("arguments")])
        link = result_link(event)
        form.append([role(event), event.get("content"), calls,
                     positions.get(link) if link is not None else None, supervised(event)])
    return form


def interaction_hash(record: Record) -> str:
    """``sha256:`` of the canonical JSON of the causal interaction (roles, contents, calls, links, mask)."""
    body = orjson.dumps(_causal_form(record), option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(body).hexdigest()


def canonical_json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def verification_evidence_key(record: Record) -> str:
    """A digest of the verification block, so collapsing can demand identical evidence."""
    return hashlib.sha256(canonical_json(verification(record))).hexdigest()


def count_supervised(events_: Sequence[Mapping[str, Any]]) -> int:
    return sum(1 for e in events_ if supervised(e) and role(e) == "assistant")


VERIFICATION_STRENGTHS = ("independently-reproduced", "source-evaluator", "source-reported", "unverified")
"""Strongest first. The rank of a strength in this tuple is its verdict reliability (reversed)."""


def verification_strength(record: Record) -> str:
    """How strongly the record's verdict is backed, from its ``verification`` block alone:

    ``independently-reproduced`` when the independent-reproduction flag is set; ``source-evaluator``
    when the source supplied executable verification (tests it ran); ``source-reported`` when the
    source names a method or evidence that is not executable (a status label, an LLM judge's
    explanation); ``unverified`` otherwise."""
    block = verification(record)
    if block.get("independently_reproduced") is True or block.get("independent_reproduction") is True:
        return "independently-reproduced"
    if block.get("executable") is True or block.get("source_executable") is True:
        return "source-evaluator"
    method = block.get("method")
    evidence = block.get("evidence")
    if (isinstance(method, str) and method and method not in {"none", "unverified"}) or evidence:
        return "source-reported"
    return "unverified"
