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


def as_record(value: Any) -> dict[str, Any]:
    """The JSON object of a record: a :class:`~sediment.trajectory.record.Trajectory` through its
    canonical text, a mapping as is."""
    from sediment.trajectory.record import Trajectory, to_json

    if isinstance(value, Trajectory):
        result = orjson.loads(to_json(value))
        assert isinstance(result, dict)
        return result
    if isinstance(value, Mapping):
        return dict(value)
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
    return _text(source(record).get("file_sha256"))


def model(record: Record) -> str | None:
    p = provenance(record)
    return _text(p.get("model"))


def scaffold(record: Record) -> str | None:
    p = provenance(record)
    return _text(p.get("scaffold")) or _text(p.get("producer"))


def demonstrator(record: Record) -> str | None:
    return _text(provenance(record).get("demonstrator"))


def is_expert(record: Record) -> bool:
    """An expert or reference demonstration (``provenance.demonstrator``); anything else
    (``agent``, ``unknown``) counts as a recorded agent completion."""
    return demonstrator(record) in {"expert", "reference"}


def success(record: Record) -> bool | None:
    """``outcome.success``: ``True``, ``False`` or ``None`` (unknown, never failure)."""
    value = outcome(record).get("success")
    return value if isinstance(value, bool) else None


def reward(record: Record) -> float | int | None:
    value = outcome(record).get("reward")
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def completeness(record: Record) -> str | None:
    return _text(record.get("completeness"))


def missing_fields(record: Record) -> list[Any]:
    value = record.get("missing_fields")
    return list(value) if isinstance(value, list) else []


def split(record: Record) -> str | None:
    return _text(record.get("split"))


def environment_key(record: Record) -> str:
    """The environment an attempt ran in, for deciding which attempts a rank compares:
    ``metadata.environment_key`` when the importer recorded one (e.g. an image digest), else
    ``domain:<domain>``. Only equal keys are compatible; a source's own environment names (such
    as SWE-agent's ``swe_main``) are not, since they do not identify the same environment across
    sources."""
    explicit = _text(metadata(record).get("environment_key"))
    if explicit:
        return explicit
    return f"domain:{_text(record.get('domain')) or '-'}"


def role(event: Mapping[str, Any]) -> str | None:
    return _text(event.get("role"))


def tool_calls(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    value = event.get("tool_calls")
    return [c for c in value if isinstance(c, Mapping)] if isinstance(value, list) else []


def call_id(call: Mapping[str, Any]) -> str | None:
    return _text(call.get("call_id"))


def result_link(event: Mapping[str, Any]) -> str | None:
    """The call id a tool event answers (``tool_result_of``), if it has one."""
    return _text(event.get("tool_result_of"))


def text(event: Mapping[str, Any]) -> str:
    """The event's text (``""`` when it has none)."""
    value = event.get("text")
    return value if isinstance(value, str) else ""


def reasoning(event: Mapping[str, Any]) -> str | None:
    return _text(event.get("reasoning"))


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
        form.append([role(event), event.get("text"), event.get("reasoning"), calls,
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


def verification_strength(record: Record) -> str:
    """The record model's verification strength (:func:`sediment.trajectory.record.verification_strength`)
    of a record's JSON object."""
    from sediment.trajectory.record import Trajectory
    from sediment.trajectory.record import verification_strength as strength

    return strength(Trajectory.model_validate(dict(record)))
