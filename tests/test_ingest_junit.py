"""JUnit XML reports → TestCaseResult Facts (sediment/ingest/junit/), through the library and the CLI.

The samples under ``fixtures/junit/`` were written by the real producers (pytest, pytest-rerunfailures,
jest-junit, gotestsum, Maven Surefire) or follow a producer's documented format (cargo-nextest); see
``fixtures/junit/SOURCES.md``. Each test asserts the exact results a sample yields; ``raw`` is checked
against an independent reading of the same element with ``xml.dom.minidom``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import subprocess
import sys
import xml.dom.minidom
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sediment.ingest.junit import (
    MAX_REPORT_BYTES,
    ReportError,
    RunAttempt,
    ingest_junit_reports,
    test_result_id,
    translate_report,
)
from sediment.ingest.junit import parse as junit_parse
from sediment.ingest.junit.dialects import detect_runner, duration_ms, normalize_test_id
from sediment.ingest.junit.parse import parse_report, read_report
from sediment.model.facts import TEST_RUNNERS, TestCaseResult
from sediment.records import encode_record
from sediment.store import FactStore
from sediment.store.ids import fact_id

FIXTURES = Path(__file__).parent / "fixtures" / "junit"
ORG = "acme"
SHA = "3484a3fb816e0859fd6e1cea078d76385ff50625"
T0 = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)
ATTEMPT = RunAttempt(org_id=ORG, provider="github_actions", run_id="9001", run_attempt=2, repo="acme/calc",
                     commit_sha=SHA)

#: Per sample: the runner detected, then per result (locator, test_id, outcome, flaky_reruns, duration_ms,
#: classname, name, suite, test_file), in document order.
SAMPLES: dict[str, tuple[str, list[tuple[Any, ...]]]] = {
    "gotestsum-rerun-fails.xml": ("go", [
        ('testsuites/testsuite[0]/testcase[0]', 'TestEventually', 'failed', 0, 0, 'example.com/calc/flaky', 'TestEventually', 'example.com/calc/flaky', None),
        ('testsuites/testsuite[0]/testcase[1]', 'TestSteady', 'passed', 0, 0, 'example.com/calc/flaky', 'TestSteady', 'example.com/calc/flaky', None),
        ('testsuites/testsuite[0]/testcase[2]', 'TestEventually', 'passed', 0, 0, 'example.com/calc/flaky', 'TestEventually', 'example.com/calc/flaky', None),
    ]),
    "gotestsum.xml": ("go", [
        ('testsuites/testsuite[0]/testcase[0]', 'TestTable/wrong_sum', 'failed', 0, 0, 'example.com/calc/calc', 'TestTable/wrong_sum', 'example.com/calc/calc', None),
        ('testsuites/testsuite[0]/testcase[1]', 'TestTable', 'failed', 0, 0, 'example.com/calc/calc', 'TestTable', 'example.com/calc/calc', None),
        ('testsuites/testsuite[0]/testcase[2]', 'TestSkipped', 'skipped', 0, 0, 'example.com/calc/calc', 'TestSkipped', 'example.com/calc/calc', None),
        ('testsuites/testsuite[0]/testcase[3]', 'TestAdd', 'passed', 0, 0, 'example.com/calc/calc', 'TestAdd', 'example.com/calc/calc', None),
        ('testsuites/testsuite[0]/testcase[4]', 'TestTable/small_numbers', 'passed', 0, 0, 'example.com/calc/calc', 'TestTable/small_numbers', 'example.com/calc/calc', None),
        ('testsuites/testsuite[1]/testcase[0]', 'TestUpper', 'passed', 0, 0, 'example.com/calc/strs', 'TestUpper', 'example.com/calc/strs', None),
    ]),
    "jest-junit-default.xml": ("jest", [
        ('testsuites/testsuite[0]/testcase[0]', 'Calc adds numbers', 'passed', 0, 2, 'Calc adds numbers', 'Calc adds numbers', 'Calc', None),
        ('testsuites/testsuite[0]/testcase[1]', 'Calc with negatives adds a negative', 'failed', 0, 3, 'Calc with negatives adds a negative', 'Calc with negatives adds a negative', 'Calc', None),
        ('testsuites/testsuite[0]/testcase[2]', 'Calc with negatives skipped for now', 'skipped', 0, 0, 'Calc with negatives skipped for now', 'Calc with negatives skipped for now', 'Calc', None),
        ('testsuites/testsuite[0]/testcase[3]', 'top level test', 'passed', 0, 1, ' top level test', ' top level test', 'Calc', None),
        ('testsuites/testsuite[0]/testcase[4]', 'subtracts numbers', 'passed', 0, 0, ' subtracts numbers', ' subtracts numbers', 'Calc', None),
        ('testsuites/testsuite[1]/testcase[0]', 'Strings upper-cases', 'passed', 0, 3, 'Strings upper-cases', 'Strings upper-cases', 'Strings', None),
    ]),
    "jest-junit-separated.xml": ("jest", [
        ('testsuites/testsuite[0]/testcase[0]', 'Calc > adds numbers', 'passed', 0, 3, 'Calc', 'adds numbers', 'Calc', 'src/calc.test.js'),
        ('testsuites/testsuite[0]/testcase[1]', 'Calc > with negatives > adds a negative', 'failed', 0, 2, 'Calc > with negatives', 'adds a negative', 'Calc', 'src/calc.test.js'),
        ('testsuites/testsuite[0]/testcase[2]', 'Calc > with negatives > skipped for now', 'skipped', 0, 0, 'Calc > with negatives', 'skipped for now', 'Calc', 'src/calc.test.js'),
        ('testsuites/testsuite[0]/testcase[3]', 'top level test', 'passed', 0, 0, '', 'top level test', 'Calc', 'src/calc.test.js'),
        ('testsuites/testsuite[0]/testcase[4]', 'subtracts numbers', 'passed', 0, 0, '', 'subtracts numbers', 'Calc', 'src/calc.test.js'),
        ('testsuites/testsuite[1]/testcase[0]', 'Strings > upper-cases', 'passed', 0, 2, 'Strings', 'upper-cases', 'Strings', 'src/strings.test.js'),
    ]),
    "nextest.xml": ("nextest", [
        ('testsuites/testsuite[0]/testcase[0]', 'tests::adds_numbers', 'passed', 0, 4, 'calc', 'tests::adds_numbers', 'calc', None),
        ('testsuites/testsuite[0]/testcase[1]', 'tests::subtracts_numbers', 'failed', 1, 5, 'calc', 'tests::subtracts_numbers', 'calc', None),
        ('testsuites/testsuite[0]/testcase[2]', 'tests::parser::parses_empty_input', 'passed', 0, 3, 'calc', 'tests::parser::parses_empty_input', 'calc', None),
        ('testsuites/testsuite[0]/testcase[3]', 'tests::flaky_clock', 'passed', 1, 6, 'calc', 'tests::flaky_clock', 'calc', None),
        ('testsuites/testsuite[1]/testcase[0]', 'round_trip', 'passed', 0, 52, 'calc::integration', 'round_trip', 'calc::integration', None),
        ('testsuites/testsuite[2]/testcase[0]', 'cli::times_out', 'failed', 0, 1001, 'calc::bin/calc-cli', 'cli::times_out', 'calc::bin/calc-cli', None),
    ]),
    "pytest-rerunfailures.xml": ("pytest", [
        ('testsuites/testsuite[0]/testcase[0]', 'tests/test_flaky.py::test_stable', 'passed', 0, 1, 'tests.test_flaky', 'test_stable', 'pytest', 'tests/test_flaky.py'),
        ('testsuites/testsuite[0]/testcase[3]', 'tests/test_flaky.py::test_flaky_then_passes', 'passed', 2, 0, 'tests.test_flaky', 'test_flaky_then_passes', 'pytest', 'tests/test_flaky.py'),
        ('testsuites/testsuite[0]/testcase[6]', 'tests/test_flaky.py::test_always_fails', 'failed', 2, 0, 'tests.test_flaky', 'test_always_fails', 'pytest', 'tests/test_flaky.py'),
    ]),
    "pytest-xunit1.xml": ("pytest", [
        ('testsuites/testsuite[0]/testcase[0]', 'tests/unit/test_calc.py::TestCalc::test_add', 'passed', 0, 6, 'tests.unit.test_calc.TestCalc', 'test_add', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[1]', 'tests/unit/test_calc.py::TestCalc::test_sub_fails', 'failed', 0, 1, 'tests.unit.test_calc.TestCalc', 'test_sub_fails', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[2]', 'tests/unit/test_calc.py::TestCalc::TestNested::test_inner', 'passed', 0, 1, 'tests.unit.test_calc.TestCalc.TestNested', 'test_inner', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[3]', 'tests/unit/test_calc.py::test_param[1-2-3]', 'passed', 0, 1, 'tests.unit.test_calc', 'test_param[1-2-3]', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[4]', 'tests/unit/test_calc.py::test_param[2-2-5]', 'failed', 0, 1, 'tests.unit.test_calc', 'test_param[2-2-5]', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[5]', 'tests/unit/test_calc.py::test_param[x-y-xy]', 'passed', 0, 1, 'tests.unit.test_calc', 'test_param[x-y-xy]', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[6]', 'tests/unit/test_calc.py::test_error', 'error', 0, 0, 'tests.unit.test_calc', 'test_error', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[7]', 'tests/unit/test_calc.py::test_skip', 'skipped', 0, 0, 'tests.unit.test_calc', 'test_skip', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[8]', 'tests/unit/test_calc.py::test_xfail', 'skipped', 0, 0, 'tests.unit.test_calc', 'test_xfail', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[9]', 'tests/unit/test_calc.py::test_xpass', 'passed', 0, 0, 'tests.unit.test_calc', 'test_xpass', 'pytest', 'tests/unit/test_calc.py'),
    ]),
    "pytest-xunit2.xml": ("pytest", [
        ('testsuites/testsuite[0]/testcase[0]', 'tests/unit/test_calc.py::TestCalc::test_add', 'passed', 0, 5, 'tests.unit.test_calc.TestCalc', 'test_add', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[1]', 'tests/unit/test_calc.py::TestCalc::test_sub_fails', 'failed', 0, 1, 'tests.unit.test_calc.TestCalc', 'test_sub_fails', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[2]', 'tests/unit/test_calc.py::TestCalc::TestNested::test_inner', 'passed', 0, 1, 'tests.unit.test_calc.TestCalc.TestNested', 'test_inner', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[3]', 'tests/unit/test_calc.py::test_param[1-2-3]', 'passed', 0, 1, 'tests.unit.test_calc', 'test_param[1-2-3]', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[4]', 'tests/unit/test_calc.py::test_param[2-2-5]', 'failed', 0, 1, 'tests.unit.test_calc', 'test_param[2-2-5]', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[5]', 'tests/unit/test_calc.py::test_param[x-y-xy]', 'passed', 0, 1, 'tests.unit.test_calc', 'test_param[x-y-xy]', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[6]', 'tests/unit/test_calc.py::test_error', 'error', 0, 1, 'tests.unit.test_calc', 'test_error', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[7]', 'tests/unit/test_calc.py::test_skip', 'skipped', 0, 0, 'tests.unit.test_calc', 'test_skip', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[8]', 'tests/unit/test_calc.py::test_xfail', 'skipped', 0, 1, 'tests.unit.test_calc', 'test_xfail', 'pytest', 'tests/unit/test_calc.py'),
        ('testsuites/testsuite[0]/testcase[9]', 'tests/unit/test_calc.py::test_xpass', 'passed', 0, 1, 'tests.unit.test_calc', 'test_xpass', 'pytest', 'tests/unit/test_calc.py'),
    ]),
    "surefire-nested.xml": ("surefire", [
        ('testsuite/testcase[0]', 'com.example.calc.NestedCalcTest$WithNegatives#addsANegative', 'passed', 0, 19, 'com.example.calc.NestedCalcTest$WithNegatives', 'addsANegative', 'com.example.calc.NestedCalcTest$WithNegatives', None),
    ]),
    "surefire-rerun.xml": ("surefire", [
        ('testsuite/testcase[0]', 'com.example.calc.CalcTest#disabledTest', 'skipped', 0, 0, 'com.example.calc.CalcTest', 'disabledTest', 'com.example.calc.CalcTest', None),
        ('testsuite/testcase[1]', 'com.example.calc.CalcTest#failsOnPurpose', 'failed', 2, 28, 'com.example.calc.CalcTest', 'failsOnPurpose', 'com.example.calc.CalcTest', None),
        ('testsuite/testcase[2]', 'com.example.calc.CalcTest#throwsUnexpectedly', 'error', 2, 4, 'com.example.calc.CalcTest', 'throwsUnexpectedly', 'com.example.calc.CalcTest', None),
        ('testsuite/testcase[3]', 'com.example.calc.CalcTest#errorsThenPasses', 'passed', 1, 4, 'com.example.calc.CalcTest', 'errorsThenPasses', 'com.example.calc.CalcTest', None),
        ('testsuite/testcase[4]', 'com.example.calc.CalcTest#addsPairs(int, int, int)[1]', 'passed', 0, 26, 'com.example.calc.CalcTest', 'addsPairs(int, int, int)[1]', 'com.example.calc.CalcTest', None),
        ('testsuite/testcase[5]', 'com.example.calc.CalcTest#addsPairs(int, int, int)[2]', 'failed', 2, 4, 'com.example.calc.CalcTest', 'addsPairs(int, int, int)[2]', 'com.example.calc.CalcTest', None),
        ('testsuite/testcase[6]', 'com.example.calc.CalcTest#addsNumbers', 'passed', 0, 1, 'com.example.calc.CalcTest', 'addsNumbers', 'com.example.calc.CalcTest', None),
        ('testsuite/testcase[7]', 'com.example.calc.CalcTest#flakyPassesOnRerun', 'passed', 1, 1, 'com.example.calc.CalcTest', 'flakyPassesOnRerun', 'com.example.calc.CalcTest', None),
    ]),
}


def translate(name: str, runner: str | None = None) -> tuple[TestCaseResult, ...]:
    return translate_report((FIXTURES / name).read_bytes(), ATTEMPT, captured_at=T0, runner=runner)  # type: ignore[arg-type]


def dom_record(node: xml.dom.minidom.Element) -> dict[str, Any]:
    """An element as ``element_record`` shapes it, read independently through xml.dom.minidom."""
    record: dict[str, Any] = {"tag": node.tagName, "attributes": dict(node.attributes.items())}
    children: list[dict[str, Any]] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            if children:
                children[-1]["tail"] = "".join(pending)
            else:
                record["text"] = "".join(pending)
            pending.clear()

    for child in node.childNodes:
        if child.nodeType in (child.TEXT_NODE, child.CDATA_SECTION_NODE):
            pending.append(child.data)
        elif child.nodeType == child.ELEMENT_NODE:
            flush()
            children.append(dom_record(child))
    flush()
    if children:
        record["children"] = children
    return record


def dom_elements(name: str) -> dict[str, xml.dom.minidom.Element]:
    """Every <testcase> of a sample by its locator, found by walking the DOM."""
    root = xml.dom.minidom.parse(str(FIXTURES / name)).documentElement
    found: dict[str, xml.dom.minidom.Element] = {}

    def walk(node: xml.dom.minidom.Element, path: str) -> None:
        counts: dict[str, int] = {}
        for child in node.childNodes:
            if child.nodeType == child.ELEMENT_NODE and child.tagName in ("testsuite", "testcase"):
                index = counts.get(child.tagName, 0)
                counts[child.tagName] = index + 1
                locator = f"{path}/{child.tagName}[{index}]"
                if child.tagName == "testcase":
                    found[locator] = child
                else:
                    walk(child, locator)

    walk(root, root.tagName)
    return found


# --- the real samples -------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_yields_exact_results(name: str) -> None:
    runner, expected = SAMPLES[name]
    data = (FIXTURES / name).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    results = translate(name)
    assert [(r.locator, r.test_id, r.outcome, r.flaky_reruns, r.duration_ms, r.classname, r.name, r.suite,
             r.test_file) for r in results] == expected
    elements = dom_elements(name)
    for result in results:
        assert (result.runner, result.org_id, result.provider, result.run_id, result.run_attempt, result.repo,
                result.commit_sha, result.report_sha256, result.captured_at, result.schema_version) == (
            runner, ORG, "github_actions", "9001", 2, "acme/calc", SHA, digest, T0, 1)
        assert result.test_result_id == fact_id("test", ORG, "github_actions", "acme/calc", "9001", 2, digest,
                                                result.locator)
        earlier = result.raw.get("earlier_attempts", [])
        raw = {key: value for key, value in result.raw.items() if key != "earlier_attempts"}
        assert raw == dom_record(elements[result.locator])  # the element, losslessly
        for attempt in earlier:
            assert {k: v for k, v in attempt.items() if k != "locator"} == dom_record(elements[attempt["locator"]])
    assert translate(name) == results  # deterministic


def test_every_testcase_element_is_accounted_for() -> None:
    """Each element is one result, except pytest reruns, which fold into the attempt's last element."""
    for name in SAMPLES:
        results = translate(name)
        covered = [r.locator for r in results] + [a["locator"] for r in results for a in r.raw.get("earlier_attempts", [])]
        assert sorted(covered) == sorted(dom_elements(name)), name


