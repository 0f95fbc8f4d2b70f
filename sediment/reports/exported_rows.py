"""Finding one exported row for ``sediment explain``: an export file and 1-based line, an
``instance_id`` searched in an export directory, or a consumer-profile data (or evidence) line,
which its evidence sidecar links to the canonical row it was adapted from.

An export directory names its owner in its claim file (``.sediment-<objective>-target``: the
target or objective, ``profile:NAME`` for a profile export); a file's population is its stem
(``tasks.train.jsonl`` holds ``tasks`` rows).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sediment.errors import RowNotFoundError, SedimentError, UsageError

CLAIM_GLOB = ".sediment-*-target"
PROFILE_CLAIM = "profile:"
#: The fields that name a row among its export's rows (read at top level, else under ``metadata``).
IDENTITY_FIELDS = ("instance_id", "completion_id", "chosen_completion_id", "rejected_completion_id",
                   "failed_outcome_id", "fixed_outcome_id")


def row_field(row: Any, key: str) -> Any:
    """A row's field at top level, else under ``metadata`` (NeMo-shaped and chat rows)."""
    if not isinstance(row, dict):
        return None
    if key in row:
        return row[key]
    metadata = row.get("metadata")
    return metadata.get(key) if isinstance(metadata, dict) else None


def identity(row: dict[str, Any]) -> dict[str, str]:
    """The identity fields a row carries, in :data:`IDENTITY_FIELDS` order."""
    found = {}
    for key in IDENTITY_FIELDS:
        value = row_field(row, key)
        if isinstance(value, str) and value:
            found[key] = value
    return found


@dataclass(frozen=True)
class RowRef:
    """One exported row: where it is, its text and value, who wrote it.

    ``owner`` is the claim of its directory (a target or an objective); ``population`` its file's
    stem. For a profile line, ``profile`` names the profile, ``profile_evidence`` is its sidecar
    line, ``path``/``line`` are the data line's, and ``text``/``row`` are the data row's (the
    canonical row is found by re-derivation, through ``source_row_sha256``).
    """

    path: Path
    line: int
    text: str
    row: dict[str, Any]
    owner: str
    population: str
    profile: str | None = None
    profile_evidence: dict[str, Any] | None = None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def split_spec(spec: str) -> tuple[Path, int] | None:
    """``FILE:LINE`` as a path and line number, else ``None`` (an instance id)."""
    head, sep, tail = spec.rpartition(":")
    if not sep or not head or not tail.isdigit() or (tail != "0" and tail.startswith("0")):
        return None
    return Path(head), int(tail)


def _claim(directory: Path) -> str:
    claims = sorted(directory.glob(CLAIM_GLOB))
    if not claims:
        raise SedimentError(f"{directory} is not an export directory (no {CLAIM_GLOB} claim file); explain reads "
                            "rows where `sediment export` wrote them")
    return claims[0].read_text(encoding="utf-8").strip()


def _line(path: Path, number: int) -> str:
    if not path.is_file():
        raise RowNotFoundError(f"row file not found: {path}")
    if number < 1:
        raise RowNotFoundError(f"{path}:{number}: line numbers start at 1")
    count = 0
    with path.open("rb") as handle:
        for count, raw in enumerate(handle, start=1):
            if count == number:
                try:
                    return raw.decode("utf-8").rstrip("\n")
                except UnicodeDecodeError:
                    raise SedimentError(f"{path}:{number}: line is not UTF-8") from None
    raise RowNotFoundError(f"{path}:{number}: line out of range (the file has {count} line{'' if count == 1 else 's'})")


def _parse(path: Path, number: int, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SedimentError(f"{path}:{number}: line is not JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise SedimentError(f"{path}:{number}: line is not a JSON object (an exported row is one)")
    return value


def population_of(path: Path) -> str:
    """``tasks.train.jsonl`` → ``tasks``; ``recovery.jsonl`` → ``recovery``."""
    return path.name.split(".", 1)[0]


def read_row(path: Path, number: int) -> RowRef:
    """The row at ``path:number``; a profile data or evidence line resolves to both halves."""
    text = _line(path, number)
    row = _parse(path, number, text)
    claim = _claim(path.parent)
    if not claim.startswith(PROFILE_CLAIM):
        return RowRef(path, number, text, row, claim, population_of(path))
    profile = claim[len(PROFILE_CLAIM):]
    stem, _, rest = path.name.partition(".")
    if stem not in ("data", "evidence"):
        raise SedimentError(f"{path}: a profile export's rows are in data[.train|.eval].jsonl, linked by "
                            "evidence[.train|.eval].jsonl")
    data_path, evidence_path = path.with_name(f"data.{rest}"), path.with_name(f"evidence.{rest}")
    if stem == "evidence":
        evidence, data_text = row, _line(data_path, number)
        data = _parse(data_path, number, data_text)
    else:
        data, data_text = row, text
        if not evidence_path.is_file():
            raise RowNotFoundError(f"evidence sidecar not found: {evidence_path} (it links {path}:{number} to its "
                                   "canonical row)")
        evidence = _parse(evidence_path, number, _line(evidence_path, number))
    if not isinstance(evidence.get("source_row_sha256"), str):
        raise SedimentError(f"{evidence_path}:{number}: source_row_sha256: missing (not a profile evidence line)")
    return RowRef(data_path, number, data_text, data, profile, "", profile=profile, profile_evidence=evidence)


def find_instance(instance_id: str, export_dir: Path | None) -> RowRef:
    """The one row of ``export_dir`` (searched recursively, canonical files before profile
    evidence) whose ``instance_id`` is ``instance_id``."""
    if export_dir is None:
        raise UsageError(f"{instance_id!r} is not FILE:LINE; to find it as an instance_id, pass --export DIR "
                         "(an export directory, or a folder of them)")
    if not export_dir.is_dir():
        raise RowNotFoundError(f"export directory not found: {export_dir}")
    canonical: list[tuple[Path, int]] = []
    profiled: list[tuple[Path, int]] = []
    for path in sorted(export_dir.rglob("*.jsonl")):
        if not any(path.parent.glob(CLAIM_GLOB)):
            continue
        is_profile = path.name.startswith(("data.", "evidence."))
        if path.name.startswith("data."):
            continue  # found through its evidence line
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if instance_id.encode() not in raw:
                    continue
                try:
                    value = json.loads(raw)
                except ValueError:
                    continue
                if row_field(value, "instance_id") == instance_id:
                    (profiled if is_profile else canonical).append((path, number))
    found = canonical or profiled
    if not found:
        raise RowNotFoundError(f"instance id {instance_id!r} not found in any export under {export_dir}")
    if len(found) > 1:
        places = ", ".join(f"{p}:{n}" for p, n in found[:3]) + (" …" if len(found) > 3 else "")
        raise UsageError(f"instance id {instance_id!r} is in {len(found)} rows ({places}); pass FILE:LINE, or a "
                         "narrower --export")
    return read_row(*found[0])


def locate(spec: str, export_dir: Path | None = None) -> RowRef:
    """The row ``spec`` names: ``FILE:LINE`` or an ``instance_id`` (searched in ``export_dir``)."""
    parsed = split_spec(spec)
    if parsed is not None and (parsed[0].exists() or export_dir is None):
        return read_row(*parsed)
    return find_instance(spec, export_dir)
