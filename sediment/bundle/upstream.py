"""Reader of the upstream derived bundle, version 4 (Sediment 0.6.1; docs/bundle.md, Reading upstream bundles).

Teams moving over export the bundles they already reviewed: ``open_bundle`` hands a manifest
with ``bundle_schema_version: 4`` (and no ``bundle_format``) to :func:`open_v4_bundle`, which
checks everything (the manifest through :mod:`sediment.bundle.upstream_manifest`) before any export
starts and returns a :class:`V4Bundle`, read like our own
:class:`~sediment.bundle.format.Bundle`. Sediment never writes this layout.

A v4 bundle is seven files: ``manifest.json`` and six JSONL populations, each line exactly
``{"record_json": "<canonical record>"}``. Its Rollout records carry no call context, so each
Turn's ``output_messages``, ``model``, ``observed_at`` and ``model_call_id`` are hydrated from the
``inference_calls.jsonl`` record its ``inference_call_id`` names (upstream records no tool
definitions, so ``tools_digest`` stays ``None``, ``tool_sets`` and ``test_results`` empty).
Memory stays bounded: the Rollouts and the calls are indexed by byte offset and read one at a
time. The two repository populations (``repository_identities.jsonl``: every repository
reference of the org's identity-capable Facts; ``repository_renames.jsonl``: its renames) are
read strictly into the repository context exports resolve CI with, bounded by the manifest's
``as_of``. See ``docs/bundle.md`` for what is checked, in which order, and what is not used yet.
"""

from __future__ import annotations

import functools
import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import IO, Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError, model_validator

from sediment.bundle.format import Bundle
from sediment.bundle.lines import fast_record, inner_record, report_first_failure, scan_lines
from sediment.bundle.upstream_manifest import FILES, V4BundleManifest, read_v4_manifest
from sediment.errors import BundleError, validation_message
from sediment.git.repositories import RenameClaim, RepositoryContext
from sediment.identifiers import ExactInt, FactId, NonEmptyId, NonEmptyRepoSlug, OrgId, UtcDatetime
from sediment.model.facts import (
    FactModel,
    InferenceCall,
    InferenceMessage,
    RepositoryIdentity,
    ToolCallPart,
    check_identity_triple,
)
from sediment.model.policy import ROLLOUT_IMPLEMENTATION_VERSION, Provenance
from sediment.model.repository_evidence import RepositoryEvidence
from sediment.model.rollout import Rollout, scoring_text
from sediment.records import decode_record, encode_record
from sediment.split import assign_split

ROLLOUTS = FILES["rollouts"]
CALLS = FILES["inference_calls"]

#: The fields of an upstream Rollout and Turn record; ours add call context, tool sets and test
#: results, which a v4 record must not carry (they are hydrated, or stay empty).
ROLLOUT_KEYS = frozenset({"org_id", "session_id", "segments", "commits", "attribution_source",
                          "terminal_outcomes", "provenance", "split", "session_commit_observations"})
TURN_KEYS = frozenset({"new_messages", "completion", "decisions", "inference_call_id", "tool_calls"})
#: An upstream InferenceCall record: ours without ``tools`` and ``capture``.
CALL_KEYS = frozenset(InferenceCall.model_fields) - {"tools", "capture"}
#: What a Turn takes from its call.
HYDRATED = ("output_messages", "model", "observed_at", "model_call_id")


# --- lines and records ---------------------------------------------------------------------


def _envelope(line: bytes, where: str) -> dict[str, Any]:
    """The record of one strict line: exactly ``{"record_json": "<string>"}`` and a newline
    (duplicate keys, trailing data and non-finite tokens outside the record refused), whose
    string holds one JSON object (non-finite tokens allowed there, duplicate keys refused)."""
    if not line.endswith(b"\n"):
        raise BundleError(f"invalid bundle record at {where}: the line does not end with a newline")
    try:
        record = inner_record(line)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BundleError(f"invalid bundle record at {where}: {exc}") from None
    if not isinstance(record, dict):
        raise BundleError(f"invalid bundle record at {where}: record_json must hold a JSON object")
    return record


