"""Per-repository verification commands (docs/exports.md, Verification commands), loaded fail-soft.

``SEDIMENT_VERIFIER_COMMANDS_FILE`` names a TOML file::

    [repos."owner/repo"]
    verification_command = "pytest -q"

Loading never raises and never runs a command: every problem is logged with a stable
event name and the affected entries are left out.
"""

from __future__ import annotations

import logging
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sediment.identifiers import normalize_repo_slug

ENV_VAR = "SEDIMENT_VERIFIER_COMMANDS_FILE"
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class VerifierCommands:
    """Repository slug → verification command."""

    commands: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> VerifierCommands:
        return cls({})

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> VerifierCommands:
        """Load the file named by ``SEDIMENT_VERIFIER_COMMANDS_FILE``; unset means empty."""
        value = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
        return cls.load(Path(value)) if value else cls.empty()

    @classmethod
    def load(cls, path: Path) -> VerifierCommands:
        if not path.exists():
            logger.info("verifier_commands_file_absent path=%s", path)
            return cls.empty()
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            logger.warning("verifier_commands_file_unreadable path=%s error=%s", path, exc)
            return cls.empty()
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            logger.warning("verifier_commands_file_malformed path=%s error=%s", path, exc)
            return cls.empty()
        repos = data.get("repos")
        if not isinstance(repos, dict):
            logger.warning("verifier_commands_bad_shape path=%s", path)
            return cls.empty()
        commands: dict[str, str] = {}
        for key, entry in repos.items():
            try:
                slug = normalize_repo_slug(key)
            except ValueError:
                slug = ""
            command = entry.get("verification_command") if isinstance(entry, dict) else None
            if not slug or not isinstance(command, str) or not command.strip():
                logger.warning("verifier_command_entry_invalid path=%s repo=%r", path, key)
                continue
            if slug in commands:
                logger.warning("verifier_command_key_collision path=%s repo=%s", path, slug)
            commands[slug] = command.strip()
        logger.info("verifier_commands_loaded path=%s repo_count=%d", path, len(commands))
        return cls(commands)

    def for_repo(self, repo: str) -> str | None:
        """The command configured for exactly this repository slug, if any."""
        return self.commands.get(repo)

    def verification(self, repo: str | None) -> dict[str, str] | None:
        """The row's ``verification`` object, or ``None`` (the field is then omitted)."""
        command = self.for_repo(repo) if repo else None
        return {"verification_command": command} if command is not None else None
