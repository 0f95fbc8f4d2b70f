"""Read input files record by record, translate, and append to the store; nothing is lost.

A file is one JSON document (an object is one record, an array holds records) or JSON
Lines. A bad record is reported with its file and line (or array index) and ingests
nothing; every other record still ingests.

Every record is read exactly or refused, never coerced: integers of any size stay integers,
``NaN`` / ``Infinity`` tokens and lone surrogate escapes are kept, a number that overflows a
double (``1e400``) is refused instead of becoming infinity, and a key given twice in one object
is an error (``duplicate key 'conclusion'``) instead of keeping the last value. The limits
(docs/operate.md): a line is at most :data:`MAX_LINE_BYTES` (a longer one is one problem, and
the reader goes on with the next line without holding it in memory), a document spanning
several lines at most :data:`MAX_DOCUMENT_BYTES`, and values nest at most :data:`MAX_DEPTH`
levels deep. A gzip or Zstandard file is read the same, inflated as it streams
(:func:`~sediment.ingest.reading.compressed.open_filling`); one that is corrupt, truncated or a
decompression bomb is one problem naming the line reached, and the records before it are kept.
"""

from __future__ import annotations

import functools
import os
import pickle
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from sediment.errors import UsageError, validation_message
from sediment.ingest import Translation, TranslationError
from sediment.ingest.reading.compressed import READ_BUFFER, InputUnreadable, open_filling
from sediment.ingest.reading.json_text import (
    _NUMBER,
    _TOKEN,
    JsonReader,
    RecordProblem,
    _skip_ws,
    _utf8,
    detached,
)
from sediment.ingest.reading.json_text import MAX_DEPTH as MAX_DEPTH
from sediment.ingest.reading.json_text import parse_line as parse_line
from sediment.ingest.reading.json_text import too_deep as too_deep
from sediment.ingest.reading.write_groups import WriteGroups
from sediment.ingest.reading.wrong_format import FormatWatch
from sediment.ingest.redaction.content import RedactionTally, tallying
from sediment.ingest.redaction.secret_patterns import remembering_texts
from sediment.model.facts import FactModel
from sediment.parallel import engine_name, last_round, ordered_chunks, require_shared_store
from sediment.store import AppendResult, FactStore, PreparedFacts

BATCH = 1000
"""Facts encoded together at most (a batch); batches are committed a group at a time
(:mod:`~sediment.ingest.reading.write_groups`)."""
BATCH_BYTES = 128 * 1024 * 1024
"""A batch is appended once the lines it was read from reach this many bytes, whatever its
count: what a batch holds stays bounded by its input, however large its records (a replayed
history's Facts share their replayed messages, so they hold far less than their lines)."""
MIB: Final = 1024 * 1024
MAX_LINE_BYTES: Final = 64 * MIB
"""The longest line (JSON Lines record) read, newline excluded."""
MAX_DOCUMENT_BYTES: Final = 64 * MIB
"""The largest JSON document spanning several lines (it is read whole); larger input must be JSON Lines."""
_BOM: Final = b"\xef\xbb\xbf"
FIRST_BUFFER: Final = 64 * 1024
"""The bytes a file's first read takes (:func:`_lines`)."""
EMPTY: Final = "empty file: no records"
"""The problem of a file that holds nothing but whitespace (docs/cli.md: input that failed, exit 8)."""


@dataclass(frozen=True)
class InputProblem:
    path: str
    line: int
    message: str
    #: the file is refused as a whole although the problem names a line (a transcript of another
    #: client: its first entry); line 0 always means the whole file
    whole_file: bool = False

    @property
    def refuses_file(self) -> bool:
        """Whether the problem refuses its file as a whole rather than one record of it."""
        return self.line == 0 or self.whole_file

    def __str__(self) -> str:  # line 0: the file as a whole
        return f"{self.path}:{self.line}: {self.message}" if self.line else f"{self.path}: {self.message}"


