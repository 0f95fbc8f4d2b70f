"""Which schema a profile export's data file obeys: the profile's native row schema.

A profile's data rows are the consumer's native rows, not canonical rows: they name no
``schema_id`` of their own (or, under a consumer's ``metadata``, must not name the canonical
one). The directory's ``compatibility.json`` says which profile wrote them and lists its files;
the profile's declaration (``ProfileInfo.native_schema``, recorded in the profile record) names
the schema. ``sediment schema validate`` checks a data file against it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sediment.host.kinds import COMPATIBILITY_FILE as COMPATIBILITY


@dataclass(frozen=True)
class NativeRows:
    """A profile export's data file: the profile that wrote it and its native row schema
    (``None``: the profile declares none, so its rows are not checked)."""

    profile: str
    schema_id: str | None


def native_rows(path: Path, declared: Mapping[str, str | None]) -> NativeRows | None:
    """``path`` as a data file of the profile export it sits in, or ``None`` when it is not one
    (no readable ``compatibility.json`` beside it listing it as a ``data`` file).

    :param declared: installed profile id → its native schema, for a ``compatibility.json``
        written before profiles recorded theirs.
    """
    record = _profile_record(path.parent / COMPATIBILITY)
    if record is None:
        return None
    profile, files = record
    if not path.name.startswith("data") or path.name not in files:
        return None
    schema = profile.get("native_schema")
    profile_id = str(profile.get("id"))
    if not isinstance(schema, str):
        schema = declared.get(profile_id)
    return NativeRows(profile_id, schema)


def _profile_record(path: Path) -> tuple[dict[str, Any], Mapping[str, Any]] | None:
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict):
        return None
    profile, files = document.get("profile"), document.get("files")
    if not isinstance(profile, dict) or not isinstance(profile.get("id"), str) or not isinstance(files, dict):
        return None
    return profile, files
