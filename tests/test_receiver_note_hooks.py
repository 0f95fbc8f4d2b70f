"""The git note hooks docs/receiver.md prints work as printed: an agent hook event, a commit, and
the commit's ``refs/notes/sediment`` note names the Session, read back by a Sediment mirror."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sediment.git.mirror import NoteEdge
from sediment.git.mirror_root import MirrorRoot

DOC = Path(__file__).parent.parent / "docs" / "receiver.md"


def blocks(language: str) -> list[str]:
    """The fenced blocks of one language in the page, dedented by their fence's indentation."""
    found = []
    for match in re.finditer(rf"^( *)```{language}\n(.*?)^\1```", DOC.read_text(), re.S | re.M):
        indent = len(match.group(1))
        found.append("".join(line[indent:] + "\n" for line in match.group(2).splitlines()))
    return found


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("python3") is None,
                    reason="the documented hooks need git and python3")
def test_documented_hooks_write_a_note_sediment_reads(tmp_path: Path) -> None:
    (mark,) = [block for block in blocks("python") if "sediment-pending" in block]
    (post_commit,) = [block for block in blocks("sh") if "git notes --ref=sediment" in block]
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    git(work, "config", "notes.rewriteRef", "refs/notes/sediment")
    hooks = work / ".git" / "hooks"
    (hooks / "sediment-mark").write_text(mark)
    (hooks / "post-commit").write_text(post_commit)
    (hooks / "post-commit").chmod(0o755)

    # Two edits of one Session and one of another, as Claude Code's PostToolUse hook sends them.
    for session in ("sess-a", "sess-a", "sess-b"):
        event = {"session_id": session, "cwd": str(work), "hook_event_name": "PostToolUse", "tool_name": "Edit"}
        subprocess.run(["python3", str(hooks / "sediment-mark"), "claude-code"], input=json.dumps(event),
                       text=True, check=True, cwd=work)
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
