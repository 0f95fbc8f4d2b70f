"""`sediment hooks`: the installed git hooks, run by the real `git` binary on a real repository,
note the commits of a simulated agent Session under refs/notes/sediment, push that ref beside
pushes, and the notes they write are what `mirror add` / ingest read and derive binds
(docs/receiver.md, "Installing the git note hooks")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from sediment.git.hooks import install, status, uninstall

pytestmark = pytest.mark.skipif(shutil.which("git") is None or shutil.which("python3") is None,
                                reason="the hooks need git and python3")

AGENT_ENV = ("CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID", "SEDIMENT_SESSION_ID", "SEDIMENT_SESSION_TOOL")


def git_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in AGENT_ENV and not k.startswith("GIT_")}
    return env | {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com", "GIT_COMMITTER_NAME": "Dev",
                  "GIT_COMMITTER_EMAIL": "dev@example.com", "GIT_AUTHOR_DATE": "2026-03-02T09:05:00Z",
                  "GIT_COMMITTER_DATE": "2026-03-02T09:05:00Z", **extra}


def git(cwd: Path, *args: str, ok: bool = True, **env: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=git_env(**env), check=False)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def new_repo(tmp_path: Path, name: str = "work") -> Path:
    work = tmp_path / name
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    return work


def note(work: Path, commit: str = "HEAD") -> dict[str, object] | None:
    shown = git(work, "notes", "--ref=sediment", "show", commit, ok=False)
    return json.loads(shown.stdout) if shown.returncode == 0 else None


def sessions(work: Path, commit: str = "HEAD") -> list[tuple[str, str]]:
    found = note(work, commit)
    assert found is not None and found["v"] == 1
    entries = found["sessions"]
    assert isinstance(entries, list)
    return [(entry["tool"], entry["session_id"]) for entry in entries]


def claude_edit(work: Path, session: str) -> None:
    """Claude Code's PostToolUse hook, as its settings file tells it to run (through a shell,
    the event on stdin, in the project directory)."""
    settings = json.loads((work / ".claude" / "settings.local.json").read_text())
    (group,) = settings["hooks"]["PostToolUse"]
    assert group["matcher"] == "Edit|Write|MultiEdit|NotebookEdit"
    event = {"session_id": session, "cwd": str(work), "hook_event_name": "PostToolUse", "tool_name": "Edit",
             "transcript_path": "/dev/null", "tool_input": {"file_path": str(work / "calc.py")}}
    done = subprocess.run(["sh", "-c", group["hooks"][0]["command"]], input=json.dumps(event), text=True,
                          cwd=work, env=git_env(), capture_output=True, check=False)
    assert done.returncode == 0, done.stderr


def snapshot_tree(*roots: Path) -> dict[str, bytes]:
    found = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                found[str(path)] = path.read_bytes()
    return found


def test_install_twice_writes_the_same_files_and_uninstall_restores_the_users_hook(tmp_path: Path) -> None:
    work = new_repo(tmp_path)
    hooks = work / ".git" / "hooks"
    users = "#!/bin/sh\necho mine >> \"$(git rev-parse --git-dir)/user-log\"\n"
    (hooks / "post-commit").write_text(users)
    (hooks / "post-commit").chmod(0o755)
    exclude_before = (work / ".git" / "info" / "exclude").read_bytes()

    first = install(work, ("claude-code",))
    assert first.chained == ["post-commit"]
    assert sorted(first.written) == ["post-commit", "post-rewrite", "pre-push", "sediment-hook.py"]
    files = snapshot_tree(hooks, work / ".claude", work / ".git" / "info") | {
        "manifest": (work / ".git" / "sediment-hooks.json").read_bytes()}
    second = install(work, ("claude-code",))
    assert second.written == [] and second.chained == [] and not second.claude_settings
    assert snapshot_tree(hooks, work / ".claude", work / ".git" / "info") | {
        "manifest": (work / ".git" / "sediment-hooks.json").read_bytes()} == files
    assert (hooks / "post-commit.sediment-chained").read_text() == users
    assert "/.claude/settings.local.json" in (work / ".git" / "info" / "exclude").read_text()
    assert all(h.state == "installed" for h in status(work).hooks)

    # the user's hook still runs, once per commit, and the settings file is never committed
    (work / "a.py").write_text("a = 1\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "one")
    assert (work / ".git" / "user-log").read_text() == "mine\n"
    assert git(work, "show", "--name-only", "--format=", "HEAD").stdout.split() == ["a.py"]

    removed = uninstall(work)
    assert sorted(removed.removed) == ["post-commit", "post-rewrite", "pre-push", "sediment-hook.py"]
    assert removed.restored == ["post-commit"] and removed.kept == []
    assert (hooks / "post-commit").read_text() == users and os.access(hooks / "post-commit", os.X_OK)
    assert not (hooks / "post-commit.sediment-chained").exists() and not (hooks / "pre-push").exists()
    assert not (work / ".claude").exists()
    assert (work / ".git" / "info" / "exclude").read_bytes() == exclude_before
    assert not (work / ".git" / "sediment-hooks.json").exists()
    assert not status(work).installed


def test_uninstall_keeps_a_hand_edited_hook_and_claude_settings_of_the_user(tmp_path: Path) -> None:
    work = new_repo(tmp_path)
    (work / ".claude").mkdir()
    mine = {"permissions": {"allow": ["Bash(ls:*)"]},
            "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}
    (work / ".claude" / "settings.local.json").write_text(json.dumps(mine))
    install(work, ("claude-code", "codex"))
    settings = json.loads((work / ".claude" / "settings.local.json").read_text())
    assert settings["permissions"] == mine["permissions"]
    assert len(settings["hooks"]["PostToolUse"]) == 2
    pre_push = work / ".git" / "hooks" / "pre-push"
    pre_push.write_text(pre_push.read_text() + "# my change\n")
    found = {h.name: h.state for h in status(work).hooks}
    assert found["pre-push"] == "modified" and found["post-commit"] == "installed"
    with pytest.raises(Exception, match="edited by hand"):
        install(work, ("claude-code", "codex"))
    removed = uninstall(work)
    assert removed.kept == ["pre-push"] and pre_push.exists()
    assert json.loads((work / ".claude" / "settings.local.json").read_text()) == mine
    assert uninstall(work, force=True).removed == ["pre-push"]
    assert not pre_push.exists()


def test_core_hooks_path_is_honoured(tmp_path: Path) -> None:
    work = new_repo(tmp_path)
    git(work, "config", "core.hooksPath", "githooks")
    result = install(work, ("env",))
    assert result.paths.hooks_dir == work / "githooks"
    assert (work / "githooks" / "post-commit").exists() and not (work / ".git" / "hooks" / "post-commit").exists()
    (work / "a.py").write_text("a = 1\n")
    git(work, "add", "a.py")
    git(work, "commit", "-q", "-m", "one", SEDIMENT_SESSION_ID="sess-env", SEDIMENT_SESSION_TOOL="aider")
    assert sessions(work) == [("aider", "sess-env")]


def test_a_users_pre_push_refusal_still_refuses_the_push(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    work = new_repo(tmp_path)
    hooks = work / ".git" / "hooks"
    (hooks / "pre-push").write_text("#!/bin/sh\ncat > /dev/null\necho refused >&2\nexit 1\n")
    (hooks / "pre-push").chmod(0o755)
    install(work, ("codex",))
    (work / "a.py").write_text("a = 1\n")
    git(work, "add", "a.py")
    git(work, "commit", "-q", "-m", "one", CODEX_THREAD_ID="019dba93-8214-7d50-a089-9690b4ce6b9e")
    pushed = git(work, "push", "-q", str(remote), "main", ok=False)
    assert pushed.returncode != 0 and "refused" in pushed.stderr
    assert pygit2.Repository(str(remote)).references.get("refs/notes/sediment") is None


def test_amend_and_rebase_keep_one_json_note(tmp_path: Path) -> None:
    work = new_repo(tmp_path)
    git(work, "config", "notes.rewriteRef", "refs/notes/sediment")  # git's own copy concatenates
    install(work, ("claude-code",))
    (work / "a.py").write_text("a = 1\n")
    git(work, "add", "a.py")
    git(work, "commit", "-q", "-m", "one", CLAUDE_CODE_SESSION_ID="sess-a")
    git(work, "commit", "-q", "--amend", "-m", "one, amended", CLAUDE_CODE_SESSION_ID="sess-b")
    assert sessions(work) == [("claude-code", "sess-b"), ("claude-code", "sess-a")]
    git(work, "config", "--unset", "notes.rewriteRef")  # the post-rewrite hook carries notes by itself
    git(work, "commit", "-q", "--amend", "-m", "by hand")
    assert sessions(work) == [("claude-code", "sess-b"), ("claude-code", "sess-a")]


def test_agent_commits_are_noted_pushed_read_by_a_mirror_and_bind_their_session(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    work = new_repo(tmp_path)
    git(work, "remote", "add", "origin", str(remote))
    install(work, ("claude-code", "codex"))

    # Claude Code edits (its PostToolUse hook marks the Session); the developer commits by hand.
    claude_edit(work, "sess-claude")
    claude_edit(work, "sess-claude")
    (work / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(work, "add", "calc.py")
    tree_before = git(work, "write-tree").stdout.strip()
    git(work, "commit", "-q", "-m", "fix add")
    first = git(work, "rev-parse", "HEAD").stdout.strip()
    assert sessions(work) == [("claude-code", "sess-claude")]
    commit = pygit2.Repository(str(work))[first]
    assert (str(commit.tree_id), commit.author.email, commit.message) == (tree_before, "dev@example.com", "fix add\n")
    assert not (work / ".git" / "sediment-pending").exists()
    # Codex commits through its shell tool, which carries CODEX_THREAD_ID.
    (work / "test_calc.py").write_text("from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n")
    git(work, "add", "test_calc.py")
    git(work, "commit", "-q", "-m", "test add", CODEX_THREAD_ID="thread-codex")
    second = git(work, "rev-parse", "HEAD").stdout.strip()
    assert sessions(work) == [("codex", "thread-codex")]
    # A commit no agent session made gets no note.
    (work / "README.md").write_text("calc\n")
    git(work, "add", "README.md")
    git(work, "commit", "-q", "-m", "readme")
    assert note(work) is None

    git(work, "push", "-q", "origin", "main")
    bare = pygit2.Repository(str(remote))
    assert bare.references.get("refs/notes/sediment") is not None
    assert sorted(str(n.annotated_id) for n in bare.notes("refs/notes/sediment")) == sorted([first, second])  # type: ignore[call-arg]
    # the Session ids went nowhere but the notes ref
    assert sorted(bare.references) == ["refs/heads/main", "refs/notes/sediment"]
    found = status(work)
    assert (found.notes, found.pending_sessions) == (2, 0)
    assert found.last_push is not None and found.last_push["pushed"] is True

    # Sediment's operator side: mirror the remote, ingest the Sessions' calls, derive.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env |= {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": "acme",
            "SEDIMENT_CAPTURE_TIME": "2026-03-03T09:00:00Z"}

    def sediment(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=env,
                              check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    sediment("mirror", "add", "acme/calc", str(remote))
    calls = tmp_path / "calls.jsonl"
    calls.write_text("".join(json.dumps({
        "session_id": session, "observed_at": "2026-03-02T09:00:00Z", "headers": {"x-sediment-session": session},
        "request": {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "fix add"}]},
        "response": {"id": f"chatcmpl-{session}", "object": "chat.completion", "created": 1772442000,
                     "model": "gpt-4.1-mini", "choices": [{"index": 0, "finish_reason": "stop", "message": {
                         "role": "assistant", "content": "done"}}]}}) + "\n"
        for session in ("sess-claude", "thread-codex")))
    sediment("ingest", "calls", "--format", "openai-chat", str(calls))
    manifest = json.loads(sediment("derive", "--out", str(tmp_path / "bundle"), "--json"))
    assert manifest["counts"]["rollouts"] == 2
    records = (json.loads(json.loads(line)["record_json"]) for line in (tmp_path / "bundle" / "rollouts.jsonl").open())
    rollouts = {r["session_id"]: r for r in records}
    assert rollouts["sess-claude"]["attribution_source"] == "git_notes"
    assert [c["commit_sha"] for c in rollouts["sess-claude"]["commits"]] == [first]
    assert [c["commit_sha"] for c in rollouts["thread-codex"]["commits"]] == [second]


def test_notes_of_two_developers_merge_on_push(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    alice = new_repo(tmp_path, "alice")
    git(alice, "remote", "add", "origin", str(remote))
    install(alice, ("env",))
    (alice / "a.py").write_text("a = 1\n")
    git(alice, "add", "a.py")
    git(alice, "commit", "-q", "-m", "a", SEDIMENT_SESSION_ID="sess-alice")
    git(alice, "push", "-q", "origin", "main")
    bob = tmp_path / "bob"
    git(tmp_path, "clone", "-q", str(remote), str(bob))
    install(bob, ("env",))
    (bob / "b.py").write_text("b = 1\n")
    git(bob, "add", "b.py")
    git(bob, "commit", "-q", "-m", "b", SEDIMENT_SESSION_ID="sess-bob")
    git(bob, "push", "-q", "origin", "main")  # bob never fetched alice's notes: his notes ref diverged
    last = status(bob).last_push
    assert last is not None and (last["remote"], last["pushed"], last["error"]) == ("origin", True, None)
    shown = {str(n.annotated_id): json.loads(n.message)["sessions"][0]["session_id"]
             for n in pygit2.Repository(str(remote)).notes("refs/notes/sediment")}  # type: ignore[call-arg]
    assert sorted(shown.values()) == ["sess-alice", "sess-bob"]


def test_the_cli_installs_reports_and_uninstalls(tmp_path: Path) -> None:
    work = new_repo(tmp_path)

    def sediment(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sediment", "hooks", *args], capture_output=True, text=True,
                              env=git_env(), check=False, timeout=120)

    installed = sediment("install", "--repo", str(work), "--client", "codex", "--client", "env", "--json")
    assert installed.returncode == 0, installed.stderr
    assert json.loads(installed.stdout)["clients"] == ["codex", "env"]
    reported = sediment("status", "--repo", str(work), "--json")
    assert reported.returncode == 0, reported.stderr
    found = json.loads(reported.stdout)
    assert found["installed"] is True and found["claude_settings"] is None and found["notes"] == 0
    assert [(h["name"], h["state"]) for h in found["hooks"]] == [
        ("post-commit", "installed"), ("post-rewrite", "installed"), ("pre-push", "installed"),
        ("sediment-hook.py", "installed")]
    (work / ".git" / "hooks" / "post-rewrite").unlink()
    assert sediment("status", "--repo", str(work)).returncode == 1
    assert sediment("install", "--repo", str(work), "--client", "codex", "--client", "env").returncode == 0
    bad = sediment("install", "--repo", str(work), "--client", "cursor")
    assert bad.returncode == 2
    outside = tmp_path / "plain"
    outside.mkdir()
    refused = sediment("status", "--repo", str(outside))
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
    assert sediment("status", "--repo", str(tmp_path / "absent")).returncode == 2
    removed = sediment("uninstall", "--repo", str(work), "--json")
    assert removed.returncode == 0, removed.stderr
    assert sorted(json.loads(removed.stdout)["removed"]) == ["post-commit", "post-rewrite", "pre-push",
                                                           "sediment-hook.py"]
    assert sorted(p.name for p in (work / ".git" / "hooks").iterdir() if not p.name.endswith(".sample")) == []
