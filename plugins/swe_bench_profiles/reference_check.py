"""The no-op / reference check of one Harbor task directory, run on the exporting machine
(setting ``check_reference``): the repository at the base commit is unpacked from the task's
own archive into a private temporary directory and made a git work tree, as the Dockerfile
does; ``tests/test.sh`` must then write reward 0, and after ``solution/solve.sh`` reward 1.

It runs the task's scripts with this machine's tools: ``bash``, ``git``, ``awk`` and the
configured test command, found on ``PATH`` after the ``check_path`` setting's folders (a local
Python environment with the repository's dependencies, for instance). The install steps of the
environment are not run. Anything else (a script failing, a timeout) also fails the check.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path

_GIT_IDENTITY = ["-c", "user.name=sediment", "-c", "user.email=sediment@localhost"]


def reproduces(files: Mapping[str, bytes], executable: frozenset[str], *, path_prefix: str,
               timeout: float) -> bool:
    """Whether the unchanged repository scores 0 and the reference solution 1."""
    with tempfile.TemporaryDirectory(prefix="sediment-harbor-check-") as temporary:
        root = Path(temporary)
        task, testbed, reward = root / "task", root / "testbed", root / "reward.txt"
        for path, content in files.items():
            target = task / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            target.chmod(0o755 if path in executable else 0o644)
        testbed.mkdir()
        with tarfile.open(fileobj=io.BytesIO(files["environment/repo.tar.gz"]), mode="r:gz") as archive:
            archive.extractall(testbed, filter="data")
        environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        environment.update(HOME=str(root), SEDIMENT_TESTBED=str(testbed), SEDIMENT_REWARD_FILE=str(reward),
                           PATH=os.pathsep.join(p for p in (path_prefix, os.environ.get("PATH", "")) if p))

        def run(*command: str) -> bool:
            try:
                done = subprocess.run(command, cwd=testbed, env=environment, capture_output=True, timeout=timeout,
                                      check=False)
            except (OSError, subprocess.TimeoutExpired):
                return False
            return done.returncode == 0

        def scored(expected: str) -> bool:
            reward.unlink(missing_ok=True)
            return run("bash", str(task / "tests" / "test.sh")) and reward.is_file() and \
                reward.read_text(encoding="utf-8").strip() == expected

        return (run("git", "init", "-q") and run("git", "add", "-A")
                and run("git", *_GIT_IDENTITY, "commit", "-q", "--allow-empty", "--no-verify", "-m", "base")
                and scored("0") and run("bash", str(task / "solution" / "solve.sh")) and scored("1"))
