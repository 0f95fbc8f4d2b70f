"""Validate exported rows against JSON Schemas (draft 2020-12).

The core publishes the component schemas of canonical evidence (``schemas/``: CI outcomes
and resolutions, message parts, call captures, provenance, …), the trainer messages
(``schemas/trainer-messages/``) and the profile evidence sidecar row;
each plugin registers the schemas of the rows it emits, and an objective's plugin the
components its targets' rows share (``$ref`` resolves across the whole set). A :class:`SchemaSet` holds them all
(the plugin registry builds one). A row names its schema by ``schema_id`` (top level, or
under ``metadata`` for rows whose top level belongs to a consumer's shape).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jsonschema is imported by the first validation, not by every command that loads plugins
    from jsonschema import Draft202012Validator
    from referencing import Registry


@dataclass(frozen=True)
class RowProblem:
    """One problem found in one line of a JSONL file.

    :param line: 1-based; 0 for the file as a whole (an empty file).
    :param pointer: where in the row, as ``/``-joined keys and indices (``metadata/test_transitions``);
        ``""`` for the row itself, ``None`` for a problem of the line (not JSON, no schema_id).
    """

    path: Path
    line: int
    message: str
    pointer: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        if self.pointer is not None:
            return f"{where}: {self.pointer or '(row)'}: {self.message}"
        return f"{where}: {self.message}"

    def as_json(self) -> dict[str, Any]:
        """``file``, ``line``, ``path`` (the pointer, or null) and ``message``."""
        return {"file": str(self.path), "line": self.line, "path": self.pointer, "message": self.message}


def schemas_in(package: str, folder: str = "schemas", *, ids: Collection[str] | None = None) -> list[dict[str, Any]]:
    """Every ``*.json`` schema in a folder of an importable package, sorted by file name.

    :param ids: only the schemas whose ``$id`` is one of these (for plugins that share a package folder,
        each registering its own); one missing from the folder is a :class:`ValueError`.
    """
    root = files(package).joinpath(folder)
    found = [_load(entry) for entry in sorted(root.iterdir(), key=lambda e: e.name) if entry.name.endswith(".json")]
    if ids is None:
        return found
    missing = sorted(set(ids) - {schema["$id"] for schema in found})
    if missing:
        raise ValueError(f"{package}/{folder} holds no schema {', '.join(missing)}")
    return [schema for schema in found if schema["$id"] in ids]


def _load(entry: Traversable) -> dict[str, Any]:
    schema = json.loads(entry.read_text(encoding="utf-8"))
    if not isinstance(schema, dict) or not isinstance(schema.get("$id"), str):
        raise ValueError(f"{entry.name}: a schema is a JSON object with an $id")
    return schema


@cache
def core_schemas() -> Mapping[str, dict[str, Any]]:
    """The core's own schemas, by ``$id``."""
    found: dict[str, dict[str, Any]] = {}
    for folder in ("training-rows", "trainer-messages", "profile-rows", "trajectories", "derived-artifacts"):
        for schema in schemas_in("sediment.schemas", folder):
            found[schema["$id"]] = schema
    return found


def row_schema_id(row: Any) -> str | None:
    if not isinstance(row, dict):
        return None
    for holder in (row, row.get("metadata")):
        if isinstance(holder, dict) and isinstance(holder.get("schema_id"), str):
            return str(holder["schema_id"])
    return None


class SchemaSet:
    """A set of schemas by ``$id``, with ``$ref`` resolution between them."""

    def __init__(self, schemas: Mapping[str, dict[str, Any]]) -> None:
        self._schemas = dict(schemas)
        self._validators: dict[str, Draft202012Validator] = {}

    def __contains__(self, schema_id: object) -> bool:
        return schema_id in self._schemas

    def ids(self) -> list[str]:
        return sorted(self._schemas)

    @cached_property
    def _registry(self) -> Registry:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012

        resources = [(sid, Resource.from_contents(s, default_specification=DRAFT202012))
                     for sid, s in self._schemas.items()]
        return Registry().with_resources(resources)

    def _validator(self, schema_id: str) -> Draft202012Validator:
        if schema_id not in self._validators:
            from jsonschema import Draft202012Validator

            self._validators[schema_id] = Draft202012Validator(self._schemas[schema_id], registry=self._registry)
        return self._validators[schema_id]

    def errors(self, row: Any, schema_id: str | None = None) -> list[str]:
        """Every violation of ``row`` against ``schema_id`` (default: the one the row names)."""
        return [f"{pointer or '(row)'}: {message}" if pointer is not None else message
                for pointer, message in self.violations(row, schema_id)]

    def violations(self, row: Any, schema_id: str | None = None) -> list[tuple[str | None, str]]:
        """:meth:`errors` as ``(pointer, message)`` pairs; the pointer is ``None`` when the
        row cannot be checked at all (it names no schema, or an unknown one)."""
        schema_id = schema_id or row_schema_id(row)
        if schema_id is None:
            return [(None, "row names no schema_id")]
        if schema_id not in self._schemas:
            return [(None, f"unknown schema_id {schema_id}")]
        return [
            ("/".join(str(p) for p in error.absolute_path), error.message)
            for error in sorted(self._validator(schema_id).iter_errors(row),
                                key=lambda e: list(map(str, e.absolute_path)))
        ]

    def validate_file(self, path: Path, schema_id: str | None = None) -> Iterator[RowProblem]:
        """Problems in a JSONL file: unparseable lines and schema violations, line by line,
        against ``schema_id`` (a profile data file's native schema), else each row's own."""
        number = 0
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    row = json.loads(raw)
                except ValueError as exc:
                    yield RowProblem(path, number, f"not JSON: {exc}")
                    continue
                for pointer, message in self.violations(row, schema_id):
                    yield RowProblem(path, number, message, pointer)
                if schema_id is not None and row_schema_id(row) not in (None, schema_id):
                    yield RowProblem(path, number, f"a native row names schema_id {row_schema_id(row)}, "
                                                   f"not its own {schema_id}", "")
        if not number:
            yield RowProblem(path, 0, "empty file: no rows")

    def validate_files(self, paths: Iterable[Path]) -> Iterator[RowProblem]:
        for path in paths:
            yield from self.validate_file(path)
