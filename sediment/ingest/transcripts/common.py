"""What the transcript readers share: reading a transcript's lines, the per-file result, the
capture marker and building a call.

A transcript is JSON Lines written by the client as the session goes on. It is read line by
line: a line that is not a JSON object is one problem (``line N: …``) and the other lines are
still read; a last line without its newline that does not parse is a line the client is still
writing, skipped as ``incomplete_last_line`` (the next ingest reads it whole). A value a reader
cannot use is one problem naming its line and field (``line 12: message.content[0].id:
expected a string``); the entry is left out and the rest of the file still translates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from sediment.errors import validation_message
from sediment.ingest import TranslationError
from sediment.ingest.calls.toolkit import Notes, record_digest
from sediment.ingest.reading.compressed import InputUnreadable, logical_name, open_input
from sediment.ingest.reading.json_text import RecordProblem, parse_line
from sediment.ingest.reading.wrong_format import FormatWatch
from sediment.ingest.redaction.content import redact_call
from sediment.ingest.redaction.credentials import redact_record
from sediment.model.facts import CAPTURE_LACKS, CallCapture, CaptureLack, FactModel, InferenceCall, InferenceMessage
from sediment.store.ids import inference_call_id

#: What every call rebuilt from a transcript lacks: the request is a reconstruction, and no
#: transcript records sampling parameters or token ids.
ALWAYS_LACKING: tuple[CaptureLack, ...] = ("exact_request", "sampling_parameters", "token_ids")
SETTLE: Final = timedelta(minutes=10)
"""How long after its last line a model turn that nothing closed counts as finished: a client
writes a response's lines within seconds, so a turn this old at the capture time was not cut
off mid-write (the last answer of a finished session has no later line to close it)."""


@dataclass(frozen=True)
class Entry:
    """One transcript line: its 1-based line number and its JSON object."""

    line: int
    value: dict[str, Any]


@dataclass
class TranscriptResult:
    """What one transcript file became: Facts, and what was skipped, warned or refused."""

    facts: list[FactModel] = field(default_factory=list)
    lines: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    warnings: Counter[str] = field(default_factory=Counter)
    #: ``(line, message)``: the message names the field and what is wrong with it.
    problems: list[tuple[int, str]] = field(default_factory=list)
    #: the file's one problem refuses it whole (it is another client's transcript)
    refused_whole: bool = False

    def refuse(self, line: int, exc: Exception) -> None:
        self.problems.append((line, str(exc)))

    def warn(self, notes: Notes) -> None:
        self.warnings.update(notes.warnings)


def read_entries(path: Path, result: TranscriptResult) -> list[Entry]:
    """Every line of ``path`` that is a JSON object, with its line number; the others are
    problems (or ``incomplete_last_line``); blank lines are ignored. A gzip or Zstandard file
    is inflated as it is read; one that cannot be read on is one problem at the line reached,
    and the entries before it are kept."""
    entries: list[Entry] = []
    number = 0
    watch = FormatWatch()
    problems = len(result.problems)
    try:
        with open_input(path) as handle:
            for number, raw in enumerate(handle, start=1):
                watch.line(raw)
                _entry(number, raw, entries, result, watch)
    except InputUnreadable as exc:
        result.problems.append((number + 1, str(exc)))
        return entries
    wrong = watch.verdict()
    if wrong is not None:  # another format (a YAML file, say): one problem, not one per line
        del result.problems[problems:]
        result.skipped.pop("incomplete_last_line", None)
        result.lines = 0
        result.problems.append((0, wrong))
    return entries


def _entry(number: int, raw: bytes, entries: list[Entry], result: TranscriptResult, watch: FormatWatch) -> None:
    result.lines += 1
    if not raw.strip():
        return
    value = parse_line(raw.rstrip(b"\r\n"))
    watch.saw(syntax=isinstance(value, RecordProblem) and value.syntax)
    if isinstance(value, RecordProblem | Exception):
        if not raw.endswith(b"\n"):
            result.skipped["incomplete_last_line"] += 1
        else:
            result.problems.append((number, str(value)))
        return
    if not isinstance(value, dict):
        result.problems.append((number, "expected a JSON object"))
        return
    entries.append(Entry(number, value))


def transcript_files(paths: list[Path]) -> Iterator[Path]:
    """Each file named, and every ``*.jsonl`` file under each folder named (sorted), compressed
    ones (``*.jsonl.gz``, ``*.jsonl.zst``) too."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.jsonl*")
                              if p.is_file() and logical_name(p.name).endswith(".jsonl"))
        else:
            yield path


def capture(client: str, version: str | None, lacks: set[CaptureLack],
            parent_session_id: str | None = None) -> CallCapture:
    """The marker of a call rebuilt from ``client``'s transcript (``@unknown``: no version); a
    version or parent Session it cannot hold is refused, naming the field."""
    try:
        return CallCapture(source=f"transcript:{client}@{version or 'unknown'}",
                           lacks=tuple(lack for lack in CAPTURE_LACKS if lack in lacks | set(ALWAYS_LACKING)),
                           parent_session_id=parent_session_id)
    except ValidationError as exc:
        field = "parent session" if exc.errors()[0]["loc"] == ("parent_session_id",) else "version"
        raise TranslationError(f"{field}: {validation_message(exc.errors()[0])}") from None


def text_or_none(value: Any) -> str | None:
    """A non-blank string, else None (transcript metadata is read leniently: never refused)."""
    return value.strip() or None if isinstance(value, str) else None


@dataclass(frozen=True)
class RebuiltCall:
    """One model turn as a reader rebuilt it, before it becomes an InferenceCall."""

    session_id: str
    inputs: tuple[InferenceMessage, ...]
    outputs: tuple[InferenceMessage, ...]
    observed_at: datetime
    capture: CallCapture
    raw: dict[str, Any]
    model: str | None = None
    model_provider: str | None = None
    model_call_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


def build_call(call: RebuiltCall, org_id: str) -> InferenceCall:
    """The InferenceCall of a rebuilt turn; its id as every call's (:func:`inference_call_id`):
    by its response id when the transcript recorded one, else by the digest of its raw lines.
    ``raw`` is those transcript lines, credentials redacted; secrets inside its content (parts
    and ``raw``) are redacted too (:func:`~sediment.ingest.redaction.content.redact_call`)."""
    call_id = inference_call_id(org_id, call.session_id, "unknown", call.model_call_id,
                                lambda: record_digest(call.raw))
    try:
        built = InferenceCall(
            inference_call_id=call_id, org_id=org_id, session_id=call.session_id, gateway_provider="unknown",
            model_provider=call.model_provider, model=call.model, input_messages=call.inputs,
            output_messages=call.outputs, input_tokens=call.input_tokens, output_tokens=call.output_tokens,
            model_call_id=call.model_call_id, observed_at=call.observed_at, raw=redact_record(call.raw),
            capture=call.capture,
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "call"
        raise TranslationError(f"{where}: {validation_message(error)}") from None
    return redact_call(built)
