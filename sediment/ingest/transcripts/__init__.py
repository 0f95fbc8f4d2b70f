"""Client transcripts → InferenceCall Facts (and Claude Code's edit decisions), without a gateway.

``claude_code`` reads Claude Code session JSONL, ``codex`` reads Codex rollout JSONL; ``common``
holds what both share. A transcript is not the wire: every call carries its capture source
(``transcript:<client>@<version>``) and what it lacks (:class:`~sediment.model.facts.CallCapture`).
Each file is read whole and translated as one conversation; a bad line is one problem naming
its line and field, and the rest of the file still ingests. Ids are deterministic, so
re-ingesting a transcript that grew stores only its new turns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Final, Literal

from sediment.ingest.reading.files import EMPTY, IngestReport, InputProblem
from sediment.ingest.redaction.content import tallying
from sediment.ingest.transcripts import claude_code, codex
from sediment.ingest.transcripts.common import Entry, TranscriptResult, read_entries, transcript_files
from sediment.store import FactStore

Client = Literal["claude-code", "codex"]
CLIENTS: Final[tuple[Client, ...]] = ("claude-code", "codex")
#: Where each client keeps its sessions, under the user's home directory.
SESSION_FOLDERS: Final[dict[Client, tuple[str, ...]]] = {
    "claude-code": (".claude", "projects"),
    "codex": (".codex", "sessions"),
}
_TRANSLATORS: Final[dict[Client, Callable[..., None]]] = {
    "claude-code": claude_code.translate,
    "codex": codex.translate,
}


def default_folder(client: Client, home: Path | None = None) -> Path:
    """The client's own session folder under ``home`` (default: the current user's)."""
    return (home or Path.home()).joinpath(*SESSION_FOLDERS[client])


def translate_transcript(path: Path, client: Client, *, org_id: str, captured_at: datetime) -> TranscriptResult:
    """One transcript file's Facts and what was skipped, warned or refused (never raises on
    its content; an unreadable file is one problem)."""
    result = TranscriptResult()
    try:
        entries: list[Entry] = read_entries(path, result)
    except OSError as exc:
        result.problems.append((0, f"cannot read: {exc.strerror or exc}"))
        return result
    _TRANSLATORS[client](entries, result, org_id=org_id, captured_at=captured_at)
    if entries and not result.facts and not result.problems and result.skipped \
            and all(reason.startswith(UNKNOWN_ENTRY) for reason in result.skipped):
        result.problems.append((entries[0].line, _another_clients(client, result.skipped)))
        result.skipped.clear()
        result.refused_whole = True
    result.problems.sort(key=lambda problem: problem[0])
    return result


UNKNOWN_ENTRY: Final = "unknown_entry:"


def _another_clients(client: Client, skipped: Counter[str]) -> str:
    """The problem of a file no line of which is an entry ``client`` writes: it is another
    client's transcript (or no transcript), so reading it as ``client``'s stores nothing."""
    kinds = ", ".join(sorted(reason.removeprefix(UNKNOWN_ENTRY) for reason in skipped))
    others = " or ".join(f"`sediment ingest transcripts {other}`" for other in CLIENTS if other != client)
    return f"type: no line is a {client} transcript entry (types: {kinds}); another client's transcript? try {others}"


def ingest_transcripts(paths: Sequence[Path], client: Client, store: FactStore, *, org_id: str,
                       captured_at: datetime,
                       progress: Callable[[int, int, int], None] | None = None) -> IngestReport:
    """Translate every transcript file named (folders: every ``*.jsonl`` under them) and
    append its Facts; ``records`` counts the lines read. ``progress(files_done, files_total,
    lines_read)`` is called after each file."""
    report = IngestReport()
    named = {path for path in paths if not path.is_dir()}
    files = list(transcript_files(list(paths)))
    for done, path in enumerate(files, 1):
        with tallying(report.redacted):
            result = translate_transcript(path, client, org_id=org_id, captured_at=captured_at)
        if path in named and not result.lines and not result.problems:  # a folder's empty file is a session starting
            report.problems.append(InputProblem(str(path), 0, EMPTY))
        report.records += result.lines
        report.skipped.update(result.skipped)
        report.warnings.update(result.warnings)
        report.problems.extend(InputProblem(str(path), line, message, result.refused_whole)
                               for line, message in result.problems)
        if result.facts:
            appended = store.append(result.facts)
            report.stored.update(appended.stored)
            report.duplicates.update(appended.duplicates)
        if progress is not None:
            progress(done, len(files), report.records)
    return report


__all__ = ["CLIENTS", "SESSION_FOLDERS", "Client", "default_folder", "ingest_transcripts", "translate_transcript"]