@dataclass
class IngestReport:
    records: int = 0
    stored: Counter[str] = field(default_factory=Counter)
    duplicates: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    warnings: Counter[str] = field(default_factory=Counter)
    problems: list[InputProblem] = field(default_factory=list)
    #: Elements the records held, when a record is a batch of them (an OTLP export's log records).
    elements: int = 0
    #: The secrets redacted inside content (:mod:`sediment.ingest.redaction.content`), by kind.
    redacted: RedactionTally = field(default_factory=RedactionTally)

    def absorb(self, other: IngestReport) -> None:
        """Add a worker's counts and problems (its stored/duplicate counts come from the writes)."""
        self.records += other.records
        self.elements += other.elements
        self.skipped.update(other.skipped)
        self.warnings.update(other.warnings)
        self.problems.extend(other.problems)
        self.redacted.absorb(other.redacted)

    def as_json(self) -> dict[str, Any]:
        return {
            "records": self.records, "stored": dict(sorted(self.stored.items())),
            "duplicates": dict(sorted(self.duplicates.items())), "skipped": dict(sorted(self.skipped.items())),
            "warnings": dict(sorted(self.warnings.items())), "failed": len(self.problems),
            "redacted": self.redacted.counts(),
        }


def _skip_value(text: str, index: int) -> int | None:
    """Where the value at ``index`` ends, found without building it (for a value the parser
    gave up on: too deep, or a number out of range); None when no end is found."""
    if text.startswith(("[", "{"), index):
        depth = 0
        for match in _TOKEN.finditer(text, index):
            token = match.group()
            if token[0] == '"':
                continue
            depth += 1 if token in "[{" else -1
            if depth == 0:
                return match.end()
        return None
    number = _NUMBER.match(text, index)
    return number.end() if number else None


# --- files: JSON Lines or one document ---------------------------------------------------

Line = tuple[int, bytes | None]
"""A line's number and its bytes (None: longer than the limit, skipped unread)."""


def _lines(fill: Callable[[memoryview], int], limit: int, failure: list[InputUnreadable] | None = None, *,
           reads: tuple[int, int] = (0, 0)) -> Iterator[Line]:
    """Numbered lines of at most ``limit`` bytes (newline excluded), cut from the content that
    ``fill`` puts in a buffer this reader keeps (:func:`~sediment.ingest.reading.compressed.open_filling`):
    each line is copied out of it once, and the buffer is filled again. A longer line is read
    past without being held. A byte order mark at the start is dropped. Input that cannot be
    read on (a corrupt, truncated or bomb compressed file) ends the lines: its error, with the
    line reached, goes to ``failure`` (without one, it is raised).

    The buffer starts at :data:`FIRST_BUFFER` bytes and doubles while reads fill it, up to
    :data:`~sediment.ingest.reading.compressed.READ_BUFFER`, every input's read buffer (a small
    file costs little, a large one is read in few fills), and beyond that only for a line that
    does not fit, up to the limit. ``reads`` gives other sizes for the two (a test's)."""
    first, largest = (reads[0] or FIRST_BUFFER, reads[1] or READ_BUFFER)
    number = 0
    buffer = bytearray(first)
    try:
        held = 0  # the bytes at the buffer's start: the line being read, no newline among them
        skipping = False  # the line being read is longer than the limit: its bytes are dropped
        started = False  # the start was looked at for a byte order mark
        while True:
            if held == len(buffer):  # the line being read (within the limit, or a mark's start) fills it
                buffer = _grown(buffer, held, max(held + 1, min(2 * held, limit + 1)))
            free = len(buffer) - held
            count = fill(memoryview(buffer)[held:])
            if not count:
                break
            end, start = held + count, 0
            if not started:
                if end < len(_BOM) and _BOM.startswith(buffer[:end]):
                    held = end  # perhaps a mark's start: read on before deciding
                    continue
                started = True
                start = len(_BOM) if buffer.startswith(_BOM) else 0
            search = max(held, start)  # the held bytes hold no newline
            while (newline := buffer.find(b"\n", search, end)) >= 0:
                number += 1
                if skipping or newline - start > limit:
                    skipping = False
                    yield number, None
                else:
                    yield number, bytes(memoryview(buffer)[start:newline + 1])
                start = search = newline + 1
            rest = end - start
            if skipping or rest > limit:
                skipping, held = True, 0
            else:
                if start:
                    view = memoryview(buffer)
                    view[:rest] = view[start:end]  # a memoryview's copy is a memmove: the two overlap
                held = rest
            if count == free and len(buffer) < largest:  # reads fill it: fewer, larger ones
                buffer = _grown(buffer, held, min(2 * len(buffer), largest))
        if skipping or held:  # the last line, without a newline
            number += 1
            yield number, None if skipping or held > limit else bytes(memoryview(buffer)[:held])
    except InputUnreadable as exc:
        exc.line = number + 1 if exc.line is None else exc.line  # the line being read
        if failure is None:
            raise
        failure.append(exc)


