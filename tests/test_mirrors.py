"""`sediment mirror add` is atomic and `sediment mirror remove` undoes it, through the real CLI.

A mirror appears at its path complete or not at all: a bad source, a fetch failing midway,
Ctrl-C or a killed process leave nothing that blocks a retry or shows up in `mirror list`.
A fetch that keys a legacy mirror by its repository's identity counts the edges it had given
as restated, not new.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pygit2
import pytest

from sediment.git.mirror_root import PARTIAL_PREFIX
from sediment.git.mirror_writer import MirrorWriter
from sediment.store import FactStore
from sediment.testing import outcome

REPO = "acme/calc"


def sediment(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True,
                          env=environment(home), timeout=120, check=False)


def environment(home: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_") or k == "SEDIMENT_LOAD_PLUGINS"}
    return environ | {"SEDIMENT_HOME": str(home), "SEDIMENT_ORG_ID": "acme",
                      "SEDIMENT_CAPTURE_TIME": "2026-03-03T09:00:00Z"}


def one_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ")
    return line


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def origin(tmp_path: Path) -> tuple[Path, Path]:
    """A source repository with a sediment note, and the loose object file of its last blob."""
    path = tmp_path / "origin.git"
    writer = MirrorWriter(path)
    writer.commit({"calc.py": "def add(a, b):\n    return a + b\n"}, "add", when=1_700_000_000)
    sha = writer.commit({"test_calc.py": "def test_add():\n    assert True\n"}, "test", when=1_700_000_100)
    writer.add_note(sha, [{"tool": "codex", "session_id": "sess-1", "stamped_at": "t"}])
    blob = str(pygit2.Repository(str(path)).revparse_single(sha).tree["test_calc.py"].id)
    obj = path / "objects" / blob[:2] / blob[2:]
    assert obj.is_file()
    return path, obj


def mirror_dir(home: Path) -> Path:
    return home / "mirrors" / quote(f"acme/{REPO}", safe="")


def entries(home: Path) -> list[str]:
    root = home / "mirrors"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def assert_added(home: Path, origin: Path, *, seen_before: bool = False) -> None:
    result = sediment(home, "mirror", "add", REPO, str(origin))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        f"mirrored {REPO} into {mirror_dir(home)}",
        f"{REPO}: 0 new session-commit observation(s), 1 already seen" if seen_before
        else f"{REPO}: 1 new session-commit observation(s), 0 already seen"]
    assert entries(home) == [mirror_dir(home).name]
    assert sediment(home, "mirror", "list").stdout == f"{REPO}\t{mirror_dir(home)}\n"


def test_add_from_a_nonexistent_source_leaves_nothing(home: Path, origin: tuple[Path, Path], tmp_path: Path) -> None:
    line = one_error(sediment(home, "mirror", "add", REPO, str(tmp_path / "nowhere.git")), 1)
    assert line.startswith(f"error: cannot fetch {REPO} from {tmp_path / 'nowhere.git'}: ")
    assert entries(home) == []
    assert sediment(home, "mirror", "list").stdout == ""
    assert_added(home, origin[0])  # the retry is not blocked by "already exists"


def test_add_failing_mid_fetch_leaves_nothing(home: Path, origin: tuple[Path, Path], tmp_path: Path) -> None:
    """The refs are advertised, then an object cannot be read: the fetch fails halfway."""
    path, obj = origin
    saved = obj.rename(tmp_path / "saved-object")
    line = one_error(sediment(home, "mirror", "add", REPO, str(path)), 1)
    assert "object not found" in line
    assert entries(home) == []
    saved.rename(obj)
    assert_added(home, path)


class HangingSource:
    """The origin with one object file replaced by a FIFO nobody writes: a fetch blocks for good
    reading it. Every add started is killed at teardown, whatever the test did."""

    def __init__(self, home: Path, origin: tuple[Path, Path]) -> None:
        self.home, (self.path, self.obj) = home, origin
        self.content = self.obj.read_bytes()
        self.started: list[subprocess.Popen[str]] = []
        self.obj.unlink()
        os.mkfifo(self.obj)

    def start_add(self) -> subprocess.Popen[str]:
        process = subprocess.Popen([sys.executable, "-m", "sediment", "mirror", "add", REPO, str(self.path)],
                                   env=environment(self.home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        self.started.append(process)
        root, deadline = self.home / "mirrors", time.monotonic() + 60
        while not (root.is_dir() and any(root.rglob("objects"))):  # the bare repository being fetched into
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the fetch did not start"
            time.sleep(0.05)
        time.sleep(0.5)  # well into the fetch, blocked on the FIFO
        assert process.poll() is None
        return process

    def repair(self) -> None:
        if self.obj.is_fifo():
            self.obj.unlink()
            self.obj.write_bytes(self.content)

    def close(self) -> None:
        for process in self.started:
            process.kill()
            process.communicate()
        self.repair()


@pytest.fixture
def hanging(home: Path, origin: tuple[Path, Path]) -> Iterator[HangingSource]:
    source = HangingSource(home, origin)
    yield source
    source.close()


def test_interrupted_add_leaves_nothing(home: Path, hanging: HangingSource) -> None:
    process = hanging.start_add()
    process.send_signal(signal.SIGINT)  # Ctrl-C
    try:
        _, stderr = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("Ctrl-C did not stop a blocked fetch")
    assert process.returncode == 130 and "Traceback" not in stderr
    assert entries(home) == []
    hanging.repair()
    assert_added(home, hanging.path)


def test_killed_add_blocks_nothing_and_is_swept(home: Path, hanging: HangingSource) -> None:
    """kill -9 cannot clean up: what it leaves is private, unlisted, and swept by the next add."""
    process = hanging.start_add()
    process.kill()
    process.communicate(timeout=30)
    [left] = entries(home)
    assert left.startswith(PARTIAL_PREFIX) and not mirror_dir(home).exists()
    assert sediment(home, "mirror", "list").stdout == ""
    hanging.repair()
    assert_added(home, hanging.path)  # and only the mirror is left in the root


def test_remove_then_add_again(home: Path, origin: tuple[Path, Path]) -> None:
    path, _ = origin
    assert_added(home, path)
    removed = sediment(home, "mirror", "remove", REPO)
    assert removed.returncode == 0, removed.stderr
    assert removed.stderr == f"removed the mirror of {REPO} ({mirror_dir(home)})\n"
    assert entries(home) == [] and sediment(home, "mirror", "list").stdout == ""
    assert_added(home, path, seen_before=True)  # the Facts stay: the note edge was stored by the first add


def test_remove_of_an_unknown_mirror_is_one_line(home: Path, origin: tuple[Path, Path]) -> None:
    assert_added(home, origin[0])
    line = one_error(sediment(home, "mirror", "remove", "acme/nope"), 1)
    assert line == f"error: no mirror of acme/nope to remove: {home / 'mirrors' / quote('acme/acme/nope', safe='')} " \
                   "does not exist"
    assert one_error(sediment(home, "mirror", "remove", "../evil"), 2).startswith("error: repository must be")
    assert entries(home) == [mirror_dir(home).name]


def test_a_half_made_mirror_of_an_older_sediment_can_be_removed(home: Path, origin: tuple[Path, Path]) -> None:
    """Before adds were atomic, a failed fetch left an initialized, empty repository behind."""
    pygit2.init_repository(str(mirror_dir(home)), bare=True)
    line = one_error(sediment(home, "mirror", "add", REPO, str(origin[0])), 1)
    assert "already exists" in line and "mirror remove" in line
    assert sediment(home, "mirror", "remove", REPO).returncode == 0
    assert_added(home, origin[0])


def test_something_else_in_the_way_is_refused_then_removable(home: Path, origin: tuple[Path, Path]) -> None:
    mirror_dir(home).parent.mkdir(parents=True)
    mirror_dir(home).write_text("not a mirror\n")
    line = one_error(sediment(home, "mirror", "add", REPO, str(origin[0])), 1)
    assert "is in the way and is not a mirror" in line
    assert mirror_dir(home).read_text() == "not a mirror\n"
    assert sediment(home, "mirror", "remove", REPO).returncode == 0
    assert_added(home, origin[0])


def test_a_fetch_that_keys_a_legacy_mirror_counts_its_old_edges_as_restated_not_new(
        home: Path, origin: tuple[Path, Path]) -> None:
    """Regression (issue 25): the fetch that keyed a legacy mirror said its one edge, which `mirror
    add` had already counted, was "1 new", and the next fetch "0 new, 1 already seen". Now the
    keying fetch says it restated that edge under the identity and counts only the note the
    origin gained since as new; every later fetch agrees."""
    path, _ = origin
    assert_added(home, path)  # no Fact names the repository's id yet: a legacy mirror, 1 new edge
    noted = str(pygit2.Repository(str(path)).revparse_single("main").id)
    store = FactStore.from_environment(environment(home))
    store.append([outcome("o1", noted, "passed", run_id="10", repo=REPO, repository_provider="github",
                          repository_host="github.com", repository_id="424242")])
    store.close()
    writer = MirrorWriter(path)
    later = writer.commit({"calc.py": "def add(a, b):\n    return b + a\n"}, "swap", when=1_700_000_200)
    writer.add_note(later, [{"tool": "codex", "session_id": "sess-2", "stamped_at": "t"}])

    keyed = sediment(home, "mirror", "fetch")
    assert keyed.returncode == 0, keyed.stderr
    first, counts = keyed.stderr.splitlines()
    assert first.startswith(f"keyed the mirror of {REPO} by github.com repository 424242 (the stored Facts name it): ")
    assert counts == (f"{REPO}: 1 new session-commit observation(s), 0 already seen, "
                      "1 restated under the repository's identity")
    again = sediment(home, "mirror", "fetch", "--json")
    [report] = json.loads(again.stdout)["mirrors"]
    assert (report["repository_id"], report["stored"], report["already_seen"], report["restated"]) == (
        "424242", 0, 2, 0)
    assert sediment(home, "mirror", "fetch").stderr.splitlines() == [
        f"{REPO}: 0 new session-commit observation(s), 2 already seen"]