def test_pytest_xunit1_and_xunit2_give_the_same_ids() -> None:
    assert [r.test_id for r in translate("pytest-xunit1.xml")] == [r.test_id for r in translate("pytest-xunit2.xml")]


def test_pytest_rerunfailures_attempts_fold_into_one_result() -> None:
    """pytest-rerunfailures 16.7 writes a <testcase> per attempt, the failed reruns without a result child."""
    results = {r.test_id: r for r in translate("pytest-rerunfailures.xml")}
    flaky = results["tests/test_flaky.py::test_flaky_then_passes"]
    assert (flaky.outcome, flaky.flaky_reruns, flaky.locator) == ("passed", 2, "testsuites/testsuite[0]/testcase[3]")
    assert [a["locator"] for a in flaky.raw["earlier_attempts"]] == [
        "testsuites/testsuite[0]/testcase[1]", "testsuites/testsuite[0]/testcase[2]"]
    failing = results["tests/test_flaky.py::test_always_fails"]
    assert (failing.outcome, failing.flaky_reruns) == ("failed", 2)
    assert failing.raw["children"][0]["tag"] == "failure"
    # As generic JUnit, every element stands alone and the reruns read as passes.
    generic = translate("pytest-rerunfailures.xml", runner="junit")
    assert [(r.test_id, r.outcome) for r in generic][-3:] == [
        ("tests.test_flaky.test_always_fails", "passed"), ("tests.test_flaky.test_always_fails", "passed"),
        ("tests.test_flaky.test_always_fails", "failed")]


