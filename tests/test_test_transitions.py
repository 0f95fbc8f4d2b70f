"""FAIL_TO_PASS / PASS_TO_PASS derivation from recorded TestCaseResults (sediment/ci/transitions.py)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from sediment.ci.transitions import TestTransitions, derive_test_transitions
from sediment.testing import REPO, test_result

BASE, FIX = "b" * 40, "f" * 40
VERIFIED = {("github_actions", "7", 1), ("github_actions", "7", 2)}


def derive(results: list[Any], attempts: Any = frozenset(VERIFIED)) -> Any:
    return derive_test_transitions(results, repo=REPO, verified_commit=FIX, verified_attempts=attempts,
                                   base_commit=BASE)


def on_base(test_id: str, outcome: str = "passed", run_id: str = "3", **kw: Any) -> Any:
    return test_result(test_id, BASE, outcome, run_id=run_id, **kw)


def on_fix(test_id: str, outcome: str = "passed", attempt: int = 1, **kw: Any) -> Any:
    return test_result(test_id, FIX, outcome, run_id="7", attempt=attempt, **kw)


def test_red_to_green_new_tests_and_maintained_tests() -> None:
    results = [on_base("t.py::test_fixed", "failed"), on_base("t.py::test_kept"), on_base("t.py::test_errored", "error"),
               on_fix("t.py::test_fixed"), on_fix("t.py::test_kept"), on_fix("t.py::test_new"),
               on_fix("t.py::test_errored")]
    derived = derive(results)
    assert isinstance(derived, TestTransitions)
    assert derived.fail_to_pass == ("t.py::test_errored", "t.py::test_fixed", "t.py::test_new")
    assert derived.pass_to_pass == ("t.py::test_kept",)
    assert derived.excluded == {}
    by_id = {r.test_result_id: r for r in results}
    assert {by_id[i].test_id for i in derived.fail_to_pass_evidence} == set(derived.fail_to_pass)
    assert {by_id[i].test_id for i in derived.pass_to_pass_evidence} == {"t.py::test_kept"}
    assert set(derived.fail_to_pass).isdisjoint(derived.pass_to_pass)


def test_flaky_and_inconsistent_tests_are_excluded_and_counted() -> None:
    results = [
        on_base("t.py::test_fixed", "failed"),
        on_fix("t.py::test_fixed"),
        # flipped between the two attempts of the verified run
        on_fix("t.py::test_flip", "failed", attempt=1), on_fix("t.py::test_flip", attempt=2),
        # passed only on a rerun inside one attempt
        on_fix("t.py::test_rerun", flaky_reruns=1),
        # disagrees between two runs on the base commit
        on_base("t.py::test_base_disagree", "failed"), on_base("t.py::test_base_disagree", run_id="4"),
        on_fix("t.py::test_base_disagree"),
        # only skipped on the base
        on_base("t.py::test_base_skipped", "skipped"), on_fix("t.py::test_base_skipped"),
        # failing or skipped on the verified commit: no label, no count
        on_base("t.py::test_still_red", "failed"), on_fix("t.py::test_still_red", "failed"),
        on_fix("t.py::test_skipped", "skipped"),
        # a skip beside a pass is no evidence against the pass
        on_base("t.py::test_mostly", "failed"), on_fix("t.py::test_mostly", attempt=1),
        on_fix("t.py::test_mostly", "skipped", attempt=2),
    ]
    derived = derive(results)
    assert isinstance(derived, TestTransitions)
    assert derived.fail_to_pass == ("t.py::test_fixed", "t.py::test_mostly")
    assert derived.pass_to_pass == ()
    assert derived.excluded == {"flaky_on_verified": 2, "inconsistent_on_base": 1, "skipped_on_base": 1}


def test_a_test_failing_every_rerun_failed_it_is_not_flaky() -> None:
    results = [on_base("t.py::bug", "failed", flaky_reruns=2), on_fix("t.py::bug"),
               on_base("t.py::kept"), on_fix("t.py::kept"), on_fix("t.py::red", "failed", flaky_reruns=2)]
    derived = derive(results)
    assert isinstance(derived, TestTransitions)
    assert (derived.fail_to_pass, derived.pass_to_pass, derived.excluded) == (("t.py::bug",), ("t.py::kept",), {})


def test_only_the_verdicts_attempts_count_on_the_verified_commit() -> None:
    results = [on_base("t.py::a", "failed"), on_fix("t.py::a"),
               test_result("t.py::a", FIX, "failed", run_id="99")]  # another run, not the verdict's
    derived = derive(results)
    assert isinstance(derived, TestTransitions) and derived.fail_to_pass == ("t.py::a",)
    assert derive(results, attempts={("github_actions", "99", 1)}) == "no_fail_to_pass"


@pytest.mark.parametrize(("results", "reason"), [
    ([on_base("t.py::a", "failed")], "verified_test_results_absent"),
    ([on_fix("t.py::a")], "base_test_results_absent"),
    ([on_base("t.py::a"), on_fix("t.py::a")], "no_fail_to_pass"),
    ([on_base("t.py::a", "failed"), on_fix("t.py::a", "failed")], "no_fail_to_pass"),
    ([test_result("t.py::a", BASE, "failed", repo="other/repo"), on_fix("t.py::a")], "base_test_results_absent"),
])
def test_declines(results: list[Any], reason: str) -> None:
    assert derive(results) == reason


def test_deterministic_under_shuffles_and_repeats() -> None:
    results = [on_base(f"t.py::test_{i}", "failed" if i % 3 else "passed") for i in range(30)]
    results += [on_fix(f"t.py::test_{i}", "passed" if i % 5 else "failed", attempt=1 + i % 2) for i in range(40)]
    first = derive(results)
    for seed in range(5):
        shuffled = list(results)
        random.Random(seed).shuffle(shuffled)
        assert derive(shuffled) == first
    assert derive(results + results) == first
