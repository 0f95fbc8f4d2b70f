"""The text of the git hooks ``sediment hooks install`` writes (see :mod:`sediment.git.hooks`).

Three git hooks (``post-commit``, ``post-rewrite``, ``pre-push``) are small ``sh`` wrappers
that run one Python runner, ``sediment-hook.py``, beside them. The runner

- first runs the hook the user had before (kept as ``HOOK.sediment-chained``) with the same
  arguments and standard input; a ``pre-push`` the user's hook refuses stays refused;
- ``mark TOOL``: called by an agent's own hook (Claude Code's ``PostToolUse``) with the hook
  event on stdin, appends the event's ``session_id`` to ``$GIT_DIR/sediment-pending``;
- ``post-commit``: writes the pending Sessions, and the Session the agent client exposes to
  child processes (its environment variable, :data:`SESSION_ENV`), into the new commit's
  ``refs/notes/sediment`` note ``{"v": 1, "sessions": [{"tool", "session_id", "stamped_at"}]}``,
  merged with a note the commit already has;
- ``post-rewrite``: carries the notes of amended and rebased commits to their new commits as
  one JSON note (git's own ``notes.rewriteRef`` copy concatenates two notes into text that is
  not JSON; this repairs it);
- ``pre-push``: pushes ``refs/notes/sediment`` to the remote being pushed to (merging the
  remote's notes first when they diverged) and records the outcome in ``$GIT_DIR/sediment-push``.

The runner never changes a commit, never fails a commit or a push for a note, and writes the
Session id nowhere but the notes ref (and the pending file inside the git directory).
"""

from __future__ import annotations

#: Where each agent client exposes its active Session to the processes it runs (the commands
#: of its shell tool, so the git hooks of a commit it makes): Claude Code's Bash tool sets
#: ``CLAUDE_CODE_SESSION_ID`` (the hooks' ``session_id``), Codex's shell tool ``CODEX_THREAD_ID``
#: (its thread, the session of its rollout files); ``env`` is any other agent or wrapper that
#: exports ``SEDIMENT_SESSION_ID`` (and, optionally, ``SEDIMENT_SESSION_TOOL``).
SESSION_ENV: dict[str, str] = {
    "claude-code": "CLAUDE_CODE_SESSION_ID",
    "codex": "CODEX_THREAD_ID",
    "env": "SEDIMENT_SESSION_ID",
}
#: The git hooks installed, each a wrapper of the runner.
GIT_HOOKS: tuple[str, ...] = ("post-commit", "post-rewrite", "pre-push")
RUNNER = "sediment-hook.py"
CHAINED_SUFFIX = ".sediment-chained"
MARKER = "sediment-hook v1"


def wrapper_script(hook: str) -> str:
    """The ``sh`` wrapper installed as git hook ``hook``: the runner, or without ``python3``
    the user's chained hook alone."""
    return (
        "#!/bin/sh\n"
        f"# {MARKER}: {hook}. Installed by `sediment hooks install`; `sediment hooks uninstall` removes it\n"
        "# (and restores the hook it chains to). Edits by hand are reported by `sediment hooks status`.\n"
        'hooks=$(dirname "$0")\n'
        "if command -v python3 >/dev/null 2>&1; then\n"
        f'  exec python3 "$hooks/{RUNNER}" {hook} "$@"\n'
        "fi\n"
        f'if [ -x "$hooks/{hook}{CHAINED_SUFFIX}" ]; then exec "$hooks/{hook}{CHAINED_SUFFIX}" "$@"; fi\n'
        "exit 0\n"
    )


def runner_script(clients: tuple[str, ...]) -> str:
    """The Python runner, reading the Sessions of ``clients`` (keys of :data:`SESSION_ENV`)."""
    env = {client: SESSION_ENV[client] for client in clients}
    return _RUNNER.replace("@CLIENTS@", repr(env)).replace("@MARKER@", MARKER)


