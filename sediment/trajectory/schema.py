"""The canonical record's JSON Schema (draft 2020-12), generated from the models.

The published file ``schemas/trajectories/trajectory.v1.json`` is :func:`json_schema`'s
output (``scripts/trajectory-schema`` writes it; a test keeps the two equal). It states the
record's shape; the rules across fields (unique ids, causal links, declared omissions, the
content address) are :func:`sediment.trajectory.record.problems`.
"""

from __future__ import annotations

import json
from typing import Any

from sediment.trajectory.record import (
    SCHEMA_ID,
    Trajectory,
    TrajectoryEvidence,
    TrajectoryProvenance,
    TrajectoryToolCall,
    TrajectoryToolDefinition,
)

#: Models whose Python name says "Trajectory" (to tell them from the Facts' and the export's
#: classes of the same idea) but whose published schema name is the short one, their title.
PUBLISHED_NAMES: dict[str, str] = {
    model.__name__: str(model.model_config["title"])
    for model in (TrajectoryToolCall, TrajectoryToolDefinition, TrajectoryProvenance, TrajectoryEvidence)
}


def _published(value: Any) -> Any:
    """``value`` with every ``$ref`` to a renamed model pointing at its published name."""
    if isinstance(value, dict):
        return {key: (_ref(item) if key == "$ref" else _published(item)) for key, item in value.items()}
    if isinstance(value, list):
        return [_published(item) for item in value]
    return value


def _ref(ref: str) -> str:
    prefix, _, name = ref.rpartition("/")
    return f"{prefix}/{PUBLISHED_NAMES.get(name, name)}"


def json_schema() -> dict[str, Any]:
    """The record's schema, with its ``$schema`` and ``$id``."""
    generated = _published(Trajectory.model_json_schema(mode="serialization"))
    definitions = generated.get("$defs", {})
    generated["$defs"] = {PUBLISHED_NAMES.get(name, name): definitions[name]
                          for name in sorted(definitions, key=lambda name: PUBLISHED_NAMES.get(name, name))}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **{key: value for key, value in generated.items() if key != "title"},
        "title": "Trajectory",
    }


def schema_text() -> str:
    """The published file's text."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=True, sort_keys=False) + "\n"