def _grown(buffer: bytearray, held: int, size: int) -> bytearray:
    """A buffer of ``size`` bytes that starts with the first ``held`` bytes of ``buffer``."""
    grown = bytearray(size)
    grown[:held] = memoryview(buffer)[:held]
    return grown


_BLANK: Final = re.compile(rb"[ \t\n\r]*")


def _blank(line: bytes) -> bool:
    """Only JSON whitespace (the match stops at the first other byte, so a long line costs nothing)."""
    return _BLANK.fullmatch(line) is not None


def _size(limit: int) -> str:
    return f"{limit // MIB} MiB" if limit % MIB == 0 else f"{limit} bytes"


def records(path: str, *, max_line: int = MAX_LINE_BYTES, max_document: int = MAX_DOCUMENT_BYTES,
            keep_flaws: bool = False, reader: JsonReader | None = None,
            watch: FormatWatch | None = None) -> Iterator[tuple[int, Any | Exception]]:
    """``(line or index, record)`` pairs, streamed; an unreadable record yields its problem.

    JSON Lines are read one line at a time (memory holds one record); a file whose first line
    is not a complete JSON value (or is an array followed by nothing) is read as one JSON
    document of at most ``max_document`` bytes: an object, or an array whose elements are the
    records (numbered by position). A file that is not one document is read as JSON Lines.
    With ``keep_flaws`` a duplicate key or an unreadable number inside a record is kept as a
    flaw (:class:`~sediment.ingest.reading.json_text.JsonReader`) for the translator to refuse that part alone.
    ``reader`` replaces the plain reader (one that gives the same values and refusals faster, as
    :class:`~sediment.ingest.calls.spans.SpanReader` does for call logs).
    A compressed file is inflated as it is read; when it cannot be read on, the records before
    are yielded and then :class:`~sediment.ingest.reading.compressed.InputUnreadable` is raised.
    ``watch`` is shown the lines as they are read (:mod:`~sediment.ingest.reading.wrong_format`).
    """
    failure: list[InputUnreadable] = []
    with open_filling(path) as fill:
        lines = _lines(fill, max_line, failure)
        yield from _records(lines if watch is None else watch.lines(lines), max_line, max_document,
                            reader or JsonReader(keep_flaws=keep_flaws))
    if failure:
        raise failure[0]


def _records(lines: Iterator[Line], max_line: int, max_document: int,
             reader: JsonReader) -> Iterator[tuple[int, Any | Exception]]:
    too_long = f"line longer than {_size(max_line)}"

    def one(number: int, line: bytes | None) -> Iterator[tuple[int, Any | Exception]]:
        if line is None:
            yield number, RecordProblem(too_long)
        elif not _blank(line):
            yield number, _parsed(reader, line)

    first: Line | None = next((item for item in lines if item[1] is None or not _blank(item[1])), None)
    if first is None:
        return
    number, line = first
    if line is None:
        yield number, RecordProblem(too_long)
        for item in lines:
            yield from one(*item)
        return
    parsed = _parsed(reader, line)
    following = next(lines, None)
    is_syntax = isinstance(parsed, RecordProblem) and parsed.syntax
    array_alone = isinstance(parsed, list) and (following is None or (following[1] is not None
                                                                      and _blank(following[1])))
    if not (is_syntax or array_alone):
        yield number, parsed
        if following is not None:
            yield from one(*following)
        for item in lines:
            yield from one(*item)
        return
    # Perhaps one document spanning lines: gather it (up to the cap) and read it whole.
    held: list[Line] = [first] if following is None else [first, following]
    size = sum(len(held_line) for _, held_line in held if held_line is not None)
    fits = all(held_line is not None for _, held_line in held) and size <= max_document
    if fits:
        for item in lines:
            held.append(item)
            if item[1] is None or size + len(item[1]) > max_document:
                fits = False
                break
            size += len(item[1])
    if fits:
        document = _document(reader, b"".join(held_line for _, held_line in held if held_line is not None))
        if document is not None:
            yield from document
            return
    # Not one document: every line is a record.
    if isinstance(parsed, RecordProblem) and parsed.syntax and not fits:
        parsed = RecordProblem(f"{parsed} (a JSON document spanning lines is read whole, up to "
                               f"{_size(max_document)}; larger input must be JSON Lines)", syntax=True)
    yield number, parsed
    for item in held[1:]:
        yield from one(*item)
    for item in lines:
        yield from one(*item)