def test_surefire_reruns_are_counted_inside_the_element() -> None:
    results = {r.name: r for r in translate("surefire-rerun.xml")}
    assert [c["tag"] for c in results["failsOnPurpose"].raw["children"]] == ["failure", "rerunFailure", "rerunFailure"]
    assert [c["tag"] for c in results["throwsUnexpectedly"].raw["children"]] == ["error", "rerunError", "rerunError"]
    assert [c["tag"] for c in results["errorsThenPasses"].raw["children"]] == ["flakyError"]
    flaky = results["flakyPassesOnRerun"].raw["children"][0]
    assert flaky["tag"] == "flakyFailure" and flaky["children"][0]["tag"] == "stackTrace"
    assert flaky["children"][0]["text"].startswith("org.opentest4j.AssertionFailedError: first run fails")


def test_jest_ids_match_swebench_jest_json_form_when_titles_are_written_apart() -> None:
    """JEST_JUNIT_CLASSNAME={classname}, JEST_JUNIT_TITLE={title}, separator ' > ': SWE-bench's
    parse_log_jest_json names (`ancestorTitles | join(" > ")` + " > " + title)."""
    separated = [r.test_id for r in translate("jest-junit-separated.xml")]
    default = [r.test_id for r in translate("jest-junit-default.xml")]
    assert separated == ["Calc > adds numbers", "Calc > with negatives > adds a negative",
                         "Calc > with negatives > skipped for now", "top level test", "subtracts numbers",
                         "Strings > upper-cases"]
    assert default == [t.replace(" > ", " ") for t in separated]  # jest-junit's defaults: Jest's fullName


