"""``sediment hooks``: the git hooks that stamp agent Sessions on commits (refs/notes/sediment)."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

import typer

from sediment.cli import console

hooks_app = typer.Typer(
    help="Install the git hooks that note each commit's agent Session (refs/notes/sediment) and push the notes.",
    no_args_is_help=True,
)


class Client(StrEnum):
    claude_code = "claude-code"
    codex = "codex"
    env = "env"


_REPO = typer.Option(Path("."), "--repo", help="The working repository (default: the current directory).")
_CLIENT_HELP = ("Where the active Session comes from (repeatable): claude-code (its PostToolUse hook and "
                "CLAUDE_CODE_SESSION_ID), codex (CODEX_THREAD_ID), env (SEDIMENT_SESSION_ID and "
                "SEDIMENT_SESSION_TOOL, for any other agent).")


@hooks_app.command()
def install(
    repo: Path = _REPO,
    client: list[Client] = typer.Option([Client.claude_code], "--client", help=_CLIENT_HELP),
    force: bool = typer.Option(False, "--force", help="Replace hooks of ours that were edited by hand."),
    as_json: bool = typer.Option(False, "--json", help="Print what was done as JSON on stdout."),
) -> None:
    """Install (or update) the hooks; running it again changes nothing.

    A hook you already had is kept and run first; `hooks uninstall` puts it back."""
    from sediment.git.hooks import install as run

    result = run(repo, tuple(c.value for c in client), force=force)
    if as_json:
        typer.echo(json.dumps({"repository": str(result.paths.top), "hooks_dir": str(result.paths.hooks_dir),
                               "clients": list(result.clients), "written": result.written,
                               "unchanged": result.unchanged, "chained": result.chained,
                               "claude_settings": result.claude_settings}))
        return
    for name in result.chained:
        console.say(f"kept your {name} hook: it runs first, as {name}.sediment-chained")
    if result.claude_settings:
        console.say("added the PostToolUse hook to .claude/settings.local.json")
    if result.written:
        console.say(f"installed {', '.join(result.written)} in {result.paths.hooks_dir} "
                    f"(clients: {', '.join(result.clients)})")
    else:
        console.say(f"already installed in {result.paths.hooks_dir} (clients: {', '.join(result.clients)})")


@hooks_app.command()
def status(repo: Path = _REPO,
           as_json: bool = typer.Option(False, "--json", help="Print the status as JSON on stdout.")) -> None:
    """What is installed, what was edited by hand, and whether notes are written and pushed.

    Exits 1 when a hook is missing or edited by hand."""
    from sediment.git.hooks import status as read

    found = read(repo)
    broken = found.installed and any(h.state != "installed" for h in found.hooks)
    if as_json:
        typer.echo(json.dumps(found.as_json()))
    else:
        console.show(f"hooks in {found.paths.hooks_dir}: "
                     + (f"installed (clients: {', '.join(found.clients)})" if found.installed else "not installed"))
        for hook in found.hooks:
            console.show(f"  {hook.name}: {hook.state}" + (" (chains to your own hook)" if hook.chained else ""))
        if found.claude_settings is not None:
            console.show("  Claude Code PostToolUse hook: " + ("present" if found.claude_settings else "missing"))
        console.show(f"notes: {found.notes} commit(s) noted, {found.pending_sessions} Session mark(s) pending")
        push = found.last_push
        if push is None:
            console.show("last notes push: none yet")
        else:
            console.show(f"last notes push: {push.get('at')} to {push.get('remote')}: "
                         + ("pushed" if push.get("pushed") else f"failed ({push.get('error')})"))
    if broken:
        raise typer.Exit(1)


@hooks_app.command()
def uninstall(
    repo: Path = _REPO,
    force: bool = typer.Option(False, "--force", help="Also remove hooks of ours that were edited by hand."),
    as_json: bool = typer.Option(False, "--json", help="Print what was done as JSON on stdout."),
) -> None:
    """Remove only what `hooks install` wrote, and put back the hooks it chained to.

    Notes already written stay."""
    from sediment.git.hooks import uninstall as run

    result = run(repo, force=force)
    if as_json:
        typer.echo(json.dumps({"repository": str(result.paths.top), "removed": result.removed,
                               "restored": result.restored, "kept": result.kept,
                               "claude_settings": result.claude_settings}))
    else:
        if not (result.removed or result.restored or result.kept or result.claude_settings):
            console.say("nothing to uninstall")
        if result.removed:
            console.say(f"removed {', '.join(result.removed)}")
        if result.restored:
            console.say(f"restored your {', '.join(result.restored)} hook(s)")
        if result.claude_settings:
            console.say("removed the PostToolUse hook from .claude/settings.local.json")
        for name in result.kept:
            console.warning(f"kept {name}: edited by hand (--force removes it)")
    if result.kept:
        raise typer.Exit(1)