def _parsed(reader: JsonReader, line: bytes) -> Any | RecordProblem:
    try:
        return reader.parse(line)
    except RecordProblem as exc:
        return detached(exc)


def _document(reader: JsonReader, data: bytes) -> list[tuple[int, Any | Exception]] | None:
    """The records of one JSON document (an array's elements, by position, or one value),
    each element read on its own so a bad one fails alone; None when it is not one document."""
    try:
        text = _utf8(data)
    except RecordProblem:
        return None
    index = _skip_ws(text, 0)
    found: list[tuple[int, Any | Exception]] = []
    if not text.startswith("[", index):
        element = _element(reader, text, index)
        if element is None:
            return None
        value, index = element
        found.append((1, value))
    else:
        index = _skip_ws(text, index + 1)
        if text.startswith("]", index):
            index += 1
        else:
            while True:
                element = _element(reader, text, index)
                if element is None:
                    return None
                value, index = element
                found.append((len(found) + 1, value))
                index = _skip_ws(text, index)
                if text.startswith(",", index):
                    index = _skip_ws(text, index + 1)
                    continue
                if not text.startswith("]", index):
                    return None
                index += 1
                break
    if _skip_ws(text, index) != len(text):
        return None
    return found


def _element(reader: JsonReader, text: str, index: int) -> tuple[Any | Exception, int] | None:
    try:
        return reader.value_at(text, index)
    except RecordProblem as exc:
        if exc.syntax:
            return None
        end = _skip_value(text, index)
        return None if end is None else (exc, end)


# --- ingest -------------------------------------------------------------------------------


