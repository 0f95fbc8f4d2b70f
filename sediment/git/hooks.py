"""Installing, inspecting and removing the git hooks that stamp agent Sessions on commits.

``install`` writes the hooks of :mod:`sediment.git.hook_scripts` into the repository's hooks
directory (``core.hooksPath`` honoured, as git resolves it), chains to a hook the user already
had (renamed ``HOOK.sediment-chained``, restored by ``uninstall``), and for Claude Code adds a
``PostToolUse`` hook to the repository's ``.claude/settings.local.json`` (Claude Code's
personal, uncommitted settings; the file is listed in ``$GIT_DIR/info/exclude`` so it is never
committed by accident). What it wrote is recorded, with each file's SHA-256, in
``$GIT_COMMON_DIR/sediment-hooks.json``: ``status`` compares against it (a hook edited by hand
is reported, never overwritten without ``force``) and ``uninstall`` removes exactly that.
Installing twice writes the same bytes. Nothing here prints.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sediment.errors import ConfigurationError, UsageError
from sediment.git.hook_scripts import (
    CHAINED_SUFFIX,
    GIT_HOOKS,
    MARKER,
    RUNNER,
    SESSION_ENV,
    runner_script,
    wrapper_script,
)

MANIFEST = "sediment-hooks.json"
CLAUDE_SETTINGS = Path(".claude") / "settings.local.json"
CLAUDE_MATCHER = "Edit|Write|MultiEdit|NotebookEdit"
EXCLUDE_LINE = "/.claude/settings.local.json"
NOTES_REF = "refs/notes/sediment"


@dataclass(frozen=True)
class RepoPaths:
    top: Path
    git_dir: Path  #: this worktree's git directory (the pending Sessions and the push record)
    common_dir: Path  #: the repository's shared git directory (the manifest, info/exclude)
    hooks_dir: Path

    @property
    def manifest(self) -> Path:
        return self.common_dir / MANIFEST


def _git(cwd: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise ConfigurationError("git is not installed (the hooks need git and python3)") from None
    except NotADirectoryError:
        raise UsageError(f"{cwd}: not a directory") from None
    if done.returncode != 0:
        message = " ".join(done.stderr.split()) or f"git {' '.join(args)} failed"
        raise ConfigurationError(f"{cwd}: {message}")
    return done.stdout.strip()


def locate(repo: Path) -> RepoPaths:
    """The directories of the working repository at or above ``repo``."""
    if not repo.is_dir():
        raise UsageError(f"{repo}: not a directory")
    top = Path(_git(repo, "rev-parse", "--show-toplevel"))
    git_dir = Path(_git(top, "rev-parse", "--absolute-git-dir"))
    common = Path(_git(top, "rev-parse", "--git-common-dir"))
    hooks = Path(_git(top, "rev-parse", "--git-path", "hooks"))  # honours core.hooksPath
    return RepoPaths(top, git_dir, common if common.is_absolute() else top / common,
                     hooks if hooks.is_absolute() else top / hooks)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _planned(clients: tuple[str, ...]) -> dict[str, str]:
    files = {hook: wrapper_script(hook) for hook in GIT_HOOKS}
    files[RUNNER] = runner_script(clients)
    return files


def _read_manifest(paths: RepoPaths) -> dict[str, Any] | None:
    try:
        data = json.loads(paths.manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"{paths.manifest}: unreadable ({exc}); remove it to reinstall") from None
    return data if isinstance(data, dict) else None


def _write(path: Path, text: str, mode: int) -> None:
    temporary = path.with_name(f".{path.name}.sediment-tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.chmod(mode)
    os.replace(temporary, path)


@dataclass
class InstallResult:
    paths: RepoPaths
    clients: tuple[str, ...]
    written: list[str] = field(default_factory=list)  #: files created or rewritten
    unchanged: list[str] = field(default_factory=list)
    chained: list[str] = field(default_factory=list)  #: user hooks now run first by ours
    claude_settings: bool = False


def _ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(encoding="utf-8", errors="replace")[:400]
    except OSError:
        return False


def install(repo: Path, clients: tuple[str, ...], *, force: bool = False) -> InstallResult:
    """Install (or bring up to date) the hooks in ``repo`` for ``clients``; idempotent.

    A hook of ours edited by hand since it was installed is refused (one line naming it)
    unless ``force``."""
    unknown = [c for c in clients if c not in SESSION_ENV]
    if unknown or not clients:
        raise UsageError(f"unknown client {unknown[0]!r} (choices: {', '.join(SESSION_ENV)})" if unknown
                         else "name at least one --client")
    clients = tuple(sorted(set(clients)))
    paths = locate(repo)
    previous = _read_manifest(paths) or {}
    recorded: dict[str, str] = previous.get("files", {}) if isinstance(previous.get("files"), dict) else {}
    paths.hooks_dir.mkdir(parents=True, exist_ok=True)
    result = InstallResult(paths, clients)
    planned = _planned(clients)
    for name in planned:
        target = paths.hooks_dir / name
        if (target.exists() and _ours(target) and name in recorded and not force
                and _digest(target.read_bytes()) != recorded[name]
                and target.read_text(encoding="utf-8") != planned[name]):
            raise ConfigurationError(f"{target}: edited by hand since `sediment hooks install`; "
                                         "rerun with --force to replace it")
    chained = set(previous.get("chained", [])) if isinstance(previous.get("chained"), list) else set()
    for name, text in planned.items():
        target = paths.hooks_dir / name
        if name in GIT_HOOKS and (target.exists() or target.is_symlink()) and not _ours(target):
            keep = target.with_name(name + CHAINED_SUFFIX)
            if keep.exists():
                raise ConfigurationError(f"{keep} already exists; move it or {target} aside and rerun")
            os.replace(target, keep)
            chained.add(name)
            result.chained.append(name)
        if target.exists() and target.read_text(encoding="utf-8", errors="replace") == text:
            result.unchanged.append(name)
            if target.stat().st_mode & 0o777 != 0o755:
                target.chmod(0o755)
            continue
        _write(target, text, 0o755)
        result.written.append(name)
    exclude_added = bool(previous.get("exclude_added"))
    if "claude-code" in clients:
        result.claude_settings = _add_claude_hook(paths)
        exclude_added = _add_exclude(paths) or exclude_added
    manifest = {"v": 1, "clients": list(clients), "chained": sorted(chained),
                "claude_settings": "claude-code" in clients or bool(previous.get("claude_settings")),
                "exclude_added": exclude_added,
                "files": {name: _digest(text.encode("utf-8")) for name, text in sorted(planned.items())}}
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    if not paths.manifest.exists() or paths.manifest.read_text(encoding="utf-8") != text:
        _write(paths.manifest, text, 0o644)
    return result


def _mark_command() -> str:
    return f'python3 "$(git rev-parse --git-path hooks)/{RUNNER}" mark claude-code'


def _claude_settings(paths: RepoPaths) -> tuple[Path, dict[str, Any]]:
    path = paths.top / CLAUDE_SETTINGS
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return path, {}
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"{path}: not readable JSON ({exc}); fix it and rerun") from None
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path}: expected a JSON object")
    return path, data


def _is_ours(group: Any) -> bool:
    return isinstance(group, dict) and any(isinstance(h, dict) and RUNNER in str(h.get("command", ""))
                                           for h in group.get("hooks", []) if isinstance(group.get("hooks"), list))


def _add_claude_hook(paths: RepoPaths) -> bool:
    """Add the ``PostToolUse`` marker hook to Claude Code's local settings; True when written."""
    path, data = _claude_settings(paths)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigurationError(f"{path}: \"hooks\" is not an object")
    groups = hooks.setdefault("PostToolUse", [])
    if not isinstance(groups, list):
        raise ConfigurationError(f"{path}: \"hooks.PostToolUse\" is not a list")
    wanted = {"matcher": CLAUDE_MATCHER, "hooks": [{"type": "command", "command": _mark_command()}]}
    if wanted in groups:
        return False
    groups[:] = [g for g in groups if not _is_ours(g)] + [wanted]
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, json.dumps(data, indent=2) + "\n", 0o644)
    return True


