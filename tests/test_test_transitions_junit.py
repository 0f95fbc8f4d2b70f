"""FAIL_TO_PASS / PASS_TO_PASS derived from real JUnit reports, end to end: report → ingest → SQLite → derivation.

Each producer (pytest + pytest-rerunfailures, Jest + jest-junit, gotestsum, Maven Surefire) ran a tiny
project twice — see ``fixtures/junit/SOURCES.md``, "Transition pairs". The *base* run has one test failing
because of a bug, a passing test that the fix renames, a test that is flaky in a fresh checkout, and other
passing tests; the *fix* run fixes the bug, renames that test and adds one. The flaky test fails once on the
fix side: inside the attempt through the producer's own rerun support (pytest-rerunfailures, gotestsum
``--rerun-fails``, Surefire ``rerunFailingTestsCount``), or for Jest (jest-junit records no retries) in
attempt 1 of two attempts of the fix run.

The lists asserted are the ids exactly as the ingest normalizes them (``sediment/ingest/junit/dialects.py``).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import pytest

from sediment.ci.transitions import TestTransitions, derive_test_transitions
from sediment.ingest.junit import RunAttempt, ingest_junit_reports
from sediment.model.facts import TestCaseResult
from sediment.store import FactStore

FIXTURES = Path(__file__).parent / "fixtures" / "junit" / "transitions"
ORG, REPO = "acme", "owner/repo"
PROVIDER: Final = "github_actions"
BASE, FIX = "b" * 40, "f" * 40
BASE_RUN, FIX_RUN = "4101", "4202"
T0 = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


@dataclass(frozen=True)
class Producer:
    """One producer's report pair and what the derivation must make of it."""

    runner: str
    base: str
    #: fix-run attempt number → report file (all under one run id)
    fix: dict[int, str]
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    flaky: str
    renamed: tuple[str, str]  # (name on the base, name on the fix)
    new: str
    bug: str


PRODUCERS: dict[str, Producer] = {
    "pytest": Producer(
        runner="pytest", base="base.xml", fix={1: "fix.xml"},
        fail_to_pass=("tests/test_calc.py::TestCalc::test_abs_negative", "tests/test_calc.py::TestCalc::test_abs_zero",
                      "tests/test_calc.py::TestCalc::test_multiply"),
        pass_to_pass=("tests/test_calc.py::TestCalc::test_add", "tests/test_calc.py::test_abs_positive"),
        flaky="tests/test_calc.py::test_eventually",
        renamed=("tests/test_calc.py::TestCalc::test_mul", "tests/test_calc.py::TestCalc::test_multiply"),
        new="tests/test_calc.py::TestCalc::test_abs_zero",
        bug="tests/test_calc.py::TestCalc::test_abs_negative",
    ),
    "jest": Producer(
        runner="jest", base="base.xml", fix={1: "fix.attempt1.xml", 2: "fix.attempt2.xml"},
        fail_to_pass=("Calc > abs > of a negative", "Calc > abs > of zero", "Calc > multiplies two numbers"),
        pass_to_pass=("Calc > abs > of a positive", "Calc > adds numbers"),
        flaky="eventually passes",
        renamed=("Calc > multiplies", "Calc > multiplies two numbers"),
        new="Calc > abs > of zero",
        bug="Calc > abs > of a negative",
    ),
    "go": Producer(
        runner="go", base="base.xml", fix={1: "fix.xml"},
        # the parent of a failing subtest fails with it, and passes with it
        fail_to_pass=("TestAbs", "TestAbs/negative", "TestAbs/zero", "TestMultiply"),
        pass_to_pass=("TestAbs/positive", "TestAdd"),
        flaky="TestEventually",
        renamed=("TestMul", "TestMultiply"),
        new="TestAbs/zero",
        bug="TestAbs/negative",
    ),
    "surefire": Producer(
        runner="surefire", base="base.xml", fix={1: "fix.xml"},
        fail_to_pass=("com.example.calc.CalcTest#absOfNegative", "com.example.calc.CalcTest#absOfZero",
                      "com.example.calc.CalcTest#multipliesNumbers"),
        pass_to_pass=("com.example.calc.CalcTest#absOfPositive", "com.example.calc.CalcTest#addsNumbers"),
        flaky="com.example.calc.CalcTest#eventuallyPasses",
        renamed=("com.example.calc.CalcTest#multiplies", "com.example.calc.CalcTest#multipliesNumbers"),
        new="com.example.calc.CalcTest#absOfZero",
        bug="com.example.calc.CalcTest#absOfNegative",
    ),
}

