"""``sediment library import`` against hostile files: corrupt deflate data, decompression bombs,
over-long lines, and an import killed half-way (issue 20). Each bad file is one refusal line
naming the file and line; every good record is still imported; memory stays bounded (asserted
on the importing process's peak RSS, never by timing)."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import orjson
import pytest

from sediment.importing.inputs import MAX_LINE_BYTES, read_canonical
from sediment.trajectory import synthetic
from sediment.trajectory.library import Library

MIB = 1 << 20


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}


def sediment(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True,
                          env=environment(), timeout=300, check=False)


#: Starts ``sediment ARGS`` and prints its exit code and peak RSS in KiB (wait4's rusage of that one
#: process). It runs in a fresh interpreter because a child's ``ru_maxrss`` also counts the process
#: that started it, carried across exec: started from the test process, a serial suite's pytest
#: grown past a gigabyte, the import measured 1229 MiB whatever it used.
_MEASURE = """
import os, subprocess, sys
process = subprocess.Popen([sys.executable, "-m", "sediment", *sys.argv[1:]], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(process.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def measured(tmp_path: Path, *args: str) -> tuple[int, str, int]:
    """Run ``sediment ARGS``; its exit code, stderr, and peak resident memory in bytes."""
    err = tmp_path / "measured.stderr"
    with err.open("wb") as stderr:
        done = subprocess.run([sys.executable, "-c", _MEASURE, *args], stdout=subprocess.PIPE, stderr=stderr,
                              env=environment(), timeout=600, check=True)
    code, peak_kib = map(int, done.stdout.split())
    return code, err.read_text(), peak_kib * 1024  # Linux: KiB


def lines_of(*records: dict[str, object]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def corrupt_deflate(intact: bytes) -> bytes:
    """A gzip member whose deflate stream holds ``intact``, then a block of the reserved type 3
    (``invalid block type``): corrupt data, neither truncated nor a bad checksum."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = compressor.compress(intact) + compressor.flush(zlib.Z_FULL_FLUSH)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + body + b"\x07" + os.urandom(64) + b"\x00" * 8


def gzip_stream(path: Path, parts: list[tuple[bytes, int]]) -> None:
    """Write a gzip file of ``parts`` (bytes, times repeated) without holding the inflated text."""
    with gzip.open(path, "wb", compresslevel=9) as handle:
        for chunk, times in parts:
            for _ in range(times):
                handle.write(chunk)


# --- item 2: corrupt deflate data ---------------------------------------------------------


def test_corrupt_deflate_data_is_one_line_and_the_good_file_is_imported(tmp_path: Path) -> None:
    """Regression: corrupt deflate data raised an uncaught zlib.error; nothing was imported."""
    good = tmp_path / "good.jsonl.gz"
    good.write_bytes(gzip.compress(lines_of(*synthetic.records(2, 3))))
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(corrupt_deflate(lines_of(synthetic.record(4, 1))))
    with pytest.raises(zlib.error):  # the file really is corrupt deflate data
        gzip.decompress(bad.read_bytes())
    library = tmp_path / "lib"
    result = sediment("library", "import", "canonical-jsonl", str(good), str(bad), "--library", str(library))
    assert result.returncode == 8, result.stderr
    assert "Traceback" not in result.stderr
    refusals = [line for line in result.stderr.splitlines() if str(bad) in line]
    assert len(refusals) == 1, result.stderr
    assert f"{bad}:1: unreadable: corrupt gzip data" in refusals[0] and "invalid block type" in refusals[0]
    assert Library(library).known_ids() >= {r["trajectory_id"] for r in synthetic.records(2, 3)}


@pytest.mark.parametrize("damage", ["truncated", "checksum"])
def test_truncated_and_bad_checksum_gz_are_one_line_naming_the_line(tmp_path: Path, damage: str) -> None:
    records = synthetic.records(2, 3)
    data = gzip.compress(lines_of(*records))
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(data[:-12] if damage == "truncated" else data[:-8] + bytes(8))
    problems: list[str] = []
    kept = list(read_canonical([bad], problems))
    assert len(problems) == 1 and problems[0].startswith(f"{bad}:") and "unreadable" in problems[0], problems
    assert len(kept) <= len(records)


# --- item 4: line length and total inflation ----------------------------------------------


def test_an_over_long_line_is_refused_unread_and_the_next_line_is_kept(tmp_path: Path) -> None:
    first, second = synthetic.records(2, 2)
    path = tmp_path / "records.jsonl"
    path.write_bytes(lines_of(first) + b'{"trajectory_id": "' + b"x" * 5000 + b'"}\n' + lines_of(second))
    problems: list[str] = []
    kept = list(read_canonical([path], problems, max_line=4096))
    assert problems == [f"{path}:2: line longer than 4096 bytes"]
    assert [r.trajectory_id for r in kept] == [first["trajectory_id"], second["trajectory_id"]]


def test_a_gz_inflating_past_its_ratio_is_one_line_and_earlier_records_are_kept(tmp_path: Path) -> None:
    first, second = synthetic.records(2, 2)
    path = tmp_path / "bomb.jsonl.gz"
    gzip_stream(path, [(lines_of(first), 1), (b" " * MIB, 8), (b"\n", 1), (lines_of(second), 1)])
    problems: list[str] = []
    kept = list(read_canonical([path], problems, max_line=64 * 1024, max_inflation=50))
    assert [r.trajectory_id for r in kept] == [first["trajectory_id"]]
    assert len(problems) == 1 and problems[0].startswith(f"{path}:2: ") and "inflates" in problems[0], problems
    # Within the ratio the same file reads whole: the over-long blank line is refused, the rest kept.
    problems = []
    kept = list(read_canonical([path], problems, max_line=64 * 1024, max_inflation=100_000))
    assert problems == [f"{path}:2: line longer than 65536 bytes"]
    assert [r.trajectory_id for r in kept] == [first["trajectory_id"], second["trajectory_id"]]


@pytest.mark.parametrize("inflated_mib", [256, 768])
def test_a_gz_bomb_is_refused_in_one_line_with_bounded_memory(tmp_path: Path, inflated_mib: int) -> None:
    """Regression: a 254 KiB .jsonl.gz inflating to one 256 MiB line took the import to 788 MiB
    RSS (765 KiB to 768 MiB: 1.8 GiB). Now one refusal, the good file imported, and the importing
    process's peak RSS stays below the line limit plus a fixed allowance."""
    good = tmp_path / "good.jsonl"
    good.write_bytes(lines_of(*synthetic.records(2, 3)))
    bomb = tmp_path / "bomb.jsonl.gz"
    gzip_stream(bomb, [(b'{"trajectory_id": "', 1), (b"a" * MIB, inflated_mib), (b'"}\n', 1)])
    assert bomb.stat().st_size < inflated_mib * MIB // 500  # a real bomb: over 500 times
    library = tmp_path / "lib"
    code, stderr, peak = measured(tmp_path, "library", "import", "canonical-jsonl", str(good), str(bomb),
                                  "--library", str(library))
    assert code == 8, stderr
    assert "Traceback" not in stderr
    refusals = [line for line in stderr.splitlines() if str(bomb) in line]
    assert len(refusals) == 1 and f"{bomb}:1: " in refusals[0], stderr
    assert len(Library(library).known_ids()) == 3
    assert peak < 2 * MAX_LINE_BYTES + 160 * MIB, f"peak RSS {peak / MIB:.0f} MiB"


# --- item 6: a killed import ---------------------------------------------------------------


def leftovers(library: Path) -> list[str]:
    return sorted(p.name for p in library.iterdir() if p.name.startswith(".") and p.name != ".lock")


def test_the_next_import_removes_what_a_killed_import_left_behind(tmp_path: Path) -> None:
    """Regression: an import killed with SIGKILL left its staging database behind for good."""
    library = tmp_path / "lib"
    first = tmp_path / "first.jsonl"
    first.write_bytes(lines_of(*synthetic.records(2, 3)))
    assert sediment("library", "import", "canonical-jsonl", str(first), "--library", str(library)).returncode == 0
    assert leftovers(library) == []
    fifo = tmp_path / "input.jsonl"
    os.mkfifo(fifo)  # the import stages, then blocks opening its input: killed while staging
    process = subprocess.Popen([sys.executable, "-m", "sediment", "library", "import", "canonical-jsonl", str(fifo),
                                "--library", str(library)], env=environment(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not any(name.startswith(".staging-") for name in leftovers(library)):
            assert process.poll() is None and time.monotonic() < deadline, "the import never staged"
            time.sleep(0.05)
        (shards := library / "shards").mkdir(exist_ok=True)
        (shards / ".0123456789abcdef.jsonl.gz.k3j_x9qz").write_bytes(b"half a shard")  # an atomic write's temporary
        (library / ".manifest.json.a1b2c3d4").write_bytes(b"{")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert any(name.startswith(".staging-") for name in leftovers(library))
    before = {p.name for p in library.iterdir()}
    second = tmp_path / "second.jsonl"
    second.write_bytes(lines_of(synthetic.record(3, 1)))
    result = sediment("library", "import", "canonical-jsonl", str(second), "--library", str(library))
    assert result.returncode == 0, result.stderr
    assert leftovers(library) == [], "the abandoned staging was not removed"
    assert not any(p.name.startswith(".") for p in (library / "shards").iterdir())
    assert {p.name for p in library.iterdir()} >= before - {n for n in before if n.startswith(".") and n != ".lock"}
    assert len(Library(library).known_ids()) == 4


def test_a_live_import_holds_the_lock_so_its_staging_is_never_swept(tmp_path: Path) -> None:
    """Only the lock holder sweeps: a second import while one runs fails in one line, touching nothing."""
    library = tmp_path / "lib"
    first = tmp_path / "first.jsonl"
    first.write_bytes(lines_of(*synthetic.records(2, 2)))
    assert sediment("library", "import", "canonical-jsonl", str(first), "--library", str(library)).returncode == 0
    fifo = tmp_path / "input.jsonl"
    os.mkfifo(fifo)
    process = subprocess.Popen([sys.executable, "-m", "sediment", "library", "import", "canonical-jsonl", str(fifo),
                                "--library", str(library)], env=environment(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not any(name.startswith(".staging-") for name in leftovers(library)):
            assert process.poll() is None and time.monotonic() < deadline, "the import never staged"
            time.sleep(0.05)
        staging = leftovers(library)
        other = sediment("library", "import", "canonical-jsonl", str(first), "--library", str(library))
        assert other.returncode == 1 and "another import holds the library lock" in other.stderr
        assert leftovers(library) == staging
        with fifo.open("wb") as writer:  # let the live import finish
            writer.write(lines_of(synthetic.record(3, 1)))
        assert process.wait(timeout=120) == 0, process.stderr.read() if process.stderr else ""
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()
    assert leftovers(library) == []
    assert len(Library(library).known_ids()) == 3


def test_the_measured_peak_is_the_commands_own_not_the_test_processs(tmp_path: Path) -> None:
    """Regression: measured straight from the test process, whose peak RSS the child carries
    across exec, a small command in a 400 MiB test process measured over 400 MiB."""
    ballast = bytearray(400 * MIB)
    ballast[::4096] = b"\x01" * len(range(0, len(ballast), 4096))  # resident, not just reserved
    code, stderr, peak = measured(tmp_path, "library", "--help")
    assert code == 0, stderr
    assert peak < 200 * MIB, f"peak RSS {peak / MIB:.0f} MiB"
    del ballast
