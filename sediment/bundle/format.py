"""Our bundle's format (``sediment-rollout-bundle``, ``docs/bundle.md``): its file names and
versions, its manifest, and :class:`Bundle`, an opened bundle whose Rollouts are read lazily."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sediment.bundle.lines import fast_record_json, inner_record
from sediment.errors import BundleError, validation_message
from sediment.git.repositories import REPOSITORY_IDENTITY_VERSION, RepositoryContext
from sediment.model.policy import ROLLOUT_IMPLEMENTATION_VERSION, DerivationPolicy
from sediment.model.rollout import Rollout

BUNDLE_FORMAT = "sediment-rollout-bundle"


BUNDLE_SCHEMA_VERSION = 4


#: Versions of our format this Sediment reads: 4, and 3 (Rollouts without file attributions or
#: Turn response ids, so no attributed completions).
READABLE_SCHEMA_VERSIONS = (3, 4)


#: Version of the file attribution rules (``sediment.derive.attribution.attribute_files``).
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


MANIFEST_KEYS = {
    "bundle_format", "bundle_schema_version", "record_encoding", "org_id", "policy",
    "policy_digest", "implementation_versions", "quarantine_revision", "counts", "skipped",
    "fragmented", "files",
}


COUNTED = {"rollouts": ROLLOUTS, "repository_identities": REPOSITORY_IDENTITIES,
            "repository_renames": REPOSITORY_RENAMES}


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
                 keys: list[tuple[str, str]], repositories: RepositoryContext, size: int) -> None:
        self.path = path
        self.manifest = manifest
        self.repositories = repositories
        self._offsets = offsets
        self._keys = keys
        self._size = size  # of the rollouts file (checked when opened): where its last line ends

    def __len__(self) -> int:
        return len(self._offsets)

    def __getitem__(self, index: int) -> Rollout:
        """One Rollout. The file was fully validated when opened (strict parse, sha256), so
        records are read back with the fast parser."""
        start = self._offsets[index]
        end = self._offsets[index + 1] if index + 1 < len(self._offsets) else self._size
        with open(self.path / ROLLOUTS, "rb") as handle:  # the line read by its length, not searched for
            handle.seek(start)
            line = handle.read(end - start)
        if len(line) != end - start:  # the file was cut short
            raise BundleError(f"{ROLLOUTS} line {index + 1} cannot be read back: the file ends before it does; "
                              "the bundle changed after it was opened")
        return parse_line(line, index + 1, fast=True)

    def __iter__(self) -> Any:
        with open(self.path / ROLLOUTS, "rb") as handle:
            for number, line in enumerate(handle, start=1):
                yield parse_line(line, number)

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


def parse_line(line: bytes, number: int, *, fast: bool = False) -> Rollout:
    where = f"{ROLLOUTS} line {number}"
    try:
        if fast:
            text = fast_record_json(line)
            if text is not None:
                try:  # parsed and validated in one pass, as the standard path gives it
                    return Rollout.model_validate_json(text)
                except ValueError:
                    pass  # the standard path below says what is wrong, in its words
        return Rollout.model_validate(inner_record(line))
    except (UnicodeDecodeError, ValueError) as exc:
        detail = exc.errors()[0] if isinstance(exc, ValidationError) else None
        if detail is not None:
            loc = ".".join(str(p) for p in detail["loc"])
            raise BundleError(f"invalid bundle record at {where}: {loc}: {validation_message(detail)}") from None
        raise BundleError(f"invalid bundle record at {where}: {exc}") from None
