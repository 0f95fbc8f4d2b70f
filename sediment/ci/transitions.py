"""FAIL_TO_PASS / PASS_TO_PASS from recorded per-test results: a pure, deterministic function of
TestCaseResult Facts (transition policy version "1").

Inputs: the results recorded for the verified commit and for the base commit, and the CI
attempts the verdict was resolved from. The verified side reads only results of those
attempts (the ones the verdict counted); the base side reads every recorded attempt on the
base commit.

Per test id and side, the status folds every result of that test:

1. a result that passed only after failed reruns inside its attempt (``outcome`` passed,
   ``flaky_reruns`` > 0) makes the test ``flaky`` (a test that failed every rerun failed);
2. ``error`` counts as ``failed``; ``skipped`` results are no evidence while another outcome
   exists (a test that was only skipped is ``skipped``);
3. one outcome left → that outcome; outcomes that differ between attempts of one run →
   ``flaky``; that differ only between runs → ``inconsistent``.

Then, for each test that ``passed`` on the verified commit: ``failed`` on the base commit, or
absent from its results → FAIL_TO_PASS; ``passed`` on the base → PASS_TO_PASS; ``flaky``,
``inconsistent`` or ``skipped`` on the base → excluded and counted. A test that is ``flaky``
or ``inconsistent`` on the verified commit is excluded and counted. A test failing or
skipped on the verified commit is neither (the verdict's own failures are not labels).

Lists are sorted; the evidence names every TestCaseResult id behind each list. Declined,
with one reason, when the verified commit's attempts recorded no per-test results
(``verified_test_results_absent``), when the base commit has none
(``base_test_results_absent``), or when FAIL_TO_PASS comes out empty (``no_fail_to_pass``):
an empty FAIL_TO_PASS would grade any patch as resolved.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Literal

from sediment.model.facts import TestCaseResult

TRANSITION_POLICY_VERSION = "1"
TransitionDecline = Literal["verified_test_results_absent", "base_test_results_absent", "no_fail_to_pass"]
#: The reasons a row is declined for, in the order they are checked.
TRANSITION_SKIP_REASONS: tuple[TransitionDecline, ...] = (
    "verified_test_results_absent", "base_test_results_absent", "no_fail_to_pass",
)
#: What an excluded test is counted under (never a decline of the row).
EXCLUSIONS: tuple[str, ...] = (
    "flaky_on_verified", "inconsistent_on_verified", "flaky_on_base", "inconsistent_on_base", "skipped_on_base",
)

Status = Literal["passed", "failed", "skipped", "flaky", "inconsistent"]
Attempt = tuple[str, str, int]  # (provider, run_id, run_attempt)


@dataclass(frozen=True)
class TestTransitions:
    """The derived lists, their evidence, and what was excluded."""

    __test__ = False  # not a pytest test class

    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    #: TestCaseResult ids behind FAIL_TO_PASS and PASS_TO_PASS (both commits), sorted
    fail_to_pass_evidence: tuple[str, ...]
    pass_to_pass_evidence: tuple[str, ...]
    excluded: dict[str, int] = field(default_factory=dict)

    def evidence(self) -> dict[str, object]:
        """The row-metadata record of this derivation."""
        return {
            "transition_policy_version": TRANSITION_POLICY_VERSION,
            "fail_to_pass_result_ids": list(self.fail_to_pass_evidence),
            "pass_to_pass_result_ids": list(self.pass_to_pass_evidence),
            "excluded": dict(self.excluded),
        }


def _status(results: list[TestCaseResult]) -> Status:
    if any(r.flaky_reruns and r.outcome == "passed" for r in results):
        return "flaky"
    outcomes = {("failed" if r.outcome == "error" else r.outcome) for r in results}
    if outcomes != {"skipped"}:
        outcomes.discard("skipped")
    if len(outcomes) == 1:
        return next(iter(outcomes))
    by_run: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in results:
        if r.outcome != "skipped":
            by_run[(r.provider, r.run_id)].add("failed" if r.outcome == "error" else r.outcome)
    return "flaky" if any(len(seen) > 1 for seen in by_run.values()) else "inconsistent"


def _by_test(results: Iterable[TestCaseResult]) -> dict[str, list[TestCaseResult]]:
    grouped: dict[str, list[TestCaseResult]] = defaultdict(list)
    for result in results:
        grouped[result.test_id].append(result)
    return grouped


def derive_test_transitions(
    results: Iterable[TestCaseResult],
    *,
    repo: str | Collection[str],
    verified_commit: str,
    verified_attempts: Collection[Attempt],
    base_commit: str,
) -> TestTransitions | TransitionDecline:
    """FAIL_TO_PASS / PASS_TO_PASS for one task, or the reason it cannot have them.

    ``repo`` is the repository's name, or every name it was recorded under (a renamed one's).
    """
    results = list(results)
    names = {repo} if isinstance(repo, str) else set(repo)
    verified = _by_test(r for r in results if r.repo in names and r.commit_sha == verified_commit
                        and (r.provider, r.run_id, r.run_attempt) in verified_attempts)
    base = _by_test(r for r in results if r.repo in names and r.commit_sha == base_commit)
    if not verified:
        return "verified_test_results_absent"
    if not base:
        return "base_test_results_absent"
    excluded: Counter[str] = Counter()
    f2p: list[str] = []
    p2p: list[str] = []
    evidence: dict[str, list[str]] = {"f2p": [], "p2p": []}
    for test_id in sorted(verified):
        status = _status(verified[test_id])
        if status in ("flaky", "inconsistent"):
            excluded[f"{status}_on_verified"] += 1
            continue
        if status != "passed":
            continue
        behind = verified[test_id] + base.get(test_id, [])
        before = _status(base[test_id]) if test_id in base else "absent"
        if before in ("failed", "absent"):
            f2p.append(test_id)
            evidence["f2p"] += [r.test_result_id for r in behind]
        elif before == "passed":
            p2p.append(test_id)
            evidence["p2p"] += [r.test_result_id for r in behind]
        else:
            excluded[f"{before}_on_base"] += 1
    if not f2p:
        return "no_fail_to_pass"
    return TestTransitions(
        fail_to_pass=tuple(f2p),
        pass_to_pass=tuple(p2p),
        fail_to_pass_evidence=tuple(sorted(set(evidence["f2p"]))),
        pass_to_pass_evidence=tuple(sorted(set(evidence["p2p"]))),
        excluded={reason: excluded[reason] for reason in EXCLUSIONS if excluded[reason]},
    )
