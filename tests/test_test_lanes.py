"""The test lanes: the kit marks what needs more than Python (``postgres`` on the PostgreSQL side
of ``store_url``, ``consumer`` on every test using ``consumer_python``), only a test marked
``postgres`` reaches the PostgreSQL test server, ``./run test --fast`` leaves the marked tests
out, and a deselected test is no skip under CI. Checked on real pytest runs of a small suite in
a subprocess (the fast lane in two pytest-xdist workers, as ``./run test --fast`` runs it), and on
this project's files."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SUITE = '''
import pytest

from sediment.testing import postgres_store_url


def test_plain():
    assert 1 + 1 == 2


def test_store(store_url):
    assert store_url.startswith(("sqlite:", "postgresql:"))


def test_consumer(consumer_python):
    consumer_python("absent")


@pytest.mark.postgres
def test_server():
    assert postgres_store_url()


@pytest.mark.slow
def test_long():
    pass
'''

UNMARKED = '''
from sediment.testing import postgres_store_url


def test_server_unmarked():
    postgres_store_url()
'''

INI = '''[pytest]
addopts = -p no:cacheprovider -ra
markers =
    slow: a long test
sediment_ci_forbids_skips = true
'''


def fast_lane() -> str:
    """The ``-m`` expression ``./run test --fast`` passes."""
    match = re.search(r'^FAST_LANE="([^"]+)"$', (ROOT / "run").read_text(encoding="utf-8"), re.MULTILINE)
    assert match, "run defines FAST_LANE"
    return match.group(1).replace(" and not browser", "")  # the small suite has no browser mark


def run_suite(tmp_path: Path, *args: str, ci: bool = True,
              database: str | None = None) -> tuple[int, dict[str, str], str]:
    """Run SUITE with pytest ``args``; exit code, node name → outcome, output."""
    (tmp_path / "pytest.ini").write_text(INI, encoding="utf-8")
    (tmp_path / "test_suite.py").write_text(SUITE, encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if k not in ("CI", "SEDIMENT_TEST_DATABASE_URL")}
    if ci:
        environment["CI"] = "true"
    if database is not None:
        environment["SEDIMENT_TEST_DATABASE_URL"] = database
    report = tmp_path / "report.xml"
    report.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", f"--junitxml={report}", *args],
                          cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300, check=False)
    outcomes = {}
    if report.exists():
        for case in ET.parse(report).getroot().iter("testcase"):
            kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
            outcomes[case.get("name") or ""] = kinds[0] if kinds else "passed"
    return done.returncode, outcomes, done.stdout + done.stderr


def test_the_fast_lane_under_ci_runs_the_rest_and_deselected_tests_are_no_skips(tmp_path: Path) -> None:
    code, outcomes, output = run_suite(tmp_path, "-n", "2", "-m", fast_lane())
    assert code == 0, output
    assert outcomes == {"test_plain": "passed", "test_store[sqlite]": "passed"}, output


def test_the_kit_marks_the_postgresql_side_and_the_consumer_tests(tmp_path: Path) -> None:
    _, outcomes, output = run_suite(tmp_path, "-m", "postgres", ci=False)
    assert set(outcomes) == {"test_store[postgresql]", "test_server"}, output
    assert set(outcomes.values()) == {"skipped"}  # no server here: they skip, naming it
    assert "no PostgreSQL test server" in output
    _, outcomes, output = run_suite(tmp_path, "-m", "consumer", ci=False)
    assert outcomes == {"test_consumer": "skipped"}, output
    assert "the consumer venv .venv-consumers/absent not found" in output


def test_an_unmarked_test_that_reaches_the_server_fails_naming_the_mark(tmp_path: Path) -> None:
    """Wherever it runs (with a server or none, under CI or not): a missing mark is a defect."""
    (tmp_path / "test_unmarked.py").write_text(UNMARKED, encoding="utf-8")
    for ci, database in ((False, None), (True, "postgresql://nobody@127.0.0.1:1/postgres")):
        code, outcomes, output = run_suite(tmp_path, "test_unmarked.py", ci=ci, database=database)
        assert code == 1 and outcomes == {"test_server_unmarked": "failure"}, output
        assert ("test_unmarked.py::test_server_unmarked uses the PostgreSQL test server but is not marked postgres: "
                "add @pytest.mark.postgres") in output


def test_only_a_marked_test_sees_the_server_url(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text(INI, encoding="utf-8")
    (tmp_path / "test_env.py").write_text(
        "import os\nimport pytest\n\n\ndef test_unmarked():\n    assert 'SEDIMENT_TEST_DATABASE_URL' not in os.environ\n\n\n"
        "@pytest.mark.postgres\ndef test_marked():\n    assert os.environ['SEDIMENT_TEST_DATABASE_URL'] == 'postgresql://x/y'\n",
        encoding="utf-8")
    environment = dict(os.environ, SEDIMENT_TEST_DATABASE_URL="postgresql://x/y")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "test_env.py"], cwd=tmp_path,
                          env=environment, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr


def test_a_lane_that_selects_nothing_fails(tmp_path: Path) -> None:
    code, outcomes, output = run_suite(tmp_path, "-n", "2", "-m", "not slow and slow")
    assert code == pytest.ExitCode.NO_TESTS_COLLECTED and outcomes == {}, output


def test_this_project_registers_the_lanes_and_ci_runs_everything() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    options = project["tool"]["pytest"]["ini_options"]
    registered = {line.split(":", 1)[0] for line in options["markers"]}
    assert registered >= {"consumer", "postgres", "browser", "slow"}
    assert set(re.findall(r"not (\w+)", fast_lane() + " and not browser")) <= registered
    assert any(d.startswith("pytest-xdist") for d in project["project"]["optional-dependencies"]["dev"])
    run = (ROOT / "run").read_text(encoding="utf-8")
    assert "scripts/consumer-venv\n" in run and "exec scripts/test-postgres" in run  # the full lane builds them first
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "\n./run test\n" in ci and "--fast" not in ci and " -m " not in ci
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "./run test --fast" in readme
