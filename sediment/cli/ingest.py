"""``sediment ingest``: real wire formats in, Facts into the store.

Every command reports per-line problems with file and line (``ingest junit``: per file, since
a report is stored whole or not at all), ingests everything else, and exits non-zero (8) when
any record failed. Re-ingesting the same files stores nothing new.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import typer

from sediment.cli import console, input_files, progress, settings
from sediment.ingest import IngestError, Translation
from sediment.ingest.ci.providers import PROVIDERS, WebhookProvider

if TYPE_CHECKING:
    from sediment.ingest.reading.files import IngestReport
    from sediment.ingest.reading.json_text import JsonReader

_FORGE_TITLES = [provider.title for provider in PROVIDERS.values() if provider.forge]
ingest_app = typer.Typer(help=f"Ingest Facts from files: canonical JSONL, {', '.join(_FORGE_TITLES[:-1])} and "
                              f"{_FORGE_TITLES[-1]} webhooks, CI outcomes, call logs, JUnit test reports, agent OTLP "
                              "log exports, agent session transcripts. Every command reads gzip and Zstandard files "
                              "as they are.", no_args_is_help=True)
FILES_HELP = ("Input files (JSON or JSON Lines), plain or gzip/Zstandard compressed (told by their bytes, "
              "inflated as read); '-' reads stdin.")
ORG_HELP = "Org id (default: SEDIMENT_ORG_ID)."


@ingest_app.callback()
def _ingest_options(no_redact_content: bool = typer.Option(
        False, "--no-redact-content",
        help="Store secrets found inside content (messages, tool calls and results, transcripts, OTLP records, "
             "CI payloads) as received instead of redacting them; SEDIMENT_REDACT_CONTENT=0 does the same. "
             "Credential-named headers and fields are redacted all the same. See docs/operate.md.")) -> None:
    """Content redaction is on unless turned off here or by SEDIMENT_REDACT_CONTENT=0."""
    settings.content_redaction(no_redact_content)


class Provider(StrEnum):
    """CIProvider (sediment.model.facts), as a command-line choice."""

    github_actions = "github_actions"
    jenkins = "jenkins"
    gitlab_ci = "gitlab_ci"
    circleci = "circleci"
    buildkite = "buildkite"
    other = "other"
    github_checks = "github_checks"


class Runner(StrEnum):
    """TestRunner (sediment.model.facts), as a command-line choice."""

    pytest = "pytest"
    jest = "jest"
    go = "go"
    surefire = "surefire"
    nextest = "nextest"
    junit = "junit"


class CallFormat(StrEnum):
    litellm = "litellm"
    openai_chat = "openai-chat"
    openai_responses = "openai-responses"
    anthropic = "anthropic"


def _run(files: list[str], translate: Callable[[Any], Translation], as_json: bool, workers: int = 1, *,
         org_id: str, reader: Callable[[], JsonReader] | None = None, engine: str = "local",
         hint: Callable[[IngestReport], str | None] | None = None) -> None:
    from sediment.ingest.reading.files import ingest_files

    input_files.check(files)
    with progress.records("ingesting", enabled=progress.wanted(as_json)) as update:
        report = ingest_files(files, translate, settings.store(), workers=workers, reader=reader, progress=update,
                              engine=engine)
    _render(report, as_json)
    advice = hint(report) if hint is not None and not as_json else None
    if advice is not None:
        console.warning(advice)
    # a legacy mirror added before these Facts named its repository's identity is keyed by it now
    settings.settle_mirrors(org_id, (table for table, count in report.stored.items() if count))
    _report_problems(report)


def _report_problems(report: IngestReport, unit: str = "record") -> None:
    """The one closing line of an ingest with problems. Records (or lines) and whole files are
    counted apart: an empty or unreadable file, or another client's transcript, is no record that
    failed (the walk of the README met ``0 record(s) read`` followed by ``1 record(s) failed to
    ingest``)."""
    if not report.problems:
        return
    files = sum(1 for problem in report.problems if problem.refuses_file) if unit != "report" else 0
    failed = [f"{count} {noun}(s) {verb}" for count, noun, verb in (
        (len(report.problems) - files, unit, "failed to ingest"), (files, "file", "refused whole")) if count]
    raise IngestError(f"{' and '.join(failed)}; every other {unit} was ingested")


def warning_lines(warnings: Mapping[str, int]) -> list[str]:
    """One line per warning code (in name order) saying what it means, then where to read what
    to do; a ``:DETAIL`` code is explained once by its head."""
    from sediment.ingest.warnings import explain

    lines, seen = [], set()
    for code in sorted(warnings):
        head = code.partition(":")[0]
        explained = explain(code)
        if explained is None or head in seen:
            continue
        seen.add(head)
        lines.append(f"  {head}: {explained.meaning}")
    if lines:
        lines.append('  (what to do about each: docs/operate.md, "Ingest warnings")')
    return lines


def _render(report: IngestReport, as_json: bool, *, elements: str | None = None) -> None:
    """The problems, then the summary; ``elements`` names what a record's elements are (an OTLP
    batch's ``log_records``), counted beside the records."""
    for problem in report.problems[:50]:
        console.say(("error:", "red"), " ", str(problem))
    if len(report.problems) > 50:
        console.say(f"… and {len(report.problems) - 50} more")
    if as_json:
        summary = report.as_json()
        if elements is not None:
            summary[elements] = report.elements
        typer.echo(json.dumps(summary))
        return
    stored = ", ".join(f"{k}: {v}" for k, v in sorted(report.stored.items())) or "nothing new"
    held = f" holding {report.elements} {elements.replace('_', ' ')}" if elements is not None else ""
    console.say(f"{report.records} record(s) read{held}; stored {stored}")
    if report.duplicates:
        console.say(f"already stored: {console.counts(report.duplicates)}")
    if report.skipped:  # reasons can name input (an unsupported event's name)
        console.say(f"skipped on purpose: {console.counts(report.skipped)}")
    if report.warnings:
        console.say(f"warnings: {console.counts(report.warnings)}")
        for line in warning_lines(report.warnings):
            console.say(line)
    if report.redacted.kinds:  # the distinct secrets found inside content, by kind
        console.say(f"redacted: {console.counts(report.redacted.counts())}")


