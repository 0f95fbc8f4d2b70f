"""The derived bundle: a reviewed, frozen set of Rollouts that ``export rlvr --from`` reads.

Format ``sediment-rollout-bundle`` version 4 (``docs/bundle.md``; version 3, which carries no
file attributions, stays readable): a directory with
``manifest.json`` (strict JSON, sorted keys), ``rollouts.jsonl``, one
``{"record_json": "<canonical record>"}`` line per Rollout in ``(org_id, session_id)``
order, and the repository population the Rollouts were qualified with
(``repository_identities.jsonl``, ``repository_renames.jsonl``: every repository reference of
the org's identity-capable Facts and every RepositoryRename), from which the reader rebuilds
the repository context exports resolve CI with. The canonical record is sorted-key, compact,
ASCII JSON in which ``NaN``, ``Infinity`` and escaped lone surrogates survive, so Facts stay
lossless. The reader checks everything (hashes, counts, order, split, provenance) before any
export starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import ValidationError

from sediment.errors import BundleError
from sediment.git.repositories import REPOSITORY_IDENTITY_VERSION, RepositoryContext
from sediment.model.facts import DeveloperDecision, EditObservation, RepositoryRename
from sediment.model.policy import ROLLOUT_IMPLEMENTATION_VERSION, DerivationPolicy
from sediment.model.repository_evidence import RepositoryEvidence, evidence_of_all
from sediment.model.rollout import FRAGMENT_REASONS, Rollout
from sediment.parallel import ordered_chunks
from sediment.records import _no_duplicate_keys, decode_record, encode_record
from sediment.split import assign_split

BUNDLE_FORMAT = "sediment-rollout-bundle"
BUNDLE_SCHEMA_VERSION = 4
#: Versions of our format this Sediment reads: 4, and 3 (Rollouts without file attributions or
#: Turn response ids, so no attributed completions).
READABLE_SCHEMA_VERSIONS = (3, 4)
#: Version of the file attribution rules (``sediment.attribution.attribute_files``).
FILE_ATTRIBUTION_VERSION = "1"
RECORD_ENCODING = "sediment-record-json-v1"
MANIFEST = "manifest.json"
ROLLOUTS = "rollouts.jsonl"
REPOSITORY_IDENTITIES = "repository_identities.jsonl"
REPOSITORY_RENAMES = "repository_renames.jsonl"
IMPLEMENTATION_VERSIONS = {"rollout": ROLLOUT_IMPLEMENTATION_VERSION,
                           "repository_identity": REPOSITORY_IDENTITY_VERSION,
                           "file_attribution": FILE_ATTRIBUTION_VERSION}
#: What a version 3 manifest records.
V3_IMPLEMENTATION_VERSIONS = {"rollout": ROLLOUT_IMPLEMENTATION_VERSION,
                              "repository_identity": REPOSITORY_IDENTITY_VERSION}
_MANIFEST_KEYS = {
    "bundle_format", "bundle_schema_version", "record_encoding", "org_id", "policy",
    "policy_digest", "implementation_versions", "quarantine_revision", "counts", "skipped",
    "fragmented", "files",
}
_COUNTED = {"rollouts": ROLLOUTS, "repository_identities": REPOSITORY_IDENTITIES,
            "repository_renames": REPOSITORY_RENAMES}


def _strict_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-finite number {token} outside a record")


def _strict_loads(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_reject_constant)


Counts = Mapping[str, int] | Callable[[], Mapping[str, int]]


def _resolve(counts: Counts | None) -> Mapping[str, int]:
    if counts is None:
        return {}
    return counts() if callable(counts) else counts


def check_destination(destination: str | Path) -> Path:
    """``destination`` as a path a new bundle may be written to: absent, in an existing folder."""
    destination = Path(destination)
    if destination.exists():
        raise BundleError(f"derived bundle destination already exists: {destination}")
    if not destination.parent.is_dir():
        raise BundleError(f"derived bundle parent does not exist: {destination.parent}")
    return destination


Population = RepositoryContext | Callable[[], RepositoryContext]


def write_bundle(
    rollouts: Iterable[Rollout],
    destination: Path,
    *,
    org_id: str,
    policy: DerivationPolicy,
    quarantine_revision: int,
    fragmented: Counts | None = None,
    skipped: Counts | None = None,
    ordered: bool = False,
    repositories: RepositoryContext | None = None,
) -> Path:
    """Write a bundle atomically: staged beside ``destination``, then renamed whole.

    With ``ordered=True`` the Rollouts are streamed (one resident at a time) and must already
    be in ``(org_id, session_id)`` order; ``fragmented`` and ``skipped`` may then be callables,
    read after the last Rollout was written. ``repositories`` is the context the Rollouts were
    qualified with (its population is written); without it, the population is the repository
    evidence the Rollouts carry themselves (their terminal outcomes and observations).
    """
    destination = check_destination(destination)
    source: Iterable[Rollout] = rollouts if ordered else sorted(rollouts, key=lambda r: (r.org_id, r.session_id))
    carried: list[RepositoryEvidence] = []

    def lines() -> Iterator[bytes]:
        previous: tuple[str, str] | None = None
        for rollout in source:
            key = (rollout.org_id, rollout.session_id)
            if previous is not None and key <= previous:
                raise BundleError(f"rollouts are not in (org_id, session_id) order at {key}")
            previous = key
            if repositories is None:
                carried.extend(evidence_of_all((*rollout.terminal_outcomes, *rollout.session_commit_observations)))
            yield encode_line(rollout)

    population: Population = repositories or (lambda: RepositoryContext.build(org_id, carried))
    return write_bundle_lines(lines(), destination, org_id=org_id, policy=policy,
                              quarantine_revision=quarantine_revision, fragmented=fragmented, skipped=skipped,
                              repositories=population)


def encode_line(rollout: Rollout) -> bytes:
    """One ``rollouts.jsonl`` line: ``{"record_json": "<canonical record>"}``."""
    return _record_line(rollout)


def _write_lines(path: Path, lines: Iterable[bytes]) -> dict[str, Any]:
    """Write one private (0600) JSONL file, fsynced; its manifest entry."""
    digest = hashlib.sha256()
    size = count = 0
    with open(path, "xb") as handle:
        os.chmod(path, 0o600)
        for line in lines:
            count += 1
            handle.write(line)
            digest.update(line)
            size += len(line)
        handle.flush()
        os.fsync(handle.fileno())
    return {"path": path.name, "rows": count, "bytes": size, "sha256": digest.hexdigest()}


def _record_line(record: Any) -> bytes:
    return (_strict_json({"record_json": encode_record(record)}) + "\n").encode("ascii")


def write_bundle_lines(
    lines: Iterable[bytes],
    destination: Path,
    *,
    org_id: str,
    policy: DerivationPolicy,
    quarantine_revision: int,
    repositories: Population,
    fragmented: Counts | None = None,
    skipped: Counts | None = None,
) -> Path:
    """Write a bundle from already encoded lines in bundle order (see :func:`write_bundle`);
    ``repositories`` (or a callable giving it, called after the last line) holds the
    repository population to write."""
    destination = check_destination(destination)
    stage = destination.parent / f".{destination.name}.{secrets.token_hex(6)}"
    stage.mkdir(mode=0o700)
    try:
        files = {ROLLOUTS: _write_lines(stage / ROLLOUTS, lines)}
        context = repositories() if callable(repositories) else repositories
        renames = []
        for rename in context.renames:
            if not isinstance(rename, RepositoryRename):
                raise BundleError("a bundle records RepositoryRename Facts; this repository context holds "
                                  f"rename claims read from elsewhere ({rename.rename_id})")
            renames.append(rename)
        files[REPOSITORY_IDENTITIES] = _write_lines(stage / REPOSITORY_IDENTITIES,
                                                    (_record_line(e) for e in context.evidence))
        files[REPOSITORY_RENAMES] = _write_lines(stage / REPOSITORY_RENAMES, (_record_line(r) for r in renames))
        counts = {reason: 0 for reason in FRAGMENT_REASONS} | dict(_resolve(fragmented))
        manifest = {
            "bundle_format": BUNDLE_FORMAT,
            "bundle_schema_version": BUNDLE_SCHEMA_VERSION,
            "record_encoding": RECORD_ENCODING,
            "org_id": org_id,
            "policy": policy.model_dump(mode="json"),
            "policy_digest": policy.digest,
            "implementation_versions": IMPLEMENTATION_VERSIONS,
            "quarantine_revision": quarantine_revision,
            "counts": {name: files[file]["rows"] for name, file in _COUNTED.items()},
            "skipped": dict(sorted(_resolve(skipped).items())),
            "fragmented": counts,
            "files": files,
        }
        with open(stage / MANIFEST, "x", encoding="ascii") as handle:
            os.chmod(stage / MANIFEST, 0o600)
            handle.write(_strict_json(manifest) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(stage, destination)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return destination


@dataclass(frozen=True)
class BundleManifest:
    org_id: str
    policy: DerivationPolicy
    quarantine_revision: int
    fragmented: dict[str, int]
    skipped: dict[str, int]
    rows: int
    #: The bundle's format version (``bundle_schema_version``).
    schema_version: int


class Bundle:
    """A validated bundle whose Rollouts are read lazily, one at a time, by index, with the
    repository context its population gives (:attr:`repositories`, which exports resolve CI
    with)."""

    def __init__(self, path: Path, manifest: BundleManifest, offsets: list[int],
                 keys: list[tuple[str, str]], repositories: RepositoryContext) -> None:
        self.path = path
        self.manifest = manifest
        self.repositories = repositories
        self._offsets = offsets
        self._keys = keys

    def __len__(self) -> int:
        return len(self._offsets)

    def __getitem__(self, index: int) -> Rollout:
        """One Rollout. The file was fully validated when opened (strict parse, sha256), so
        records are read back with the fast parser."""
        with open(self.path / ROLLOUTS, "rb") as handle:
            handle.seek(self._offsets[index])
            return _parse_line(handle.readline(), index + 1, fast=True)

    def __iter__(self) -> Any:
        with open(self.path / ROLLOUTS, "rb") as handle:
            for number, line in enumerate(handle, start=1):
                yield _parse_line(line, number)

    def order_keys(self) -> list[tuple[str, str]]:
        return list(self._keys)

    @property
    def split_enabled(self) -> bool:
        return self.manifest.policy.split.eval_fraction > 0

    @property
    def carries_file_attributions(self) -> bool:
        """Whether its Rollouts carry file attributions (version 4): what attributed
        completions are derived from."""
        return self.manifest.schema_version >= 4


def _parse_line(line: bytes, number: int, *, fast: bool = False) -> Rollout:
    where = f"{ROLLOUTS} line {number}"
    try:
        if fast:
            record = _fast_record(line)
            if record is not None:
                return Rollout.model_validate(record)
        return Rollout.model_validate(_inner_record(line))
    except (UnicodeDecodeError, ValueError) as exc:
        detail = exc.errors()[0] if isinstance(exc, ValidationError) else None
        if detail is not None:
            loc = ".".join(str(p) for p in detail["loc"])
            raise BundleError(f"invalid bundle record at {where}: {loc}: {detail['msg']}") from None
        raise BundleError(f"invalid bundle record at {where}: {exc}") from None


def _inner_record(line: bytes) -> Any:
    """The record of one strict ``{"record_json": "<string>"}`` line (ValueError otherwise)."""
    outer = _strict_loads(line.decode("ascii"))
    if not isinstance(outer, dict) or set(outer) != {"record_json"} or not isinstance(outer["record_json"], str):
        raise ValueError('a line must be exactly {"record_json": "<string>"}')
    return decode_record(outer["record_json"])


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _fast_record(line: bytes) -> Any:
    """orjson's reading of an already validated line; ``None`` for records it cannot read
    losslessly (non-finite tokens, lone surrogates), which take the standard parser."""
    try:
        return orjson.loads(orjson.loads(line)["record_json"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


def _read_manifest(path: Path) -> tuple[dict[str, dict[str, Any]], BundleManifest]:
    try:
        raw = _strict_loads((path / MANIFEST).read_text(encoding="ascii"))
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
    if set(raw) != _MANIFEST_KEYS:
        raise BundleError(
            f"bundle manifest keys differ: missing {sorted(_MANIFEST_KEYS - set(raw))}, "
            f"unknown {sorted(set(raw) - _MANIFEST_KEYS)}"
        )
    if raw["record_encoding"] != RECORD_ENCODING:
        raise BundleError(f"unsupported record_encoding {raw['record_encoding']!r}")
    try:
        policy = DerivationPolicy.model_validate(raw["policy"])
    except ValidationError as exc:
        raise BundleError(f"bundle policy is invalid: {exc.errors()[0]['msg']}") from None
    if policy.digest != raw["policy_digest"]:
        raise BundleError("bundle policy_digest does not match its policy")
    versions = raw["implementation_versions"]
    if versions != (IMPLEMENTATION_VERSIONS if version == BUNDLE_SCHEMA_VERSION else V3_IMPLEMENTATION_VERSIONS):
        raise BundleError(f"unsupported implementation_versions {versions!r}; derive the bundle again")
    files = raw["files"] if isinstance(raw["files"], dict) else {}
    if set(files) != set(_COUNTED.values()) or not all(isinstance(files[f], dict) for f in files):
        raise BundleError(f"bundle manifest must list exactly {', '.join(sorted(_COUNTED.values()))} in files")
    if not isinstance(raw["counts"], dict) or set(raw["counts"]) != set(_COUNTED) or any(
            raw["counts"][name] != files[file].get("rows") for name, file in _COUNTED.items()):
        raise BundleError(f"bundle manifest counts must be the rows of {', '.join(_COUNTED)}")
    return files, BundleManifest(
        org_id=raw["org_id"],
        policy=policy,
        quarantine_revision=raw["quarantine_revision"],
        fragmented=dict(raw["fragmented"]),
        skipped=dict(raw["skipped"]),
        rows=raw["counts"]["rollouts"],
        schema_version=version,
    )


@dataclass
class _Piece:
    """What one worker found in its byte range of ``rollouts.jsonl``: the lines that start
    there (their offsets and keys), and the first line that failed its check, if any."""

    offsets: list[int]
    keys: list[tuple[str, str]]
    failed: int | None = None  # index (into offsets) of the first failing line


def _check_record(line: bytes, number: int, manifest: BundleManifest) -> tuple[str, str]:
    """Strictly parse one line and check it against the manifest; its ``(org_id, session_id)``."""
    rollout = _parse_line(line, number)
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


def _read_line_at(path: Path, offset: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.readline()


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
    from sediment.bundle_v4 import is_v4_manifest, open_v4_bundle

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

    def check(span: range) -> _Piece:
        piece = _Piece([], [])
        with open(rollouts_path, "rb", buffering=1 << 20) as lines:
            position = span.start
            if position > 0:  # the line holding the byte before the span belongs to the span before
                lines.seek(position - 1)
                position += len(lines.readline()) - 1
            while position < span.stop:
                line = lines.readline()
                if not line:
                    break
                piece.offsets.append(position)
                position += len(line)
                if piece.failed is None:
                    try:
                        piece.keys.append(_check_record(line, len(piece.offsets), manifest))
                    except BundleError:
                        piece.failed = len(piece.offsets) - 1  # keep indexing, to count every row
        return piece

    digests: list[str] = []
    # the sha256 is computed here while worker processes check the records
    pieces = list(ordered_chunks(check, size, workers, per_worker=4,
                                 meanwhile=lambda: digests.append(_file_sha256(rollouts_path))))
    offsets = [offset for piece in pieces for offset in piece.offsets]
    if len(offsets) != info.get("rows") or len(offsets) != manifest.rows:
        raise BundleError(f"{ROLLOUTS} has {len(offsets)} rows; the manifest says {manifest.rows}")
    before = 0
    for piece in pieces:
        if piece.failed is not None:  # checked again here, to report it under its line number
            number = before + piece.failed + 1
            _check_record(_read_line_at(rollouts_path, piece.offsets[piece.failed]), number, manifest)
            raise BundleError(f"{ROLLOUTS} line {number} could not be read consistently")
        before += len(piece.offsets)
    keys = [key for piece in pieces for key in piece.keys]
    if digests[0] != info.get("sha256"):
        raise BundleError(f"{ROLLOUTS} does not match the sha256 and size in the manifest")
    for number in range(1, len(keys)):
        if keys[number] <= keys[number - 1]:
            raise BundleError(f"{ROLLOUTS} line {number + 1}: rollouts are not in (org_id, session_id) order")
    return Bundle(path, manifest, offsets, keys, repositories)


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
            record = model.model_validate(_inner_record(line))
        except (UnicodeDecodeError, ValueError) as exc:
            detail = exc.errors()[0] if isinstance(exc, ValidationError) else None
            shown = f"{'.'.join(str(p) for p in detail['loc'])}: {detail['msg']}" if detail else str(exc)
            raise BundleError(f"invalid bundle record at {where}: {shown}") from None
        if record.org_id != org_id:
            raise BundleError(f"{where}: org_id {record.org_id!r} differs from the manifest")
        if records and not order(records[-1]) < order(record):
            raise BundleError(f"{where}: records are not in population order (captured_at, then id)")
        records.append(record)
    return records