def test_gotestsum_rerun_fails_keeps_every_run() -> None:
    results = translate("gotestsum-rerun-fails.xml")
    assert [(r.test_id, r.outcome) for r in results if r.test_id == "TestEventually"] == [
        ("TestEventually", "failed"), ("TestEventually", "passed")]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_runner_detection(name: str) -> None:
    assert detect_runner(parse_report((FIXTURES / name).read_bytes())) == SAMPLES[name][0]


def test_runner_detection_is_none_when_ambiguous_or_absent() -> None:
    both = b'<testsuites name="jest tests"><testsuite name="pytest"/></testsuites>'
    assert detect_runner(parse_report(both)) is None
    assert detect_runner(parse_report(b'<testsuites name="my run"><testsuite name="x"/></testsuites>')) is None
    [result] = translate_report(b'<testsuite name="x"><testcase classname="a.B" name="c"/></testsuite>', ATTEMPT,
                                captured_at=T0)
    assert (result.runner, result.test_id) == ("junit", "a.B.c")


def test_an_explicit_runner_wins_over_detection() -> None:
    results = translate("gotestsum.xml", runner="junit")
    assert {r.runner for r in results} == {"junit"}
    assert results[0].test_id == "example.com/calc/calc.TestTable/wrong_sum"


# --- dialect rules ----------------------------------------------------------------------


@pytest.mark.parametrize(("classname", "name", "file", "expected"), [
    ("tests.unit.test_calc.TestCalc", "test_add", None, ("tests/unit/test_calc.py::TestCalc::test_add", "tests/unit/test_calc.py")),
    ("tests.unit.test_calc", "test_p[a.b::c d]", None, ("tests/unit/test_calc.py::test_p[a.b::c d]", "tests/unit/test_calc.py")),
    ("test_calc", "test_add", None, ("test_calc.py::test_add", "test_calc.py")),
    ("Tests", "test_add", None, ("Tests.py::test_add", "Tests.py")),  # the first segment is always the module path
    ("pkg.mod.Outer.Inner", "test_x", None, ("pkg/mod.py::Outer::Inner::test_x", "pkg/mod.py")),
    ("pkg.Mod.test_x", "test_y", None, ("pkg/Mod/test_x.py::test_y", "pkg/Mod/test_x.py")),  # not a trailing class
    ("pkg.mod", "pkg.mod.func", None, ("pkg/mod.py::pkg.mod.func", "pkg/mod.py")),  # a doctest item
    ("", "test_alone", None, ("test_alone", None)),
    # xunit1: the file attribute decides the path, even for capitalized or dotted names
    ("tests.Models.test_x.TestA", "test_b", "tests/Models/test_x.py", ("tests/Models/test_x.py::TestA::test_b", "tests/Models/test_x.py")),
    ("tests.v1.2.test_x", "test_b", "tests/v1.2/test_x.py", ("tests/v1.2/test_x.py::test_b", "tests/v1.2/test_x.py")),
    ("prefix.tests.test_x.TestA", "test_b", "tests/test_x.py", ("tests/test_x.py::TestA::test_b", "tests/test_x.py")),
    ("tests.test_x.TestA", "test_b", "tests\\test_x.py", ("tests/test_x.py::TestA::test_b", "tests/test_x.py")),
    ("elsewhere.TestA", "test_b", "tests/test_x.py", ("tests/test_x.py::TestA::test_b", "tests/test_x.py")),
])
def test_pytest_ids(classname: str, name: str, file: str | None, expected: tuple[str, str | None]) -> None:
    assert normalize_test_id("pytest", classname=classname, name=name, file=file) == expected


@pytest.mark.parametrize(("classname", "name", "expected"), [
    ("Calc adds numbers", "Calc adds numbers", "Calc adds numbers"),      # jest-junit defaults
    (" top level", " top level", "top level"),                            # no describe block
    ("Calc > nested", "adds", "Calc > nested > adds"),                    # both templates, ' > ' separator
    ("", "adds", "adds"),
    ("Calc nested adds", "adds", "Calc nested > adds"),                   # only the title template set
    ("Calc > nested adds", "adds", "Calc > nested > adds"),
    (" adds", "adds", "adds"),
])
def test_jest_ids(classname: str, name: str, expected: str) -> None:
    assert normalize_test_id("jest", classname=classname, name=name, file=None) == (expected, None)


