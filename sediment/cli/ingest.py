"""``sediment ingest``: real wire formats in, Facts into the store.

Every command reports per-line problems with file and line, ingests everything else, and
exits non-zero (8) when any record failed. Re-ingesting the same files stores nothing new.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from sediment.cli import console, settings
from sediment.ingest import IngestError, Translation

if TYPE_CHECKING:
    from sediment.ingest.files import IngestReport

ingest_app = typer.Typer(help="Ingest Facts from files: canonical JSONL, GitHub webhooks, CI outcomes, call logs.",
                         no_args_is_help=True)
FILES_HELP = "Input files (JSON or JSON Lines); '-' reads stdin."
ORG_HELP = "Org id (default: SEDIMENT_ORG_ID)."


class CallFormat(StrEnum):
    litellm = "litellm"
    openai_chat = "openai-chat"
    openai_responses = "openai-responses"
    anthropic = "anthropic"


def _run(files: list[str], translate: Callable[[Any], Translation], as_json: bool, workers: int = 1) -> None:
    from sediment.ingest.files import ingest_files

    report = ingest_files(files, translate, settings.store(), workers=workers)
    _render(report, as_json)
    if report.problems:
        raise IngestError(f"{len(report.problems)} record(s) failed to ingest; every other record was ingested")


def _render(report: IngestReport, as_json: bool) -> None:
    for problem in report.problems[:50]:
        console.err.print(f"[red]error:[/] {escape(str(problem))}")
    if len(report.problems) > 50:
        console.err.print(f"… and {len(report.problems) - 50} more")
    if as_json:
        typer.echo(json.dumps(report.as_json()))
        return
    stored = ", ".join(f"{k}: {v}" for k, v in sorted(report.stored.items())) or "nothing new"
    console.err.print(f"{report.records} record(s) read; stored {stored}")
    if report.duplicates:
        console.err.print(f"already stored: {dict(sorted(report.duplicates.items()))}")
    if report.skipped:
        console.err.print(f"skipped on purpose: {dict(sorted(report.skipped.items()))}")
    if report.warnings:
        console.err.print(f"warnings: {dict(sorted(report.warnings.items()))}")


@ingest_app.command("facts")
def facts(files: list[str] = typer.Argument(..., help=FILES_HELP),
          org: str | None = typer.Option(None, "--org", help=ORG_HELP),
          as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout.")) -> None:
    """Canonical Fact JSONL: one object per line, `fact_type` naming the model."""
    from sediment.ingest.facts_jsonl import translate_fact

    org_id = settings.org_id(org)
    _run(files, lambda record: translate_fact(record, org_id=org_id), as_json)


@ingest_app.command("github")
def github(files: list[str] = typer.Argument(..., help=FILES_HELP),
           event: str | None = typer.Option(None, "--event", help="Event name for bare payloads (X-GitHub-Event)."),
           org: str | None = typer.Option(None, "--org", help=ORG_HELP),
           as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout.")) -> None:
    """GitHub webhook deliveries: workflow_run, push, pull_request, repository (others are skipped)."""
    from sediment.ingest.github import translate_github

    org_id = settings.org_id(org)
    now = settings.capture_time()
    _run(files, lambda record: translate_github(record, event=event, org_id=org_id, captured_at=now), as_json)


@ingest_app.command("ci")
def ci(files: list[str] = typer.Argument(..., help=FILES_HELP),
       org: str | None = typer.Option(None, "--org", help=ORG_HELP),
       as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout.")) -> None:
    """Vendor-neutral CI outcomes (GitLab, CircleCI, Buildkite, Jenkins senders)."""
    from sediment.ingest.ci import translate_ci

    org_id = settings.org_id(org)
    now = settings.capture_time()
    _run(files, lambda record: translate_ci(record, org_id=org_id, captured_at=now), as_json)


@ingest_app.command("calls")
def calls(files: list[str] = typer.Argument(..., help=FILES_HELP),
          format: CallFormat = typer.Option(..., "--format", help="Gateway log format."),
          org: str | None = typer.Option(None, "--org", help=ORG_HELP),
          as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout."),
          workers: int = typer.Option(1, "--workers", "-w", min=1,
                                      help="Processes parsing files in parallel (the same Facts are stored).")
          ) -> None:
    """Gateway call logs: LiteLLM payloads, or request/response pairs of OpenAI Chat, OpenAI
    Responses and Anthropic Messages, with the Session in `session_id` or `x-sediment-session`."""
    from sediment.ingest.calls import ReplayMemo, translate_call

    org_id = settings.org_id(org)
    now = settings.capture_time()
    memo = ReplayMemo()
    _run(files, lambda record: translate_call(record, format=format.value, org_id=org_id, captured_at=now,
                                              memo=memo), as_json, workers)
