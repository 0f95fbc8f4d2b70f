"""Opening the fact store from real, concurrent and dying processes; read-only and failing stores.

Creation and every migration is one transaction under a lock (SQLite: ``BEGIN IMMEDIATE`` on the
database file; PostgreSQL: a transaction-scoped advisory lock), so N processes opening a fresh
store at once all succeed, and a process killed at any point of the creation leaves a store the
next open creates or reads. Failures of the store (read-only, full, uncreatable) are one line
with exit code 1, never a traceback; these tests drive the real CLI in subprocesses.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from sediment.store import FactStore, StoreError, schema
from sediment.testing import ORG, postgres_base_url
from sediment.testing.lanes import _postgres_database

ROOT = Path(__file__).resolve().parents[1]
WORKERS = 6
ROUNDS = 20
KILLS = 36

#: A process that appends one call of Session ``s<n>`` to the store it is given.
OPENER = r"""
import json, sys, time, traceback
from datetime import UTC, datetime
from sediment.model.facts import InferenceCall, InferenceMessage, TextPart
from sediment.store import FactStore

def fact(n):
    return InferenceCall(
        inference_call_id=f"c{n}", org_id="acme", session_id=f"s{n}", model_call_id=f"chatcmpl-{n}",
        input_messages=(InferenceMessage(role="user", parts=(TextPart(content=f"question {n}"),)),),
        output_messages=(InferenceMessage(role="assistant", parts=(TextPart(content="answer"),)),),
        observed_at=datetime(2026, 1, 5, 12, 0, tzinfo=UTC), raw={"request": {"messages": [{"n": n}]}})

def open_and_append(url, n):
    store = FactStore(url)
    store.append([fact(n)])
    store.close()
"""

#: Rounds of ``[url, start (monotonic clock), n]`` on stdin; one JSON line (``"ok"`` or the traceback) each.
RACER = OPENER + r"""
print(json.dumps("ready"), flush=True)
for line in sys.stdin:
    url, start, n = json.loads(line)
    while time.monotonic() < start:
        pass
    try:
        open_and_append(url, n)
        print(json.dumps("ok"), flush=True)
    except BaseException:
        print(json.dumps(traceback.format_exc()), flush=True)
"""

#: Forks one process per ``[url, n, delay]`` line on stdin that creates the store ``url`` (and appends
#: call n), kills it with SIGKILL after ``delay`` seconds (``null``: lets it finish and says how long
#: it took) and says whether it had finished. Forking a process that has imported everything
#: already makes a try cost the creation, not an interpreter's start.
KILLER = OPENER + r"""
import os, signal
print(json.dumps("ready"), flush=True)
for line in sys.stdin:
    url, n, delay = json.loads(line)
    read_end, write_end = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            open_and_append(url, n)
            os.write(write_end, b"done")
        finally:
            os._exit(0)
    os.close(write_end)
    if delay is None:
        os.waitpid(pid, 0)
        print(json.dumps(time.monotonic() - started), flush=True)
        continue
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    finished = os.read(read_end, 4) == b"done"
    os.close(read_end)
    print(json.dumps(finished), flush=True)
"""


def _python(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", script, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=_environment())


def _reply(process: subprocess.Popen[str]) -> Any:
    """The next JSON line the helper process writes (it failing instead is the test failing)."""
    assert process.stdout is not None and process.stderr is not None
    line = process.stdout.readline()
    if not line:
        process.wait()
        pytest.fail(f"the helper process ended (exit code {process.returncode}):\n{process.stderr.read()}")
    return json.loads(line)


def _send(process: subprocess.Popen[str], value: Any) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(value) + "\n")
    process.stdin.flush()


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env.update(PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A factory of fresh, not yet created store URLs on one backend."""
    counter = iter(range(1_000_000))
    if request.param == "sqlite":
        yield lambda: f"sqlite:///{tmp_path / f'store-{next(counter)}' / 'facts.db'}"
        return
    base = postgres_base_url()  # skipped without a server, failed under CI
    yield lambda: _postgres_database(base)


def _prepare(url: str) -> str:
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    return url