_RUNNER = '''#!/usr/bin/env python3
"""@MARKER@: runner. Installed by `sediment hooks install`; stamps the active agent Session on
each commit as a refs/notes/sediment note and pushes that ref beside pushes. It never changes a
commit and never fails a commit or a push for a note."""
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

SESSION_ENV = @CLIENTS@
NOTES_REF = "refs/notes/sediment"
HERE = Path(__file__).resolve().parent
STDIN_HOOKS = ("pre-push", "post-rewrite", "mark")


def git(*args, data=None, cwd=None):
    return subprocess.run(["git", *args], input=data, capture_output=True, text=True, cwd=cwd)


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def git_dir(cwd=None):
    found = git("rev-parse", "--absolute-git-dir", cwd=cwd)
    return Path(found.stdout.strip()) if found.returncode == 0 and found.stdout.strip() else None


def chained(hook, args, data):
    path = HERE / (hook + ".sediment-chained")
    if hook == "mark" or not path.is_file() or not os.access(path, os.X_OK):
        return 0
    return subprocess.run([str(path), *args], input=data).returncode


def valid(entry):
    return isinstance(entry, dict) and isinstance(entry.get("session_id"), str) and entry["session_id"].strip()


def sessions_of(text):
    """The Sessions of a note: one JSON object, or several a concatenating rewrite joined."""
    found, decoder, text, at = [], json.JSONDecoder(), (text or "").strip(), 0
    while at < len(text):
        try:
            body, at = decoder.raw_decode(text, at)
        except ValueError:
            break
        while at < len(text) and text[at].isspace():
            at += 1
        if isinstance(body, dict) and body.get("v") == 1 and isinstance(body.get("sessions"), list):
            found.extend(entry for entry in body["sessions"] if valid(entry))
    return found


def merged(*groups):
    seen, out = set(), []
    for group in groups:
        for entry in group:
            key = (entry.get("tool"), entry["session_id"].strip())
            if key not in seen:
                seen.add(key)
                out.append(entry)
    return out


def note_of(commit):
    found = git("notes", "--ref=" + NOTES_REF, "show", commit)
    return found.stdout if found.returncode == 0 else None


def write_note(commit, sessions):
    text = json.dumps({"v": 1, "sessions": sessions}, separators=(",", ":"))
    return git("notes", "--ref=" + NOTES_REF, "add", "-f", "-F", "-", commit, data=text).returncode == 0


def mark(args, data):
    event = json.loads(data.decode("utf-8") or "{}")
    session = event.get("session_id") if isinstance(event, dict) else None
    if not isinstance(session, str) or not session.strip() or not args:
        return
    directory = git_dir(cwd=event.get("cwd") or None)
    if directory is None:
        return
    marker = {"tool": args[0], "session_id": session.strip(), "stamped_at": now()}
    with (directory / "sediment-pending").open("a", encoding="utf-8") as pending:
        pending.write(json.dumps(marker) + "\\n")


def post_commit():
    directory = git_dir()
    if directory is None:
        return
    pending = directory / "sediment-pending"
    markers = []
    if pending.is_file():
        for line in pending.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if valid(entry):
                markers.append(entry)
    tool = os.environ.get("SEDIMENT_SESSION_TOOL", "").strip() or "agent"
    from_env = [{"tool": tool if client == "env" else client, "session_id": os.environ[name].strip(),
                 "stamped_at": now()}
                for client, name in sorted(SESSION_ENV.items()) if os.environ.get(name, "").strip()]
    sessions = merged(markers, from_env)
    if not sessions:
        return
    head = git("rev-parse", "HEAD").stdout.strip()
    if head and write_note(head, merged(sessions_of(note_of(head)), sessions)):
        pending.unlink(missing_ok=True)


def post_rewrite(data):
    for line in data.decode("utf-8", "replace").splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        old, new = parts[0], parts[1]
        old_note, new_note = note_of(old), note_of(new)
        if old_note is None and new_note is None:
            continue
        sessions = merged(sessions_of(new_note), sessions_of(old_note))
        text = json.dumps({"v": 1, "sessions": sessions}, separators=(",", ":"))
        if sessions and (new_note or "").strip() != text:
            write_note(new, sessions)


def pre_push(args, data):
    if not args or git("rev-parse", "--verify", "-q", NOTES_REF).returncode != 0:
        return
    pushed = [line.split()[0] for line in data.decode("utf-8", "replace").splitlines() if line.split()]
    if NOTES_REF in pushed:
        return
    remote = args[0]
    result = git("push", "--no-verify", "--quiet", remote, NOTES_REF + ":" + NOTES_REF)
    if result.returncode != 0:  # the remote's notes moved on: merge them (ours win a conflict), retry once
        fetched = git("fetch", "--quiet", "--no-write-fetch-head", remote,
                      "+" + NOTES_REF + ":refs/notes/sediment-remote")
        if fetched.returncode == 0:
            git("notes", "--ref=" + NOTES_REF, "merge", "--quiet", "-s", "ours", "refs/notes/sediment-remote")
            result = git("push", "--no-verify", "--quiet", remote, NOTES_REF + ":" + NOTES_REF)
    error = " ".join(result.stderr.split())[:300] if result.returncode else None
    directory = git_dir()
    if directory is not None:
        record = {"at": now(), "remote": remote, "pushed": result.returncode == 0, "error": error}
        (directory / "sediment-push").write_text(json.dumps(record) + "\\n", encoding="utf-8")
    if error is not None:
        print("sediment: refs/notes/sediment not pushed to " + remote + ": " + error, file=sys.stderr)


def main():
    hook, args = (sys.argv[1] if len(sys.argv) > 1 else ""), sys.argv[2:]
    data = sys.stdin.buffer.read() if hook in STDIN_HOOKS else b""
    code = chained(hook, args, data)
    if hook == "pre-push" and code != 0:
        return code
    try:
        if hook == "mark":
            mark(args, data)
        elif hook == "post-commit":
            post_commit()
        elif hook == "post-rewrite":
            post_rewrite(data)
        elif hook == "pre-push":
            pre_push(args, data)
    except Exception as exc:  # a note is never worth a failed commit or push
        print("sediment hook " + hook + ": " + str(exc), file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
'''