def describe_refusal(exc: Exception) -> str:
    """A translator's refusal in one line: the field, then what is wrong."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(record)"
        return f"{where}: {validation_message(first)}"
    return str(exc)


def ingest_files(
    paths: Iterable[str],
    translate: Callable[[Any], Translation],
    store: FactStore,
    *,
    workers: int = 1,
    keep_flaws: bool = False,
    reader: Callable[[], JsonReader] | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    engine: str = "local",
) -> IngestReport:
    """Translate every record of every file and append the Facts in batches, committed a group
    of batches at a time (:class:`~sediment.ingest.reading.write_groups.WriteGroups`).

    With ``workers`` > 1, the files are parsed, translated and encoded in forked processes, a
    file a chunk (:data:`MAX_CHUNKS` chunks at most); the parent writes their batches in file order (each
    file as soon as it and the ones before it are ready), so what is stored (and which redelivery
    counts as the duplicate) is the same as with one worker. ``keep_flaws`` reads records as :func:`records` says;
    ``reader`` makes the reader of each chunk's files (one per chunk, used in file order).
    ``progress(files_done, files_total, records_read)`` is called as records are read (after
    each record with one worker, after each chunk of files with several); the last file is
    counted done only once everything is stored (the last group of batches committed).
    With ``engine="ray"`` the files are parsed, translated and encoded by tasks on a Ray cluster,
    partitioned by the hash of each file's name (:mod:`sediment.parallel.cluster`; every node reads
    the files at the same paths, and the store must be PostgreSQL), and written here in file order.
    """
    files = list(paths)
    if engine_name(engine) == "ray":  # engine is checked (an unknown one is refused)
        require_shared_store(store.url)
        if "-" in files:
            raise UsageError("--engine ray reads files on the cluster's nodes, not this process's stdin: name files")
        if files:
            return _ingest_on_ray(files, translate, store, workers, keep_flaws, reader)
    if workers <= 1 or len(files) < 2:
        report = IngestReport()
        shared = reader() if reader is not None else None
        with remembering_texts(), WriteGroups(store, functools.partial(_merge, report)) as groups:
            for done, path in enumerate(files):
                tick = None if progress is None else _ticker(progress, done, len(files), report)
                _ingest_file(path, translate, lambda facts: groups.add(store.prepare(facts)), report,
                             keep_flaws, shared, tick)
                if progress is not None and done + 1 < len(files):
                    progress(done + 1, len(files), report.records)
        if progress is not None and files:  # every file done only once its last group is stored
            progress(len(files), len(files), report.records)
        return report
    spool = Path(tempfile.mkdtemp(prefix="sediment-ingest-"))
    try:
        def chunk_job(chunk: range) -> tuple[IngestReport, list[Path], int]:
            report, batches = IngestReport(), list[Path]()

            def spill(facts: list[FactModel]) -> None:
                batch = spool / f"batch-{chunk.start:06d}-{len(batches):06d}.pickle"
                with batch.open("wb") as handle:
                    pickle.dump(store.prepare(facts), handle, protocol=pickle.HIGHEST_PROTOCOL)
                batches.append(batch)

            shared = reader() if reader is not None else None
            with remembering_texts():
                for index in chunk:
                    _ingest_file(files[index], translate, spill, report, keep_flaws, shared)
            return report, batches, chunk.stop

        total = IngestReport()
        # From here on every chunk left is being worked on: each result is committed as it comes,
        # while the workers finish theirs, so the run's end waits for the last chunk's rows alone
        # and not for a whole group gathered before it.
        per_worker = chunks_per_worker(len(files), workers)
        last_round_from = last_round(len(files), workers, per_worker)
        with WriteGroups(store, functools.partial(_merge, total), parallel=True) as groups:
            for report, batches, done in ordered_chunks(chunk_job, len(files), workers, per_worker=per_worker):
                total.absorb(report)
                for batch in batches:
                    with batch.open("rb") as handle:
                        groups.add(pickle.load(handle))
                    batch.unlink()
                if last_round_from <= done < len(files):
                    groups.flush()
                if progress is not None and done < len(files):
                    progress(done, len(files), total.records)
        if progress is not None:  # every file done only once its last group is stored
            progress(len(files), len(files), total.records)
        return total
    finally:
        shutil.rmtree(spool, ignore_errors=True)


#: The most chunks a parallel ingest cuts its files into: below it, each file is a chunk, so the
#: parent writes each file's rows as soon as it (and every file before it) is ready, and the
#: workers end within a file of each other. With a chunk of several files (the first cut was eight
#: chunks a worker), the last chunks' rows were all written after the workers had ended: on the
#: full ``pilot`` (240 files) two chunks of fifteen files each.
MAX_CHUNKS: Final = 4096


def chunks_per_worker(files: int, workers: int) -> int:
    """How many chunks a worker takes of a parallel ingest of ``files`` files: a file a chunk, and
    :data:`MAX_CHUNKS` chunks at most."""
    if files <= MAX_CHUNKS:
        return max(1, -(-files // workers))
    return max(1, MAX_CHUNKS // workers)


def _ticker(progress: Callable[[int, int, int], None], done: int, files: int,
            report: IngestReport) -> Callable[[], None]:
    return lambda: progress(done, files, report.records)


def _prepare_files(files: list[str], translate: Callable[[Any], Translation], store: FactStore, keep_flaws: bool,
                   reader: Callable[[], JsonReader] | None, positions: Sequence[int]
                   ) -> list[tuple[IngestReport, list[PreparedFacts]]]:
    """A Ray task's share of an ingest: each file's report and its encoded batches. A Ray worker
    process may be given a later partition before an earlier one, so the writer forgets what it
    prepared before: each partition's batches carry every blob they name."""
    store.forget_prepared()
    shared = reader() if reader is not None else None
    results = []
    with remembering_texts():
        for index in positions:
            report, batches = IngestReport(), list[PreparedFacts]()
            _ingest_file(files[index], translate, functools.partial(_prepare_into, store, batches), report,
                         keep_flaws, shared)
            results.append((report, batches))
    return results


