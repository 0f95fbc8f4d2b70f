"""The files of one Harbor task directory, from a gradable task (harbor 0.25's task layout:
``harbor.models.task.paths.TaskPaths``; its ``task.toml`` fields: ``harbor.models.task.config``).

- ``instruction.md``: the problem statement, byte for byte (UTF-8).
- ``task.toml``: ``source``, ``[metadata]`` (where the task came from), ``[verifier]`` and
  ``[agent]`` timeouts, ``[environment]`` (build timeout, working directory, the configured
  resource hints, and ``docker_image`` when the operator names the images built from
  ``environment/``).
- ``environment/Dockerfile`` and ``environment/repo.tar.gz``: the configured image, with the
  repository at the base commit unpacked into ``/testbed`` from the archive beside it (no clone
  URL: the build reaches nothing but the image registry), made a git work tree with one commit,
  then the configured install steps.
- ``tests/test.sh`` (with ``tests/files/``, the test files as of the verified commit, and
  ``tests/selected_tests.txt``): puts those test files in place, runs exactly the FAIL_TO_PASS
  and PASS_TO_PASS tests with the configured command, reads the log as SWE-bench's
  ``parse_log_pytest`` does and writes the reward where Harbor reads it
  (``/logs/verifier/reward.txt``): 1 only when every one of them passed (or xfailed).
- ``solution/solve.sh`` (with ``solution/reference.patch``): applies the reference patch's
  source changes.

Both scripts find the repository at ``$SEDIMENT_TESTBED`` (default ``/testbed``); ``test.sh``
writes the reward to ``$SEDIMENT_REWARD_FILE`` (default ``/logs/verifier/reward.txt``). So the
same scripts run in the container and in a local checkout.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TESTBED = "/testbed"
#: Where Harbor's verifier reads a plain reward (harbor.models.trial.paths.EnvironmentPaths).
REWARD_FILE = "/logs/verifier/reward.txt"
#: The log parsers whose reading test.sh carries (the names of the operator's environments file).
SCRIPTED_PARSERS: frozenset[str] = frozenset({"parse_log_pytest"})
#: How ``parse_log_pytest`` reads a line: its first word is the status, its second the test id.
_UNNAMEABLE = re.compile(r"\s")

# parse_log_pytest, in awk: the first file lists the selected tests, the second is the log.
# A line starting with a status word names (status, test): FAILED lines lose " - " first;
# the last line naming a test wins. Reward 1 only when every selected test PASSED or XFAILed.
_PARSE_PYTEST = r"""awk '
FNR == NR { if ($0 != "") { wanted[$0] = 1; n++ } next }
/^(FAILED|PASSED|SKIPPED|ERROR|XFAIL)/ {
  line = $0
  if (line ~ /^FAILED/) gsub(/ - /, " ", line)
  split(line, word, " ")
  if (word[2] != "") status[word[2]] = word[1]
}
END {
  if (n == 0) { print 0; exit }
  for (test in wanted) if (status[test] != "PASSED" && status[test] != "XFAIL") { print 0; exit }
  print 1
}'"""


def test_id_problem(test_id: str, log_parser: str) -> bool:
    """Whether the configured parser cannot name ``test_id`` (it reads the id as one word)."""
    return log_parser == "parse_log_pytest" and (not test_id or bool(_UNNAMEABLE.search(test_id)))


