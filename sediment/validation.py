"""Validate exported rows against the published JSON Schemas (``schemas/training-rows``).

A row names its schema by ``schema_id`` (top level, or under ``metadata`` for rows whose
top level belongs to the consumer's shape).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012


@dataclass(frozen=True)
class RowProblem:
    """One problem found in one line of a JSONL file."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@cache
def _schemas() -> dict[str, dict[str, Any]]:
    root = files("sediment.schemas").joinpath("training-rows")
    schemas: dict[str, dict[str, Any]] = {}
    for entry in root.iterdir():
        if entry.name.endswith(".json"):
            schema = json.loads(entry.read_text(encoding="utf-8"))
            schemas[schema["$id"]] = schema
    return schemas


@cache
def _registry() -> Registry:
    resources = [(sid, Resource.from_contents(s, default_specification=DRAFT202012)) for sid, s in _schemas().items()]
    return Registry().with_resources(resources)


def schema_ids() -> list[str]:
    """Every published schema id."""
    return sorted(_schemas())


def row_schema_id(row: Any) -> str | None:
    if not isinstance(row, dict):
        return None
    for holder in (row, row.get("metadata")):
        if isinstance(holder, dict) and isinstance(holder.get("schema_id"), str):
            return str(holder["schema_id"])
    return None


def row_errors(row: Any) -> list[str]:
    """Messages for every schema violation of ``row`` (empty when valid)."""
    schema_id = row_schema_id(row)
    if schema_id is None:
        return ["row names no schema_id"]
    schema = _schemas().get(schema_id)
    if schema is None:
        return [f"unknown schema_id {schema_id}"]
    validator = Draft202012Validator(schema, registry=_registry())
    return [
        f"{'/'.join(str(p) for p in error.absolute_path) or '(row)'}: {error.message}"
        for error in sorted(validator.iter_errors(row), key=lambda e: list(map(str, e.absolute_path)))
    ]


def validate_file(path: Path) -> Iterator[RowProblem]:
    """Problems in a JSONL file: unparseable lines and schema violations, line by line."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                row = json.loads(raw)
            except ValueError as exc:
                yield RowProblem(path, number, f"not JSON: {exc}")
                continue
            for message in row_errors(row):
                yield RowProblem(path, number, message)
