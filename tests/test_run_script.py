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

FAKE_PYTHON = """#!/bin/sh
# Stand-in interpreter: the version check passes, `-m venv DIR` makes DIR/bin/{python,sediment}.
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  printf '#!/bin/sh\\nexit 0\\n' > "$3/bin/python"
  printf '#!/bin/sh\\necho "sediment $*"\\n[ -z \"$CWD_FILE\" ] || pwd > \"$CWD_FILE\"\\n' > "$3/bin/sediment"
  chmod +x "$3/bin/python" "$3/bin/sediment"
fi
exit 0
"""


def test_first_run_announces_the_venv_build_once(tmp_path: Path) -> None:
    shutil.copy(REPO / "run", tmp_path / "run")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    environ = dict(os.environ) | {"PYTHON": str(python)}

    first = subprocess.run([str(tmp_path / "run"), "sediment", "--version"], capture_output=True, text=True,
                           env=environ, timeout=60, check=False)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("run: building .venv"), first.stderr
    assert first.stdout == "sediment --version\n"

    again = subprocess.run([str(tmp_path / "run"), "sediment", "--version"], capture_output=True, text=True,
                           env=environ, timeout=60, check=False)
    assert again.returncode == 0 and again.stderr == "", again.stderr


def _checkout_with_a_venv(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(REPO / "run", checkout / "run")
    (checkout / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return checkout, dict(os.environ) | {"PYTHON": str(python), "CWD_FILE": str(tmp_path / "cwd")}


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