def _check_intact(url: str, appended: list[int], store: FactStore | None = None) -> None:
    store = store or FactStore(url)
    try:
        assert store.schema_version() == schema.SCHEMA_VERSION
        assert store.counts(ORG)["inference_calls"] == {"stored": len(appended), "quarantined": 0}
        assert store.session_ids(ORG) == sorted(f"s{n}" for n in appended)
        for n in appended:
            [back] = store.calls_for_session(ORG, f"s{n}")
            assert back.inference_call_id == f"c{n}"
        if url.startswith("sqlite:///"):
            with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
                assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        with store.engine.connect() as conn:
            versions = conn.execute(select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).all()
        assert versions == [(str(schema.SCHEMA_VERSION),)]
    finally:
        store.close()


@pytest.mark.slow
def test_processes_opening_a_fresh_store_at_once_all_succeed(fresh_url: Any) -> None:
    """6 processes open the same fresh store at the same instant and append, 20 rounds over."""
    racers = [_python(RACER) for _ in range(WORKERS)]
    try:
        for racer in racers:
            assert _reply(racer) == "ready"
        failures = []
        for _ in range(ROUNDS):
            url = _prepare(fresh_url())
            start = time.monotonic() + 0.05  # every racer spins until the same instant
            for n, racer in enumerate(racers):
                _send(racer, [url, start, n])
            outcomes = [_reply(racer) for racer in racers]
            failures += [outcome for outcome in outcomes if outcome != "ok"]
            if not failures:
                _check_intact(url, list(range(WORKERS)))
        assert not failures, f"{len(failures)} of {ROUNDS * WORKERS} opens failed; first:\n{failures[0]}"
    finally:
        for racer in racers:
            racer.kill()
            racer.wait()


def test_a_creation_killed_at_any_point_leaves_a_store_that_opens(fresh_url: Any) -> None:
    """Processes killed with SIGKILL at random points of the first creation of a store: the next open
    always works (it finishes the creation, or reads what the killed process committed)."""
    killer = _python(KILLER)

    def run(url: str, n: int, delay: float | None) -> Any:
        _send(killer, [url, n, delay])
        return _reply(killer)

    try:
        assert _reply(killer) == "ready"
        duration = sorted(run(_prepare(fresh_url()), 0, None) for _ in range(5))[2]  # the median creation
        rng = random.Random(20260305)
        outcomes = []
        for n in range(1, KILLS + 1):
            url = _prepare(fresh_url())
            finished = run(url, n, rng.uniform(0, duration))
            outcomes.append(finished)
            store = FactStore(url)  # the next open: it creates the store, or reads the one committed
            stored = store.session_ids(ORG)
            assert stored in ([f"s{n}"], []) and (stored or not finished)
            store.append([fact(1000 + n)])
            _check_intact(url, ([n] if stored else []) + [1000 + n], store)
    finally:
        killer.kill()
        killer.wait()
    killed = outcomes.count(False)
    assert killed >= KILLS // 4, f"only {killed} of {KILLS} processes were killed before they finished"


def _opener() -> dict[str, Any]:
    """The very functions the racing and killed processes run, in this process."""
    namespace: dict[str, Any] = {}
    exec(compile(OPENER, "<opener>", "exec"), namespace)  # the test's own code
    return namespace


def fact(n: int) -> Any:
    """The call the racing and killed processes append."""
    return _opener()["fact"](n)


def test_a_store_whose_creation_was_interrupted_before_its_version_row(store_url: str) -> None:
    """What a killed creation of an older Sediment left: ``sediment_meta`` without a version row. With
    no Fact in it the next open finishes the creation; with Facts it says what is wrong, in one line."""
    store = FactStore(store_url)
    with store.engine.begin() as conn:
        conn.execute(schema.meta.delete())
        schema.pushes.drop(conn)
    store.close()
    finished = FactStore(store_url)
    assert finished.schema_version() == schema.SCHEMA_VERSION
    finished.append([fact(0)])
    assert finished.counts(ORG)["inference_calls"] == {"stored": 1, "quarantined": 0}
    with finished.engine.begin() as conn:
        conn.execute(schema.meta.delete())
    finished.close()
    with pytest.raises(StoreError, match=r"has no schema version in sediment_meta but holds data \(blobs, inference_calls\)"):
        FactStore(store_url)


# --- read-only, full and uncreatable stores, through the CLI ----------------------------


