"""Opening a bundle: :func:`open_bundle` checks our own format fully (hashes, counts, order,
split, provenance) before any export starts, and hands an upstream v4 layout to
:mod:`sediment.bundle.upstream` (its manifest: :mod:`sediment.bundle.upstream_manifest`)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from sediment.bundle.format import (
    BUNDLE_FORMAT,
    BUNDLE_SCHEMA_VERSION,
    COUNTED,
    IMPLEMENTATION_VERSIONS,
    MANIFEST,
    MANIFEST_KEYS,
    READABLE_SCHEMA_VERSIONS,
    RECORD_ENCODING,
    REPOSITORY_IDENTITIES,
    REPOSITORY_RENAMES,
    ROLLOUTS,
    V3_IMPLEMENTATION_VERSIONS,
    Bundle,
    BundleManifest,
    parse_line,
)
from sediment.bundle.lines import inner_record, report_first_failure, scan_lines, strict_loads
from sediment.errors import BundleError, validation_message
from sediment.git.repositories import RepositoryContext
from sediment.model.facts import DeveloperDecision, EditObservation, RepositoryRename
from sediment.model.policy import DerivationPolicy
from sediment.model.repository_evidence import RepositoryEvidence
from sediment.split import assign_split


def _read_manifest(path: Path) -> tuple[dict[str, dict[str, Any]], BundleManifest]:
    try:
        raw = strict_loads((path / MANIFEST).read_text(encoding="ascii"))
    except FileNotFoundError:
        raise BundleError(f"not a bundle: {path / MANIFEST} is missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BundleError(f"cannot read bundle manifest {path / MANIFEST}: {exc}") from None
    if not isinstance(raw, dict):
        raise BundleError("bundle manifest must be a JSON object")
    if raw.get("bundle_format") != BUNDLE_FORMAT:
        raise BundleError(f"not a {BUNDLE_FORMAT}: bundle_format is {raw.get('bundle_format')!r}")
    version = raw.get("bundle_schema_version")
    if type(version) is not int or version not in READABLE_SCHEMA_VERSIONS:
        raise BundleError(
            f"unsupported bundle_schema_version {version!r} "
            f"(this Sediment reads versions {' and '.join(map(str, READABLE_SCHEMA_VERSIONS))}; "
            "derive the bundle again)"
        )
    if set(raw) != MANIFEST_KEYS:
        raise BundleError(
            f"bundle manifest keys differ: missing {sorted(MANIFEST_KEYS - set(raw))}, "
            f"unknown {sorted(set(raw) - MANIFEST_KEYS)}"
        )
    if raw["record_encoding"] != RECORD_ENCODING:
        raise BundleError(f"unsupported record_encoding {raw['record_encoding']!r}")
    try:
        policy = DerivationPolicy.model_validate(raw["policy"])
    except ValidationError as exc:
        raise BundleError(f"bundle policy is invalid: {validation_message(exc.errors()[0])}") from None
    if policy.digest != raw["policy_digest"]:
        raise BundleError("bundle policy_digest does not match its policy")
    versions = raw["implementation_versions"]
    if versions != (IMPLEMENTATION_VERSIONS if version == BUNDLE_SCHEMA_VERSION else V3_IMPLEMENTATION_VERSIONS):
        raise BundleError(f"unsupported implementation_versions {versions!r}; derive the bundle again")
    files = raw["files"] if isinstance(raw["files"], dict) else {}
    if set(files) != set(COUNTED.values()) or not all(isinstance(files[f], dict) for f in files):
        raise BundleError(f"bundle manifest must list exactly {', '.join(sorted(COUNTED.values()))} in files")
    if not isinstance(raw["counts"], dict) or set(raw["counts"]) != set(COUNTED) or any(
            raw["counts"][name] != files[file].get("rows") for name, file in COUNTED.items()):
        raise BundleError(f"bundle manifest counts must be the rows of {', '.join(COUNTED)}")
    return files, BundleManifest(
        org_id=raw["org_id"],
        policy=policy,
        quarantine_revision=raw["quarantine_revision"],
        fragmented=dict(raw["fragmented"]),
        skipped=dict(raw["skipped"]),
        rows=raw["counts"]["rollouts"],
        schema_version=version,
    )


def _check_record(line: bytes, number: int, manifest: BundleManifest) -> tuple[str, str]:
    """Strictly parse one line and check it against the manifest; its ``(org_id, session_id)``."""
    rollout = parse_line(line, number)
    if rollout.org_id != manifest.org_id:
        raise BundleError(f"{ROLLOUTS} line {number}: org_id {rollout.org_id!r} differs from the manifest")
    if rollout.split != assign_split(rollout.session_id, manifest.policy.split.eval_fraction):
        raise BundleError(f"{ROLLOUTS} line {number}: split does not match the policy's eval split")
    if (rollout.provenance.policy_digest, rollout.provenance.quarantine_revision) != (
        manifest.policy.digest, manifest.quarantine_revision
    ):
        raise BundleError(f"{ROLLOUTS} line {number}: provenance differs from the manifest")
    populations: tuple[tuple[str, Sequence[DeveloperDecision | EditObservation]], ...] = (
        ("session_decisions", rollout.session_decisions), ("edit_observations", rollout.edit_observations))
    for name, facts in populations:
        for index, fact in enumerate(facts):
            if (fact.org_id, fact.session_id) != (rollout.org_id, rollout.session_id):
                raise BundleError(f"{ROLLOUTS} line {number}: {name}[{index}] belongs to Session "
                                  f"{fact.session_id!r} of org {fact.org_id!r}, not to the Rollout's")
    if manifest.schema_version < 4 and (rollout.file_attributions or any(
            turn.model_call_id is not None for segment in rollout.segments for turn in segment)):
        raise BundleError(f"{ROLLOUTS} line {number}: a version {manifest.schema_version} record holds "
                          "file_attributions or Turn model_call_id (bundle version 4)")
    return rollout.org_id, rollout.session_id


def open_bundle(path: str | Path, *, workers: int = 1) -> Bundle:
    """Open and fully validate a bundle directory; raises :class:`BundleError` on any problem.

    The file is cut into byte ranges; for each, a worker indexes the lines that start in it
    and parses and checks every record (in ``workers`` processes when more than one) while
    this process computes the sha256, all before any export starts. Problems are reported in
    a fixed order whatever the worker count: size, row count, the first bad line, sha256,
    then order.
    """
    path = Path(path)
    if not path.is_dir():
        raise BundleError(f"bundle directory does not exist: {path}")
    from sediment.bundle.upstream import open_v4_bundle
    from sediment.bundle.upstream_manifest import is_v4_manifest

    if is_v4_manifest(path):  # the upstream layout (bundle_schema_version 4, no bundle_format)
        return open_v4_bundle(path, workers=workers)
    files, manifest = _read_manifest(path)
    repositories = RepositoryContext.build(
        manifest.org_id,
        _read_population(path, files[REPOSITORY_IDENTITIES], RepositoryEvidence, manifest.org_id,
                         lambda e: e.order_key),
        _read_population(path, files[REPOSITORY_RENAMES], RepositoryRename, manifest.org_id,
                         lambda r: (r.captured_at, r.rename_id)))
    info = files[ROLLOUTS]
    rollouts_path = path / ROLLOUTS
    try:
        size = os.stat(rollouts_path).st_size
    except OSError as exc:
        raise BundleError(f"cannot read {rollouts_path}: {exc.strerror}") from None
    if size != info.get("bytes"):
        raise BundleError(f"{ROLLOUTS} does not match the sha256 and size in the manifest")

    def check(line: bytes, number: int) -> tuple[str, str]:
        return _check_record(line, number, manifest)

    # the sha256 is computed here while worker processes check the records
    pieces, digest = scan_lines(rollouts_path, size, workers, check)
    offsets = [offset for piece in pieces for offset in piece.offsets]
    if len(offsets) != info.get("rows") or len(offsets) != manifest.rows:
        raise BundleError(f"{ROLLOUTS} has {len(offsets)} rows; the manifest says {manifest.rows}")
    report_first_failure(rollouts_path, ROLLOUTS, pieces, check)
    keys = [key for piece in pieces for key in piece.results]
    if digest != info.get("sha256"):
        raise BundleError(f"{ROLLOUTS} does not match the sha256 and size in the manifest")
    for number in range(1, len(keys)):
        if keys[number] <= keys[number - 1]:
            raise BundleError(f"{ROLLOUTS} line {number + 1}: rollouts are not in (org_id, session_id) order")
    return Bundle(path, manifest, offsets, keys, repositories, size)


P = TypeVar("P", RepositoryEvidence, RepositoryRename)


def _read_population(path: Path, info: Mapping[str, Any], model: type[P], org_id: str,
                     order: Callable[[P], Any]) -> list[P]:
    """One repository population file, strictly: size and sha256, every line a record of
    ``model`` of the bundle's org, in strictly increasing population order."""
    name = info.get("path")
    file = path / str(name)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise BundleError(f"cannot read {file}: {exc.strerror}") from None
    if len(data) != info.get("bytes") or hashlib.sha256(data).hexdigest() != info.get("sha256"):
        raise BundleError(f"{name} does not match the sha256 and size in the manifest")
    lines = data.splitlines(keepends=True)
    if len(lines) != info.get("rows"):
        raise BundleError(f"{name} has {len(lines)} rows; the manifest says {info.get('rows')}")
    records: list[P] = []
    for number, line in enumerate(lines, start=1):
        where = f"{name} line {number}"
        try:
            record = model.model_validate(inner_record(line))
        except (UnicodeDecodeError, ValueError) as exc:
            detail = exc.errors()[0] if isinstance(exc, ValidationError) else None
            shown = f"{'.'.join(str(p) for p in detail['loc'])}: {validation_message(detail)}" if detail else str(exc)
            raise BundleError(f"invalid bundle record at {where}: {shown}") from None
        if record.org_id != org_id:
            raise BundleError(f"{where}: org_id {record.org_id!r} differs from the manifest")
        if records and not order(records[-1]) < order(record):
            raise BundleError(f"{where}: records are not in population order (captured_at, then id)")
        records.append(record)
    return records