def test_other_runner_ids() -> None:
    assert normalize_test_id("surefire", classname="a.B$C", name="m", file=None) == ("a.B$C#m", None)
    assert normalize_test_id("surefire", classname=None, name="m", file=None) == ("m", None)
    assert normalize_test_id("go", classname="example.com/p", name="TestA/b_c", file=None) == ("TestA/b_c", None)
    assert normalize_test_id("nextest", classname="crate::bin/x", name="m::t", file=None) == ("m::t", None)
    assert normalize_test_id("junit", classname="a.B", name="m", file="f.x") == ("a.B.m", "f.x")
    assert normalize_test_id("junit", classname=None, name="m", file=None) == ("m", None)


@pytest.mark.parametrize(("runner", "value", "expected"), [
    ("pytest", None, None), ("pytest", "0.005", 5), ("pytest", "0.0005", 0), ("pytest", "0.0015", 2),
    ("go", "0.000000", 0), ("jest", "1e-7", 0), ("jest", "2.5E3", 2500000), ("junit", " 3 ", 3000), ("junit", ".5", 500),
    ("surefire", "1,234.5", 1234500), ("surefire", "12,345,678", 12345678000), ("surefire", "0.028", 28),
])
def test_durations(runner: str, value: str | None, expected: int | None) -> None:
    assert duration_ms(runner, value) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("runner", "value", "message"), [
    ("pytest", "fast", "is not a number of seconds"), ("pytest", "", "is not a number of seconds"),
    ("pytest", "-1.5", "is negative"), ("pytest", "NaN", "is not a number"), ("pytest", "inf", "is not a number"),
    ("pytest", "1,234.5", "is not a number"), ("surefire", "1,5", "is not a number"), ("pytest", "1e999", "too large"),
    ("pytest", "0x10", "is not a number"),
])
def test_bad_durations(runner: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        duration_ms(runner, value)  # type: ignore[arg-type]


def test_run_attempt_is_validated() -> None:
    fields: dict[str, Any] = {"org_id": "ACME", "provider": "github_actions", "run_id": " 9001 ", "run_attempt": 1,
                              "repo": "Acme/Calc", "commit_sha": SHA.upper()}
    attempt = RunAttempt(**fields)
    assert (attempt.org_id, attempt.run_id, attempt.repo, attempt.commit_sha) == ("acme", "9001", "acme/calc", SHA)
    for change, message in [({"run_attempt": 0}, "run_attempt: 0 is not a positive integer"),
                            ({"run_attempt": "1"}, "run_attempt: '1' is not a positive integer"),
                            ({"run_attempt": True}, "run_attempt: True is not a positive integer"),
                            ({"commit_sha": SHA[:12]}, "commit_sha: commit SHA must be 40 or 64 hex"),
                            ({"repo": "calc"}, "repo: repository must be 'owner/repo'"),
                            ({"run_id": "  "}, "run_id: identifier must not be empty"),
                            ({"provider": "gitlab"}, "provider: Input should be 'github_actions'")]:
        with pytest.raises(ValueError, match=message):
            RunAttempt(**{**fields, **change})


def test_runner_vocabulary_matches_the_cli() -> None:
    from sediment.cli.ingest import Provider, Runner
    from sediment.model.facts import CIProvider

    assert tuple(r.value for r in Runner) == TEST_RUNNERS
    assert tuple(p.value for p in Provider) == CIProvider.__args__  # type: ignore[attr-defined]


# --- outcomes, locators, all-or-nothing --------------------------------------------------


def one(xml_text: str, runner: str | None = None) -> tuple[TestCaseResult, ...]:
    return translate_report(xml_text.encode(), ATTEMPT, captured_at=T0, runner=runner)  # type: ignore[arg-type]


def test_outcome_precedence_and_rerun_children() -> None:
    results = one("""<testsuite name="s">
      <testcase name="a"><error/><failure/></testcase>
      <testcase name="b"><skipped/><error/></testcase>
      <testcase name="c"><system-out>hi</system-out><properties/></testcase>
      <testcase name="d"><rerun/><rerun/><failure/></testcase>
      <testcase name="e"><flakyFailure/><flakyError/></testcase>
      <testcase name="f"><skipped message="x"/></testcase>
    </testsuite>""")
    assert [(r.name, r.outcome, r.flaky_reruns) for r in results] == [
        ("a", "failed", 0), ("b", "error", 0), ("c", "passed", 0), ("d", "failed", 2), ("e", "passed", 2),
        ("f", "skipped", 0)]


def test_pytest_folding_counts_each_rerun_once() -> None:
    """A rerun recorded both as an earlier element and as a child of the last counts once."""
    results = one("""<testsuites name="pytest tests"><testsuite name="pytest">
      <testcase classname="t" name="x"/><testcase classname="t" name="y"/>
      <testcase classname="t" name="x"><flakyFailure/></testcase>
      <testcase classname="t" name="z"><rerun/><rerun/></testcase>
    </testsuite><testsuite name="pytest"><testcase classname="t" name="x"/></testsuite></testsuites>""")
    assert [(r.test_id, r.outcome, r.flaky_reruns, r.locator) for r in results] == [
        ("t.py::y", "passed", 0, "testsuites/testsuite[0]/testcase[1]"),
        ("t.py::x", "passed", 1, "testsuites/testsuite[0]/testcase[2]"),
        ("t.py::z", "passed", 2, "testsuites/testsuite[0]/testcase[3]"),
        ("t.py::x", "passed", 0, "testsuites/testsuite[1]/testcase[0]"),  # another suite: not a rerun
    ]


def test_nested_suites_have_locators_in_document_order() -> None:
    results = one("""<testsuites><testsuite name="outer">
      <testsuite name="inner"><testcase name="a"/><testsuite name="deepest"><testcase name="b"/></testsuite></testsuite>
      <testcase name="c"/><testsuite name="second"><testcase name="d"/></testsuite><testcase name="e"/>
    </testsuite><testcase name="bare"/></testsuites>""")
    assert [(r.name, r.suite, r.locator) for r in results] == [
        ("a", "inner", "testsuites/testsuite[0]/testsuite[0]/testcase[0]"),
        ("b", "deepest", "testsuites/testsuite[0]/testsuite[0]/testsuite[0]/testcase[0]"),
        ("c", "outer", "testsuites/testsuite[0]/testcase[0]"),
        ("d", "second", "testsuites/testsuite[0]/testsuite[1]/testcase[0]"),
        ("e", "outer", "testsuites/testsuite[0]/testcase[1]"),
        ("bare", None, "testsuites/testcase[0]"),
    ]


def test_raw_keeps_mixed_content_character_references_and_cdata() -> None:
    [result] = one('<testsuite name="s"><testcase name="a" extra="&#233;&amp;&lt;"><failure message="m">before '
                   '<![CDATA[<raw> & ]]>after<stackTrace>t</stackTrace> tail &#x1F600;</failure>\n</testcase></testsuite>')
    assert result.raw == {"tag": "testcase", "attributes": {"name": "a", "extra": "é&<"}, "children": [
        {"tag": "failure", "attributes": {"message": "m"}, "text": "before <raw> & after",
         "children": [{"tag": "stackTrace", "attributes": {}, "text": "t", "tail": " tail \U0001f600"}], "tail": "\n"}]}


def test_a_report_without_testcases_yields_nothing() -> None:
    assert one("<testsuites/>") == ()
    assert one('<testsuite name="empty" tests="0"><properties/></testsuite>') == ()


def test_declared_encodings_are_honoured() -> None:
    latin = '<?xml version="1.0" encoding="ISO-8859-1"?><testsuite><testcase name="caf\xe9"/></testsuite>'.encode("latin-1")
    utf16 = '<?xml version="1.0" encoding="UTF-16"?><testsuite><testcase name="caf\xe9"/></testsuite>'.encode("utf-16")
    for data in (latin, utf16):
        [result] = translate_report(data, ATTEMPT, captured_at=T0)
        assert result.name == "café"


# --- hostile and broken reports -----------------------------------------------------------

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<testsuites><testsuite name="pytest"><testcase classname="t" name="&lol9;"/></testsuite></testsuites>
"""
EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE testsuites [<!ENTITY leak SYSTEM "file:///etc/passwd">]>
<testsuites><testsuite name="pytest"><testcase classname="t" name="x"><failure>&leak;</failure></testcase></testsuite></testsuites>
"""
GOOD = '<testsuites name="pytest tests"><testsuite name="pytest"><testcase classname="t" name="good" time="0.1"/></testsuite></testsuites>'

#: name → (file bytes, the exact problem reported after "FILE: ")
HOSTILE: dict[str, tuple[bytes, str]] = {
    "billion-laughs.xml": (BILLION_LAUGHS.encode(),
                           "refused: the report declares a DTD (<!DOCTYPE …>); DTDs and entity declarations are not allowed"),
    "external-entity.xml": (EXTERNAL_ENTITY.encode(),
                            "refused: the report declares a DTD (<!DOCTYPE …>); DTDs and entity declarations are not allowed"),
    "invalid-utf8.xml": (b'<testsuites><testsuite name="caf\xe9 \xff"/></testsuites>',
                         "not well-formed XML: not well-formed (invalid token): line 1, column 32"),
    "unknown-encoding.xml": (b'<?xml version="1.0" encoding="x-klingon"?><testsuites/>',
                             "cannot decode the report: unknown encoding: x-klingon"),
    "truncated.xml": (GOOD[:60].encode(), "not well-formed XML: unclosed token: line 1, column 57"),
    "empty.xml": (b"  \n", "empty file: no records"),
    "wrong-root.xml": (b'<?xml version="1.0"?><html><testsuite><testcase name="x"/></testsuite></html>',
                       "root element is <html>, not <testsuites> or <testsuite>"),
    "no-name.xml": (b'<testsuites><testsuite><testcase classname="t" name="fine"/><testcase classname="t"/></testsuite></testsuites>',
                    "testsuites/testsuite[0]/testcase[1]: <testcase> has no name attribute"),
    "empty-name.xml": (b'<testsuite><testcase name="  "/></testsuite>', "testsuite/testcase[0]: <testcase> has an empty name"),
    "bad-time.xml": (b'<testsuite><testcase name="ok" time="1"/><testcase name="slow" time="1.5s"/></testsuite>',
                     "testsuite/testcase[1]: time: '1.5s' is not a number of seconds"),
    "deep-nesting.xml": (b"<testsuites>" + b"<testsuite>" * 5000 + b'<testcase name="x"/>' + b"</testsuite>" * 5000
                         + b"</testsuites>", "elements nest deeper than 64 levels"),
    "nul-reference.xml": (b'<testsuite><testcase name="a&#0;b"/></testsuite>',
                          "not well-formed XML: reference to invalid character number: line 1, column 28"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_reports_are_refused_with_one_clear_problem(name: str) -> None:
    data, message = HOSTILE[name]
    with pytest.raises(ReportError) as caught:
        translate_report(data, ATTEMPT, captured_at=T0)
    assert str(caught.value) == message


def test_a_report_over_the_cap_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    huge = tmp_path / "huge.xml"
    with huge.open("wb") as handle:  # sparse: 200 MiB + 1 byte on disk only as metadata
        handle.write(GOOD.encode())
        handle.truncate(200 * 1024 * 1024 + 1)
    assert huge.stat().st_size > MAX_REPORT_BYTES

    def never(*_args: object) -> bytes:
        raise AssertionError("an oversized report must not be read")

    monkeypatch.setattr(junit_parse, "_read_bounded", never)
    with pytest.raises(ReportError, match=r"^report is 209715201 bytes; the limit is 67108864 bytes \(64 MiB\)$"):
        read_report(str(huge))


def test_a_stream_over_the_cap_is_refused() -> None:
    with pytest.raises(ReportError, match=r"^report is larger than the limit of 10 bytes"):
        junit_parse._read_bounded(io.BytesIO(b"x" * 11), 10)
    assert junit_parse._read_bounded(io.BytesIO(b"x" * 10), 10) == b"x" * 10


#: A child that parses ``<testsuites>`` and N unclosed ``<testsuite>`` elements (N from argv), then
#: prints the problem and its own peak RSS in KiB: ``VmHWM``, its memory's high-water mark
#: (``ru_maxrss`` would also count the test process it was started from, carried across exec).
_UNCLOSED_CHILD = """
import sys
from sediment.ingest.junit.parse import ReportError, parse_report
data = b"<testsuites>" + b"<testsuite>" * int(sys.argv[1])
try:
    parse_report(data)
except ReportError as exc:
    print(exc)
with open("/proc/self/status", encoding="ascii") as status:
    print(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
"""


def _unclosed_peak_kib(count: int) -> tuple[str, int]:
    done = subprocess.run([sys.executable, "-c", _UNCLOSED_CHILD, str(count)], capture_output=True, text=True,
                          check=True)
    problem, peak = done.stdout.splitlines()
    return problem, int(peak)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak RSS is read from /proc (Linux)")
def test_unclosed_elements_are_refused_at_the_depth_bound_without_building_the_tree() -> None:
    """4 MiB of unclosed elements: parsed whole before the depth check, the tree took over 100 MiB
    beyond the interpreter's own peak; refused at element 65 it takes about the input's bytes."""
    problem, baseline = _unclosed_peak_kib(1)
    assert problem == "not well-formed XML: no element found: line 1, column 23"
    count = 4 * 1024 * 1024 // len(b"<testsuite>")
    problem, peak = _unclosed_peak_kib(count)
    assert peak - baseline < 24 * 1024, f"peak RSS grew by {(peak - baseline) // 1024} MiB for 4 MiB of input"
    assert problem == "elements nest deeper than 64 levels"


def write_hostile(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, (data, _message) in sorted(HOSTILE.items()):
        path = directory / name
        path.write_bytes(data)
        paths.append(path)
    huge = directory / "huge.xml"
    with huge.open("wb") as handle:
        handle.write(GOOD.encode())
        handle.truncate(200 * 1024 * 1024 + 1)
    return [*paths, huge]


def test_library_ingest_stores_good_reports_and_nothing_from_bad_ones(tmp_path: Path) -> None:
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")
    good = tmp_path / "good.xml"
    good.write_text(GOOD, encoding="utf-8")
    hostile = write_hostile(tmp_path / "hostile")
    paths = [str(p) for p in [hostile[0], good, *hostile[1:], tmp_path / "missing.xml"]]
    report = ingest_junit_reports(paths, store, ATTEMPT, captured_at=T0)
    expected = {str(tmp_path / "hostile" / n): f"{tmp_path / 'hostile' / n}: {m}" for n, (_, m) in HOSTILE.items()}
    expected[str(hostile[-1])] = f"{hostile[-1]}: report is 209715201 bytes; the limit is 67108864 bytes (64 MiB)"
    expected[str(tmp_path / "missing.xml")] = f"{tmp_path / 'missing.xml'}: cannot read: No such file or directory"
    assert sorted(str(p) for p in report.problems) == sorted(expected.values())
    assert report.records == 1 and report.stored == {"test_case_results": 1}
    [stored] = store.test_results_for_commits(ORG, [("acme/calc", SHA)])
    assert (stored.test_id, stored.report_sha256) == ("t.py::good", hashlib.sha256(GOOD.encode()).hexdigest())
    assert store.counts(ORG)["test_case_results"]["stored"] == 1  # nothing from no-name.xml's good element


# --- the real command ----------------------------------------------------------------------

ARGS = ["--provider", "github_actions", "--run-id", "9001", "--run-attempt", "2", "--repo", "Acme/Calc", "--commit", SHA]


def sediment(home: Path, *args: str, capture: str = "2026-03-03T09:00:00Z") -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ.update(SEDIMENT_HOME=str(home), SEDIMENT_ORG_ID=ORG, SEDIMENT_CAPTURE_TIME=capture,
                   SEDIMENT_LOAD_PLUGINS="")
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=environ,
                          timeout=300, check=False)


PEAK = "peak-rss-kib: "
#: ``sediment ARGS`` run by a child that reports its own peak RSS (``VmHWM``) on stderr at exit.
_PEAK_CHILD = """
import atexit, sys
def peak():
    with open("/proc/self/status", encoding="ascii") as status:
        sys.stderr.write("peak-rss-kib: " + next(l.split()[1] for l in status if l.startswith("VmHWM:")) + "\\n")
atexit.register(peak)
from sediment.cli import main
sys.argv = ["sediment", *sys.argv[1:]]
main()
"""


def sediment_peak(home: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """:func:`sediment` in a child that reports its peak RSS, and that peak in KiB."""
    if not Path("/proc/self/status").exists():
        pytest.skip("peak RSS is read from /proc (Linux)")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ.update(SEDIMENT_HOME=str(home), SEDIMENT_ORG_ID=ORG, SEDIMENT_CAPTURE_TIME="2026-03-03T09:00:00Z",
                   SEDIMENT_LOAD_PLUGINS="")
    done = subprocess.run([sys.executable, "-c", _PEAK_CHILD, *args], capture_output=True, text=True, env=environ,
                          timeout=300, check=False)
    peaks = [int(line.removeprefix(PEAK)) for line in done.stderr.splitlines() if line.startswith(PEAK)]
    assert len(peaks) == 1, done.stderr
    return done, peaks[0]


def store_content(home: Path) -> list[str]:
    store = FactStore(f"sqlite:///{home / 'facts.db'}")
    try:
        return sorted(encode_record(f) for f in store.facts("test_case_results", ORG))
    finally:
        store.close()


def sample_paths() -> list[str]:
    return [str(FIXTURES / name) for name in sorted(SAMPLES)]


def test_cli_ingests_every_sample_and_reingest_stores_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    total = sum(len(expected) for _, expected in SAMPLES.values())
    first = sediment(home, "ingest", "junit", *sample_paths(), *ARGS, "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"records": total, "stored": {"test_case_results": total}, "duplicates": {},
                                        "skipped": {}, "warnings": {}, "failed": 0,
                                        "redacted": {}}
    again = sediment(home, "ingest", "junit", *sample_paths(), *ARGS, "--json", capture="2027-01-01T00:00:00Z")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["duplicates"] == {"test_case_results": total}
    assert json.loads(again.stdout)["stored"] == {}
    content = store_content(home)
    assert len(content) == total
    library = sorted(encode_record(r) for name in sorted(SAMPLES) for r in translate(name))
    assert content == library  # the command stores exactly what the library translates
    facts = json.loads(sediment(home, "facts", "--json").stdout)
    assert facts["tables"]["test_case_results"] == {"stored": total, "quarantined": 0}


def test_cli_shuffled_file_order_gives_the_same_store(tmp_path: Path) -> None:
    paths = sample_paths()
    shuffled = paths[:]
    random.Random(7).shuffle(shuffled)
    assert shuffled != paths
    one_home, other_home = tmp_path / "one", tmp_path / "other"
    assert sediment(one_home, "ingest", "junit", *paths, *ARGS).returncode == 0
    assert sediment(other_home, "ingest", "junit", *shuffled, *ARGS).returncode == 0
    assert store_content(one_home) == store_content(other_home)


def test_cli_capture_time_is_pinned(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert sediment(home, "ingest", "junit", str(FIXTURES / "gotestsum.xml"), *ARGS,
                    capture="2026-05-06T07:08:09+02:00").returncode == 0
    store = FactStore(f"sqlite:///{home / 'facts.db'}")
    assert {r.captured_at for r in store.facts("test_case_results", ORG)} == {datetime(2026, 5, 6, 5, 8, 9, tzinfo=UTC)}


def test_cli_bad_files_among_good_ones(tmp_path: Path) -> None:
    home = tmp_path / "home"
    hostile = write_hostile(tmp_path / "hostile")
    files = [str(FIXTURES / "gotestsum.xml"), *map(str, hostile[:5]), str(FIXTURES / "surefire-rerun.xml"),
             *map(str, hostile[5:])]
    result, peak = sediment_peak(home, "ingest", "junit", *files, *ARGS)
    _, baseline = sediment_peak(tmp_path / "baseline", "ingest", "junit", str(FIXTURES / "gotestsum.xml"), *ARGS)
    # the 200 MiB report is refused unread, and no hostile one is held whole beyond its bound
    assert peak - baseline < 48 * 1024, f"peak RSS {peak // 1024} MiB, {baseline // 1024} MiB for one good report"
    assert result.returncode == 8, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith(PEAK)]
    errors = sorted(line.removeprefix("error: ") for line in lines if line.startswith("error: ") and ".xml:" in line)
    expected = sorted([f"{tmp_path / 'hostile' / n}: {m}" for n, (_, m) in HOSTILE.items()]
                      + [f"{hostile[-1]}: report is 209715201 bytes; the limit is 67108864 bytes (64 MiB)"])
    assert errors == expected
    assert f"error: {len(expected)} report(s) failed to ingest; every other report was ingested" in lines
    good = len(SAMPLES["gotestsum.xml"][1]) + len(SAMPLES["surefire-rerun.xml"][1])
    assert f"{good} record(s) read; stored test_case_results: {good}" in lines
    content = store_content(home)
    assert len(content) == good
    assert not any("root:" in record for record in content)  # /etc/passwd never read
    digests = {hashlib.sha256((FIXTURES / n).read_bytes()).hexdigest() for n in ("gotestsum.xml", "surefire-rerun.xml")}
    assert {json.loads(record)["report_sha256"] for record in content} == digests


def test_cli_stdin(tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ.update(SEDIMENT_HOME=str(tmp_path / "home"), SEDIMENT_ORG_ID=ORG, SEDIMENT_LOAD_PLUGINS="")
    result = subprocess.run([sys.executable, "-m", "sediment", "ingest", "junit", "-", *ARGS, "--json"],
                            input=(FIXTURES / "nextest.xml").read_text(encoding="utf-8"), capture_output=True,
                            text=True, env=environ, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stored"] == {"test_case_results": len(SAMPLES["nextest.xml"][1])}


@pytest.mark.parametrize(("change", "message"), [
    (["--run-attempt", "0"], "Invalid value for '--run-attempt': '0' is not a positive integer"),
    (["--run-attempt", "01"], "Invalid value for '--run-attempt': '01' is not a positive integer"),
    (["--run-attempt", "1.5"], "Invalid value for '--run-attempt': '1.5' is not a positive integer"),
    (["--run-attempt", "+2"], "Invalid value for '--run-attempt': '+2' is not a positive integer"),
    (["--commit", SHA[:7]], "Invalid value for '--commit': commit SHA must be 40 or 64 hex characters: '3484a3f'"),
    (["--repo", "calc"], "Invalid value for '--repo': repository must be 'owner/repo': 'calc'"),
    (["--run-id", " "], "Invalid value for '--run-id': identifier must not be empty"),
    (["--provider", "gitlab"], "Invalid value for '--provider'"),
    (["--runner", "mocha"], "Invalid value for '--runner'"),
])
def test_cli_usage_errors(tmp_path: Path, change: list[str], message: str) -> None:
    args = ARGS[:]
    option = change[0]
    if option in args:
        args[args.index(option) + 1] = change[1]
    else:
        args += change
    result = sediment(tmp_path / "home", "ingest", "junit", str(FIXTURES / "gotestsum.xml"), *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert not (tmp_path / "home" / "facts.db").exists() or store_content(tmp_path / "home") == []


def test_cli_explicit_runner_and_quarantine(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = sediment(home, "ingest", "junit", str(FIXTURES / "pytest-xunit2.xml"), *ARGS, "--runner", "junit")
    assert result.returncode == 0, result.stderr
    store = FactStore(f"sqlite:///{home / 'facts.db'}")
    results = store.test_results_for_commits(ORG, [("acme/calc", SHA)])
    assert {r.runner for r in results} == {"junit"}
    target = results[0].test_result_id
    assert target == test_result_id(ATTEMPT, results[0].report_sha256, results[0].locator)
    quarantined = sediment(home, "quarantine", "test_case_results", target, "--reason", "forked runner")
    assert quarantined.returncode == 0, quarantined.stderr
    assert target not in {r.test_result_id for r in store.test_results_for_commits(ORG, [("acme/calc", SHA)])}
    facts = json.loads(sediment(home, "facts", "--json").stdout)
    assert facts["tables"]["test_case_results"] == {"stored": 10, "quarantined": 1}
    released = sediment(home, "release", "test_case_results", target, "--reason", "it was fine")
    assert released.returncode == 0, released.stderr
    assert len(store.test_results_for_commits(ORG, [("acme/calc", SHA)])) == 10


def test_canonical_fact_jsonl_round_trips_a_junit_result(tmp_path: Path) -> None:
    """A TestCaseResult exported as canonical Fact JSONL (without its id) ingests back to the same Fact."""
    from sediment.ingest.facts_jsonl import translate_fact
    from sediment.records import plain

    [first, *_] = translate_report((FIXTURES / "pytest-xunit2.xml").read_bytes(), ATTEMPT, captured_at=T0)
    record = {"fact_type": "test_case_result", **{k: v for k, v in plain(first).items() if k != "test_result_id"}}
    [again] = translate_fact(record, org_id=first.org_id).facts
    assert again == first
