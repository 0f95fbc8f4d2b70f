"""``sediment mirror``: bare git mirrors, and the git-note edges they expose."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from sediment.cli import console, settings

if TYPE_CHECKING:
    from sediment.mirrors import MirrorRoot

mirror_app = typer.Typer(help="Manage bare git mirrors (reference patches, git-note attribution).",
                         no_args_is_help=True)


def _report(repo: str, mirrors: MirrorRoot, org: str) -> None:
    from sediment.observations import observe_notes

    result = observe_notes(mirrors, settings.store(), org, repo, settings.capture_time())
    for problem in result.problems:
        console.warning(problem)
    console.say(f"{repo}: {result.stored} new session-commit observation(s), {result.already_seen} already seen")


@mirror_app.command("add")
def add(
    repo: str = typer.Argument(..., metavar="OWNER/REPO", help="Repository slug the mirror serves."),
    source: str = typer.Argument(..., help="Path or URL to fetch from."),
    org: str | None = typer.Option(None, "--org", help="Org id (default: SEDIMENT_ORG_ID)."),
) -> None:
    """Create a bare mirror, fetch branches and refs/notes/sediment, record new note edges.

    Atomic: the mirror is built in a private directory and moved into place only when its
    fetch succeeded; a failed add leaves nothing behind and can simply be retried.
    """
    org_id = settings.org_id(org)
    slug = _slug(repo)
    mirrors = settings.mirror_root(create=True)
    path = mirrors.add(org_id, slug, source)
    console.say(f"mirrored {slug} into {path}")
    _report(slug, mirrors, org_id)


def _slug(repo: str) -> str:
    from sediment.errors import UsageError
    from sediment.identifiers import normalize_repo_slug

    try:
        slug = normalize_repo_slug(repo)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not slug:
        raise UsageError(f"repository must be 'owner/repo': {repo!r}")
    return slug


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


@mirror_app.command("remove")
def remove(
    repo: str = typer.Argument(..., metavar="OWNER/REPO", help="Repository slug of the mirror."),
    org: str | None = typer.Option(None, "--org", help="Org id (default: SEDIMENT_ORG_ID)."),
) -> None:
    """Delete a mirror (also a half-made one) so it can be added again; stored Facts are kept."""
    org_id = settings.org_id(org)
    slug = _slug(repo)
    path = settings.mirror_root().remove(org_id, slug)
    console.say(f"removed the mirror of {slug} ({path})")


@mirror_app.command("list")
def list_mirrors(org: str | None = typer.Option(None, "--org", help="Org id (default: SEDIMENT_ORG_ID).")) -> None:
    """List the org's mirrors and where they live."""
    org_id = settings.org_id(org)
    mirrors = settings.mirror_root()
    for slug in mirrors.legacy_mirrors(org_id):
        typer.echo(f"{console.visible(slug)}\t{console.visible(mirrors.mirror_path(org_id, slug))}")
