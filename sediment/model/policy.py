"""Derivation policy (TOML, digest) and the provenance every derived row carries."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sediment.errors import ConfigurationError, validation_message
from sediment.records import canonical_digest
from sediment.split import DEFAULT_EVAL_FRACTION, validate_eval_fraction

ROLLOUT_IMPLEMENTATION_VERSION = "4"


class Provenance(BaseModel):
    """How a row was derived: policy version, quarantine high-water mark, policy digest."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policy_version: str = Field(min_length=1)
    quarantine_revision: int = Field(ge=0)
    policy_digest: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")


class _PolicyModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SimilarityWindow(_PolicyModel):
    min_similarity: float = Field(ge=0.0, le=1.0, description=(
        "Least Jaccard similarity (0.0 to 1.0) of a call's completion tokens and the tokens a code file "
        "adds for the call to be bound to that file (and, for `jaccard`, for the commit to be bound)"))
    lookback_window_minutes: int = Field(ge=0, description=(
        "Minutes: calls observed this long before a commit may be bound to its files (for `jaccard`, "
        "also: commits made this long after the Session's last call are its candidates)"))


class AttributionPolicy(_PolicyModel):
    post_push_grace_period_minutes: int = Field(default=10, ge=0, description=(
        "Minutes after a commit's committer time during which a call may still be bound to its files"))
    max_commits_per_push: int = Field(default=20, ge=1, description=(
        "Most commits of one push (the contract's policy field; kept in the digest, but derivation does "
        "not read it: candidate commits are bounded by the `jaccard` lookback window instead)"))
    git_notes: SimilarityWindow = Field(
        default=SimilarityWindow(min_similarity=0.3, lookback_window_minutes=10080),
        description="File attribution of a Session that git notes (ours or git-ai's) bind to its commits")
    jaccard: SimilarityWindow = Field(
        default=SimilarityWindow(min_similarity=0.7, lookback_window_minutes=60),
        description="The similarity fallback for a Session without notes: which commits it made, and their files")


class SplitPolicy(_PolicyModel):
    eval_fraction: float = Field(default=DEFAULT_EVAL_FRACTION, description=(
        "Share of Sessions assigned to the eval split (0.0 to 0.5), by a hash of the Session id"))

    @field_validator("eval_fraction", mode="before")
    @classmethod
    def _range(cls, value: Any) -> float:
        return validate_eval_fraction(value)


class DerivationPolicy(_PolicyModel):
    """The resolved policy a derivation ran under; its digest lands in every row's provenance."""

    schema_version: Literal[1] = Field(default=1, description="Version of this file's format (only 1)")
    attribution: AttributionPolicy = Field(default=AttributionPolicy(),
                                           description="How Sessions are bound to commits and files")
    split: SplitPolicy = Field(default=SplitPolicy(), description="The train/eval split of Sessions")

    @property
    def digest(self) -> str:
        """SHA-256 of the resolved policy as sorted, compact, ASCII JSON."""
        return policy_digest(self.model_dump(mode="json"))

    @classmethod
    def from_toml(cls, path: Path) -> DerivationPolicy:
        """Load a policy TOML file merged over the defaults: a field the file leaves out keeps
        its default; unknown fields and out-of-range values are errors (one line naming them)."""
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigurationError(f"cannot read policy file {path}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigurationError(f"policy file {path} is not valid TOML: {exc}") from None
        try:
            return cls.model_validate(merged_over(cls().model_dump(mode="python"), data))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            if first["type"] == "extra_forbidden":
                raise ConfigurationError(f"policy file {path}: unknown field {where} "
                                         "(`sediment policy show` lists every field)") from None
            raise ConfigurationError(f"policy file {path}: {where}: {validation_message(first)}") from None


def merged_over(defaults: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """``given`` over ``defaults``, table by table: what ``given`` names replaces the default."""
    merged = dict(defaults)
    for key, value in given.items():
        base = merged.get(key)
        merged[key] = merged_over(base, value) if isinstance(base, dict) and isinstance(value, dict) else value
    return merged


def policy_digest(resolved: dict[str, Any]) -> str:
    """SHA-256 hex of ``resolved`` rendered as sorted, compact, ASCII JSON without NaN."""
    return canonical_digest(resolved)
