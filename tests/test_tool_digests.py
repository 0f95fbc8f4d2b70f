"""A tool list's digest (``Turn.tools_digest``, ``ToolSet.digest``): a coding agent declares tens of
KB of tools with every call, and every call a Session read from the store holds the very same
definitions, so derive encodes each distinct list once, not once a call. Equal definitions that
are other objects, and other definitions, are encoded again; the digest is the list's canonical
digest either way."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest

from sediment.model import rollout
from sediment.model.facts import ToolDefinition
from sediment.records import canonical_digest


def test_the_very_definitions_are_encoded_once_and_any_others_again(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[int] = []

    def counted(value: Any, **options: Any) -> str:
        encoded.append(len(value))
        return canonical_digest(value, **options)

    monkeypatch.setattr(rollout, "canonical_digest", counted)
    monkeypatch.setattr(rollout, "_DIGESTS", OrderedDict())
    tools = tuple(ToolDefinition(name=f"tool{n}", description="does " + "d" * 200,
                                 parameters={"type": "object", "properties": {"x": {"default": float("nan")}}})
                  for n in range(3))
    digest = rollout.tools_digest(tools)
    assert digest == canonical_digest(list(tools), allow_nan=True)
    assert rollout.tools_digest(tuple(tools)) == digest and rollout.tools_digest(list(tools)) == digest
    assert encoded == [3]  # a new tuple of the very definitions, as each call read from the store holds
    copies = tuple(ToolDefinition.model_validate(tool.model_dump()) for tool in tools)
    assert rollout.tools_digest(copies) == digest and encoded == [3, 3]  # equal, but other objects
    changed = (*tools[:2], tools[2].model_copy(update={"description": "does something else"}))
    assert rollout.tools_digest(changed) == canonical_digest(list(changed), allow_nan=True) != digest
    assert rollout.tools_digest(tools[:2]) == canonical_digest(list(tools[:2]), allow_nan=True)
    assert rollout.tools_digest(()) == canonical_digest([], allow_nan=True)


def test_the_digests_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rollout, "_DIGESTS", OrderedDict())
    lists = [(ToolDefinition(name=f"tool{n}"),) for n in range(rollout._DIGESTS_KEPT + 10)]
    digests = [rollout.tools_digest(tools) for tools in lists]
    assert len(rollout._DIGESTS) == rollout._DIGESTS_KEPT
    assert digests == [canonical_digest(list(tools), allow_nan=True) for tools in lists]
