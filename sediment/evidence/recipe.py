"""A recipe: the rule, named and versioned, that decides which evidence becomes which rows.

An objective declares its recipes (:class:`~sediment.host.declarations.ObjectiveInfo`); the
evidence a plugin is handed carries the one an export runs (:class:`~sediment.evidence.rollout.RolloutEvidence`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD = re.compile(r"^[a-z][a-z0-9_]*$")


def check_word(value: object, what: str) -> None:
    if not isinstance(value, str) or not _WORD.fullmatch(value):
        raise ValueError(f"{what} must be a snake_case word, got {value!r}")


@dataclass(frozen=True)
class Recipe:
    """One recipe of an objective: the rule that decides which evidence becomes which rows.

    Rows name it (``recipe_id``, ``recipe_version``); a different rule is a new version.

    :param name: the recipe id, a snake_case word (``ci_verdict``, ``human_accepts``).
    :param version: its integer version (independent of schema and policy versions).
    :param description: one line for ``--help`` and ``sediment objectives``.
    """

    name: str
    version: int
    description: str = ""

    def __post_init__(self) -> None:
        check_word(self.name, "a recipe name")
        if isinstance(self.version, bool) or not isinstance(self.version, int) or self.version < 1:
            raise ValueError(f"recipe {self.name} version must be a positive integer, got {self.version!r}")