Report = tuple[Path, RunAttempt]


def base_reports(name: str) -> list[Report]:
    attempt = RunAttempt(org_id=ORG, provider=PROVIDER, run_id=BASE_RUN, run_attempt=1, repo=REPO, commit_sha=BASE)
    return [(FIXTURES / name / PRODUCERS[name].base, attempt)]


def fix_reports(name: str) -> list[Report]:
    return [(FIXTURES / name / file,
             RunAttempt(org_id=ORG, provider=PROVIDER, run_id=FIX_RUN, run_attempt=number, repo=REPO, commit_sha=FIX))
            for number, file in sorted(PRODUCERS[name].fix.items())]


def verified_attempts(name: str) -> set[tuple[str, str, int]]:
    return {(PROVIDER, FIX_RUN, number) for number in PRODUCERS[name].fix}


def ingest(db: Path, reports: list[Report]) -> list[TestCaseResult]:
    """Each report through ``ingest_junit_reports`` into a fresh SQLite store; every result read back."""
    store = FactStore(f"sqlite:///{db}")
    try:
        for path, attempt in reports:
            report = ingest_junit_reports([str(path)], store, attempt, captured_at=T0)
            assert report.problems == [], report.problems
            assert report.records > 0 and report.stored == {"test_case_results": report.records} and not report.duplicates
        return store.test_results_for_commits(ORG, [(REPO, BASE), (REPO, FIX)])
    finally:
        store.close()


def derive(name: str, results: list[TestCaseResult],
           attempts: set[tuple[str, str, int]] | None = None) -> TestTransitions | str:
    return derive_test_transitions(results, repo=REPO, verified_commit=FIX,
                                   verified_attempts=verified_attempts(name) if attempts is None else attempts,
                                   base_commit=BASE)


@pytest.mark.parametrize("name", sorted(PRODUCERS))
def test_fixtures_hold_no_path_of_the_machine_that_wrote_them(name: str) -> None:
    paths = sorted((FIXTURES / name).glob("*.xml"))
    assert paths, f"no reports of {name} under {FIXTURES}"
    for path in paths:
        data = path.read_bytes()
        assert b"/tmp/" not in data and b"/root" not in data and b"/home/" not in data, path


@pytest.mark.parametrize("name", sorted(PRODUCERS))
def test_real_reports_derive_the_exact_lists(name: str, tmp_path: Path) -> None:
    producer = PRODUCERS[name]
    reports = base_reports(name) + fix_reports(name)
    results = ingest(tmp_path / "facts.db", reports)

    # what was stored is what the reports said, read by the right dialect
    assert {r.runner for r in results} == {producer.runner}
    assert {r.report_sha256 for r in results} == {hashlib.sha256(p.read_bytes()).hexdigest() for p, _ in reports}
    on_base = {r.test_id: r for r in results if r.commit_sha == BASE}
    on_fix = {r.test_id for r in results if r.commit_sha == FIX}
    assert on_base[producer.bug].outcome == "failed"
    old, renamed = producer.renamed
    assert on_base[old].outcome == "passed" and old not in on_fix
    assert renamed not in on_base and producer.new not in on_base and {renamed, producer.new} <= on_fix
    assert on_base[producer.flaky].outcome == "passed" and on_base[producer.flaky].flaky_reruns == 0

    derived = derive(name, results)
    assert isinstance(derived, TestTransitions)
    assert derived.fail_to_pass == producer.fail_to_pass
    assert derived.pass_to_pass == producer.pass_to_pass
    assert derived.excluded == {"flaky_on_verified": 1}
    # the bug's test, the new test and the renamed test (absent from the base: FAIL_TO_PASS by the rule)
    assert {producer.bug, producer.new, renamed} <= set(derived.fail_to_pass)
    assert old not in derived.fail_to_pass and old not in derived.pass_to_pass
    assert producer.flaky not in derived.fail_to_pass and producer.flaky not in derived.pass_to_pass

    # the evidence is every result behind each list, on both commits, and nothing else
    def behind(ids: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(r.test_result_id for r in results if r.test_id in ids))

    assert derived.fail_to_pass_evidence == behind(producer.fail_to_pass)
    assert derived.pass_to_pass_evidence == behind(producer.pass_to_pass)
    assert derived.evidence()["excluded"] == {"flaky_on_verified": 1}


