"""The persistent trajectory library: pinned canonical shards plus derived, portable indexes.

Layout of a library directory::

    manifest.json                          every pinned shard (path, sha256, records) and derived file
    shards/<sha256[:16]>.jsonl.gz          canonical records, one JSON object a line, sorted by id
    all.jsonl.gz                           optional (``materialize_all``): every record, sorted by id
    rankings.jsonl.gz                      one row per retained interaction (:mod:`.rankings`)
    duplicate_provenance.jsonl.gz          every source collapsed into a retained interaction
    task_splits.jsonl.gz                   one split per task_key, over every source
    successful|unsuccessful|unknown.index.jsonl.gz            outcome partitions (trajectory ids)
    structurally_eligible|training_eligible.index.jsonl.gz    eligibility partitions (trajectory ids)
    index.sqlite                           records x rankings x splits, queryable without the JSONL

Shards are immutable: an import writes the records it has not seen into new shards named by
their content and never rewrites an earlier one; records already present are skipped, so
importing the same input again changes nothing. Every file is byte-deterministic (gzip with
mtime 0 and no file name; rows sorted; SQLite built fresh in sorted order), so the same set
of records gives the same bytes whatever order they arrived in. Import streams: records are
staged in a temporary SQLite file, not held in memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import heapq
import io
import json
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from sediment.errors import SedimentError
from sediment.file_modes import publish_mode, published_mode
from sediment.records import encode_record
from sediment.trajectory import facets, rankings
from sediment.trajectory.record import Trajectory, from_json, from_plain, validated, verification_strength

LIBRARY_VERSION = "1.0"
MANIFEST = "manifest.json"
INDEX = "index.sqlite"
SHARD_DIRECTORY = "shards"
ALL = "all.jsonl.gz"
SHARD_RECORDS = 1000
SHARD_BYTES = 64 << 20
PARTITIONS = ("successful", "unsuccessful", "unknown", "structurally_eligible", "training_eligible")
_OUTCOME_PARTITION = {"success": "successful", "failure": "unsuccessful", "unknown": "unknown"}


_WORK_DIRECTORIES = (".staging-", ".derive-", ".all-")
"""The prefixes of an import's private directories in the library (removed when it ends)."""
_TEMPORARY = re.compile(r"\..+\.[a-z0-9_]{8}")
"""The name of an atomic write's temporary (``.<name>.`` and mkstemp's eight characters)."""


class LibraryError(SedimentError):
    """The library directory is unusable: not a library, corrupt, or locked by another import."""


@dataclass
class ImportReport:
    """What one import did."""

    added: int = 0
    already_present: int = 0
    new_shards: list[str] = field(default_factory=list)
    record_count: int = 0


def encode(record: Mapping[str, Any]) -> bytes:
    """One record's shard line (without the newline): the record's canonical text."""
    return encode_record(dict(record)).encode("ascii")


def record_text(model: Trajectory) -> bytes:
    """The record's canonical text (``to_json``), as bytes. The same keys sorted at every level,
    compact separators and ASCII escapes, computed from pydantic's own dump instead of a
    Python-level walk of the model (a record holds no datetimes, so the two agree; a test
    compares them on every fixture)."""
    return json.dumps(model.model_dump(mode="python"), sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=True).encode("ascii")


def gzip_bytes(data: bytes) -> bytes:
    """Byte-deterministic gzip: mtime 0, no file name."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=6) as handle:
        handle.write(data)
    return buffer.getvalue()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically; a file that already holds these bytes is left alone."""
    with contextlib.suppress(FileNotFoundError):
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        publish_mode(fd)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _read_gzip_lines(path: Path) -> Iterator[bytes]:
    with gzip.open(path, "rb") as handle:
        for line in handle:
            yield line.rstrip(b"\n")


_SUMMARY_COLUMNS = (
    "trajectory_id", "task_id", "task_key", "environment_key", "task_family", "domain", "upstream_split",
    "source_id", "source_url", "source_revision", "source_locator", "source_sha256", "model", "scaffold",
    "demonstration_provenance", "success", "outcome_category", "reward", "completeness", "verification_strength",
    "event_count", "assistant_count", "supervised_count", "tool_call_count", "answered_call_count",
    "missing_field_count", "interaction_hash", "protected")