def _fields(record: Any, expected: frozenset[str], where: str, kind: str) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise BundleError(f"invalid bundle record at {where}: a {kind} must be a JSON object")
    if set(record) != expected:
        unknown, missing = sorted(set(record) - expected), sorted(expected - set(record))
        detail = (f"unknown field {unknown[0]!r} (not a field of a v4 {kind})" if unknown
                  else f"missing field {missing[0]!r} (a v4 {kind} has every field)")
        raise BundleError(f"invalid bundle record at {where}: {detail}")
    return record


M = TypeVar("M", bound=BaseModel)


def _model(model: type[M], record: dict[str, Any], where: str) -> M:
    try:
        return model.model_validate(record)
    except ValidationError as exc:
        detail = exc.errors()[0]
        loc = ".".join(str(p) for p in detail["loc"])
        raise BundleError(f"invalid bundle record at {where}: {loc}: {validation_message(detail)}") from None


def _org_record(line: bytes, where: str, model: type[M], keys: frozenset[str], label: str,
                manifest: V4BundleManifest) -> M:
    """One line's record, strictly: exactly ``keys``, valid as ``model``, of the manifest's org."""
    record = _model(model, _fields(_envelope(line, where), keys, where, label), where)
    org_id = record.model_dump(include={"org_id"})["org_id"]
    if org_id != manifest.org_id:
        raise BundleError(f"{where}: org_id {org_id!r} differs from the manifest")
    return record


def _trusted_record(line: bytes) -> dict[str, Any]:
    """The record of a line already checked when the bundle was opened (fast parser first)."""
    record = fast_record(line)
    if record is None:
        record = decode_record(json.loads(line)["record_json"])
    if not isinstance(record, dict):
        raise ValueError("record_json must hold a JSON object")
    return record


class _CallFile:
    """Reads call records of ``inference_calls.jsonl`` by id, through one handle."""

    def __init__(self, path: Path, index: Mapping[str, int]) -> None:
        self.path = path
        self.index = index
        self._handle: IO[bytes] | None = None

    def record(self, call_id: Any) -> dict[str, Any] | None:
        offset = self.index.get(call_id) if isinstance(call_id, str) else None
        if offset is None:
            return None
        if self._handle is None:
            self._handle = open(self.path, "rb")  # noqa: SIM115 - closed by close()
        self._handle.seek(offset)
        return _trusted_record(self._handle.readline())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _hydrate(record: dict[str, Any], calls: _CallFile, where: str | None) -> list[list[dict[str, Any]]]:
    """Put each Turn's call context into ``record`` (in place); the call records, by segment.

    With ``where`` (checking) the record's shape is checked first and an absent call is a
    :class:`BundleError`; without it (reading back a checked bundle) it is trusted."""
    segments = record.get("segments")
    if where is not None and (not isinstance(segments, list) or any(not isinstance(s, list) for s in segments)):
        raise BundleError(f"invalid bundle record at {where}: segments must be an array of arrays of Turns")
    found: list[list[dict[str, Any]]] = []
    for i, segment in enumerate(segments or ()):
        found.append([])
        for j, turn in enumerate(segment):
            if where is not None:
                _fields(turn, TURN_KEYS, f"{where}: segments.{i}.{j}", "Turn")
            call = calls.record(turn["inference_call_id"])
            if call is None:
                raise BundleError(f"{where or ROLLOUTS}: segments.{i}.{j} references inference call "
                                  f"{turn['inference_call_id']!r}, which {CALLS} does not hold")
            turn.update({name: call[name] for name in HYDRATED})
            found[-1].append(call)
    return found


