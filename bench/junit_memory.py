"""Peak memory of translating a JUnit report at the 64 MiB cap (docs/operate.md quotes it).

    python bench/junit_memory.py

Writes two reports of just under 64 MiB to a temporary directory, a pytest-style one of about
250,000 test cases (272 bytes each) and one of unclosed ``<testsuite>`` elements, translates
each in a child process (``read_report`` + ``translate_report``, nothing stored) and prints the
child's wall time and peak RSS (``VmHWM``: ``ru_maxrss`` would also count this process).
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

CAP = 64 * 1024 * 1024
CHILD = """
import sys
from datetime import UTC, datetime
from sediment.ingest.junit import ReportError, RunAttempt, translate_report
from sediment.ingest.junit.parse import read_report
attempt = RunAttempt(org_id="acme", provider="other", run_id="1", run_attempt=1, repo="acme/calc",
                     commit_sha="3484a3fb816e0859fd6e1cea078d76385ff50625")
try:
    outcome = f"{len(translate_report(read_report(sys.argv[1]), attempt, captured_at=datetime.now(UTC)))} results"
except ReportError as exc:
    outcome = str(exc)
with open("/proc/self/status", encoding="ascii") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(f"{outcome}; peak RSS {peak / 1024:.0f} MiB")
"""


def _cases(path: Path) -> None:
    head = b'<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest">'
    tail = b"</testsuite></testsuites>"
    with path.open("wb") as out:
        out.write(head)
        size, index = len(head) + len(tail), 0
        while True:
            case = (b'<testcase classname="tests.integration.test_module_%06d" name="test_behaviour_number_%06d'
                    b'[parametrized-case-alpha-beta-gamma]" file="tests/integration/test_module_%06d.py" line="%d"'
                    b' time="0.%03d"><properties><property name="k" value="v"/></properties></testcase>\n'
                    % (index % 5000, index, index % 5000, index, index % 1000))
            if size + len(case) > CAP:
                break
            out.write(case)
            size, index = size + len(case), index + 1
        out.write(tail)


def _unclosed(path: Path) -> None:
    unit = b"<testsuite>"
    path.write_bytes(b"<testsuites>" + unit * ((CAP - 12) // len(unit)))


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        for name, write in (("cases.xml", _cases), ("unclosed.xml", _unclosed)):
            path = Path(directory) / name
            write(path)
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True)
            print(f"{name} ({path.stat().st_size} bytes): {done.stdout.strip()}, {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