def _drop_capabilities() -> None:
    """Run the command as root without capabilities (an empty bounding set): file modes bind it
    as they bind any user, so it cannot write a 0444 file or into a 0555 directory."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in range(64):
        libc.prctl(24, capability, 0, 0, 0)  # PR_CAPBSET_DROP; EINVAL past the last capability


def _as_reader() -> dict[str, Any]:
    """Subprocess options that run a command as a user who cannot write what was made read-only."""
    return {"preexec_fn": _drop_capabilities} if os.geteuid() == 0 else {}


def sediment(*args: str, home: Path, reader: bool = False, wrapper: str | None = None,
             **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m sediment ARGS`` (or ``python -c WRAPPER ARGS``) with SEDIMENT_HOME and the org set."""
    command = [sys.executable, "-c", wrapper] if wrapper is not None else [sys.executable, "-m", "sediment"]
    environment = _environment(SEDIMENT_HOME=str(home), SEDIMENT_ORG_ID=ORG, HOME=str(home.parent),
                               SEDIMENT_CAPTURE_TIME="2026-03-03T09:00:00Z", **env)
    return subprocess.run([*command, *args], capture_output=True, text=True, env=environment, cwd=ROOT,
                          timeout=120, check=False, **(_as_reader() if reader else {}))


def one_error_line(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """The command failed with exit code 1 and one ``error:`` line containing every fragment."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every user can traverse (pytest's own are private to the user running it)."""
    path = Path(tempfile.mkdtemp(prefix="sediment-store-"))
    path.chmod(0o755)
    yield path
    for child in [path, *path.rglob("*")]:
        if child.is_dir() and not child.is_symlink():
            child.chmod(0o755)
    shutil.rmtree(path, ignore_errors=True)


def call_line(n: int, text_: str = "question") -> str:
    return json.dumps({
        "fact_type": "inference_call", "session_id": f"s{n}", "model_call_id": f"chatcmpl-{n}",
        "observed_at": "2026-01-05T12:00:00Z",
        "input_messages": [{"role": "user", "parts": [{"type": "text", "content": f"{text_} {n}"}]}],
        "output_messages": [{"role": "assistant", "parts": [{"type": "text", "content": "answer"}]}],
    }) + "\n"


def _read_only(path: Path) -> None:
    for file in path.iterdir():
        file.chmod(0o444)
    path.chmod(0o555)


def test_a_read_only_store_is_read_without_writing(shared_dir: Path) -> None:
    home = shared_dir / "home"
    (shared_dir / "calls.jsonl").write_text(call_line(1) + call_line(2))
    assert sediment("ingest", "facts", str(shared_dir / "calls.jsonl"), home=home).returncode == 0
    _read_only(home)
    before = sorted(p.name for p in home.iterdir())
    read = sediment("facts", "--json", home=home, reader=True)
    assert read.returncode == 0 and "Traceback" not in read.stderr, read.stderr
    assert json.loads(read.stdout)["tables"]["inference_calls"] == {"stored": 2, "quarantined": 0}
    assert sorted(p.name for p in home.iterdir()) == before  # no journal, no WAL file: nothing was written
    written = sediment("ingest", "facts", str(shared_dir / "calls.jsonl"), home=home, reader=True)
    one_error_line(written, str(home / "facts.db"), "read-only")
    # A store that needs a migration cannot be migrated read-only: it says so.
    home.chmod(0o755)
    (home / "facts.db").chmod(0o644)
    store = FactStore(f"sqlite:///{home / 'facts.db'}")
    with store.engine.begin() as conn:
        conn.execute(update(schema.meta).where(schema.meta.c.key == "schema_version").values(value="4"))
    store.close()
    _read_only(home)
    needs = sediment("facts", home=home, reader=True)
    one_error_line(needs, str(home / "facts.db"), "schema version 4", f"version {schema.SCHEMA_VERSION}",
                   "read-only")


def test_a_read_only_store_with_a_live_writer_is_read(shared_dir: Path) -> None:
    """While a writer holds the store open (its WAL and shared-memory files exist), a reader who
    cannot write reads the committed Facts, the WAL's included."""
    home = shared_dir / "home"
    (shared_dir / "calls.jsonl").write_text(call_line(1))
    assert sediment("ingest", "facts", str(shared_dir / "calls.jsonl"), home=home).returncode == 0
    writer = sqlite3.connect(home / "facts.db")
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("SELECT count(*) FROM inference_calls").fetchone()
        (shared_dir / "more.jsonl").write_text(call_line(2))
        assert sediment("ingest", "facts", str(shared_dir / "more.jsonl"), home=home).returncode == 0
        assert (home / "facts.db-wal").exists()
        _read_only(home)
        read = sediment("facts", "--json", home=home, reader=True)
        assert read.returncode == 0 and "Traceback" not in read.stderr, read.stderr
        assert json.loads(read.stdout)["tables"]["inference_calls"] == {"stored": 2, "quarantined": 0}
    finally:
        writer.close()


#: Runs the CLI with SQLite's page budget a few pages above what the store holds: a real
#: SQLITE_FULL ("database or disk is full") on the first write that needs more.
FULL_DISK = r"""
import runpy, sys
from sqlalchemy import event
from sqlalchemy.engine import Engine

@event.listens_for(Engine, "connect")
def _budget(dbapi_connection, _record):
    pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
    dbapi_connection.execute(f"PRAGMA max_page_count={pages + 4}")

sys.argv = ["sediment", *sys.argv[1:]]
runpy.run_module("sediment", run_name="__main__", alter_sys=True)
"""


def _big_call(path: Path) -> None:
    rng = random.Random(7)
    noise = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(400_000))
    path.write_text(call_line(9, noise))


