"""Ctrl-C: a long command exits 130 with the one line ``interrupted`` on stderr and leaves
nothing half-published (no bundle, no staging, no data file in the output directory). Also:
progress bars stay quiet when stderr is not a terminal."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a store of 800 Sessions, then derive and export interrupted mid-way

FIXTURE = Path(__file__).parent / "fixtures" / "litellm" / "standard_logging_payload.json"
SESSIONS = 800


def environment(home: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    return environ | {"SEDIMENT_HOME": str(home), "SEDIMENT_ORG_ID": "acme"}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of many one-call Sessions: deriving them takes several seconds."""
    root = tmp_path_factory.mktemp("interrupt")
    base = json.loads(FIXTURE.read_text())
    calls = root / "calls.jsonl"
    with calls.open("w") as handle:
        for i in range(SESSIONS):
            record = json.loads(json.dumps(base))
            record["id"], record["trace_id"] = f"chatcmpl-{i}", f"trace-{i}"
            record["metadata"]["spend_logs_metadata"]["session_id"] = f"session-{i:05d}"
            handle.write(json.dumps(record) + "\n")
    result = subprocess.run([sys.executable, "-m", "sediment", "ingest", "calls", "--format", "litellm", str(calls)],
                            env=environment(root / "home"), capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    # piped stderr: the summary only, no progress bar (nor its control sequences)
    assert result.stderr == f"{SESSIONS} record(s) read; stored inference_calls: {SESSIONS}\n"
    (root / "home" / "mirrors").mkdir()  # a mirror root set up, empty: an export needs one, whatever ran before
    return root / "home"


def interrupt(home: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Start ``sediment ARGS``, wait until it has begun writing beside ``out``, send SIGINT."""
    process = subprocess.Popen([sys.executable, "-m", "sediment", *args], env=environment(home),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not any(out.parent.iterdir()):  # staging (derive) or the claimed directory (export)
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.3)  # well inside the work: the rows are still being derived
    assert process.poll() is None, "finished before it could be interrupted"
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_interrupted_derive_exits_130_and_leaves_no_bundle(home: Path, tmp_path: Path, workers: str) -> None:
    out = tmp_path / "parent" / "bundle"
    out.parent.mkdir()
    result = interrupt(home, out, "derive", "--out", str(out), "--workers", workers)
    assert result.returncode == 130, result.stderr
    assert result.stderr == "interrupted\n"
    assert result.stdout == ""
    assert list(out.parent.iterdir()) == []  # no bundle, no staging, no parts


def test_an_interrupted_export_exits_130_and_publishes_nothing(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "parent" / "export"
    out.parent.mkdir()
    result = interrupt(home, out, "export", "rlvr", "--target", "sediment", "--out", str(out))
    assert result.returncode == 130, result.stderr
    assert result.stderr == "interrupted\n"
    left = sorted(p.name for p in out.parent.rglob("*"))
    # at most the directory and its claim marker (which lets the same export run there again)
    assert set(left) <= {"export", ".sediment-rlvr-target"}, left


#: An interrupt that lands in a finalizer (as one can in SQLAlchemy's, when an engine or a
#: connection is freed): the handler runs inside ``__del__``, where an exception is only reported
#: and dropped; the work after it must still be interrupted.
LOST_IN_A_FINALIZER = r"""
import signal, sys, time
from sediment.cli import interrupt
interrupt.install()

class Finalized:
    def __del__(self):
        signal.raise_signal(signal.SIGINT)
        for _ in range(1000):  # the handler runs at the loop's next turn, inside the finalizer
            pass

try:
    Finalized()
    for _ in range(5000):
        time.sleep(0.001)
    print("finished")
except KeyboardInterrupt:
    print("interrupted")
"""


@pytest.mark.parametrize("install", [True, False])
def test_an_interrupt_lost_in_a_finalizer_is_delivered_again(install: bool) -> None:
    """Without the redelivery the interrupt is dropped with a report on stderr and the work runs
    to its end; with it, the work is interrupted and nothing else is printed."""
    script = LOST_IN_A_FINALIZER if install else LOST_IN_A_FINALIZER.replace("interrupt.install()", "")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    if install:
        assert (result.stdout, result.stderr) == ("interrupted\n", "")
    else:
        assert result.stdout == "finished\n" and "Exception ignored" in result.stderr


def test_a_library_log_of_the_interrupt_is_not_shown() -> None:
    """The interrupt is reported once, as ``interrupted``: a library's error log carrying it (as
    SQLAlchemy's pool logs one landing in a connection's reset) is filtered out, others are not."""
    from sediment.cli.interrupt import not_an_interrupt

    def record(error: BaseException | None) -> logging.LogRecord:
        info = (type(error), error, None) if error is not None else None
        return logging.LogRecord("sqlalchemy.pool.impl.QueuePool", logging.ERROR, __file__, 1,
                                 "Exception during reset or similar", None, info)

    assert not not_an_interrupt(record(KeyboardInterrupt()))
    assert not_an_interrupt(record(RuntimeError("boom")))
    assert not_an_interrupt(record(None))


def on_a_terminal(home: Path, *args: str) -> tuple[int, str]:
    """Run ``sediment ARGS`` with stdout and stderr on a pseudo-terminal; its exit code and output."""
    import pty

    leader, follower = pty.openpty()
    environ = environment(home) | {"TERM": "xterm-256color", "COLUMNS": "100"}
    environ.pop("NO_COLOR", None)
    process = subprocess.Popen([sys.executable, "-m", "sediment", *args], env=environ, stdin=subprocess.DEVNULL,
                               stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return process.wait(60), b"".join(chunks).decode("utf-8", "replace")


def test_derive_and_ingest_show_a_progress_bar_on_a_terminal(home: Path, tmp_path: Path) -> None:
    code, output = on_a_terminal(home, "derive", "--out", str(tmp_path / "bundle"))
    assert code == 0, output
    assert "deriving sessions" in output and f"/{SESSIONS}" in output, output[-2000:]
    assert f"derived {SESSIONS} rollout(s)" in output

    calls = tmp_path / "calls.jsonl"
    calls.write_text(json.dumps(json.loads(FIXTURE.read_text())) + "\n")
    code, output = on_a_terminal(home, "ingest", "calls", "--format", "litellm", str(calls))
    assert code == 0, output
    assert "ingesting" in output and "record(s)" in output, output


def test_derive_in_a_pipe_prints_only_its_summary(home: Path, tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "sediment", "derive", "--out", str(tmp_path / "bundle")],
                            env=environment(home), capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert "deriving" not in result.stderr and "\x1b" not in result.stderr
    assert result.stderr.startswith("derived ") and " rollout(s) into " in result.stderr


def test_an_error_that_ctrl_c_caused_is_reported_as_the_interrupt(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C reaches the workers too; should the parent meet a worker it stopped before its own
    interrupt, it reports the interrupt (exit 130), not the lost worker. Without Ctrl-C, a lost
    worker is one error line, exit 1."""
    from sediment import cli
    from sediment.cli import interrupt
    from sediment.parallel import WorkerLost

    def app(standalone_mode: bool) -> None:
        raise WorkerLost("a worker process ended abruptly (test)")

    monkeypatch.setattr(cli, "app", app)
    monkeypatch.setattr(interrupt, "_interrupted", [])
    monkeypatch.delenv("SEDIMENT_RAISE_ERRORS", raising=False)
    with pytest.raises(SystemExit) as ended:
        cli._main()
    assert ended.value.code == 1 and capsys.readouterr().err.count("worker process ended abruptly (test)") == 1
    interrupt.note()
    with pytest.raises(SystemExit) as ended:
        cli._main()
    assert ended.value.code == 130 and "worker" not in capsys.readouterr().err