def _check_call(line: bytes, number: int, manifest: V4BundleManifest) -> str:
    """One ``inference_calls.jsonl`` line, strictly: its ``inference_call_id``."""
    return _org_record(line, f"{CALLS} line {number}", InferenceCall, CALL_KEYS, "InferenceCall record",
                       manifest).inference_call_id


_ID = TypeAdapter(NonEmptyId)
_MESSAGES = TypeAdapter(tuple[InferenceMessage, ...])
_TOOL_CALLS = TypeAdapter(tuple[ToolCallPart, ...])


def _same(recorded: Any, source: Any, adapter: TypeAdapter[Any]) -> bool:
    """Whether a Turn's recorded values (raw JSON) are its call's: the same canonical JSON, or
    (for a spelling our models normalize) the same canonical record once validated."""
    canonical = functools.partial(json.dumps, sort_keys=True, separators=(",", ":"), allow_nan=True)
    if canonical(recorded) == canonical(source):
        return True
    try:
        return encode_record(adapter.validate_python(recorded)) == encode_record(adapter.validate_python(source))
    except ValidationError:
        return False


def _check_rollout(line: bytes, number: int, manifest: V4BundleManifest, calls: _CallFile) -> tuple[str, str]:
    """One ``rollouts.jsonl`` line, strictly, hydrated and checked against the manifest and its
    calls: its ``(org_id, session_id)``."""
    where = f"{ROLLOUTS} line {number}"
    record = _fields(_envelope(line, where), ROLLOUT_KEYS, where, "Rollout record")
    call_records = _hydrate(record, calls, where)
    rollout = _model(Rollout, record, where)
    if rollout.org_id != manifest.org_id:
        raise BundleError(f"{where}: org_id {rollout.org_id!r} differs from the manifest")
    if rollout.split != assign_split(rollout.session_id, manifest.policy.split.eval_fraction):
        raise BundleError(f"{where}: split does not match the policy's eval split")
    expected = Provenance(policy_version=ROLLOUT_IMPLEMENTATION_VERSION,
                          quarantine_revision=manifest.quarantine_revision, policy_digest=manifest.policy_digest)
    if rollout.provenance != expected:
        raise BundleError(f"{where}: provenance differs from the manifest")
    previous_key: tuple[Any, str] | None = None
    for i, (segment, raw_turns, records) in enumerate(zip(rollout.segments, record["segments"], call_records,
                                                          strict=True)):
        sent_before = 0  # how many input messages the segment's previous call was sent
        for j, (turn, raw, call) in enumerate(zip(segment, raw_turns, records, strict=True)):
            at = f"{where}: segments.{i}.{j}"
            named = f"inference call {turn.inference_call_id!r}"
            if _ID.validate_python(call["session_id"]) != rollout.session_id:
                raise BundleError(f"{at}: {named} belongs to Session {call['session_id']!r}")
            key = (turn.observed_at, turn.inference_call_id)
            if previous_key is not None and key <= previous_key:
                raise BundleError(f"{at}: Turns are not in (observed_at, inference_call_id) order of their calls")
            previous_key = key
            if not _same(raw["new_messages"], call["input_messages"][sent_before:], _MESSAGES):
                raise BundleError(f"{at}: new_messages differ from the input of {named}")
            sent_before = len(call["input_messages"])
            if turn.completion != scoring_text(turn.output_messages):
                raise BundleError(f"{at}: completion differs from the output of {named}")
            parts = [p for m in call["output_messages"] for p in m["parts"] if p.get("type") == "tool_call"]
            if not _same(raw["tool_calls"], parts, _TOOL_CALLS):
                raise BundleError(f"{at}: tool_calls differ from the output of {named}")
    return rollout.org_id, rollout.session_id


def _check_other(line: bytes, number: int, name: str) -> None:
    """A line of a population this Sediment does not read yet: strict, one JSON object."""
    _envelope(line, f"{name} line {number}")


