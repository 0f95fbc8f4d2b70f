"""``sediment mirror``: bare git mirrors, and the git-note edges they expose."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from sediment.cli import console, settings

if TYPE_CHECKING:
    from sediment.mirrors import MirrorRoot

mirror_app = typer.Typer(help="Manage bare git mirrors (reference patches, git-note attribution).",
                         no_args_is_help=True)


def _report(repo: str, mirrors: MirrorRoot, org: str) -> None:
    from sediment.observations import observe_notes

    result = observe_notes(mirrors, settings.store(), org, repo, settings.capture_time())
    for problem in result.problems:
        console.err.print(f"[yellow]warning:[/] {escape(problem)}")
    console.err.print(f"{repo}: {result.stored} new session-commit observation(s), "
                      f"{result.already_seen} already seen")


@mirror_app.command("add")
def add(
    repo: str = typer.Argument(..., metavar="OWNER/REPO", help="Repository slug the mirror serves."),
    source: str = typer.Argument(..., help="Path or URL to fetch from."),
    org: str | None = typer.Option(None, "--org", help="Org id (default: SEDIMENT_ORG_ID)."),
) -> None:
    """Create a bare mirror, fetch branches and refs/notes/sediment, record new note edges."""
    from sediment.identifiers import normalize_repo_slug

    org_id = settings.org_id(org)
    try:
        slug = normalize_repo_slug(repo)
    except ValueError as exc:
        from sediment.errors import UsageError

        raise UsageError(str(exc)) from None
    mirrors = settings.mirror_root(create=True)
    path = mirrors.add(org_id, slug, source)
    console.err.print(f"mirrored {slug} into {path}")
    _report(slug, mirrors, org_id)


@mirror_app.command("fetch")
def fetch(
    repo: str | None = typer.Argument(None, metavar="[OWNER/REPO]", help="One repository (default: all)."),
    org: str | None = typer.Option(None, "--org", help="Org id (default: SEDIMENT_ORG_ID)."),
) -> None:
    """Refresh mirrors from their origin; new note edges become SessionCommitObservation Facts."""
    org_id = settings.org_id(org)
    mirrors = settings.mirror_root()
    repos = [repo.lower()] if repo else mirrors.legacy_mirrors(org_id)
    for slug in repos:
        mirrors.fetch(org_id, slug)
        _report(slug, mirrors, org_id)


@mirror_app.command("list")
def list_mirrors(org: str | None = typer.Option(None, "--org", help="Org id (default: SEDIMENT_ORG_ID).")) -> None:
    """List the org's mirrors and where they live."""
    org_id = settings.org_id(org)
    mirrors = settings.mirror_root()
    for slug in mirrors.legacy_mirrors(org_id):
        typer.echo(f"{slug}\t{mirrors.mirror_path(org_id, slug)}")