@dataclass(frozen=True)
class TaskFiles:
    """What the files are made from (every string already checked representable)."""

    instance_id: str
    repo: str
    base_commit: str
    verified_commit: str
    problem_statement: str
    source_patch: str
    image: str
    install: Sequence[str]
    test_command: str
    log_parser: str
    selected_tests: Sequence[str]
    #: repository path → its content at the verified commit, or ``None`` when it has none there
    test_files: Mapping[str, bytes | None]
    archive: bytes

    def files(self, config: str) -> dict[str, bytes]:
        """Every file of the directory (``config``: the task.toml text)."""
        files = {
            "instruction.md": self.problem_statement.encode("utf-8"),
            "task.toml": config.encode("utf-8"),
            "environment/Dockerfile": self.dockerfile().encode("utf-8"),
            "environment/repo.tar.gz": self.archive,
            "tests/test.sh": self.test_script().encode("utf-8"),
            "tests/selected_tests.txt": "".join(t + "\n" for t in self.selected_tests).encode("utf-8"),
            "solution/solve.sh": self.solve_script().encode("utf-8"),
            "solution/reference.patch": self.source_patch.encode("utf-8"),
        }
        for path, content in sorted(self.test_files.items()):
            if content is not None:
                files[f"tests/files/{path}"] = content
        return files

    def dockerfile(self) -> str:
        lines = [
            f"# Harbor task {self.instance_id}, written by Sediment (profile harbor-tasks-v1): the evaluation image",
            f"# configured for {self.repo}, with the repository at base commit {self.base_commit}",
            "# (environment/repo.tar.gz: that commit's tree) in /testbed, then the configured install steps.",
            f"FROM {self.image}",
            f"ADD repo.tar.gz {TESTBED}/",
            f"WORKDIR {TESTBED}",
            "RUN git init -q && git add -A && git -c user.name=sediment -c user.email=sediment@localhost "
            f"commit -q --allow-empty --no-verify -m 'base {self.base_commit}'",
            *(f"RUN {step}" for step in self.install),
        ]
        return "\n".join(lines) + "\n"

    def test_script(self) -> str:
        placed = []
        for path, content in sorted(self.test_files.items()):
            quoted = shlex.quote(path)
            if content is None:
                placed.append(f"rm -f -- {quoted}")
            else:
                folder = path.rpartition("/")[0]
                copy = f'cp -- "$HERE/files/"{quoted} {quoted}'
                placed.append(f"mkdir -p -- {shlex.quote(folder)} && {copy}" if folder else copy)
        command = " ".join([self.test_command, *(shlex.quote(t) for t in self.selected_tests)])
        lines = [
            "#!/bin/bash",
            f"# The verifier of Harbor task {self.instance_id}, written by Sediment (profile harbor-tasks-v1).",
            "# Puts the test files of the verified commit in place, runs exactly the FAIL_TO_PASS and",
            f"# PASS_TO_PASS tests with the configured command, reads the log as {self.log_parser} does and",
            "# writes the reward: 1 only when every one of those tests passed, else 0.",
            f"# SEDIMENT_TESTBED: the repository (default {TESTBED}); SEDIMENT_REWARD_FILE: where the reward",
            f"# goes (default {REWARD_FILE}, where Harbor's verifier reads it).",
            "set -uo pipefail",
            f'TESTBED="${{SEDIMENT_TESTBED:-{TESTBED}}}"',
            f'REWARD_FILE="${{SEDIMENT_REWARD_FILE:-{REWARD_FILE}}}"',
            'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
            'mkdir -p "$(dirname "$REWARD_FILE")"',
            'echo 0 > "$REWARD_FILE"',
            'cd "$TESTBED" || exit 1',
            *placed,
            'LOG="$(mktemp)"',
            f'{{ {command}; }} > "$LOG" 2>&1',
            'cat "$LOG"',
            f'REWARD="$({_PARSE_PYTEST} "$HERE/selected_tests.txt" "$LOG")"',
            'rm -f -- "$LOG"',
            'echo "${REWARD:-0}" > "$REWARD_FILE"',
            'echo "reward: ${REWARD:-0}"',
        ]
        return "\n".join(lines) + "\n"

    def solve_script(self) -> str:
        lines = [
            "#!/bin/bash",
            f"# The reference solution of Harbor task {self.instance_id}, written by Sediment (profile",
            f"# harbor-tasks-v1): the source changes of {self.base_commit[:12]}..{self.verified_commit[:12]},",
            "# which CI verified.",
            f"# SEDIMENT_TESTBED: the repository (default {TESTBED}).",
            "set -euo pipefail",
            'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
            f'cd "${{SEDIMENT_TESTBED:-{TESTBED}}}"',
            'git apply --verbose "$HERE/reference.patch"',
        ]
        return "\n".join(lines) + "\n"


EXECUTABLE = frozenset({"tests/test.sh", "solution/solve.sh"})


def toml_document(top: Mapping[str, Any], tables: Iterable[tuple[str, Mapping[str, Any]]]) -> str:
    """A TOML document: ``top``'s keys, then each ``[table]`` (keys in order; ``None`` left out)."""
    lines = [f"{key} = {_value(value)}" for key, value in top.items() if value is not None]
    for name, table in tables:
        lines += ["", f"[{name}]", *(f"{key} = {_value(value)}" for key, value in table.items() if value is not None)]
    return "\n".join(lines) + "\n"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_string(k)} = {_value(v)}" for k, v in value.items() if v is not None) + " }"
    raise TypeError(f"no TOML value for {type(value).__name__}")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _string(text: str) -> str:
    """A TOML basic string (ASCII: other characters escaped, \\U beyond the BMP)."""
    out = []
    for char in text:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04X}")
        else:
            out.append(f"\\U{code:08X}")
    return '"' + "".join(out) + '"'