class UpstreamRepositoryRename(FactModel):
    """A record of ``repository_renames.jsonl``: upstream's RepositoryRename (its identity
    triple required, ``occurred_at`` null when the forge gave none)."""

    schema_version: Annotated[Literal[1], ExactInt]
    rename_id: FactId
    org_id: OrgId
    repository_provider: Literal["github"]
    repository_host: str
    repository_id: str
    old_repo: NonEmptyRepoSlug
    new_repo: NonEmptyRepoSlug
    source_event_id: NonEmptyId | None
    occurred_at: UtcDatetime | None
    captured_at: UtcDatetime

    @model_validator(mode="after")
    def _well_formed(self) -> UpstreamRepositoryRename:
        check_identity_triple(self.repository_provider, self.repository_host, self.repository_id)
        if self.old_repo == self.new_repo:
            raise ValueError("a rename names two different repositories")
        return self

    def claim(self) -> RenameClaim:
        identity = RepositoryIdentity(provider=self.repository_provider, host=self.repository_host,
                                      repository_id=self.repository_id)
        return RenameClaim(self.rename_id, self.org_id, identity, self.old_repo, self.new_repo,
                           self.source_event_id, self.captured_at)


_EVIDENCE_KEYS = frozenset(RepositoryEvidence.model_fields)
_RENAME_KEYS = frozenset(UpstreamRepositoryRename.model_fields)


def _check_evidence(line: bytes, number: int, manifest: V4BundleManifest) -> RepositoryEvidence:
    """One ``repository_identities.jsonl`` line, strictly: a repository reference of the org."""
    return _org_record(line, f"{FILES['repository_identities']} line {number}", RepositoryEvidence,
                       _EVIDENCE_KEYS, "repository identity record", manifest)


def _check_rename(line: bytes, number: int, manifest: V4BundleManifest) -> RenameClaim:
    """One ``repository_renames.jsonl`` line, strictly: a rename of the org."""
    return _org_record(line, f"{FILES['repository_renames']} line {number}", UpstreamRepositoryRename,
                       _RENAME_KEYS, "RepositoryRename record", manifest).claim()


def _check_order(keys: list[Any], file: str) -> None:
    """Population order (ties allowed: copies of one source)."""
    for number in range(1, len(keys)):
        if keys[number] < keys[number - 1]:
            raise BundleError(f"{file} line {number + 1}: records are not in population order")


# --- the files -----------------------------------------------------------------------------

T = TypeVar("T")


def _scan(directory: Path, name: str, info: Mapping[str, Any], workers: int,
          check: Callable[[bytes, int], T], *, closing: Callable[[], object] | None = None,
          ) -> tuple[list[int], list[T]]:
    """Check one population file: regular file, size, every line (in ``workers`` processes, by
    byte range, while this process computes the sha256), row count, first bad line, sha256.
    ``closing`` runs after each range is checked (in the process that checked it)."""
    file = FILES[name]
    path = directory / file
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        raise BundleError(f"not a complete v4 bundle: {path} is missing") from None
    except OSError as exc:
        raise BundleError(f"cannot read {path}: {exc.strerror}") from None
    if not stat.S_ISREG(status.st_mode):
        raise BundleError(f"{path} is not a regular file")
    if status.st_size != info["bytes"]:
        raise BundleError(f"{file} does not match the sha256 and size in the manifest")

    pieces, digest = scan_lines(path, status.st_size, workers, check, closing=closing)
    offsets = [offset for piece in pieces for offset in piece.offsets]
    if len(offsets) != info["rows"]:
        raise BundleError(f"{file} has {len(offsets)} rows; the manifest says {info['rows']}")
    report_first_failure(path, file, pieces, check, closing=closing)
    if digest != info["sha256"]:
        raise BundleError(f"{file} does not match the sha256 and size in the manifest")
    return offsets, [result for piece in pieces for result in piece.results]