def _prepare_into(store: FactStore, batches: list[PreparedFacts], facts: list[FactModel]) -> None:
    batches.append(store.prepare(facts))


def _ingest_on_ray(files: list[str], translate: Callable[[Any], Translation], store: FactStore, workers: int,
                   keep_flaws: bool, reader: Callable[[], JsonReader] | None) -> IngestReport:
    from sediment.parallel.cluster import ordered_partitions

    total = IngestReport()
    job = functools.partial(_prepare_files, files, translate, store, keep_flaws, reader)
    with WriteGroups(store, functools.partial(_merge, total)) as groups:
        for report, batches in ordered_partitions(job, [os.path.abspath(f) for f in files], workers):
            total.absorb(report)
            for batch in batches:
                groups.add(batch)
    return total


def _merge(report: IngestReport, result: AppendResult) -> None:
    report.stored.update(result.stored)
    report.duplicates.update(result.duplicates)


def _ingest_file(path: str, translate: Callable[[Any], Translation], sink: Callable[[list[FactModel]], None],
                 report: IngestReport, keep_flaws: bool = False, reader: JsonReader | None = None,
                 tick: Callable[[], None] | None = None) -> None:
    pending: list[FactModel] = []
    read, problems = report.records, len(report.problems)
    watch = FormatWatch()
    try:
        with tallying(report.redacted):
            _ingest_stream(path, records(path, keep_flaws=keep_flaws, reader=reader, watch=watch), translate, sink,
                           report, pending, tick, watch)
    except InputUnreadable as exc:  # the records before it are kept
        report.problems.append(InputProblem(path, exc.line or 0, str(exc)))
    except OSError as exc:
        report.problems.append(InputProblem(path, 0, f"cannot read: {exc.strerror or exc}"))
    else:
        wrong = watch.verdict()
        if wrong is not None:  # another format: one problem, not one per line (no line held a record)
            del report.problems[problems:]
            report.records = read
            report.problems.append(InputProblem(path, 0, wrong))
        elif report.records == read:
            report.problems.append(InputProblem(path, 0, EMPTY))
    if pending:
        sink(pending)


def _ingest_stream(path: str, stream: Iterable[tuple[int, Any]], translate: Callable[[Any], Translation],
                   sink: Callable[[list[FactModel]], None], report: IngestReport, pending: list[FactModel],
                   tick: Callable[[], None] | None = None, watch: FormatWatch | None = None) -> None:
    """Translate each record; only the input's faults are problems. A translator's
    TranslationError (or a model's ValidationError) names the input field; any other exception
    is a bug in Sediment and propagates with its traceback. ``tick`` runs after each record is
    read; ``watch`` is told whether each record's text was JSON (and counts the bytes read, which
    bound a batch with :data:`BATCH_BYTES`)."""
    mark = 0 if watch is None else watch.bytes
    for number, record in stream:
        report.records += 1
        if watch is not None:
            watch.saw(syntax=isinstance(record, RecordProblem) and record.syntax)
        if tick is not None:
            tick()
        try:
            if isinstance(record, Exception):
                raise record
            if not isinstance(record, dict):
                raise TranslationError(f"a record must be a JSON object, not {type(record).__name__}")
            translation = translate(record)
        except (TranslationError, ValidationError) as exc:
            report.problems.append(InputProblem(path, number, describe_refusal(exc)))
            continue
        if translation.skipped:
            report.skipped[translation.skipped] += 1
        report.skipped.update(translation.skips)
        report.warnings.update(translation.warnings)
        report.elements += translation.elements
        report.problems.extend(InputProblem(path, number, problem) for problem in translation.problems)
        pending.extend(translation.facts)
        if len(pending) >= BATCH or (watch is not None and watch.bytes - mark >= BATCH_BYTES):
            sink(list(pending))
            pending.clear()
            mark = 0 if watch is None else watch.bytes
