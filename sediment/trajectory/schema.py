"""The canonical record's JSON Schema (draft 2020-12), generated from the models.

The published file ``schemas/trajectories/trajectory.v1.json`` is :func:`json_schema`'s
output (``scripts/trajectory-schema`` writes it; a test keeps the two equal). It states the
record's shape; the rules across fields (unique ids, causal links, declared omissions, the
content address) are :func:`sediment.trajectory.record.problems`.
"""

from __future__ import annotations

import json
from typing import Any

from sediment.trajectory.record import SCHEMA_ID, Trajectory


def json_schema() -> dict[str, Any]:
    """The record's schema, with its ``$schema`` and ``$id``."""
    generated = Trajectory.model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **{key: value for key, value in generated.items() if key != "title"},
        "title": "Trajectory",
    }


def schema_text() -> str:
    """The published file's text."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=True, sort_keys=False) + "\n"