@ingest_app.command("facts")
def facts(files: list[str] = typer.Argument(..., help=FILES_HELP),
          org: str | None = typer.Option(None, "--org", help=ORG_HELP),
          as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout.")) -> None:
    """Canonical Fact JSONL: one object per line, `fact_type` naming the model."""
    from sediment.ingest.facts_jsonl import translate_fact

    org_id = settings.org_id(org)
    _run(files, lambda record: translate_fact(record, org_id=org_id), as_json, org_id=org_id)


def _command(provider: WebhookProvider, function: Callable[..., None], details: str | None = None) -> None:
    """Registers ``function`` as ``sediment ingest NAME`` of ``provider``, its help the provider
    table's summary, then ``details`` (what the command itself adds)."""
    assert provider.summary is not None, provider.name
    function.__doc__ = provider.summary if details is None else f"{provider.summary}\n\n{details}"
    ingest_app.command(provider.name)(function)


_GITHUB = PROVIDERS["github"]


def github(files: list[str] = typer.Argument(..., help=FILES_HELP),
           event: str | None = typer.Option(
               None, "--event", help=f"Event name ({_GITHUB.event_header}) of bare payloads whose top-level keys do "
                                     "not show it; a payload whose keys show another event is refused."),
           org: str | None = typer.Option(None, "--org", help=ORG_HELP),
           as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout.")) -> None:
    translate = _GITHUB.load()
    org_id = settings.org_id(org)
    now = settings.capture_time()
    _run(files, lambda record: translate(record, event=event, org_id=org_id, captured_at=now), as_json,
         org_id=org_id)


_command(_GITHUB, github,
         "A bare payload's event is read from its top-level keys where exactly one event fits them "
         "(workflow_run, workflow_job, check_run, check_suite, pull_request, push, a repository action), "
         "so a folder of mixed events is one command; one whose keys do not show it needs --event.")


def ci(files: list[str] = typer.Argument(..., help=FILES_HELP),
       org: str | None = typer.Option(None, "--org", help=ORG_HELP),
       as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout.")) -> None:
    translate = PROVIDERS["ci"].load()
    org_id = settings.org_id(org)
    now = settings.capture_time()
    _run(files, lambda record: translate(record, org_id=org_id, captured_at=now), as_json, org_id=org_id)


_command(PROVIDERS["ci"], ci)


@ingest_app.command("calls")
def calls(files: list[str] = typer.Argument(..., help=FILES_HELP),
          format: CallFormat = typer.Option(..., "--format", help="Gateway log format."),
          org: str | None = typer.Option(None, "--org", help=ORG_HELP),
          as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout."),
          workers: int = typer.Option(1, "--workers", "-w", min=1,
                                      help="Processes parsing files in parallel (the same Facts are stored)."),
          engine: str | None = typer.Option(None, "--engine", metavar="local|ray", envvar="SEDIMENT_ENGINE",
                                            show_envvar=True, help=settings.ENGINE_HELP),
          ) -> None:
    """Gateway call logs: LiteLLM payloads, or request/response pairs of OpenAI Chat, OpenAI
    Responses and Anthropic Messages, with the Session in `session_id` or `x-sediment-session`.

    Replayed history is parsed once: a request's message that repeats, byte for byte, one read
    earlier in the run is not parsed again (the stored Facts are the same either way)."""
    from sediment.ingest.calls import ReplayMemo, translate_call
    from sediment.ingest.calls.spans import SpanReader

    chosen_engine = settings.engine(engine)
    org_id = settings.org_id(org)
    now = settings.capture_time()
    memo = ReplayMemo()
    _run(files, lambda record: translate_call(record, format=format.value, org_id=org_id, captured_at=now,
                                              memo=memo), as_json, workers, org_id=org_id, reader=SpanReader,
         engine=chosen_engine, hint=_no_session_hint(format))


def _no_session_hint(format: CallFormat) -> Callable[[IngestReport], str | None]:
    """The warning of a calls ingest that stored nothing because no record named its Session:
    the usual cause is the wrong ``--format`` (the README walk read request/response pairs with
    ``--format litellm``, which looks for the Session in LiteLLM's metadata)."""
    def hint(report: IngestReport) -> str | None:
        if report.stored or not report.records or set(report.skipped) != {"no_session"}:
            return None
        where = ("--format litellm reads it from LiteLLM's metadata (metadata.session_id, the x-sediment-session "
                 "header, ...); request/response pairs with a session_id are read with --format openai-chat, "
                 "openai-responses or anthropic") if format is CallFormat.litellm else (
                 f"--format {format.value} reads it from a pair's session_id or its x-sediment-session header; "
                 "LiteLLM payloads are read with --format litellm")
        return f"no record named its Session (all {report.skipped['no_session']} skipped as no_session): {where}"
    return hint


def _provider_command(provider: WebhookProvider) -> None:
    """``sediment ingest NAME FILE...``: one CI provider's webhook deliveries (docs/ci-providers.md)."""
    header = provider.event_header

    def command(files: list[str] = typer.Argument(..., help=FILES_HELP),
                event: str | None = typer.Option(None, "--event", help=f"Event name for bare payloads ({header})."),
                org: str | None = typer.Option(None, "--org", help=ORG_HELP),
                as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout.")) -> None:
        translate = provider.load()
        org_id = settings.org_id(org)
        now = settings.capture_time()
        _run(files, lambda record: translate(record, event=event, org_id=org_id, captured_at=now), as_json,
             org_id=org_id)

    _command(provider, command,
             f'A file holds deliveries: bare payloads, or envelopes {{"headers": {{...}}, "payload": {{...}}}} '
             f"whose headers name the event ({header}). Only final states are stored (others are skipped as "
             "ci_run_not_terminal); the provider's own state is kept in provider_result. Re-ingesting stores "
             "nothing new.")


_GITLAB = PROVIDERS["gitlab"]


def gitlab(files: list[str] = typer.Argument(..., help=FILES_HELP),
           event: str | None = typer.Option(None, "--event",
                                            help=f"Event name for bare payloads ({_GITLAB.event_header})."),
           host: str = typer.Option("gitlab.com", "--host",
                                    help="The GitLab server's host (your configuration, never read from a payload); "
                                         "with each project's id it is the repository's identity."),
           org: str | None = typer.Option(None, "--org", help=ORG_HELP),
           as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout.")) -> None:
    translate = _GITLAB.load()
    org_id = settings.org_id(org)
    now = settings.capture_time()
    _run(files, lambda record: translate(record, event=event, org_id=org_id, captured_at=now, host=host),
         as_json, org_id=org_id)


_command(_GITLAB, gitlab,
         'A file holds deliveries: bare payloads, or envelopes {"headers": {...}, "payload": {...}} '
         f"({_GITLAB.event_header}, {_GITLAB.delivery_header}). Only final states are stored (others are skipped "
         "as ci_run_not_terminal); GitLab's own status is kept in provider_result. Outcomes carry the repository "
         "identity gitlab / --host / project id. A retried pipeline keeps its id: each of its final events is "
         "stored, keyed by object_attributes.finished_at, and the last decides (docs/ci-providers.md, Re-runs). "
         "Re-ingesting stores nothing new.")
for _provider in PROVIDERS.values():
    if _provider.forge and _provider.summary is not None and _provider.name not in {"github", "gitlab"}:
        _provider_command(_provider)


_POSITIVE = re.compile(r"[1-9][0-9]*")


def _positive(value: str) -> str:
    if not _POSITIVE.fullmatch(value):
        raise typer.BadParameter(f"{value!r} is not a positive integer")
    return value


@ingest_app.command("junit")
def junit(files: list[str] = typer.Argument(..., help="JUnit XML reports of one run attempt, plain or gzip/Zstandard "
                                                     "compressed; '-' reads stdin."),
          provider: Provider = typer.Option(..., "--provider", help="The CI that ran the attempt."),
          run_id: str = typer.Option(..., "--run-id", help="The provider's run id (as in the run's CIOutcome)."),
          run_attempt: str = typer.Option(..., "--run-attempt", callback=_positive, metavar="N",
                                          help="The attempt number, a positive integer."),
          repo: str = typer.Option(..., "--repo", metavar="OWNER/REPO", help="The repository the run tested."),
          commit: str = typer.Option(..., "--commit", metavar="SHA", help="The full commit SHA the run tested."),
          runner: Runner | None = typer.Option(None, "--runner",
                                               help="The test runner whose test ids to normalize "
                                                    "(default: detected from each report, else junit)."),
          org: str | None = typer.Option(None, "--org", help=ORG_HELP),
          as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout.")) -> None:
    """JUnit XML test reports of one CI run attempt: one TestCaseResult per <testcase>.

    Every FILE belongs to the attempt named by --provider, --run-id, --run-attempt, --repo and
    --commit. Without --runner each report's runner is detected from the marks its producer
    leaves — pytest: <testsuites name="pytest tests"> or <testsuite name="pytest">; Jest:
    <testsuites name="jest tests"> (jest-junit); Go: a go.version suite property (gotestsum);
    Surefire: its report schema in xsi:noNamespaceSchemaLocation; nextest:
    <testsuites name="nextest-run"> — when exactly one runner's marks are present, else `junit`.
    A report is stored whole or not at all: a bad one is reported as `FILE: problem`, the
    others still ingest, and the command exits 8. A report may be gzip or Zstandard compressed
    (told by its bytes); the 64 MiB limit applies to its inflated size.
    """
    from sediment.ingest.junit import RunAttempt, ingest_junit_reports

    org_id = settings.org_id(org)
    now = settings.capture_time()
    try:
        attempt = RunAttempt(org_id=org_id, provider=provider.value, run_id=run_id, run_attempt=int(run_attempt),
                             repo=repo, commit_sha=commit)
    except ValueError as exc:
        option = {"run_id": "--run-id", "repo": "--repo", "commit_sha": "--commit"}
        field, _, message = str(exc).partition(": ")
        raise typer.BadParameter(message, param_hint=f"'{option.get(field, field)}'") from None
    input_files.check(files)
    report = ingest_junit_reports(files, settings.store(), attempt, captured_at=now,
                                  runner=None if runner is None else runner.value)
    _render(report, as_json)
    _report_problems(report, "report")


@ingest_app.command("otlp")
def otlp(files: list[str] = typer.Argument(..., help="OTLP/JSON log exports, one batch per line or one per file, "
                                                 "plain or gzip/Zstandard compressed; '-' reads stdin."),
         org: str | None = typer.Option(None, "--org", help=ORG_HELP),
         as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout."),
         workers: int = typer.Option(1, "--workers", "-w", min=1,
                                     help="Processes reading files in parallel (the same Facts are stored)."),
         engine: str | None = typer.Option(None, "--engine", metavar="local|ray", envvar="SEDIMENT_ENGINE",
                                           show_envvar=True, help=settings.ENGINE_HELP),
         ) -> None:
    """Agent OTLP log exports: developer decisions, edit observations, rejected edits, retry links.

    Each batch is an ExportLogsServiceRequest in OTLP/JSON (resourceLogs → scopeLogs →
    logRecords), as a client's OTLP/HTTP exporter sends it to /v1/logs or the OpenTelemetry
    Collector's file exporter writes it. Read: GitHub Copilot Chat (copilot_chat.edit.feedback,
    copilot_chat.inline.done, copilot_chat.edit.survival), Claude Code (claude_code.tool_decision
    with its claude_code.tool_result; set OTEL_LOG_TOOL_DETAILS=1 for file paths), Codex
    (codex.tool_decision with its codex.tool_result), shims (sediment.tool_decision) and
    Sediment's transcript extractor (sediment.edit_observation, sediment.rejected_edit,
    sediment.retry_linkage). Other events are counted under skipped as unknown_event:NAME.

    A bad log record is one `FILE:LINE: LOCATOR: field: problem` line and stores nothing; the
    other records of its batch still ingest, and the command exits 8. Re-ingesting stores
    nothing new. --json adds log_records (how many the batches held) to the report.
    """
    from sediment.ingest.otlp import translate_otlp
    from sediment.ingest.reading.files import ingest_files

    chosen_engine = settings.engine(engine)
    org_id = settings.org_id(org)
    now = settings.capture_time()
    input_files.check(files)
    with progress.records("ingesting", enabled=progress.wanted(as_json)) as update:
        report = ingest_files(files, lambda record: translate_otlp(record, org_id=org_id, captured_at=now),
                              settings.store(), workers=workers, keep_flaws=True, progress=update,
                              engine=chosen_engine)
    _render(report, as_json, elements="log_records")
    if report.problems:
        raise IngestError(f"{len(report.problems)} problem(s) (a log record, or a batch that is not an OTLP logs "
                          "export): nothing of those was ingested; every other log record was")


class TranscriptClient(StrEnum):
    """A client whose session transcripts `ingest transcripts` reads."""

    claude_code = "claude-code"
    codex = "codex"


@ingest_app.command("transcripts")
def transcripts(client: TranscriptClient = typer.Argument(..., help="The client that wrote the transcripts."),
                paths: list[str] | None = typer.Argument(
                    None, help="Transcript files or folders (every *.jsonl, *.jsonl.gz and *.jsonl.zst under a "
                               "folder; gzip/Zstandard told by their bytes); default: the client's own session "
                               "folder, ~/.claude/projects or ~/.codex/sessions."),
                org: str | None = typer.Option(None, "--org", help=ORG_HELP),
                as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout.")) -> None:
    """Agent session transcripts without a gateway: Claude Code session JSONL, Codex rollouts.

    Each model turn becomes an InferenceCall whose input is the conversation as the client had
    it (after a compaction: what it continued from) and whose output is the recorded assistant
    message, tool calls and results joined by id. Every such call is marked with its capture
    source, transcript:<client>@<version>, and what a transcript lacks (the exact request, token
    ids, sampling parameters; for Claude Code the system prompt and tool definitions); profiles
    that need the wire decline those rows. A Claude Code subagent's sidechain is a Session of its
    own, linked to its parent. Claude Code edits the transcript shows rejected or applied become
    DeveloperDecisions.

    Re-ingesting a transcript that grew stores only its new turns; the turn a client is still
    writing waits for the next ingest. Entry types that carry no call (summaries, snapshots,
    events a newer client added) are counted under skipped by name. A bad line is one
    `FILE:LINE: field: problem` line, the rest of the file still ingests, and the command exits 8.
    A transcript may be gzip or Zstandard compressed (told by its bytes). See docs/transcripts.md.
    """
    from pathlib import Path

    from sediment.errors import ConfigurationError
    from sediment.ingest.transcripts import default_folder, ingest_transcripts

    org_id = settings.org_id(org)
    now = settings.capture_time()
    if paths:
        chosen = [Path(p) for p in paths]
        input_files.check(chosen, folders=True)
    else:
        folder = default_folder(client.value)
        if not folder.is_dir():
            raise ConfigurationError(f"no {client.value} session folder at {folder}; name transcript files or folders")
        chosen = [folder]
    with progress.records("ingesting transcripts", enabled=progress.wanted(as_json)) as update:
        report = ingest_transcripts(chosen, client.value, settings.store(), org_id=org_id, captured_at=now,
                                    progress=update)
    _render(report, as_json)
    _report_problems(report, "line")
