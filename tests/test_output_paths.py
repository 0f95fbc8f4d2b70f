"""Output paths that cannot be written: one line naming the path, exit code 3, never a traceback.

Tests run as root, whom a read-only directory does not stop, so the real processes write under
a regular file (``ENOTDIR``), onto an existing file (``EEXIST``) or under ``/proc`` (``ENOENT``);
a permission error is raised in process through the same CLI entry point.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sediment.bundle.write import write_bundle
from sediment.errors import OutputDirectoryError
from sediment.output_paths import writing
from sediment.testing import ORG, POLICY, GitRepo, outcome, rollout
from sediment.trajectory import synthetic


def sediment(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_") or k == "SEDIMENT_LOAD_PLUGINS"}
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True,
                          env=environ, timeout=300, check=False)


def refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: cannot write ") and all(w in line for w in words), line


@pytest.fixture
def bundle(tmp_path: Path, git_repo: GitRepo) -> Path:
    git_repo.commit({"a.py": "1\n"})
    sha = git_repo.commit({"a.py": "2\n"})
    rollouts = [rollout("s1", commits=[sha], outcomes=[outcome("o1", sha)]), rollout("s2")]
    return write_bundle(rollouts, tmp_path / "bundle", org_id=ORG, policy=POLICY, quarantine_revision=0)


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("not a directory\n")
    return path


EXPORTS = [("rlvr", "--target", "sediment"), ("rlvr", "--target", "nemo-gym"), ("sft",), ("dpo",), ("diff-sft",)]


@pytest.mark.parametrize("command", EXPORTS, ids=lambda c: "-".join(c))
def test_an_export_into_a_path_it_cannot_create_is_one_line(tmp_path: Path, bundle: Path, a_file: Path,
                                                             command: tuple[str, ...]) -> None:
    env = {"SEDIMENT_MIRROR_PATH": str(tmp_path / "mirrors")}
    for out, words in ((a_file, ("output directory", str(a_file), "exists and is not a directory")),
                       (a_file / "out", ("output directory", "a parent folder is a file")),
                       (Path("/proc/sediment-out"), ("output directory /proc/sediment-out", "No such file"))):
        refused(sediment("export", *command, "--from", str(bundle), "--out", str(out), env=env), *words)
    assert a_file.read_text() == "not a directory\n"


def test_an_export_into_a_directory_it_may_not_write_is_one_line(tmp_path: Path, bundle: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from sediment import cli

    out = tmp_path / "read-only" / "out"

    def denied(path: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(Path, "mkdir", denied)
    monkeypatch.setattr(sys, "argv", ["sediment", "export", "rlvr", "--target", "nemo-gym", "--from", str(bundle),
                                      "--out", str(out)])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 3
    assert capsys.readouterr().err.strip() == f"error: cannot write output directory {out}: Permission denied"


@pytest.mark.slow
def test_library_and_trajectory_imports_into_a_path_they_cannot_create(tmp_path: Path, a_file: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in synthetic.records(1, 2)))
    refused(sediment("library", "import", "canonical-jsonl", str(records), "--library", str(a_file / "lib")),
            f"library {a_file / 'lib'}", "a parent folder is a file")
    refused(sediment("library", "import", "canonical-jsonl", str(records), "--library", "/proc/sediment-lib"),
            "library /proc/sediment-lib", "No such file")
    refused(sediment("trajectory", "import", "atif-v1", str(records), "--out", str(a_file / "out.jsonl")),
            f"--out file {a_file / 'out.jsonl'}")
    refused(sediment("trajectory", "import", "atif-v1", str(records), "--out", "/proc/sediment.jsonl"),
            "--out file /proc/sediment.jsonl")
    library = tmp_path / "lib"
    assert sediment("library", "import", "canonical-jsonl", str(records), "--library", str(library)).returncode == 0
    refused(sediment("library", "views", "--library", str(library), "--out", str(a_file / "v.jsonl")),
            f"--out file {a_file / 'v.jsonl'}")
    refused(sediment("library", "gallery", "--library", str(library), "--out", str(a_file / "g")),
            f"gallery directory {a_file / 'g'}")
    refused(sediment("trajectory", "export-atif", str(records), "--out", str(a_file / "atif")),
            f"ATIF directory {a_file / 'atif'}")
    assert a_file.read_text() == "not a directory\n"


def test_a_library_import_into_a_directory_it_may_not_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from sediment import cli

    records = tmp_path / "records.jsonl"
    records.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in synthetic.records(1, 2)))
    library = tmp_path / "lib"
    real_open = open

    def guarded(file: object, *args: object, **kwargs: object) -> object:
        if str(file).startswith(str(library)):
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    library.mkdir()
    monkeypatch.setattr("builtins.open", guarded)
    monkeypatch.setattr(sys, "argv", ["sediment", "library", "import", "canonical-jsonl", str(records),
                                      "--library", str(library)])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 3
    err = capsys.readouterr().err.strip()
    assert err == f"error: cannot write library {library}: {library / '.lock'}: Permission denied"


def test_library_views_refuses_an_unknown_choice_before_writing(tmp_path: Path) -> None:
    out = tmp_path / "views.jsonl"
    for option in ("--view", "--selection", "--sampling"):
        result = sediment("library", "views", "--library", str(tmp_path / "none"), "--out", str(out), option, "nope")
        assert result.returncode == 2, result.stderr
        assert f"unknown {option} 'nope'" in result.stderr and "Traceback" not in result.stderr
        assert not out.exists()


def test_writing_passes_other_errors_through(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError), writing("output directory", tmp_path / "out"):
        (tmp_path / "elsewhere" / "input").read_text()
    with pytest.raises(OutputDirectoryError, match="cannot write output directory"), \
            writing("output directory", tmp_path / "out"):
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / "out" / "x.jsonl"))
