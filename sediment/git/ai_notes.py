"""git-ai authorship notes (``refs/notes/ai``, schema ``authorship/3.0.0``): which agent Sessions
and humans wrote which lines of the commit a note is attached to (docs/evidence.md).

A note is an attestation section, a line ``---``, then a JSON metadata object. The attestation
section lists file paths (quoted when they contain whitespace), each followed by entries
indented by two spaces, ``<key> <ranges>``. A key is a session plus checkpoint trace
(``s_<14 hex>::t_<14 hex>``, looked up in ``metadata.sessions``), a human seen typing
(``h_<14 hex>``, in ``metadata.humans``), a legacy session (16 hex, 7 in pre-1.0 notes, in
``metadata.prompts``) or the literal ``human`` of pre-1.0 notes.

:func:`parse_note` reads one note into its :class:`Attestation` lines (every entry kept, a key
without metadata as AI lines of an unknown agent) and the agents it names; the agents with a
Session id become SessionCommitObservation edges of the annotated commit (``agent_id.id`` is the
Session: Claude Code's ``sessionId``, Codex's ``session_meta.payload.id``). Pure; a note that is not
``authorship/3.0.0`` raises :class:`GitAiNoteError` with the reason.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

SCHEMA_VERSION: Final = "authorship/3.0.0"
NOTES_REF: Final = "refs/notes/ai"
OLD_SCHEMA_VERSION: Final = "authorship/0.0.1"

_SESSION_KEY: Final = re.compile(r"s_[0-9a-f]{14}::t_[0-9a-f]{14}")
_HUMAN_KEY: Final = re.compile(r"h_[0-9a-f]{14}")
_LEGACY_KEY: Final = re.compile(r"[0-9a-f]{16}|[0-9a-f]{7}")
_RANGE: Final = re.compile(r"([1-9][0-9]*)(?:-([1-9][0-9]*))?")

AuthorKind = Literal["ai", "human"]
KeyKind = Literal["session", "legacy", "human", "human_literal"]


class GitAiNoteError(ValueError):
    """The note is not an ``authorship/3.0.0`` note that can be read; the message says why."""


@dataclass(frozen=True)
class Agent:
    """An agent Session a note names (``agent_id`` of a ``sessions`` or ``prompts`` entry)."""

    tool: str | None
    session_id: str | None
    model: str | None
    human_author: str | None


@dataclass(frozen=True)
class Attestation:
    """One attestation entry: lines of one file written by one key (git-ai's authorship/3.0.0 attestation)."""

    file_path: str
    key: str
    key_kind: KeyKind
    #: as written, not sorted (``…,131-144,111`` occurs); each ``(first, last)``, 1-based
    line_ranges: tuple[tuple[int, int], ...]
    author_kind: AuthorKind
    #: the agent of an AI key, ``None`` when the key has no metadata entry (a dangling key)
    agent: Agent | None
    #: the checkpoint trace (``t_…``) of a session key
    trace_id: str | None
    human_author: str | None


@dataclass(frozen=True)
class GitAiNote:
    schema_version: str
    base_commit_sha: str
    git_ai_version: str | None
    attestations: tuple[Attestation, ...]
    #: every agent of ``sessions`` and ``prompts``, by key, in key order
    agents: tuple[tuple[str, Agent], ...]
    humans: tuple[tuple[str, str | None], ...]

    @property
    def dangling_keys(self) -> tuple[str, ...]:
        """AI keys of attestation lines that no metadata entry names."""
        return tuple(sorted({a.key for a in self.attestations if a.author_kind == "ai" and a.agent is None}))

    @property
    def sessions(self) -> tuple[Agent, ...]:
        """The distinct agent Sessions the note names (by ``(tool, session id)``), in key order:
        whether their lines survive in the commit or not (an agent that only deleted lines has
        no attestation), each took part in it."""
        seen: dict[tuple[str | None, str], Agent] = {}
        for _, agent in self.agents:
            if agent.session_id is not None:
                seen.setdefault((agent.tool, agent.session_id), agent)
        return tuple(seen.values())


def session_key(tool: str, session_id: str) -> str:
    """``s_`` + the first 14 hex of sha256(``<tool>:<id>``): the key git-ai derives for a Session."""
    return "s_" + hashlib.sha256(f"{tool}:{session_id}".encode()).hexdigest()[:14]


def legacy_key(tool: str, session_id: str) -> str:
    return hashlib.sha256(f"{tool}:{session_id}".encode()).hexdigest()[:16]


def human_key(author: str) -> str:
    return "h_" + hashlib.sha256(author.encode()).hexdigest()[:14]


def _text(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise GitAiNoteError(f"{where}: expected a string, got {type(value).__name__}")
    return value


def _agent(entry: Any, where: str) -> Agent:
    if not isinstance(entry, Mapping):
        raise GitAiNoteError(f"{where}: expected an object, got {type(entry).__name__}")
    agent_id = entry.get("agent_id")
    if agent_id is not None and not isinstance(agent_id, Mapping):
        raise GitAiNoteError(f"{where}.agent_id: expected an object, got {type(agent_id).__name__}")
    agent_id = agent_id or {}
    session = _text(agent_id.get("id"), f"{where}.agent_id.id")
    return Agent(tool=_text(agent_id.get("tool"), f"{where}.agent_id.tool"),
                 session_id=session if session and session.strip() else None,
                 model=_text(agent_id.get("model"), f"{where}.agent_id.model"),
                 human_author=_text(entry.get("human_author"), f"{where}.human_author"))


def _map(metadata: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = metadata.get(name)
    if value is None:
        return {}  # a missing map is an empty one
    if not isinstance(value, Mapping):
        raise GitAiNoteError(f"metadata.{name}: expected an object, got {type(value).__name__}")
    return value


def _ranges(text: str, where: str) -> tuple[tuple[int, int], ...]:
    found = []
    for part in text.split(","):
        match = _RANGE.fullmatch(part.strip())
        if match is None:
            raise GitAiNoteError(f"{where}: {part.strip()!r} is not a line or a range")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        if last < first:
            raise GitAiNoteError(f"{where}: range {part.strip()!r} ends before it starts")
        found.append((first, last))
    return tuple(found)


def _path(line: str) -> str:
    if len(line) >= 2 and line.startswith('"') and line.endswith('"'):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            return line[1:-1]
        return value if isinstance(value, str) else line[1:-1]
    return line


def parse_note(text: str) -> GitAiNote:
    """One note body → its attestations and agents (see the module); GitAiNoteError says why not."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            body = json.loads(stripped)
        except json.JSONDecodeError:
            body = None
        version = body.get("schema_version") if isinstance(body, Mapping) else None
        if version == OLD_SCHEMA_VERSION:
            raise GitAiNoteError(f"schema_version {OLD_SCHEMA_VERSION}: the old per-commit format "
                                 "(refs/ai/authorship/<sha>) names authors, not Sessions; not read")
        raise GitAiNoteError("not an authorship note: no '---' line before the metadata")
    lines = text.split("\n")
    try:
        divider = next(i for i, line in enumerate(lines) if line.rstrip("\r") == "---")
    except StopIteration:
        raise GitAiNoteError("not an authorship note: no '---' line before the metadata") from None
    try:
        metadata = json.loads("\n".join(lines[divider + 1:]))
    except json.JSONDecodeError as exc:
        raise GitAiNoteError(f"metadata: not JSON ({exc.msg}, line {exc.lineno + divider + 1})") from None
    if not isinstance(metadata, Mapping):
        raise GitAiNoteError(f"metadata: expected an object, got {type(metadata).__name__}")
    version = metadata.get("schema_version")
    if version != SCHEMA_VERSION:
        raise GitAiNoteError(f"metadata.schema_version: {version!r} is not {SCHEMA_VERSION!r}")
    base = _text(metadata.get("base_commit_sha"), "metadata.base_commit_sha")
    if base is None:
        raise GitAiNoteError("metadata.base_commit_sha: missing")
    if "prompts" not in metadata:
        raise GitAiNoteError("metadata.prompts: missing")
    sessions = {key: _agent(entry, f"metadata.sessions.{key}") for key, entry in _map(metadata, "sessions").items()}
    prompts = {key: _agent(entry, f"metadata.prompts.{key}") for key, entry in _map(metadata, "prompts").items()}
    humans: dict[str, str | None] = {}
    for key, entry in _map(metadata, "humans").items():
        if not isinstance(entry, Mapping):
            raise GitAiNoteError(f"metadata.humans.{key}: expected an object, got {type(entry).__name__}")
        humans[key] = _text(entry.get("author"), f"metadata.humans.{key}.author")
    attestations: list[Attestation] = []
    current: str | None = None
    for number, raw_line in enumerate(lines[:divider], start=1):
        line = raw_line.rstrip("\r")
        if not line.strip():
            continue
        if not line.startswith(" "):
            current = _path(line)
            continue
        where = f"line {number}"
        if current is None or not line.startswith("  ") or line.startswith("   "):
            raise GitAiNoteError(f"{where}: an entry must follow a file path, indented by two spaces")
        key, _, ranges = line[2:].partition(" ")
        attestations.append(_attestation(current, key, _ranges(ranges, where), sessions, prompts, humans, where))
    agents = sorted([*sessions.items(), *prompts.items()])
    return GitAiNote(schema_version=version, base_commit_sha=base,
                     git_ai_version=_text(metadata.get("git_ai_version"), "metadata.git_ai_version"),
                     attestations=tuple(attestations), agents=tuple(agents), humans=tuple(sorted(humans.items())))


def _attestation(path: str, key: str, ranges: tuple[tuple[int, int], ...], sessions: Mapping[str, Agent],
                 prompts: Mapping[str, Agent], humans: Mapping[str, str | None], where: str) -> Attestation:
    if _SESSION_KEY.fullmatch(key):
        session, _, trace = key.partition("::")
        agent = sessions.get(session)
        return Attestation(path, key, "session", ranges, "ai", agent, trace, agent.human_author if agent else None)
    if _HUMAN_KEY.fullmatch(key):
        return Attestation(path, key, "human", ranges, "human", None, None, humans.get(key))
    if key == "human":
        return Attestation(path, key, "human_literal", ranges, "human", None, None, None)
    if _LEGACY_KEY.fullmatch(key):
        agent = prompts.get(key)
        return Attestation(path, key, "legacy", ranges, "ai", agent, None, agent.human_author if agent else None)
    raise GitAiNoteError(f"{where}: {key!r} is not a session, human or legacy key")