def _remove_claude_hook(paths: RepoPaths) -> bool:
    path, data = _claude_settings(paths)
    hooks = data.get("hooks")
    groups = hooks.get("PostToolUse") if isinstance(hooks, dict) else None
    if not isinstance(hooks, dict) or not isinstance(groups, list) or not any(_is_ours(g) for g in groups):
        return False
    groups[:] = [g for g in groups if not _is_ours(g)]
    if not groups:
        del hooks["PostToolUse"]
    if not hooks:
        del data["hooks"]
    if data:
        _write(path, json.dumps(data, indent=2) + "\n", 0o644)
    else:
        path.unlink()
        if path.parent.is_dir() and not any(path.parent.iterdir()):
            path.parent.rmdir()
    return True


def _exclude_path(paths: RepoPaths) -> Path:
    return paths.common_dir / "info" / "exclude"


def _add_exclude(paths: RepoPaths) -> bool:
    path = _exclude_path(paths)
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    if EXCLUDE_LINE in lines:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, "".join(line + "\n" for line in [*lines, EXCLUDE_LINE]), 0o644)
    return True


@dataclass(frozen=True)
class HookState:
    name: str
    state: str  #: ``installed``, ``modified`` (ours, edited by hand), ``missing``, ``foreign`` (not ours)
    chained: bool  #: a user hook runs before ours