def _assert_full_disk_leaves_nothing(home: Path, big: Path, *, wrapper: str | None) -> None:
    failed = sediment("ingest", "facts", str(big), home=home, wrapper=wrapper)
    one_error_line(failed, "store write failed", "database or disk is full")
    after = sediment("facts", "--json", home=home)
    assert after.returncode == 0, after.stderr
    report = json.loads(after.stdout)
    assert report["tables"]["inference_calls"] == {"stored": 1, "quarantined": 0}
    with closing(sqlite3.connect(home / "facts.db")) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM blobs").fetchone()[0] == 3  # the first call's, nothing more


def test_a_full_database_fails_in_one_line_and_stores_nothing(shared_dir: Path) -> None:
    home = shared_dir / "home"
    (shared_dir / "small.jsonl").write_text(call_line(1))
    assert sediment("ingest", "facts", str(shared_dir / "small.jsonl"), home=home).returncode == 0
    _big_call(shared_dir / "big.jsonl")
    _assert_full_disk_leaves_nothing(home, shared_dir / "big.jsonl", wrapper=FULL_DISK)


def test_a_full_disk_fails_in_one_line_and_stores_nothing(shared_dir: Path) -> None:
    """The same on a real file system that runs out of space (a 1 MiB tmpfs, where one can be mounted)."""
    mount = shared_dir / "tiny"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True,
                             check=False) if os.geteuid() == 0 and shutil.which("mount") else None
    if mounted is None or mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here; test_a_full_database_fails_in_one_line_and_stores_nothing covers it")
    try:
        home = mount / "home"
        (shared_dir / "small.jsonl").write_text(call_line(1))
        assert sediment("ingest", "facts", str(shared_dir / "small.jsonl"), home=home).returncode == 0
        _big_call(shared_dir / "big.jsonl")
        (mount / "ballast").write_bytes(b"\0" * (1024 * 1024 - _used(mount) - 64 * 1024))
        _assert_full_disk_leaves_nothing(home, shared_dir / "big.jsonl", wrapper=None)
    finally:
        if subprocess.run(["umount", str(mount)], capture_output=True, check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


def _used(mount: Path) -> int:
    usage = shutil.disk_usage(mount)
    return usage.used


def test_an_uncreatable_home_names_the_path(shared_dir: Path) -> None:
    regular = shared_dir / "a-file"
    regular.write_text("not a directory\n")
    one_error_line(sediment("facts", home=regular / "home"), str(regular / "home"))
    one_error_line(sediment("facts", home=regular), str(regular))
    locked = shared_dir / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    one_error_line(sediment("facts", home=locked / "home", reader=True), str(locked / "home"))
    one_error_line(sediment("facts", home=locked, reader=True), str(locked / "facts.db"), "not writable")


def test_an_unreadable_database_file_is_one_line(shared_dir: Path) -> None:
    home = shared_dir / "home"
    home.mkdir()
    (home / "facts.db").write_bytes(b"this is not a database, just bytes " * 200)
    one_error_line(sediment("facts", home=home), str(home / "facts.db"), "not a database")
