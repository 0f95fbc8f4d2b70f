"""The git note hooks docs/receiver.md tells operators to install (`sediment hooks install`) work
as documented: an agent hook event, a commit, and the commit's ``refs/notes/sediment`` note names
the Session, read back by a Sediment mirror."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sediment.git.hooks import install
from sediment.git.mirror import NoteEdge
from sediment.git.mirror_root import MirrorRoot

DOC = Path(__file__).parent.parent / "docs" / "receiver.md"


def git(cwd: Path, *args: str) -> str:
    agent = ("CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID", "SEDIMENT_SESSION_ID")  # the hooks read these
    env = {**{k: v for k, v in os.environ.items() if k not in agent}, "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("python3") is None,
                    reason="the hooks need git and python3")
def test_documented_hooks_write_a_note_sediment_reads(tmp_path: Path) -> None:
    assert "sediment hooks install --client claude-code" in DOC.read_text()
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    install(work, ("claude-code",))
    settings = json.loads((work / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID",
                                                            "SEDIMENT_SESSION_ID")}

    # Two edits of one Session and one of another, as Claude Code's PostToolUse hook sends them.
    for session in ("sess-a", "sess-a", "sess-b"):
        event = {"session_id": session, "cwd": str(work), "hook_event_name": "PostToolUse", "tool_name": "Edit"}
        subprocess.run(["sh", "-c", command], input=json.dumps(event), text=True, check=True, cwd=work, env=env)
    (work / "calc.py").write_text("x = 1\n")
    git(work, "add", "calc.py")
    git(work, "commit", "-q", "-m", "first")
    head = git(work, "rev-parse", "HEAD").strip()
    assert not (work / ".git" / "sediment-pending").exists()
    note = json.loads(git(work, "notes", "--ref=sediment", "show", head))
    assert note["v"] == 1
    assert [(s["tool"], s["session_id"]) for s in note["sessions"]] == [("claude-code", "sess-a"),
                                                                         ("claude-code", "sess-b")]
    # A commit without agent edits gets no note, and the commit still succeeds.
    (work / "calc.py").write_text("x = 2\n")
    git(work, "commit", "-q", "-am", "by hand")
    second = git(work, "rev-parse", "HEAD").strip()
    assert subprocess.run(["git", "notes", "--ref=sediment", "show", second], cwd=work,
                          capture_output=True).returncode != 0

    mirrors = tmp_path / "mirrors"
    mirrors.mkdir()
    root = MirrorRoot(mirrors)
    root.add("acme", "acme/calc", str(work))
    mirror = root.open("acme", "acme/calc")
    assert mirror is not None
    edges = [edge for edge in mirror.note_edges() if isinstance(edge, NoteEdge)]
    assert sorted((edge.commit_sha, edge.session_id) for edge in edges) == [(head, "sess-a"), (head, "sess-b")]
