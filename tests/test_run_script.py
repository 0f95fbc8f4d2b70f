"""``./run``: the first run says it is building the venv (one line on stderr) before the silent
install; a later run with the venv in place says nothing. Driven with a stand-in Python that
records its calls, so no real venv is built. ``./run sediment`` and ``./run demo`` run in the
caller's directory, so a relative ``--out DIR`` lands where the caller's shell says."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: The venv's stand-in pip: chatty as the real one on both streams, failing when PIP_FAILS is set.
FAKE_PIP = """#!/bin/sh
echo "WARNING: Location 'file:///simple/pip/' is ignored: it is neither a file nor a directory." >&2
echo "DEPRECATION: Legacy editable install of x (setup.py develop) is deprecated." >&2
echo "  Running setup.py develop for x"
echo "[notice] A new release of pip is available: 24.0 -> 25.1" >&2
if [ -n "$PIP_FAILS" ]; then
  echo "ERROR: Could not find a version that satisfies the requirement typer>=0.12" >&2
  exit 1
fi
exit 0
"""

FAKE_PYTHON = """#!/bin/sh
# Stand-in interpreter: the version check passes, `-m venv DIR` makes DIR/bin/{python,sediment}.
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  cp "$FAKE_PIP" "$3/bin/python"
  printf '#!/bin/sh\\necho "sediment $*"\\n[ -z \"$CWD_FILE\" ] || pwd > \"$CWD_FILE\"\\n' > "$3/bin/sediment"
  chmod +x "$3/bin/python" "$3/bin/sediment"
fi
exit 0
"""


def _fakes(tmp_path: Path) -> dict[str, str]:
    for name, text in (("python", FAKE_PYTHON), ("pip", FAKE_PIP)):
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod((tmp_path / name).stat().st_mode | stat.S_IXUSR)
    return {k: v for k, v in os.environ.items() if k != "PIP_FAILS"} | {
        "PYTHON": str(tmp_path / "python"), "FAKE_PIP": str(tmp_path / "pip")}


def test_first_run_announces_the_venv_build_once(tmp_path: Path) -> None:
    """One line, and none of pip's notices (regression, issue 25: a fresh clone's first ./run
    showed pip's index warnings and deprecations)."""
    shutil.copy(REPO / "run", tmp_path / "run")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    environ = _fakes(tmp_path)

    first = subprocess.run([str(tmp_path / "run"), "sediment", "--version"], capture_output=True, text=True,
                           env=environ, timeout=60, check=False)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("run: building .venv"), first.stderr
    assert first.stdout == "sediment --version\n"

    again = subprocess.run([str(tmp_path / "run"), "sediment", "--version"], capture_output=True, text=True,
                           env=environ, timeout=60, check=False)
    assert again.returncode == 0 and again.stderr == "", again.stderr


def test_a_failed_install_shows_pips_output_and_is_tried_again(tmp_path: Path) -> None:
    shutil.copy(REPO / "run", tmp_path / "run")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    environ = _fakes(tmp_path) | {"PIP_FAILS": "1"}
    failed = subprocess.run([str(tmp_path / "run"), "sediment", "--version"], capture_output=True, text=True,
                            env=environ, timeout=60, check=False)
    assert failed.returncode == 1 and failed.stdout == "", failed.stderr
    lines = failed.stderr.splitlines()
    assert lines[0].startswith("run: building .venv")
    assert "ERROR: Could not find a version that satisfies the requirement typer>=0.12" in lines
    assert "  Running setup.py develop for x" in lines  # pip's whole output, its stdout too
    assert lines[-1] == "run: building .venv failed (the output above says why); the next ./run tries again"
    assert not list((tmp_path / ".venv").glob(".installed-*"))

    del environ["PIP_FAILS"]
    fixed = subprocess.run([str(tmp_path / "run"), "sediment", "--version"], capture_output=True, text=True,
                           env=environ, timeout=60, check=False)
    assert fixed.returncode == 0 and len(fixed.stderr.splitlines()) == 1, fixed.stderr


def _checkout_with_a_venv(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(REPO / "run", checkout / "run")
    (checkout / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return checkout, _fakes(tmp_path) | {"CWD_FILE": str(tmp_path / "cwd")}


def test_sediment_and_demo_run_in_the_callers_directory(tmp_path: Path) -> None:
    """Regression: ``./run`` used to cd into the checkout, so ``/path/run sediment derive --out
    bundle`` from a scratch folder wrote ``bundle/`` into the checkout."""
    checkout, environ = _checkout_with_a_venv(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    for command in (["sediment", "derive", "--out", "bundle"], ["demo", "--out", "demo"]):
        done = subprocess.run([str(checkout / "run"), *command], capture_output=True, text=True, cwd=scratch,
                              env=environ, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "cwd").read_text().strip() == str(scratch.resolve())
        assert done.stdout == f"sediment {' '.join(command[1:] if command[0] == 'sediment' else command)}\n"