class V4Bundle(Bundle):
    """A validated v4 bundle, read like our own: Rollouts by index, one at a time, each Turn
    hydrated from its inference call (both files indexed by byte offset)."""

    def __init__(self, path: Path, manifest: V4BundleManifest, offsets: list[int], keys: list[tuple[str, str]],
                 calls: dict[str, int], repositories: RepositoryContext) -> None:
        super().__init__(path, manifest, offsets, keys, repositories, manifest.files["rollouts"]["bytes"])
        self.manifest: V4BundleManifest = manifest
        self._calls = calls

    @property
    def carries_file_attributions(self) -> bool:
        """Upstream's attributions are in ``attributed_completions.jsonl``, which is not read yet."""
        return False

    def __getitem__(self, index: int) -> Rollout:
        """One hydrated Rollout. Both files were fully validated when opened, so records are read
        back with the fast parser."""
        calls = _CallFile(self.path / CALLS, self._calls)
        try:
            with open(self.path / ROLLOUTS, "rb") as handle:
                handle.seek(self._offsets[index])
                record = _trusted_record(handle.readline())
            _hydrate(record, calls, None)
            return Rollout.model_validate(record)
        except (KeyError, TypeError, ValueError) as exc:  # the files changed after they were checked
            raise BundleError(f"{ROLLOUTS} line {index + 1} cannot be read back ({exc.__class__.__name__}); "
                              "the bundle changed after it was opened") from None
        finally:
            calls.close()

    def __iter__(self) -> Iterator[Rollout]:
        for index in range(len(self)):
            yield self[index]


def open_v4_bundle(path: str | Path, *, workers: int = 1) -> V4Bundle:
    """Open and fully validate a v4 bundle directory; raises :class:`BundleError` on any problem.

    Order: the manifest; then each population file (the four not read yet, the calls, the
    Rollouts): presence, size, every line, row count, first bad line, sha256; then duplicate
    call ids and the Rollouts' Session-id order. Whatever the worker count, the same problem is
    reported first.
    """
    path = Path(path)
    if not path.is_dir():
        raise BundleError(f"bundle directory does not exist: {path}")
    manifest = read_v4_manifest(path)
    for name in ("attributed_completions", "inference_call_identities"):
        _scan(path, name, manifest.files[name], workers, functools.partial(_check_other, name=FILES[name]))
    _, evidence = _scan(path, "repository_identities", manifest.files["repository_identities"], workers,
                        lambda line, number: _check_evidence(line, number, manifest))
    _, renames = _scan(path, "repository_renames", manifest.files["repository_renames"], workers,
                       lambda line, number: _check_rename(line, number, manifest))
    _check_order([e.order_key for e in evidence], FILES["repository_identities"])
    _check_order([(r.captured_at, r.rename_id) for r in renames], FILES["repository_renames"])
    as_of = None if manifest.as_of is None else datetime.fromisoformat(manifest.as_of)
    repositories = RepositoryContext.build(manifest.org_id, evidence, renames, as_of=as_of)
    call_offsets, call_ids = _scan(path, "inference_calls", manifest.files["inference_calls"], workers,
                                   lambda line, number: _check_call(line, number, manifest))
    index: dict[str, int] = {}
    for number, (offset, call_id) in enumerate(zip(call_offsets, call_ids, strict=True), start=1):
        if index.setdefault(call_id, offset) != offset:
            raise BundleError(f"{CALLS} line {number}: inference_call_id {call_id!r} appears more than once")
    del call_offsets, call_ids
    calls = _CallFile(path / CALLS, index)
    try:
        offsets, keys = _scan(path, "rollouts", manifest.files["rollouts"], workers,
                              lambda line, number: _check_rollout(line, number, manifest, calls), closing=calls.close)
    finally:
        calls.close()
    for number in range(1, len(keys)):
        if keys[number][1] <= keys[number - 1][1]:
            raise BundleError(f"{ROLLOUTS} line {number + 1}: rollouts are not in Session-id order")
    return V4Bundle(path, manifest, offsets, keys, index, repositories)
