"""Writing a bundle: the Rollouts of one org in ``(org_id, session_id)`` order and the repository
population they were qualified with, staged and renamed into place (``docs/bundle.md``)."""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from sediment.bundle.format import (
    BUNDLE_FORMAT,
    BUNDLE_SCHEMA_VERSION,
    COUNTED,
    IMPLEMENTATION_VERSIONS,
    MANIFEST,
    RECORD_ENCODING,
    REPOSITORY_IDENTITIES,
    REPOSITORY_RENAMES,
    ROLLOUTS,
)
from sediment.bundle.lines import strict_json
from sediment.errors import BundleError
from sediment.git.repositories import RepositoryContext
from sediment.model.facts import RepositoryRename
from sediment.model.policy import DerivationPolicy
from sediment.model.repository_evidence import RepositoryEvidence, evidence_of_all
from sediment.model.rollout import FRAGMENT_REASONS, Rollout
from sediment.records import json_string_ascii, record_bytes

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
    """Write one private (0600) JSONL file, fsynced; its manifest entry. Each piece of
    ``lines`` is one or more whole lines (each ends with its newline, the only one it holds)."""
    digest = hashlib.sha256()
    size = count = 0
    with open(path, "xb") as handle:
        os.chmod(path, 0o600)
        for line in lines:
            count += line.count(b"\n")
            handle.write(line)
            digest.update(line)
            size += len(line)
        handle.flush()
        os.fsync(handle.fileno())
    return {"path": path.name, "rows": count, "bytes": size, "sha256": digest.hexdigest()}


def _record_line(record: Any) -> bytes:
    # the canonical text is ASCII with every control character and DEL escaped: its literal is
    # json_string_ascii's, as strict_json({"record_json": text}) would write it
    return b'{"record_json":' + json_string_ascii(record_bytes(record).decode("ascii")) + b'}\n'


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
            "counts": {name: files[file]["rows"] for name, file in COUNTED.items()},
            "skipped": dict(sorted(_resolve(skipped).items())),
            "fragmented": counts,
            "files": files,
        }
        with open(stage / MANIFEST, "x", encoding="ascii") as handle:
            os.chmod(stage / MANIFEST, 0o600)
            handle.write(strict_json(manifest) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(stage, destination)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return destination
