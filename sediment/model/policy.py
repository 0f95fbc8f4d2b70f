"""Derivation policy (TOML, digest) and the provenance every derived row carries."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sediment.errors import ConfigurationError
from sediment.records import canonical_digest
from sediment.split import DEFAULT_EVAL_FRACTION, validate_eval_fraction

if TYPE_CHECKING:
    pass

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
    min_similarity: float = Field(ge=0.0, le=1.0)
    lookback_window_minutes: int = Field(ge=0)


class AttributionPolicy(_PolicyModel):
    post_push_grace_period_minutes: int = Field(default=10, ge=0)
    max_commits_per_push: int = Field(default=20, ge=1)
    git_notes: SimilarityWindow = SimilarityWindow(min_similarity=0.3, lookback_window_minutes=10080)
    jaccard: SimilarityWindow = SimilarityWindow(min_similarity=0.7, lookback_window_minutes=60)


class SplitPolicy(_PolicyModel):
    eval_fraction: float = DEFAULT_EVAL_FRACTION

    @field_validator("eval_fraction", mode="before")
    @classmethod
    def _range(cls, value: Any) -> float:
        return validate_eval_fraction(value)


class DerivationPolicy(_PolicyModel):
    """The resolved policy a derivation ran under; its digest lands in every row's provenance."""

    schema_version: Literal[1] = 1
    attribution: AttributionPolicy = AttributionPolicy()
    split: SplitPolicy = SplitPolicy()

    @property
    def digest(self) -> str:
        """SHA-256 of the resolved policy as sorted, compact, ASCII JSON."""
        return policy_digest(self.model_dump(mode="json"))

    @classmethod
    def from_toml(cls, path: Path) -> DerivationPolicy:
        """Load a policy TOML file; unknown fields and out-of-range values are errors."""
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigurationError(f"cannot read policy file {path}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigurationError(f"policy file {path} is not valid TOML: {exc}") from None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigurationError(f"policy file {path}: {where}: {first['msg']}") from None


def policy_digest(resolved: dict[str, Any]) -> str:
    """SHA-256 hex of ``resolved`` rendered as sorted, compact, ASCII JSON without NaN."""
    return canonical_digest(resolved)
