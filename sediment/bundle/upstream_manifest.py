"""The manifest of the upstream derived bundle, version 4 (Sediment 0.6.1; docs/bundle.md, Reading upstream bundles):
recognising the layout (:func:`is_v4_manifest`) and reading ``manifest.json`` strictly
(:func:`read_v4_manifest`) into a :class:`V4BundleManifest`. The population files it lists are
read by :mod:`sediment.bundle.upstream`."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from sediment.bundle.format import MANIFEST, BundleManifest
from sediment.bundle.lines import strict_loads
from sediment.errors import BundleError, validation_message
from sediment.git.repositories import REPOSITORY_IDENTITY_VERSION
from sediment.identifiers import OrgId
from sediment.model.policy import ROLLOUT_IMPLEMENTATION_VERSION, DerivationPolicy
from sediment.model.rollout import FRAGMENT_REASONS
from sediment.records import canonical_digest

V4_SCHEMA_VERSION = 4
RECORD_ENCODING = "sediment-record-json-v1"
POPULATION = "organization-through-as-of-v1"
#: Rows allowed in each of the three complete organization populations.
POPULATION_ROW_CAP = 50_000
#: Population name → file, in the order the reader checks them (the calls before the
#: Rollouts that reference them).
FILES: dict[str, str] = {
    "attributed_completions": "attributed_completions.jsonl",
    "inference_call_identities": "inference_call_identities.jsonl",
    "repository_identities": "repository_identities.jsonl",
    "repository_renames": "repository_renames.jsonl",
    "inference_calls": "inference_calls.jsonl",
    "rollouts": "rollouts.jsonl",
}
CAPPED = ("inference_call_identities", "repository_identities", "repository_renames")

MANIFEST_KEYS = frozenset({
    "bundle_schema_version", "record_encoding", "identity_population", "repository_population", "org_id",
    "scope", "policy", "policy_digest", "implementation_versions", "quarantine_revision", "as_of",
    "mirror_revisions", "counts", "skipped", "excluded", "files", "fragmented",
})
IMPLEMENTATION_KEYS = frozenset({"abandonment", "attribution", "attributed_completion", "rollout",
                                 "repository_identity"})


_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_ORG = TypeAdapter(OrgId)


def is_v4_manifest(path: Path) -> bool:
    """Whether ``path/manifest.json`` claims the upstream layout: ``bundle_schema_version`` 4 and
    no ``bundle_format`` (our own format's marker). Unreadable manifests are left to our reader."""
    try:
        raw = json.loads((path / MANIFEST).read_bytes())
    except (OSError, ValueError):
        return False
    return (isinstance(raw, dict) and "bundle_format" not in raw
            and type(raw.get("bundle_schema_version")) is int and raw["bundle_schema_version"] == V4_SCHEMA_VERSION)


# --- the manifest --------------------------------------------------------------------------


@dataclass(frozen=True)
class V4BundleManifest(BundleManifest):
    """Our manifest view (``org_id``, ``policy``, ``fragmented``, …) plus what only v4 records."""

    policy_digest: str  # as the manifest states it (see docs/bundle.md on integer spellings)
    scope: dict[str, Any]
    as_of: str | None
    excluded: dict[str, int]
    mirror_revisions: dict[str, dict[str, str]]
    counts: dict[str, int]
    implementation_versions: dict[str, str]
    files: dict[str, dict[str, Any]] = field(repr=False)


def _problem(where: str, what: str) -> BundleError:
    return BundleError(f"{MANIFEST}: {where} {what}")


def _keys(value: Any, expected: frozenset[str], where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _problem(where, "must be a JSON object")
    if set(value) != expected:
        raise _problem(where, f"keys differ from a v4 manifest: missing {sorted(expected - set(value))}, "
                              f"unknown {sorted(set(value) - expected)}")
    return value


def _count(value: Any, where: str, *, minimum: int = 0) -> int:
    if type(value) is not int or value < minimum:
        raise _problem(where, f"must be an integer >= {minimum}, not {value!r}")
    return value


def _number(value: Any, where: str) -> float:
    if type(value) not in (int, float):
        raise _problem(where, f"must be a number, not {value!r}")
    return float(value)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _problem(where, f"must be a string, not {value!r}")
    return value


def _timestamp(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _TIMESTAMP.fullmatch(value):
        raise _problem(where, f"must be an RFC 3339 timestamp or null, not {value!r}")
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise _problem(where, f"is not a valid timestamp: {value!r}") from None


def _counter(value: Any, where: str) -> dict[str, int]:
    if not isinstance(value, dict):
        raise _problem(where, "must be a JSON object")
    for key, count in value.items():
        _count(count, f"{where}.{key}")
    return dict(sorted(value.items()))


def _scope(value: Any) -> dict[str, Any]:
    scope = _keys(value, frozenset({"since", "until", "users"}), "scope")
    since, until = _timestamp(scope["since"], "scope.since"), _timestamp(scope["until"], "scope.until")
    if since is not None and until is not None and since >= until:
        raise _problem("scope.since", "must be earlier than scope.until")
    users = scope["users"]
    if users is not None and (not isinstance(users, list) or not users
                              or any(not isinstance(u, str) or not u.strip() or u != u.strip() for u in users)
                              or users != sorted(set(users))):
        raise _problem("scope.users", "must be null or a sorted list of distinct, non-empty, stripped user ids")
    return dict(scope)


def _policy(value: Any, digest: Any) -> tuple[DerivationPolicy, str]:
    """The manifest's policy with every key and type checked, and its verified digest.

    The digest is checked over the policy exactly as the manifest spells it (upstream's rule).
    Our :class:`DerivationPolicy` reads numbers as floats, so it computes the same digest for
    every policy upstream writes with float spellings; an integer-spelled float
    (``"eval_fraction":0``) hashes differently under our model, and the manifest's digest is
    the one provenance carries."""
    policy = _keys(value, frozenset({"schema_version", "attribution", "split"}), "policy")
    if type(policy["schema_version"]) is not int or policy["schema_version"] != 1:
        raise _problem("policy.schema_version", f"must be 1, not {policy['schema_version']!r}")
    attribution = _keys(policy["attribution"], frozenset({"post_push_grace_period_minutes", "max_commits_per_push",
                                                          "git_notes", "jaccard"}), "policy.attribution")
    _count(attribution["post_push_grace_period_minutes"], "policy.attribution.post_push_grace_period_minutes")
    _count(attribution["max_commits_per_push"], "policy.attribution.max_commits_per_push", minimum=1)
    for name in ("git_notes", "jaccard"):
        where = f"policy.attribution.{name}"
        window = _keys(attribution[name], frozenset({"min_similarity", "lookback_window_minutes"}), where)
        _number(window["min_similarity"], f"{where}.min_similarity")
        _count(window["lookback_window_minutes"], f"{where}.lookback_window_minutes")
    split = _keys(policy["split"], frozenset({"eval_fraction"}), "policy.split")
    _number(split["eval_fraction"], "policy.split.eval_fraction")
    try:
        resolved = DerivationPolicy.model_validate(policy)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise _problem("policy", f"is invalid: {where}: {validation_message(first)}") from None
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
        raise _problem("policy_digest", "must be 64 lowercase hex digits")
    if canonical_digest(policy) != digest:
        raise _problem("policy_digest", "does not match its policy")
    return resolved, digest


def _files(value: Any, counts: Any) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    files = _keys(value, frozenset(FILES), "files")
    for name, file in FILES.items():
        where = f"files.{name}"
        info = _keys(files[name], frozenset({"path", "rows", "bytes", "sha256"}), where)
        if info["path"] != file:
            raise _problem(f"{where}.path", f"must be {file!r}, not {info['path']!r}")
        _count(info["rows"], f"{where}.rows")
        _count(info["bytes"], f"{where}.bytes")
        if not isinstance(info["sha256"], str) or not _SHA256.fullmatch(info["sha256"]):
            raise _problem(f"{where}.sha256", "must be 64 lowercase hex digits")
    counted = _keys(counts, frozenset(FILES), "counts")
    for name in FILES:
        if _count(counted[name], f"counts.{name}") != files[name]["rows"]:
            raise _problem(f"counts.{name}", f"is {counted[name]}; files.{name}.rows is {files[name]['rows']}")
    for name in CAPPED:
        if files[name]["rows"] > POPULATION_ROW_CAP:
            raise BundleError(f"{FILES[name]} has {files[name]['rows']} rows, beyond the {POPULATION_ROW_CAP}-row cap "
                              "of that population; the bundle is refused")
    return files, dict(counted)


def read_v4_manifest(path: Path) -> V4BundleManifest:
    """Strictly read and check ``manifest.json`` (every key, every type, the markers, the
    policy digest, the Rollout implementation version, the file entries and the row caps)."""
    try:
        raw = strict_loads((path / MANIFEST).read_text(encoding="ascii"))
    except FileNotFoundError:
        raise BundleError(f"not a bundle: {path / MANIFEST} is missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BundleError(f"cannot read bundle manifest {path / MANIFEST}: {exc}") from None
    if not isinstance(raw, dict):
        raise BundleError(f"{MANIFEST}: must be a JSON object")
    version = raw.get("bundle_schema_version")
    if type(version) is not int or version != V4_SCHEMA_VERSION:
        raise _problem("bundle_schema_version", f"is {version!r}; this reader reads version {V4_SCHEMA_VERSION}")
    if set(raw) != MANIFEST_KEYS:
        raise BundleError(f"{MANIFEST}: keys differ from a v4 manifest: missing {sorted(MANIFEST_KEYS - set(raw))}, "
                          f"unknown {sorted(set(raw) - MANIFEST_KEYS)}")
    if raw["record_encoding"] != RECORD_ENCODING:
        raise _problem("record_encoding", f"{raw['record_encoding']!r} is not supported (only {RECORD_ENCODING!r})")
    for marker in ("identity_population", "repository_population"):
        if raw[marker] != POPULATION:
            raise _problem(marker, f"{raw[marker]!r} is not supported (only {POPULATION!r})")
    org_id = _text(raw["org_id"], "org_id")
    try:
        canonical = _ORG.validate_python(org_id)
    except ValidationError:
        canonical = None
    if canonical != org_id:
        raise _problem("org_id", f"{org_id!r} is not a canonical org id")
    scope = _scope(raw["scope"])
    policy, digest = _policy(raw["policy"], raw["policy_digest"])
    versions = _keys(raw["implementation_versions"], IMPLEMENTATION_KEYS, "implementation_versions")
    for name, version in versions.items():
        _text(version, f"implementation_versions.{name}")
    if versions["rollout"] != ROLLOUT_IMPLEMENTATION_VERSION:
        raise _problem("implementation_versions.rollout", f"is {versions['rollout']!r}; this Sediment reads Rollout "
                       f"implementation version {ROLLOUT_IMPLEMENTATION_VERSION!r} (recompute the bundle)")
    if versions["repository_identity"] != REPOSITORY_IDENTITY_VERSION:
        raise _problem("implementation_versions.repository_identity",
                       f"is {versions['repository_identity']!r}; this Sediment reads repository identity version "
                       f"{REPOSITORY_IDENTITY_VERSION!r} (recompute the bundle)")
    revision = _count(raw["quarantine_revision"], "quarantine_revision")
    _timestamp(raw["as_of"], "as_of")
    mirrors = raw["mirror_revisions"]
    def _refs(refs: Any) -> bool:
        return isinstance(refs, dict) and all(isinstance(sha, str) for sha in refs.values())

    if not isinstance(mirrors, dict) or not all(_refs(refs) for refs in mirrors.values()):
        raise _problem("mirror_revisions", "must map repository keys to {ref: sha} objects of strings")
    skipped = _counter(raw["skipped"], "skipped")
    excluded = _counter(raw["excluded"], "excluded")
    fragmented = _counter(raw["fragmented"], "fragmented")
    unknown = sorted(set(fragmented) - set(FRAGMENT_REASONS))
    if unknown:
        raise _problem("fragmented", f"holds unknown reasons {unknown}")
    files, counts = _files(raw["files"], raw["counts"])
    return V4BundleManifest(
        org_id=org_id, policy=policy, quarantine_revision=revision,
        fragmented={reason: fragmented.get(reason, 0) for reason in FRAGMENT_REASONS},
        skipped=skipped, rows=counts["rollouts"], schema_version=V4_SCHEMA_VERSION, policy_digest=digest,
        scope=scope, as_of=raw["as_of"],
        excluded=excluded, mirror_revisions={k: dict(v) for k, v in mirrors.items()}, counts=counts,
        implementation_versions=dict(versions), files=files,
    )