def test_jest_flaky_test_is_excluded_only_when_both_attempts_are_the_verdicts(tmp_path: Path) -> None:
    """The verified side reads only the verdict's attempts: attempt 2 alone shows the flaky test as a pass."""
    results = ingest(tmp_path / "facts.db", base_reports("jest") + fix_reports("jest"))
    derived = derive("jest", results, attempts={(PROVIDER, FIX_RUN, 2)})
    assert isinstance(derived, TestTransitions)
    assert derived.fail_to_pass == PRODUCERS["jest"].fail_to_pass
    assert derived.pass_to_pass == ("Calc > abs > of a positive", "Calc > adds numbers", "eventually passes")
    assert derived.excluded == {}
    # attempt 1 alone: the flaky test failed there, so it is neither a label nor counted
    derived = derive("jest", results, attempts={(PROVIDER, FIX_RUN, 1)})
    assert isinstance(derived, TestTransitions)
    assert derived.pass_to_pass == PRODUCERS["jest"].pass_to_pass and derived.excluded == {}


@pytest.mark.parametrize("name", sorted(PRODUCERS))
def test_only_the_fix_side_recorded_is_declined_for_absent_base_evidence(name: str, tmp_path: Path) -> None:
    results = ingest(tmp_path / "facts.db", fix_reports(name))
    assert results and {r.commit_sha for r in results} == {FIX}
    assert derive(name, results) == "base_test_results_absent"


@pytest.mark.parametrize("name", sorted(PRODUCERS))
def test_only_the_base_side_recorded_is_declined_for_absent_verified_evidence(name: str, tmp_path: Path) -> None:
    results = ingest(tmp_path / "facts.db", base_reports(name))
    assert results and {r.commit_sha for r in results} == {BASE}
    assert derive(name, results) == "verified_test_results_absent"


@pytest.mark.parametrize("name", sorted(PRODUCERS))
def test_fix_results_of_other_attempts_are_no_verified_evidence(name: str, tmp_path: Path) -> None:
    results = ingest(tmp_path / "facts.db", base_reports(name) + fix_reports(name))
    assert derive(name, results, attempts={(PROVIDER, BASE_RUN, 1), (PROVIDER, FIX_RUN, 3)}) \
        == "verified_test_results_absent"


@pytest.mark.parametrize("name", sorted(PRODUCERS))
def test_shuffled_ingest_and_read_back_derive_the_same_result(name: str, tmp_path: Path) -> None:
    rng = random.Random(f"transitions-{name}")
    reports = base_reports(name) + fix_reports(name)
    expected = derive(name, ingest(tmp_path / "ordered.db", reports))
    assert isinstance(expected, TestTransitions) and expected.fail_to_pass == PRODUCERS[name].fail_to_pass
    stored: list[list[TestCaseResult]] = []
    for round_ in range(6):
        order = reports[:]
        rng.shuffle(order)
        results = ingest(tmp_path / f"shuffled{round_}.db", order)
        stored.append(results[:])
        for _ in range(3):
            rng.shuffle(results)
            assert derive(name, results) == expected
    # the store hands back the same list, in the same order, whatever order the reports came in
    assert all(results == stored[0] for results in stored)