@dataclass(frozen=True)
class HooksStatus:
    paths: RepoPaths
    installed: bool
    clients: tuple[str, ...]
    hooks: tuple[HookState, ...]
    claude_settings: bool | None  #: the marker hook is in Claude Code's settings (None: not asked for)
    notes: int  #: commits with a ``refs/notes/sediment`` note in this repository
    pending_sessions: int  #: Sessions marked and waiting for the next commit
    last_push: dict[str, Any] | None  #: the last ``pre-push`` outcome (``at``, ``remote``, ``pushed``, ``error``)

    def as_json(self) -> dict[str, Any]:
        return {"repository": str(self.paths.top), "hooks_dir": str(self.paths.hooks_dir),
                "installed": self.installed, "clients": list(self.clients),
                "hooks": [{"name": h.name, "state": h.state, "chained": h.chained} for h in self.hooks],
                "claude_settings": self.claude_settings, "notes": self.notes,
                "pending_sessions": self.pending_sessions, "last_push": self.last_push}


def status(repo: Path) -> HooksStatus:
    """What is installed in ``repo``, what was edited by hand, and whether notes are written and pushed."""
    paths = locate(repo)
    manifest = _read_manifest(paths) or {}
    recorded = manifest.get("files") if isinstance(manifest.get("files"), dict) else {}
    assert isinstance(recorded, dict)
    states = []
    for name in (*GIT_HOOKS, RUNNER):
        target = paths.hooks_dir / name
        if not target.exists():
            state = "missing"
        elif not _ours(target):
            state = "foreign"
        elif recorded.get(name) != _digest(target.read_bytes()):
            state = "modified"
        else:
            state = "installed"
        states.append(HookState(name, state, (paths.hooks_dir / (name + CHAINED_SUFFIX)).exists()))
    clients = tuple(str(c) for c in manifest.get("clients", []) if isinstance(c, str))
    claude = None
    if "claude-code" in clients:
        _, data = _claude_settings(paths)
        hooks = data.get("hooks")
        groups = hooks.get("PostToolUse") if isinstance(hooks, dict) else None
        claude = isinstance(groups, list) and any(_is_ours(g) for g in groups)
    listed = subprocess.run(["git", "notes", f"--ref={NOTES_REF}", "list"], cwd=paths.top, capture_output=True,
                            text=True, check=False)
    notes = len(listed.stdout.splitlines()) if listed.returncode == 0 else 0
    pending = paths.git_dir / "sediment-pending"
    pending_count = len(pending.read_text(encoding="utf-8", errors="replace").splitlines()) if pending.is_file() else 0
    last_push = None
    try:
        found = json.loads((paths.git_dir / "sediment-push").read_text(encoding="utf-8"))
        last_push = found if isinstance(found, dict) else None
    except (OSError, ValueError):
        pass
    return HooksStatus(paths, bool(manifest), clients, tuple(states), claude, notes, pending_count, last_push)


@dataclass
class UninstallResult:
    paths: RepoPaths
    removed: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)  #: user hooks put back in place
    kept: list[str] = field(default_factory=list)  #: ours but edited by hand: left in place
    claude_settings: bool = False


def uninstall(repo: Path, *, force: bool = False) -> UninstallResult:
    """Remove what :func:`install` wrote and put back the hooks it chained to. A hook of ours
    edited by hand is kept (and its chained hook stays beside it) unless ``force``."""
    paths = locate(repo)
    manifest = _read_manifest(paths)
    result = UninstallResult(paths)
    if manifest is None:
        return result
    recorded = manifest.get("files") if isinstance(manifest.get("files"), dict) else {}
    assert isinstance(recorded, dict)
    for name in (*GIT_HOOKS, RUNNER):
        target = paths.hooks_dir / name
        keep = target.with_name(name + CHAINED_SUFFIX)
        if target.exists() and _ours(target):
            if recorded.get(name) != _digest(target.read_bytes()) and not force:
                result.kept.append(name)
                continue
            target.unlink()
            result.removed.append(name)
        if keep.exists() or keep.is_symlink():
            if target.exists() or target.is_symlink():
                result.kept.append(keep.name)
                continue
            os.replace(keep, target)
            result.restored.append(name)
    if manifest.get("claude_settings"):
        result.claude_settings = _remove_claude_hook(paths)
    if manifest.get("exclude_added"):
        path = _exclude_path(paths)
        if path.exists():
            lines = path.read_text(encoding="utf-8").splitlines()
            if EXCLUDE_LINE in lines:
                lines.remove(EXCLUDE_LINE)
                _write(path, "".join(line + "\n" for line in lines), 0o644)
    if not result.kept:
        paths.manifest.unlink()
        for leftover in (paths.git_dir / "sediment-push",):
            leftover.unlink(missing_ok=True)
    return result