_RANKING_COLUMNS = (
    "quality_tier", "within_task_rank", "tie_break_score", "source_confidence", "structurally_eligible",
    "sft_eligible")


def _sql_value(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, list | dict):
        return json.dumps(value, sort_keys=True)
    return value


class Library:
    """A library directory: import records into it, and read records, rankings and splits back."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    # -- reading --------------------------------------------------------------------------

    def exists(self) -> bool:
        return (self.root / MANIFEST).is_file()

    def manifest(self) -> dict[str, Any]:
        path = self.root / MANIFEST
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise LibraryError(f"{self.root}: not a trajectory library (no {MANIFEST}; import into it first)") from None
        except (OSError, ValueError) as exc:
            raise LibraryError(f"{path}: unreadable manifest: {exc}") from None
        if not isinstance(value, dict) or value.get("library_version") != LIBRARY_VERSION:
            raise LibraryError(f"{path}: not a version {LIBRARY_VERSION} trajectory library manifest")
        return value

    def _connect(self) -> sqlite3.Connection:
        path = self.root / INDEX
        if not path.is_file():
            raise LibraryError(f"{self.root}: no {INDEX} (not a trajectory library)")
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        connection.row_factory = sqlite3.Row
        return connection

    def query(self, sql: str, parameters: Iterable[Any] = ()) -> list[dict[str, Any]]:
        """Rows of a read-only query over ``index.sqlite`` (tables ``records``, ``rankings``,
        ``task_splits``, and the joined view ``library``)."""
        with contextlib.closing(self._connect()) as connection:
            return [dict(row) for row in connection.execute(sql, tuple(parameters))]

    def known_ids(self) -> set[str]:
        """Every ``trajectory_id`` in the library (from ``index.sqlite``)."""
        if not (self.root / INDEX).is_file():
            return set()
        return {row["trajectory_id"] for row in self.query("SELECT trajectory_id FROM records")}

    def summaries(self) -> list[dict[str, Any]]:
        if not (self.root / INDEX).is_file():
            return []
        return [json.loads(row["summary"]) for row in self.query("SELECT summary FROM records ORDER BY trajectory_id")]

    def record(self, trajectory_id: str) -> dict[str, Any]:
        """The canonical record with this id, read from its shard (one shard, up to its line)."""
        rows = self.query("SELECT shard, line FROM records WHERE trajectory_id = ?", [trajectory_id])
        if not rows:
            raise LibraryError(f"no trajectory {trajectory_id!r} in {self.root}")
        shard, line = rows[0]["shard"], rows[0]["line"]
        for number, data in enumerate(_read_gzip_lines(self.root / shard)):
            if number == line:
                value = orjson.loads(data)
                if not isinstance(value, dict):
                    break
                return value
        raise LibraryError(f"{shard}: line {line + 1} missing for {trajectory_id!r} (library corrupt)")

    def trajectory(self, trajectory_id: str) -> Trajectory:
        """The record with this id as the record model (parsed and validated)."""
        return from_json(encode(self.record(trajectory_id)))

    def records(self, trajectory_ids: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """Canonical records in ``trajectory_id`` order (all, or those named), streaming shard by shard."""
        wanted = None if trajectory_ids is None else set(trajectory_ids)
        streams = [_read_gzip_lines(self.root / shard["path"]) for shard in self.manifest()["shards"]]
        decoded = ((orjson.loads(line) for line in stream) for stream in streams)
        for record in heapq.merge(*decoded, key=lambda r: r["trajectory_id"]):
            if wanted is None or record["trajectory_id"] in wanted:
                yield record

    def rankings(self) -> list[dict[str, Any]]:
        return [orjson.loads(line) for line in _read_gzip_lines(self.root / "rankings.jsonl.gz")]

    def task_splits(self) -> dict[str, str]:
        return {row["task_key"]: row["split"] for row in self.query("SELECT task_key, split FROM task_splits")}

    def partition(self, name: str) -> list[str]:
        if name not in PARTITIONS:
            raise LibraryError(f"unknown partition {name!r}; one of: {', '.join(PARTITIONS)}")
        return [orjson.loads(line)["trajectory_id"]
                for line in _read_gzip_lines(self.root / f"{name}.index.jsonl.gz")]

    # -- the consumer selections ------------------------------------------------------------

    def alternatives(self, task_key: str) -> list[dict[str, Any]]:
        """Every retained attempt at ``task_key``: grouped by environment key, best first in each."""
        return [r for r in self.rankings() if r["task_key"] == task_key]

    def best_verified(self, task_key: str) -> dict[str, Any] | None:
        """The record of the best-ranked successful attempt at ``task_key`` whose success has
        executable or reproduced evidence (tier 1-3), or ``None``."""
        verified = [row for row in self.alternatives(task_key)
                    if row["outcome_category"] == "success" and row["quality_tier"] <= 3]
        if not verified:
            return None
        best = min(verified, key=lambda r: (r["quality_tier"], -r["tie_break_score"], r["trajectory_id"]))
        return self.record(best["trajectory_id"])

    def by_quality_tier(self, *tiers: int) -> list[dict[str, Any]]:
        """Ranking rows of the given tiers (1 best .. 5)."""
        wanted = set(tiers)
        unknown = wanted - set(rankings.TIERS)
        if unknown:
            raise LibraryError(f"quality tiers are 1-5, got {sorted(unknown)}")
        return [r for r in self.rankings() if r["quality_tier"] in wanted]

    # -- importing ---------------------------------------------------------------------------

    def import_records(self, records: Iterable[Any], *, materialize_all: bool = False,
                       validate: Callable[[dict[str, Any]], None] | None = None,
                       prevalidated: bool = False) -> ImportReport:
        """Add the records (``Trajectory`` models, or their JSON objects) not yet in the library;
        rebuild the derived indexes.

        Every record is validated against the canonical rules first (a record that breaks one
        raises :class:`~sediment.trajectory.record.TrajectoryError` and nothing is written);
        ``validate``, when given, is a further check on the record's JSON object. Readers that
        report refusals line by line (the importers, :mod:`.library_input`) validate before they
        yield and pass ``prevalidated=True``: their ``Trajectory`` models are then not validated
        a second time (JSON objects always are). Holds an exclusive lock on the directory for
        the whole import."""
        self.root.mkdir(parents=True, exist_ok=True)
        with self._lock():
            return self._import(records, materialize_all, validate, prevalidated)

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        with open(self.root / ".lock", "a+b") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LibraryError(f"{self.root}: another import holds the library lock") from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _sweep_abandoned(self) -> None:
        """Remove what an import killed outright left behind: its staging and derive directories
        and the temporaries of its atomic writes. Called under the lock, so none is live."""
        for directory in (self.root, self.root / SHARD_DIRECTORY):
            if not directory.is_dir():
                continue
            for entry in directory.iterdir():
                if entry.is_dir() and not entry.is_symlink() and entry.name.startswith(_WORK_DIRECTORIES):
                    shutil.rmtree(entry, ignore_errors=True)
                elif entry.is_file() and _TEMPORARY.fullmatch(entry.name):
                    with contextlib.suppress(FileNotFoundError):
                        entry.unlink()

    def _import(self, records: Iterable[Any], materialize_all: bool,
                validate: Callable[[dict[str, Any]], None] | None, prevalidated: bool) -> ImportReport:
        self._sweep_abandoned()
        report = ImportReport()
        existed = self.exists()
        manifest = self.manifest() if existed else {"shards": []}
        present = self.known_ids()
        with tempfile.TemporaryDirectory(dir=self.root, prefix=".staging-") as staging:
            stage_path = Path(staging) / "stage.sqlite"
            stage = sqlite3.connect(stage_path)
            stage.execute("PRAGMA journal_mode = OFF")
            stage.execute("CREATE TABLE staged (trajectory_id TEXT PRIMARY KEY, line BLOB, digest TEXT, summary TEXT)")
            for item in records:
                if isinstance(item, Trajectory):
                    model = item if prevalidated else validated(item)
                else:
                    model = from_plain(item)  # validates
                tid = model.trajectory_id
                if tid in present:
                    report.already_present += 1
                    continue
                line = record_text(model)
                record = orjson.loads(line)
                if validate is not None:
                    validate(record)
                digest = _sha256(line)
                existing = stage.execute("SELECT digest FROM staged WHERE trajectory_id = ?", (tid,)).fetchone()
                if existing is not None:
                    report.already_present += 1
                    if digest < existing[0]:  # one deterministic winner whatever the arrival order
                        stage.execute("UPDATE staged SET line = ?, digest = ? WHERE trajectory_id = ?",
                                      (line, digest, tid))
                    continue
                summary = json.dumps(rankings.summarize(record, verification_strength(model)), sort_keys=True)
                stage.execute("INSERT INTO staged VALUES (?, ?, ?, ?)", (tid, line, digest, summary))
            stage.commit()
            report.added = stage.execute("SELECT count(*) FROM staged").fetchone()[0]
            report.record_count = len(present) + report.added
            if existed and report.added == 0 and materialize_all == ("materialized" in manifest):
                stage.close()
                return report  # nothing new: every file stays as it is
            shards = list(manifest["shards"])
            stage.execute("CREATE TABLE located (trajectory_id TEXT PRIMARY KEY, shard TEXT, line INTEGER, "
                          "summary TEXT)")
            for shard_path, count, members in self._write_shards(stage):
                shards.append({"path": shard_path, "sha256": _sha256((self.root / shard_path).read_bytes()),
                               "records": count})
                report.new_shards.append(shard_path)
                stage.executemany("INSERT INTO located VALUES (?, ?, ?, ?)",
                                  ((tid, shard_path, number, summary) for number, (tid, summary) in enumerate(members)))
            stage.commit()
            stage.close()
            shards.sort(key=lambda s: s["path"])
            self._write_derived(stage_path, shards, report.record_count, materialize_all)
        return report

    def _write_shards(self, stage: sqlite3.Connection) -> Iterator[tuple[str, int, list[tuple[str, str]]]]:
        buffer = bytearray()
        members: list[tuple[str, str]] = []

        def flush() -> tuple[str, int, list[tuple[str, str]]]:
            data = gzip_bytes(bytes(buffer))
            path = f"{SHARD_DIRECTORY}/{_sha256(data)[:16]}.jsonl.gz"
            if not (self.root / path).exists():
                _write_atomic(self.root / path, data)
            return path, len(members), list(members)

        staged = stage.execute("SELECT trajectory_id, line, summary FROM staged ORDER BY trajectory_id")
        for tid, line, summary in staged:
            buffer += line + b"\n"
            members.append((tid, summary))
            if len(members) >= SHARD_RECORDS or len(buffer) >= SHARD_BYTES:
                yield flush()
                buffer.clear()
                members.clear()
        if members:
            yield flush()

    def _write_derived(self, stage_path: Path, shards: list[dict[str, Any]], record_count: int,
                       materialize_all: bool) -> None:
        """Build index.sqlite and every derived file, streaming: one task's summaries in memory at a time."""
        with tempfile.TemporaryDirectory(dir=self.root, prefix=".derive-") as directory:
            work = Path(directory)
            index_path = work / INDEX
            db = sqlite3.connect(index_path)
            db.execute("PRAGMA journal_mode = OFF")
            db.executescript(_INDEX_SCHEMA.format(columns=", ".join(_SUMMARY_COLUMNS),
                                                  ranking_columns=", ".join(_RANKING_COLUMNS)))
            db.execute("ATTACH DATABASE ? AS stage", (str(stage_path),))
            db.execute("CREATE TABLE stage.partitions (name TEXT, trajectory_id TEXT)")
            db.execute("CREATE TABLE stage.duplicates (retained TEXT, trajectory_id TEXT, row TEXT)")
            sources = ["SELECT trajectory_id, shard, line, summary FROM stage.located"]
            if (self.root / INDEX).is_file():
                db.execute("ATTACH DATABASE ? AS old", (f"file:{self.root / INDEX}?mode=ro",))
                sources.append("SELECT trajectory_id, shard, line, summary FROM old.records")
            placeholders = ", ".join("?" for _ in range(len(_SUMMARY_COLUMNS) + 3))
            union = " UNION ALL ".join(sources)
            cursor = db.execute(f"SELECT shard, line, summary FROM ({union}) ORDER BY trajectory_id")
            insert = db.cursor()
            for shard, line, text in cursor:
                summary = json.loads(text)
                insert.execute(f"INSERT INTO records VALUES ({placeholders})",
                               [*(_sql_value(summary[c]) for c in _SUMMARY_COLUMNS), shard, line, text])
            if (self.root / INDEX).is_file():
                db.commit()
                db.execute("DETACH DATABASE old")
            ranking_placeholders = ", ".join("?" for _ in range(len(_RANKING_COLUMNS) + 5))
            rankings_file = _GzipLines(work / "rankings.jsonl.gz")
            splits_file = _GzipLines(work / "task_splits.jsonl.gz")
            current_task: str | None = None
            task_summaries: list[dict[str, Any]] = []
            group: list[dict[str, Any]] = []
            group_key: tuple[str, str] | None = None

            def flush_group() -> None:
                ranked, duplicates = rankings.rank(group)
                for row in ranked:
                    rankings_file.write(row)
                    insert.execute(f"INSERT INTO rankings VALUES ({ranking_placeholders})",
                                   [row["trajectory_id"], row["task_key"], row["environment_key"],
                                    *(_sql_value(row[c]) for c in _RANKING_COLUMNS),
                                    _sql_value(row["duplicate_provenance"]["contributing_trajectory_ids"]),
                                    _sql_value(row["ranking_reasons"])])
                    for member in row["duplicate_provenance"]["contributing_trajectory_ids"]:
                        insert.execute("INSERT INTO retained VALUES (?, ?)", (member, row["trajectory_id"]))
                    names = [_OUTCOME_PARTITION[row["outcome_category"]]]
                    if row["structurally_eligible"]:
                        names.append("structurally_eligible")
                    if row["sft_eligible"]:
                        names.append("training_eligible")
                    insert.executemany("INSERT INTO stage.partitions VALUES (?, ?)",
                                       ((name, row["trajectory_id"]) for name in names))
                insert.executemany("INSERT INTO stage.duplicates VALUES (?, ?, ?)",
                                   ((d["retained_trajectory_id"], d["trajectory_id"],
                                     facets.canonical_json(d).decode()) for d in duplicates))

            def flush_task() -> None:
                for split in rankings.assign_task_splits(task_summaries):
                    splits_file.write(split)
                    insert.execute("INSERT INTO task_splits VALUES (?, ?, ?)",
                                   (split["task_key"], split["split"], split["reason"]))

            ordered = db.execute("SELECT summary FROM records ORDER BY task_key, environment_key, trajectory_id")
            for (text,) in ordered:
                summary = json.loads(text)
                key = (summary["task_key"], summary["environment_key"])
                if group_key is not None and key != group_key:
                    flush_group()
                    group = []
                if current_task is not None and summary["task_key"] != current_task:
                    flush_task()
                    task_summaries = []
                group_key, current_task = key, summary["task_key"]
                group.append(summary)
                task_summaries.append(summary)
            if group:
                flush_group()
                flush_task()
            db.commit()
            counts = {"rankings.jsonl.gz": rankings_file.close(), "task_splits.jsonl.gz": splits_file.close()}
            duplicates_file = _GzipLines(work / "duplicate_provenance.jsonl.gz")
            for (text,) in db.execute("SELECT row FROM stage.duplicates ORDER BY retained, trajectory_id"):
                duplicates_file.write_text(text)
            counts["duplicate_provenance.jsonl.gz"] = duplicates_file.close()
            for name in PARTITIONS:
                partition = _GzipLines(work / f"{name}.index.jsonl.gz")
                for (tid,) in db.execute("SELECT trajectory_id FROM stage.partitions WHERE name = ? "
                                         "ORDER BY trajectory_id", (name,)):
                    partition.write({"trajectory_id": tid})
                counts[f"{name}.index.jsonl.gz"] = partition.close()
            db.execute("DETACH DATABASE stage")
            db.execute("VACUUM")
            db.close()
            derived: list[dict[str, Any]] = []
            for name in sorted(counts):
                derived.append({"path": name, "sha256": _file_sha256(work / name), "records": counts[name]})
                _replace(work / name, self.root / name)
            derived.append({"path": INDEX, "sha256": _file_sha256(index_path), "records": record_count})
            _replace(index_path, self.root / INDEX)
        derived.sort(key=lambda d: d["path"])
        manifest: dict[str, Any] = {
            "library_version": LIBRARY_VERSION,
            "record_schema": "trajectory/1.0",
            "record_count": record_count,
            "shards": shards,
            "derived": derived,
        }
        if materialize_all:
            with tempfile.TemporaryDirectory(dir=self.root, prefix=".all-") as directory:
                everything = _GzipLines(Path(directory) / ALL)
                for record in self._records_from(shards):
                    everything.write_text(encode(record).decode("ascii"))
                everything.close()
                manifest["materialized"] = {"path": ALL, "sha256": _file_sha256(Path(directory) / ALL),
                                            "records": record_count}
                _replace(Path(directory) / ALL, self.root / ALL)
        elif (self.root / ALL).exists():
            os.unlink(self.root / ALL)  # a stale materialization would disagree with the shards
        _write_atomic(self.root / MANIFEST, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())

    def _records_from(self, shards: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        streams = [(orjson.loads(line) for line in _read_gzip_lines(self.root / s["path"])) for s in shards]
        yield from heapq.merge(*streams, key=lambda r: r["trajectory_id"])


_INDEX_SCHEMA = """
    CREATE TABLE records ({columns}, shard TEXT NOT NULL, line INTEGER NOT NULL, summary TEXT NOT NULL,
                          PRIMARY KEY (trajectory_id));
    CREATE TABLE rankings (trajectory_id TEXT PRIMARY KEY, task_key TEXT, environment_key TEXT,
                           {ranking_columns}, contributing_trajectory_ids TEXT, ranking_reasons TEXT);
    CREATE TABLE retained (trajectory_id TEXT PRIMARY KEY, retained_trajectory_id TEXT NOT NULL);
    CREATE TABLE task_splits (task_key TEXT PRIMARY KEY, split TEXT NOT NULL, reason TEXT NOT NULL);
    CREATE INDEX records_task ON records (task_key, environment_key);
    CREATE INDEX records_source ON records (source_id, source_revision);
    CREATE INDEX records_model ON records (model);
    CREATE VIEW library AS
        SELECT r.trajectory_id, r.task_key, r.task_id, r.environment_key, r.source_id, r.source_revision,
               r.model, r.scaffold, r.task_family, r.demonstration_provenance, r.outcome_category,
               r.verification_strength, r.completeness, k.quality_tier, k.within_task_rank,
               k.tie_break_score, k.structurally_eligible, k.sft_eligible, s.split
        FROM records r JOIN rankings k ON k.trajectory_id = r.trajectory_id
        JOIN task_splits s ON s.task_key = r.task_key;
"""


class _GzipLines:
    """A byte-deterministic gzip file (mtime 0, no name) written one JSON line at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._raw = path.open("wb")
        self._gzip = gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, mtime=0, compresslevel=6)
        self.count = 0

    def write(self, row: Mapping[str, Any]) -> None:
        self._gzip.write(facets.canonical_json(row) + b"\n")
        self.count += 1

    def write_text(self, text: str) -> None:
        self._gzip.write(text.encode("utf-8") + b"\n")
        self.count += 1

    def close(self) -> int:
        self._gzip.close()
        self._raw.close()
        return self.count


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _replace(source: Path, target: Path) -> None:
    """Move ``source`` over ``target`` unless ``target`` already holds the same bytes (left alone);
    the moved file gets the published mode (SQLite creates its files 0644 less the umask)."""
    if target.is_file() and target.stat().st_size == source.stat().st_size \
            and _file_sha256(target) == _file_sha256(source):
        source.unlink()
        return
    os.chmod(source, published_mode())
    os.replace(source, target)
