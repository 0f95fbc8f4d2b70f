"""CI resolution (docs/exports.md, with the pinned consequences)."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from sediment.ci.resolution import (
    DEFAULT_CI_POLICY,
    RESOLVER_SKIP_REASONS,
    CIResolution,
    CIResolutionPolicy,
    CIResolutionResult,
    CIWorkflowResolution,
    CommitKey,
    resolve_ci,
    select_reward_resolution,
)
from sediment.model.facts import CIOutcome, RepositoryIdentity
from sediment.model.rollout import CommitRef

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
SHA_A = "a" * 40
SHA_B = "b" * 40
SHA_C = "c" * 40
ORG = "acme"
REPO = "acme/widget"
DEFAULT_DIGEST = "c3e845fa8d55cf0a7c5a0b4ad2f39c1dbfe1d237776fc825343cd6eb771035f9"

NON_VERDICT_RESULTS = ("error", "timed_out", "cancelled", "skipped", "neutral", "unknown")

CI_RESOLUTION_FIELDS = [
    "org_id",
    "repo",
    "commit_sha",
    "verdict",
    "reliability",
    "suspected_flake",
    "workflow_resolutions",
    "source_outcome_ids",
    "verdict_outcome_ids",
    "non_verdict_outcome_ids",
    "provenance",
    "repository_identity",
]
CI_WORKFLOW_RESOLUTION_FIELDS = [
    "provider",
    "run_id",
    "workflow_id",
    "workflow_name",
    "workflow_path",
    "branch",
    "verdict",
    "reliability",
    "suspected_flake",
    "source_outcome_ids",
    "verdict_outcome_id",
    "non_verdict_outcome_ids",
]


# --- helpers -------------------------------------------------------------------------


def outcome(
    outcome_id: str,
    result: str = "passed",
    *,
    run_id: str = "run-1",
    run_attempt: int | None = None,
    repo: str = REPO,
    commit_sha: str = SHA_A,
    branch: str = "main",
    workflow_name: str = "ci",
    minutes: int = 0,
    org_id: str = ORG,
    provider: str = "github_actions",
    **extra: Any,
) -> CIOutcome:
    """A CI outcome with sensible defaults; ``minutes`` offsets ``captured_at`` from T0."""
    return CIOutcome(
        outcome_id=outcome_id,
        org_id=org_id,
        provider=provider,
        run_id=run_id,
        run_attempt=run_attempt,
        repo=repo,
        commit_sha=commit_sha,
        branch=branch,
        result=result,
        workflow_name=workflow_name,
        captured_at=T0 + timedelta(minutes=minutes),
        **extra,
    )


def identified(outcome_id: str, result: str = "passed", **kwargs: Any) -> CIOutcome:
    return outcome(
        outcome_id,
        result,
        repository_provider="github",
        repository_host="github.com",
        repository_id="4242",
        **kwargs,
    )


def resolve(
    *outcomes: CIOutcome,
    policy: CIResolutionPolicy = DEFAULT_CI_POLICY,
    quarantine_revision: int = 0,
) -> CIResolutionResult:
    return resolve_ci(list(outcomes), quarantine_revision=quarantine_revision, policy=policy)


def single(*outcomes: CIOutcome, **kwargs: Any) -> CIResolution:
    """Resolve and return the one resolution, asserting nothing was skipped."""
    result = resolve(*outcomes, **kwargs)
    assert result.skipped == Counter()
    assert len(result.resolutions) == 1
    return result.resolutions[0]


def ref(commit_sha: str, repo: str = REPO) -> CommitRef:
    return CommitRef(repo=repo, commit_sha=commit_sha)


def canonical_policy_digest(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- pinned consequences: single workflow --------------------------------------------


def test_single_null_attempt_pass_is_clean_pass() -> None:
    resolution = single(outcome("o1", "passed", run_attempt=None), quarantine_revision=7)

    assert resolution.org_id == ORG
    assert resolution.repo == REPO
    assert resolution.commit_sha == SHA_A
    assert resolution.verdict == "passed"
    assert resolution.reliability == 1.0
    assert resolution.suspected_flake is False
    assert resolution.source_outcome_ids == ("o1",)
    assert resolution.verdict_outcome_ids == ("o1",)
    assert resolution.non_verdict_outcome_ids == ()
    assert resolution.repository_identity is None
    assert resolution.provenance.policy_version == "2"
    assert resolution.provenance.quarantine_revision == 7
    assert resolution.provenance.policy_digest == DEFAULT_DIGEST

    (workflow,) = resolution.workflow_resolutions
    assert workflow.model_dump() == {
        "provider": "github_actions",
        "run_id": "run-1",
        "workflow_id": None,
        "workflow_name": "ci",
        "workflow_path": None,
        "branch": "main",
        "verdict": "passed",
        "reliability": 1.0,
        "suspected_flake": False,
        "source_outcome_ids": ("o1",),
        "verdict_outcome_id": "o1",
        "non_verdict_outcome_ids": (),
    }


def test_single_failure_is_clean_fail() -> None:
    resolution = single(outcome("o1", "failed", run_attempt=1))
    assert resolution.verdict == "failed"
    assert resolution.reliability == 1.0
    assert resolution.suspected_flake is False
    assert resolution.verdict_outcome_ids == ("o1",)


def test_fail_then_pass_retry_is_passed_flake_with_zero_reliability() -> None:
    resolution = single(
        outcome("fail-1", "failed", run_attempt=1, minutes=0),
        outcome("pass-2", "passed", run_attempt=2, minutes=5),
    )
    assert resolution.verdict == "passed"
    assert resolution.reliability == 0.0
    assert resolution.suspected_flake is True
    assert resolution.source_outcome_ids == ("fail-1", "pass-2")
    assert resolution.verdict_outcome_ids == ("pass-2",)
    (workflow,) = resolution.workflow_resolutions
    assert workflow.verdict == "passed"
    assert workflow.verdict_outcome_id == "pass-2"
    assert workflow.suspected_flake is True
    assert workflow.reliability == 0.0


def test_pass_then_fail_retry_is_failed_with_zero_reliability() -> None:
    resolution = single(
        outcome("pass-1", "passed", run_attempt=1),
        outcome("fail-2", "failed", run_attempt=2),
    )
    assert resolution.verdict == "failed"
    assert resolution.reliability == 0.0
    assert resolution.suspected_flake is True
    assert resolution.verdict_outcome_ids == ("fail-2",)


@pytest.mark.parametrize(
    ("null_result", "one_result"),
    [("failed", "passed"), ("passed", "failed")],
)
def test_null_attempt_sorts_before_attempt_one(null_result: str, one_result: str) -> None:
    # Outcome ids are chosen so that id order alone would pick the null attempt as last.
    resolution = single(
        outcome("z-null", null_result, run_attempt=None, minutes=10),
        outcome("a-one", one_result, run_attempt=1, minutes=0),
    )
    assert resolution.verdict == one_result
    assert resolution.verdict_outcome_ids == ("a-one",)
    assert resolution.suspected_flake is True
    assert resolution.reliability == 0.0


def test_attempt_number_not_capture_time_orders_attempts() -> None:
    # Attempt 2 was captured before attempt 1; attempt number still decides.
    resolution = single(
        outcome("x-attempt-2", "failed", run_attempt=2, minutes=0),
        outcome("y-attempt-1", "passed", run_attempt=1, minutes=60),
    )
    assert resolution.verdict == "failed"
    assert resolution.verdict_outcome_ids == ("x-attempt-2",)


def test_attempts_order_numerically_not_lexically() -> None:
    resolution = single(
        outcome("o-10", "passed", run_attempt=10),
        outcome("o-9", "failed", run_attempt=9),
    )
    assert resolution.verdict == "passed"
    assert resolution.verdict_outcome_ids == ("o-10",)


def test_fail_error_pass_is_passed_flake_zero_with_non_verdict_retained() -> None:
    resolution = single(
        outcome("o-fail", "failed", run_attempt=1),
        outcome("o-error", "error", run_attempt=2),
        outcome("o-pass", "passed", run_attempt=3),
    )
    assert resolution.verdict == "passed"
    # flake → 0.0; min(0.0, non_verdict_reliability=1.0) → 0.0
    assert resolution.reliability == 0.0
    assert resolution.suspected_flake is True
    assert resolution.source_outcome_ids == ("o-error", "o-fail", "o-pass")
    assert resolution.verdict_outcome_ids == ("o-pass",)
    assert resolution.non_verdict_outcome_ids == ("o-error",)
    (workflow,) = resolution.workflow_resolutions
    assert workflow.non_verdict_outcome_ids == ("o-error",)
    assert workflow.verdict_outcome_id == "o-pass"


def test_verdict_is_the_last_verdict_even_when_a_non_verdict_comes_later() -> None:
    resolution = single(
        outcome("o-pass", "passed", run_attempt=1),
        outcome("o-cancel", "cancelled", run_attempt=2),
    )
    assert resolution.verdict == "passed"
    assert resolution.reliability == 1.0  # min(1.0, default non_verdict 1.0)
    assert resolution.suspected_flake is False
    assert resolution.verdict_outcome_ids == ("o-pass",)
    assert resolution.non_verdict_outcome_ids == ("o-cancel",)


def test_non_verdict_in_same_run_lowers_reliability_via_policy() -> None:
    policy = CIResolutionPolicy(non_verdict_reliability=0.25)
    resolution = single(
        outcome("o-pass", "passed", run_attempt=2),
        outcome("o-timeout", "timed_out", run_attempt=1),
        policy=policy,
    )
    assert resolution.verdict == "passed"
    assert resolution.reliability == 0.25
    assert resolution.workflow_resolutions[0].reliability == 0.25


@pytest.mark.parametrize("result", NON_VERDICT_RESULTS)
def test_non_verdict_only_has_no_verdict_and_no_reliability(result: str) -> None:
    resolution = single(outcome("o1", result, run_attempt=1))
    assert resolution.verdict is None
    assert resolution.reliability is None
    assert resolution.suspected_flake is False
    assert resolution.source_outcome_ids == ("o1",)
    assert resolution.verdict_outcome_ids == ()
    assert resolution.non_verdict_outcome_ids == ("o1",)
    (workflow,) = resolution.workflow_resolutions
    assert workflow.verdict is None
    assert workflow.verdict_outcome_id is None
    # The workflow itself carries the non-verdict reliability; the commit does not.
    assert workflow.reliability == DEFAULT_CI_POLICY.non_verdict_reliability


def test_duplicate_attempt_with_same_result_is_not_a_conflict() -> None:
    resolution = single(
        outcome("o1", "passed", run_attempt=1),
        outcome("o2", "passed", run_attempt=1),
    )
    assert resolution.verdict == "passed"
    assert resolution.reliability == 1.0
    assert resolution.suspected_flake is False
    # The last verdict in (attempt, outcome_id) order is o2.
    assert resolution.verdict_outcome_ids == ("o2",)
    assert resolution.source_outcome_ids == ("o1", "o2")


def test_workflow_identity_fields_are_taken_from_the_run() -> None:
    resolution = single(
        outcome(
            "o1",
            "passed",
            run_id="987",
            branch="refs/heads/feature/x",
            workflow_name="Build",
            workflow_id="11",
            workflow_path=".github/workflows/build.yml",
            provider="buildkite",
        )
    )
    (workflow,) = resolution.workflow_resolutions
    assert workflow.provider == "buildkite"
    assert workflow.run_id == "987"
    assert workflow.branch == "feature/x"
    assert workflow.workflow_name == "Build"
    assert workflow.workflow_id == "11"
    assert workflow.workflow_path == ".github/workflows/build.yml"


def test_empty_and_missing_workflow_fields_are_not_run_conflicts() -> None:
    resolution = single(
        outcome("o1", "failed", run_attempt=1, workflow_name=""),
        outcome("o2", "passed", run_attempt=2, workflow_name="ci", workflow_id="7"),
        outcome("o3", "passed", run_attempt=3, workflow_name="", workflow_path="ci.yml"),
    )
    (workflow,) = resolution.workflow_resolutions
    assert workflow.workflow_name == "ci"
    assert workflow.workflow_id == "7"
    assert workflow.workflow_path == "ci.yml"
    assert resolution.verdict == "passed"


def test_empty_input_resolves_nothing() -> None:
    result = resolve()
    assert result.resolutions == ()
    assert result.skipped == Counter()
    assert result.conflicting_commit_keys == frozenset()
    assert result.outcomes_by_commit == {}


# --- repositories --------------------------------------------------------------------


def test_same_sha_in_two_repositories_resolves_separately() -> None:
    result = resolve(
        outcome("fork-fail", "failed", run_id="r-fork", repo="zeta/widget"),
        outcome("main-pass", "passed", run_id="r-main", repo="acme/widget"),
    )
    assert result.skipped == Counter()
    assert [(r.repo, r.commit_sha, r.verdict) for r in result.resolutions] == [
        ("acme/widget", SHA_A, "passed"),
        ("zeta/widget", SHA_A, "failed"),
    ]
    assert result.resolutions[0].source_outcome_ids == ("main-pass",)
    assert result.resolutions[1].source_outcome_ids == ("fork-fail",)
    assert all(r.reliability == 1.0 and not r.suspected_flake for r in result.resolutions)


def test_same_run_id_in_different_orgs_or_providers_are_different_runs() -> None:
    result = resolve(
        outcome("o1", "passed", run_id="1", provider="github_actions"),
        outcome("o2", "failed", run_id="1", provider="jenkins", commit_sha=SHA_B),
        outcome("o3", "failed", run_id="1", org_id="other", commit_sha=SHA_C),
    )
    assert result.skipped == Counter()
    assert sorted((r.org_id, r.commit_sha, r.verdict) for r in result.resolutions) == [
        ("acme", SHA_A, "passed"),
        ("acme", SHA_B, "failed"),
        ("other", SHA_C, "failed"),
    ]


def test_identified_outcomes_without_repository_context_are_declined_per_outcome() -> None:
    result = resolve(
        identified("id-1", "failed", run_attempt=1),
        identified("id-2", "passed", run_attempt=2),
        identified("id-3", "passed", run_id="run-2"),
    )
    assert result.resolutions == ()
    assert result.skipped == Counter({"repository_identity_unresolved": 3})
    assert result.conflicting_commit_keys == frozenset()
    assert result.outcomes_by_commit == {}


def test_declined_identified_outcomes_do_not_block_legacy_ones() -> None:
    result = resolve(
        identified("id-1", "failed", run_id="r-identified"),
        outcome("legacy-1", "passed", run_id="r-legacy"),
    )
    assert result.skipped == Counter({"repository_identity_unresolved": 1})
    (resolution,) = result.resolutions
    assert resolution.verdict == "passed"
    assert resolution.source_outcome_ids == ("legacy-1",)
    assert resolution.repository_identity is None


def test_resolutions_are_in_commit_sort_key_order() -> None:
    result = resolve(
        outcome("o1", run_id="r1", repo="zeta/app", commit_sha=SHA_A),
        outcome("o2", run_id="r2", repo="acme/widget", commit_sha=SHA_C),
        outcome("o3", run_id="r3", repo="acme/widget", commit_sha=SHA_B),
        outcome("o4", run_id="r4", org_id="beta", repo="zeta/app", commit_sha=SHA_C),
    )
    assert [(r.org_id, r.repo, r.commit_sha) for r in result.resolutions] == [
        ("acme", "acme/widget", SHA_B),
        ("acme", "acme/widget", SHA_C),
        ("acme", "zeta/app", SHA_A),
        ("beta", "zeta/app", SHA_C),
    ]


# --- run identity conflicts ----------------------------------------------------------


@pytest.mark.parametrize(
    "second",
    [
        pytest.param({"branch": "release"}, id="branch"),
        pytest.param({"workflow_name": "lint"}, id="workflow_name"),
        pytest.param({"repo": "acme/other"}, id="repo"),
        pytest.param({"commit_sha": SHA_B}, id="commit"),
    ],
)
def test_conflicting_run_identity_is_counted_per_run_and_not_resolved(
    second: dict[str, Any],
) -> None:
    result = resolve(
        outcome("o1", "failed", run_attempt=1),
        outcome("o2", "passed", run_attempt=2, **second),
    )
    assert result.resolutions == ()
    assert result.skipped == Counter({"conflicting_run_identity": 1})
    assert result.outcomes_by_commit == {}
    assert (ORG, "legacy", REPO, SHA_A) in result.conflicting_commit_keys


@pytest.mark.parametrize("field_name", ["workflow_id", "workflow_path"])
def test_conflicting_optional_workflow_identity(field_name: str) -> None:
    result = resolve(
        outcome("o1", "failed", run_attempt=1, **{field_name: "one"}),
        outcome("o2", "passed", run_attempt=2, **{field_name: "two"}),
    )
    assert result.resolutions == ()
    assert result.skipped == Counter({"conflicting_run_identity": 1})


def test_conflicting_repo_records_both_commit_keys() -> None:
    result = resolve(
        outcome("o1", "passed", run_attempt=1, repo="acme/widget"),
        outcome("o2", "passed", run_attempt=2, repo="acme/gadget"),
    )
    assert result.skipped == Counter({"conflicting_run_identity": 1})
    assert result.conflicting_commit_keys == frozenset(
        {(ORG, "legacy", "acme/widget", SHA_A), (ORG, "legacy", "acme/gadget", SHA_A)}
    )


@pytest.mark.parametrize("attempt", [None, 1, 3])
def test_same_attempt_with_different_results_is_a_conflict(attempt: int | None) -> None:
    result = resolve(
        outcome("o1", "passed", run_attempt=attempt),
        outcome("o2", "failed", run_attempt=attempt),
    )
    assert result.resolutions == ()
    assert result.skipped == Counter({"conflicting_run_identity": 1})


def test_same_attempt_pass_and_non_verdict_is_a_conflict() -> None:
    result = resolve(
        outcome("o1", "passed", run_attempt=2),
        outcome("o2", "cancelled", run_attempt=2),
    )
    assert result.resolutions == ()
    assert result.skipped == Counter({"conflicting_run_identity": 1})


def test_conflicts_count_runs_not_outcomes() -> None:
    result = resolve(
        outcome("a1", run_id="run-a", run_attempt=1, branch="main"),
        outcome("a2", run_id="run-a", run_attempt=2, branch="dev"),
        outcome("a3", run_id="run-a", run_attempt=3, branch="main"),
        outcome("b1", run_id="run-b", commit_sha=SHA_B, run_attempt=1, result="passed"),
        outcome("b2", run_id="run-b", commit_sha=SHA_B, run_attempt=1, result="failed"),
    )
    assert result.resolutions == ()
    assert result.skipped == Counter({"conflicting_run_identity": 2})


def test_conflicting_run_does_not_poison_a_consistent_sibling_run() -> None:
    result = resolve(
        outcome("bad-1", "failed", run_id="run-bad", run_attempt=1, branch="main"),
        outcome("bad-2", "failed", run_id="run-bad", run_attempt=2, branch="other"),
        outcome("good", "passed", run_id="run-good", workflow_name="lint"),
    )
    assert result.skipped == Counter({"conflicting_run_identity": 1})
    (resolution,) = result.resolutions
    assert resolution.verdict == "passed"
    assert resolution.source_outcome_ids == ("good",)
    key = (ORG, "legacy", REPO, SHA_A)
    assert [o.outcome_id for o in result.outcomes_by_commit[key]] == ["good"]


# --- commit aggregation --------------------------------------------------------------


def test_two_workflows_pass_and_fail_on_one_commit_are_ambiguous() -> None:
    result = resolve(
        outcome("build-pass", "passed", run_id="run-build", workflow_name="build"),
        outcome("test-fail", "failed", run_id="run-test", workflow_name="test"),
    )
    assert result.skipped == Counter({"ambiguous_workflow_verdicts": 1})
    (resolution,) = result.resolutions
    assert resolution.verdict is None
    assert resolution.reliability is None
    assert resolution.suspected_flake is False
    assert [w.verdict for w in resolution.workflow_resolutions] == ["passed", "failed"]
    assert resolution.verdict_outcome_ids == ("build-pass", "test-fail")
    assert resolution.source_outcome_ids == ("build-pass", "test-fail")


def test_ambiguity_is_counted_per_commit() -> None:
    result = resolve(
        outcome("a-pass", "passed", run_id="a1", workflow_name="build"),
        outcome("a-fail", "failed", run_id="a2", workflow_name="test"),
        outcome("b-pass", "passed", run_id="b1", workflow_name="build", commit_sha=SHA_B),
        outcome("b-fail", "failed", run_id="b2", workflow_name="test", commit_sha=SHA_B),
        outcome("b-fail2", "failed", run_id="b3", workflow_name="e2e", commit_sha=SHA_B),
    )
    assert result.skipped == Counter({"ambiguous_workflow_verdicts": 2})
    assert [r.verdict for r in result.resolutions] == [None, None]


def test_two_workflows_agreeing_combine_to_one_verdict() -> None:
    result = resolve(
        outcome("build-fail-1", "failed", run_id="run-build", run_attempt=1, workflow_name="b"),
        outcome("build-pass-2", "passed", run_id="run-build", run_attempt=2, workflow_name="b"),
        outcome("test-pass", "passed", run_id="run-test", workflow_name="t"),
    )
    assert result.skipped == Counter()
    (resolution,) = result.resolutions
    assert resolution.verdict == "passed"
    assert resolution.reliability == 0.0  # min over workflows: flaky build 0.0, clean test 1.0
    assert resolution.suspected_flake is True
    assert resolution.verdict_outcome_ids == ("build-pass-2", "test-pass")


def test_separate_non_verdict_workflow_lowers_aggregate_reliability() -> None:
    policy = CIResolutionPolicy(non_verdict_reliability=0.25)
    outcomes = (
        outcome("test-pass", "passed", run_id="run-test", workflow_name="test"),
        outcome("deploy-cancelled", "cancelled", run_id="run-deploy", workflow_name="deploy"),
    )
    resolution = single(*outcomes, policy=policy)
    assert resolution.verdict == "passed"
    assert resolution.reliability == 0.25
    assert resolution.verdict_outcome_ids == ("test-pass",)
    assert resolution.non_verdict_outcome_ids == ("deploy-cancelled",)
    assert resolution.source_outcome_ids == ("deploy-cancelled", "test-pass")
    by_name = {w.workflow_name: w for w in resolution.workflow_resolutions}
    assert by_name["test"].reliability == 1.0
    assert by_name["deploy"].reliability == 0.25
    assert by_name["deploy"].verdict is None

    # Under the default policy the same evidence is fully reliable.
    assert single(*outcomes).reliability == 1.0


def test_non_verdict_only_workflows_on_a_commit_give_no_verdict() -> None:
    policy = CIResolutionPolicy(non_verdict_reliability=0.25)
    resolution = single(
        outcome("c1", "cancelled", run_id="r1", workflow_name="a"),
        outcome("s1", "skipped", run_id="r2", workflow_name="b"),
        policy=policy,
    )
    assert resolution.verdict is None
    assert resolution.reliability is None
    assert resolution.non_verdict_outcome_ids == ("c1", "s1")
    assert [w.reliability for w in resolution.workflow_resolutions] == [0.25, 0.25]


def test_workflows_are_sorted_by_provider_id_path_name_run() -> None:
    resolution = single(
        outcome("o1", run_id="r9", workflow_name="zeta"),
        outcome("o2", run_id="r8", workflow_name="alpha"),
        outcome("o3", run_id="r7", workflow_name="alpha", workflow_path="b.yml"),
        outcome("o4", run_id="r6", workflow_name="alpha", workflow_path="a.yml"),
        outcome("o5", run_id="r5", workflow_name="zz", workflow_id="1"),
        outcome("o6", run_id="r4", workflow_name="alpha"),
        outcome("o7", run_id="r3", workflow_name="a", provider="jenkins"),
    )
    assert [
        (w.provider, w.workflow_id, w.workflow_path, w.workflow_name, w.run_id)
        for w in resolution.workflow_resolutions
    ] == [
        ("github_actions", None, None, "alpha", "r4"),
        ("github_actions", None, None, "alpha", "r8"),
        ("github_actions", None, None, "zeta", "r9"),
        ("github_actions", None, "a.yml", "alpha", "r6"),
        ("github_actions", None, "b.yml", "alpha", "r7"),
        ("github_actions", "1", None, "zz", "r5"),
        ("jenkins", None, None, "a", "r3"),
    ]


def test_outcomes_by_commit_keep_consistent_runs_in_capture_order() -> None:
    result = resolve(
        outcome("o-late", "passed", run_id="r1", run_attempt=1, minutes=30),
        outcome("o-early", "failed", run_id="r2", workflow_name="other", minutes=0),
        outcome("o-b", "passed", run_id="r3", run_attempt=2, minutes=10),
        outcome("o-a", "failed", run_id="r3", run_attempt=1, minutes=10),
    )
    key = (ORG, "legacy", REPO, SHA_A)
    assert list(result.outcomes_by_commit) == [key]
    assert [o.outcome_id for o in result.outcomes_by_commit[key]] == [
        "o-early",
        "o-a",
        "o-b",
        "o-late",
    ]


# --- policy --------------------------------------------------------------------------


def test_default_policy_values_and_digest() -> None:
    assert DEFAULT_CI_POLICY.clean_reliability == 1.0
    assert DEFAULT_CI_POLICY.suspected_flake_reliability == 0.0
    assert DEFAULT_CI_POLICY.non_verdict_reliability == 1.0
    assert DEFAULT_CI_POLICY.policy_version == "2"
    assert DEFAULT_CI_POLICY.digest == DEFAULT_DIGEST
    assert CIResolutionPolicy().digest == DEFAULT_DIGEST
    assert (
        canonical_policy_digest(
            {
                "clean_reliability": 1.0,
                "non_verdict_reliability": 1.0,
                "policy_version": "2",
                "suspected_flake_reliability": 0.0,
            }
        )
        == DEFAULT_DIGEST
    )


def test_custom_policy_values_flow_into_resolution_and_provenance() -> None:
    policy = CIResolutionPolicy(
        clean_reliability=0.9,
        suspected_flake_reliability=0.1,
        non_verdict_reliability=0.5,
        policy_version="2-custom",
    )
    expected_digest = canonical_policy_digest(
        {
            "clean_reliability": 0.9,
            "non_verdict_reliability": 0.5,
            "policy_version": "2-custom",
            "suspected_flake_reliability": 0.1,
        }
    )
    assert policy.digest == expected_digest
    assert policy.digest != DEFAULT_DIGEST

    result = resolve(
        outcome("clean", "passed", run_id="r1", commit_sha=SHA_A),
        outcome("flaky-1", "failed", run_id="r2", run_attempt=1, commit_sha=SHA_B),
        outcome("flaky-2", "passed", run_id="r2", run_attempt=2, commit_sha=SHA_B),
        outcome("with-nv-1", "passed", run_id="r3", run_attempt=1, commit_sha=SHA_C),
        outcome("with-nv-2", "neutral", run_id="r3", run_attempt=2, commit_sha=SHA_C),
        policy=policy,
        quarantine_revision=3,
    )
    assert [r.reliability for r in result.resolutions] == [0.9, 0.1, 0.5]
    for resolution in result.resolutions:
        assert resolution.provenance.model_dump() == {
            "policy_version": "2-custom",
            "quarantine_revision": 3,
            "policy_digest": expected_digest,
        }


@pytest.mark.parametrize("value", [True, False, -0.1, 1.01, 2, "0.5", None, float("nan")])
def test_policy_rejects_non_real_or_out_of_range_values(value: Any) -> None:
    for field_name in ("clean_reliability", "suspected_flake_reliability", "non_verdict_reliability"):
        with pytest.raises(ValidationError):
            CIResolutionPolicy(**{field_name: value})


def test_policy_accepts_unit_interval_bounds_and_integers() -> None:
    policy = CIResolutionPolicy(clean_reliability=1, suspected_flake_reliability=0)
    assert policy.clean_reliability == 1.0
    assert isinstance(policy.clean_reliability, float)
    assert policy.suspected_flake_reliability == 0.0
    assert policy.digest == DEFAULT_DIGEST


def test_policy_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        CIResolutionPolicy(flake_reliability=0.5)  # type: ignore[call-arg]


# --- reward selection ----------------------------------------------------------------


def test_later_cancelled_commit_does_not_hide_earlier_pass() -> None:
    result = resolve(
        outcome("pass-a", "passed", run_id="r1", commit_sha=SHA_A),
        outcome("cancel-b", "cancelled", run_id="r2", commit_sha=SHA_B),
    )
    selected = select_reward_resolution(result.resolutions, ORG, [ref(SHA_A), ref(SHA_B)])
    assert selected is not None
    assert selected.commit_sha == SHA_A
    assert selected.verdict == "passed"
    assert selected.source_outcome_ids == ("pass-a",)


def test_selects_last_attributed_commit_with_a_verdict() -> None:
    result = resolve(
        outcome("pass-a", "passed", run_id="r1", commit_sha=SHA_A),
        outcome("fail-b1", "failed", run_id="r2", run_attempt=1, commit_sha=SHA_B),
        outcome("fail-b2", "passed", run_id="r2", run_attempt=2, commit_sha=SHA_B),
    )
    selected = select_reward_resolution(result.resolutions, ORG, [ref(SHA_A), ref(SHA_B)])
    assert selected is not None and selected.commit_sha == SHA_B
    assert selected.reliability == 0.0

    # Reversing the trajectory order selects the other (clean) commit.
    reversed_pick = select_reward_resolution(result.resolutions, ORG, [ref(SHA_B), ref(SHA_A)])
    assert reversed_pick is not None and reversed_pick.commit_sha == SHA_A
    assert reversed_pick.reliability == 1.0


def test_selection_ignores_resolutions_outside_the_attributed_commits() -> None:
    result = resolve(
        outcome("pass-a", "passed", run_id="r1", commit_sha=SHA_A),
        outcome("fail-c", "failed", run_id="r2", commit_sha=SHA_C),
        outcome("fork-b", "failed", run_id="r3", commit_sha=SHA_B, repo="fork/widget"),
    )
    # SHA_B is attributed in acme/widget, but its only CI is in the fork.
    selected = select_reward_resolution(result.resolutions, ORG, [ref(SHA_A), ref(SHA_B)])
    assert selected is not None and selected.commit_sha == SHA_A
    # Another org never matches.
    assert select_reward_resolution(result.resolutions, "other", [ref(SHA_A)]) is None


def test_selection_returns_none_without_a_verdict() -> None:
    ambiguous = resolve(
        outcome("p", "passed", run_id="r1", workflow_name="a"),
        outcome("f", "failed", run_id="r2", workflow_name="b"),
    )
    assert select_reward_resolution(ambiguous.resolutions, ORG, [ref(SHA_A)]) is None
    non_verdict = resolve(outcome("e", "error"))
    assert select_reward_resolution(non_verdict.resolutions, ORG, [ref(SHA_A)]) is None
    assert select_reward_resolution((), ORG, [ref(SHA_A)]) is None
    assert select_reward_resolution(resolve(outcome("p")).resolutions, ORG, []) is None


# --- shape and determinism -----------------------------------------------------------


def test_model_dump_field_order_matches_contract() -> None:
    resolution = single(outcome("o1"))
    assert list(resolution.model_dump()) == CI_RESOLUTION_FIELDS
    assert list(CIResolution.model_fields) == CI_RESOLUTION_FIELDS
    assert list(resolution.workflow_resolutions[0].model_dump()) == CI_WORKFLOW_RESOLUTION_FIELDS
    assert list(CIWorkflowResolution.model_fields) == CI_WORKFLOW_RESOLUTION_FIELDS
    assert list(resolution.provenance.model_dump()) == [
        "policy_version",
        "quarantine_revision",
        "policy_digest",
    ]


def test_resolver_skip_vocabulary_order() -> None:
    assert RESOLVER_SKIP_REASONS == (
        "conflicting_run_identity",
        "ambiguous_workflow_verdicts",
        "repository_identity_absent",
        "repository_identity_conflict",
        "repository_identity_unresolved",
        "repository_mirror_identity_unresolved",
        "repository_source_absent",
    )


def _mixed_population() -> list[CIOutcome]:
    return [
        # flaky retry with a non-verdict in the middle
        outcome("a-fail", "failed", run_id="r1", run_attempt=1, minutes=1),
        outcome("a-err", "error", run_id="r1", run_attempt=2, minutes=2),
        outcome("a-pass", "passed", run_id="r1", run_attempt=3, minutes=3),
        # second agreeing workflow with null attempt
        outcome("a-lint", "passed", run_id="r2", workflow_name="lint", minutes=1),
        # ambiguous commit
        outcome("b-pass", "passed", run_id="r3", commit_sha=SHA_B, workflow_name="x"),
        outcome("b-fail", "failed", run_id="r4", commit_sha=SHA_B, workflow_name="y"),
        # non-verdict-only commit
        outcome("c-cancel", "cancelled", run_id="r5", commit_sha=SHA_C),
        # same SHA in a fork
        outcome("fork-fail", "failed", run_id="r6", repo="fork/widget"),
        # conflicting run
        outcome("bad-1", "passed", run_id="r7", run_attempt=1, commit_sha=SHA_C),
        outcome("bad-2", "failed", run_id="r7", run_attempt=1, commit_sha=SHA_C),
        # identified outcome without context
        identified("ident-1", "passed", run_id="r8"),
        # duplicate attempt ids and same capture time
        outcome("d-2", "passed", run_id="r9", run_attempt=1, commit_sha=SHA_B, workflow_name="x"),
        outcome("d-1", "passed", run_id="r9", run_attempt=1, commit_sha=SHA_B, workflow_name="x"),
    ]


def _snapshot(result: CIResolutionResult) -> Any:
    return (
        [r.model_dump() for r in result.resolutions],
        dict(result.skipped),
        sorted(result.conflicting_commit_keys),
        {k: [o.model_dump() for o in v] for k, v in sorted(result.outcomes_by_commit.items())},
    )


def test_shuffled_input_gives_identical_output() -> None:
    population = _mixed_population()
    baseline = resolve(*population, quarantine_revision=5)
    assert baseline.skipped == Counter(
        {
            "conflicting_run_identity": 1,
            "ambiguous_workflow_verdicts": 1,
            "repository_identity_unresolved": 1,
        }
    )
    expected = _snapshot(baseline)
    for seed in range(12):
        shuffled = list(population)
        random.Random(seed).shuffle(shuffled)
        assert _snapshot(resolve(*shuffled, quarantine_revision=5)) == expected
        assert _snapshot(resolve(*reversed(shuffled), quarantine_revision=5)) == expected


def test_resolve_accepts_any_iterable_once() -> None:
    population = _mixed_population()
    from_generator = resolve_ci((o for o in population), quarantine_revision=0)
    assert _snapshot(from_generator) == _snapshot(resolve(*population))


def test_commit_key_exposes_qualified_identity() -> None:
    resolution = single(outcome("o1"))
    assert resolution.commit_key.sort_key == (ORG, "legacy", REPO, SHA_A)
    identity = RepositoryIdentity(provider="github", host="github.com", repository_id="1")
    identified_key = CommitKey(ORG, "acme/zzz", SHA_A, identity)
    assert identified_key.sort_key == (ORG, "identified", "github", "github.com", "1", SHA_A)
    # Identified repositories sort before legacy ones of the same org.
    assert identified_key.sort_key < resolution.commit_key.sort_key
    # The label of an identified repository is not part of its qualified identity.
    assert identified_key.same_commit(CommitKey(ORG, "acme/renamed", SHA_A, identity))
    assert not resolution.commit_key.same_commit(CommitKey(ORG, "acme/renamed", SHA_A))


def test_policy_version_must_not_be_empty() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        CIResolutionPolicy(policy_version="")
