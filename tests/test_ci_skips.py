"""Under CI nothing skips silently: the test kit's helpers (``sediment.testing.unavailable``,
``require_path``, ``optional_path``) fail where they would skip, and with
``sediment_ci_forbids_skips`` (which this project sets) every other skip or xfail fails too,
except the allow-listed node ids, each with its reason. Checked on a real pytest run of a
small suite in a subprocess, under CI and outside it."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sediment.testing import optional_path, require_path, unavailable, under_ci

ROOT = Path(__file__).resolve().parents[1]

SUITE = '''
import pytest

from sediment.testing import optional_path, require_path, unavailable


def test_passes():
    assert 1 + 1 == 2


def test_skips():
    pytest.skip("no reason good enough")


def test_allowed():
    pytest.skip("the host cannot do this")


@pytest.mark.parametrize("n", [1, 2])
def test_allowed_with_parameters(n):
    pytest.skip("the host cannot do this either")


@pytest.mark.skipif(True, reason="a skipif")
def test_skipif():
    assert False


@pytest.mark.xfail(reason="known bug")
def test_xfails():
    assert False


@pytest.mark.xfail(reason="known bug, fixed")
def test_xpasses():
    assert True


def test_missing_data():
    unavailable("the data is missing")


def test_missing_path(tmp_path):
    require_path(tmp_path / "absent", "the fixture")


def test_optional_path(tmp_path):
    assert optional_path(tmp_path / "absent", "the fixture") is None


@pytest.fixture
def server():
    pytest.skip("no server")


def test_setup_skips(server):
    assert False
'''

MODULE_SKIP = '''
import pytest

pytest.skip("the whole module", allow_module_level=True)


def test_never_collected():
    assert False
'''

INI = '''[pytest]
sediment_ci_forbids_skips = {forbid}
sediment_ci_allowed_skips =
    test_suite.py::test_allowed: the host cannot do this, and another test covers it
    test_suite.py::test_allowed_with_parameters: the same
'''


def run_suite(tmp_path: Path, *, ci: str | None, forbid: bool = True) -> dict[str, str]:
    """Run SUITE (and a module that skips while collected) with pytest; node name → outcome."""
    (tmp_path / "pytest.ini").write_text(INI.format(forbid=str(forbid).lower()), encoding="utf-8")
    (tmp_path / "test_suite.py").write_text(SUITE, encoding="utf-8")
    (tmp_path / "test_module_skip.py").write_text(MODULE_SKIP, encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        environment["CI"] = ci
    report = tmp_path / "report.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors",
                    f"--junitxml={report}"],
                   cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300, check=False)
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[case.get("name") or ""] = kinds[0] if kinds else "passed"
    return outcomes


def test_under_ci_every_skip_and_xfail_fails_except_the_allowed(tmp_path: Path) -> None:
    assert run_suite(tmp_path, ci="true") == {
        "test_passes": "passed",
        "test_skips": "failure",
        "test_allowed": "skipped",
        "test_allowed_with_parameters[1]": "skipped",
        "test_allowed_with_parameters[2]": "skipped",
        "test_skipif": "error",  # skipif skips in the setup phase
        "test_xfails": "failure",
        "test_xpasses": "failure",
        "test_missing_data": "failure",
        "test_missing_path": "failure",
        "test_optional_path": "failure",
        "test_setup_skips": "error",  # a fixture that skips fails the setup: an error
        "test_module_skip": "error",  # a module that skips while collected: a collection error
    }


def test_outside_ci_they_skip_with_their_reasons(tmp_path: Path) -> None:
    outcomes = run_suite(tmp_path, ci=None)
    assert {k for k, v in outcomes.items() if v == "passed"} == {"test_passes", "test_optional_path", "test_xpasses"}
    assert outcomes["test_skips"] == outcomes["test_missing_path"] == outcomes["test_xfails"] == "skipped"
    assert "failure" not in outcomes.values() and "error" not in outcomes.values()


def test_without_the_option_only_the_helpers_fail_under_ci(tmp_path: Path) -> None:
    """The option is a suite's choice (another project's tests keep their skips); the helpers
    fail under CI whatever it says."""
    outcomes = run_suite(tmp_path, ci="1", forbid=False)
    assert {k for k, v in outcomes.items() if v == "failure"} == {
        "test_missing_data", "test_missing_path", "test_optional_path"}
    assert outcomes["test_skips"] == outcomes["test_skipif"] == outcomes["test_module_skip"] == "skipped"


def test_a_malformed_allow_list_line_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nsediment_ci_allowed_skips =\n    test_x.py::test_y\n",
                                         encoding="utf-8")
    (tmp_path / "test_x.py").write_text("def test_y():\n    pass\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "sediment_ci_allowed_skips: 'test_x.py::test_y' is not 'NODE_ID: reason'" in done.stderr


@pytest.mark.parametrize(("value", "expected"), [
    ("true", True), ("TRUE", True), (" True ", True), ("1", True),
    ("", False), ("false", False), ("0", False), ("yes", False),
])
def test_under_ci_reads_the_ci_variable(value: str, expected: bool) -> None:
    assert under_ci({"CI": value}) is expected
    assert under_ci({}) is False


def test_the_helpers_skip_naming_what_is_missing_and_fail_under_ci(tmp_path: Path) -> None:
    absent = tmp_path / "fixtures"
    with pytest.raises(pytest.skip.Exception, match=r"^the fixtures not found at .*fixtures \(fetch them\)$"):
        require_path(absent, "the fixtures", hint="fetch them", environ={})
    with pytest.raises(pytest.fail.Exception, match=r"^the fixtures not found at .* under CI \(CI=true\) it must"):
        require_path(absent, "the fixtures", environ={"CI": "true"})
    with pytest.raises(pytest.fail.Exception, match="^no server; under CI"):
        unavailable("no server", environ={"CI": "true"})
    assert optional_path(absent, "the fixtures", environ={}) is None
    with pytest.raises(pytest.fail.Exception):
        optional_path(absent, "the fixtures", environ={"CI": "true"})
    absent.mkdir()
    assert require_path(absent, "the fixtures", environ={"CI": "true"}) == absent
    assert optional_path(absent, "the fixtures", environ={"CI": "true"}) == absent


def test_this_project_forbids_skips_under_ci_and_each_allowed_one_exists() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert options["sediment_ci_forbids_skips"] is True
    assert options["empty_parameter_set_mark"] == "fail_at_collect"
    for line in options["sediment_ci_allowed_skips"]:
        node, _, reason = line.partition(": ")
        path, _, name = node.partition("::")
        assert reason.strip() and f"\ndef {name.split('[')[0]}(" in (ROOT / path).read_text(encoding="utf-8"), line


def test_ci_runs_the_suite_under_ci() -> None:
    """``.ci/run`` sets CI=true itself, so the suite it runs fails on a skip whatever the runner sets."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "\nexport CI=true\n" in script
    assert script.index("export CI=true") < script.index("./run test")
