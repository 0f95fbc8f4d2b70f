"""The values that cross the plugin boundary: target descriptions and projected rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from sediment.split import Split

#: RLVR row populations. Each is published as ``<population>.jsonl`` (or its split files).
Population = Literal["tasks", "rollouts"]
POPULATIONS: tuple[Population, ...] = ("tasks", "rollouts")


@dataclass(frozen=True)
class TargetInfo:
    """What a target declares about itself.

    :param populations: the row populations it writes, each with the ``schema_id`` of its rows,
        in publication order (``tasks`` before ``rollouts``).
    :param needs_mirrors: whether projection reads repository mirrors (reference patches).
    :param description: one line for ``sediment targets``.
    """

    populations: dict[Population, str]
    needs_mirrors: bool
    description: str = ""

    def __post_init__(self) -> None:
        unknown = set(self.populations) - set(POPULATIONS)
        if unknown or not self.populations:
            raise ValueError(f"populations must be a non-empty subset of {POPULATIONS}, got {sorted(unknown)}")


@dataclass(frozen=True)
class ProjectedRow:
    """One emitted row: its JSON body (keys in emitted order) and the side of the split it goes to."""

    split: Split
    body: dict[str, Any] = field(repr=False)
