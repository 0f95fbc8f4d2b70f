"""Buildkite ``job.finished`` → a job-level CIOutcome of its build (docs/ci-providers.md "Buildkite").

The payloads are ``fixtures/ci/buildkite/job_finished.json`` (a failed command job of build 88,
never retried) and ``job_finished_retried.json`` (its manual retry, passed), written from the
documented job webhook and REST Job fields (``fixtures/ci/SOURCES.md``); each case sets fields of
one of them. The build is the one of ``build_finished.json``, so a build that arrived both as
``build.finished`` and as its jobs can be resolved.
"""

from __future__ import annotations

import copy
import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sediment.ci.jobs import judged_attempts, runs_of_jobs
from sediment.ci.resolution import resolve_ci
from sediment.git.repositories import RepositoryContext
from sediment.ingest import Translation, TranslationError
from sediment.ingest.ci.buildkite import JOB_NOT_A_COMMAND, SKIP_REASONS, build_fields, translate_buildkite
from sediment.ingest.ci.runs import NOT_TERMINAL
from sediment.ingest.reading.files import ingest_files
from sediment.model.ci_keys import job_id
from sediment.model.facts import CIOutcome
from sediment.store import FactStore
from sediment.store.ids import fact_id

FIXTURES = Path(__file__).parent / "fixtures" / "ci" / "buildkite"
ORG = "acme"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
BUILD = "0190a1b2-c3d4-4e5f-8a9b-0c1d2e3f4a5b"
JOB = "0190a1b3-1e2f-4a5b-9c6d-7e8f90a1b2c3"
RETRY = "0190a1b4-5a6b-4c7d-8e9f-a0b1c2d3e4f5"
SHA = "9f2c4e1b7a3d5c6e8f0a1b2c3d4e5f60718293a4"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def job(fixture: str = "job_finished.json", /, **changes: Any) -> dict[str, Any]:
    """A delivery of ``fixture`` with ``changes`` applied to its ``job``."""
    delivery = load(fixture)
    delivery["payload"]["job"].update(changes)
    return delivery


def translate(delivery: dict[str, Any]) -> Translation:
    return translate_buildkite(delivery, event=None, org_id=ORG, captured_at=T0)


def only(delivery: dict[str, Any]) -> CIOutcome:
    translation = translate(delivery)
    assert translation.skipped is None, translation.skipped
    (fact,) = translation.facts
    assert isinstance(fact, CIOutcome)
    return fact


def resolve(outcomes: list[CIOutcome]) -> Any:
    return resolve_ci(outcomes, quarantine_revision=0, repositories=RepositoryContext.build(ORG, outcomes))


def verdict(outcomes: list[CIOutcome]) -> tuple[str | None, bool]:
    (resolution,) = resolve(outcomes).resolutions
    return resolution.verdict, resolution.suspected_flake


# --- one job ---------------------------------------------------------------------------------


def test_job_finished_is_a_job_of_its_build() -> None:
    outcome = only(load("job_finished.json"))
    assert {k: v for k, v in outcome.model_dump().items() if k not in ("raw", "captured_at")} == {
        "schema_version": 2, "repository_provider": None, "repository_host": None, "repository_id": None,
        "outcome_id": fact_id("ci", ORG, "buildkite", BUILD, 1, "job", JOB), "org_id": ORG,
        "provider": "buildkite", "run_id": BUILD, "run_attempt": 1, "repo": "acme/widget", "commit_sha": SHA,
        "branch": "feature/parser", "result": "failed", "workflow_name": "Widget CI",
        "workflow_id": "849411f9-9e6d-4739-a0d8-e247088e9b52", "workflow_path": None,
        "run_url": "https://buildkite.com/acme/widget/builds/88", "provider_result": "failed", "error_type": None,
        "reason": None, "source_event_type": "job.finished", "source_spec_version": None, "source_event_id": None,
        "pr_number": 57,
    }
    assert outcome.raw == load("job_finished.json")["payload"]  # the whole payload, decoded back exactly
    assert job_id(outcome) == JOB


def test_a_job_shares_every_build_field_with_its_build() -> None:
    build = only(load("build_finished.json"))
    outcome = only(load("job_finished.json"))
    shared = build_fields(load("job_finished.json")["payload"])
    assert shared == build_fields(load("build_finished.json")["payload"])
    assert {k: getattr(build, k) for k in shared} == {k: getattr(outcome, k) for k in shared} == shared
    assert job_id(build) is None and build.outcome_id != outcome.outcome_id


JOB_STATES = [
    ("passed", "passed"), ("failed", "failed"), ("timed_out", "timed_out"), ("canceled", "cancelled"),
    ("canceling", "cancelled"), ("skipped", "skipped"), ("broken", "skipped"), ("not_run", "skipped"),
    ("expired", "error"),
    *[(state, None) for state in (
        "pending", "waiting", "waiting_failed", "blocked", "blocked_failed", "unblocked", "unblocked_failed",
        "limiting", "limited", "scheduled", "assigned", "accepted", "running", "timing_out", "finished",
        "a_state_buildkite_adds_later")],
]


@pytest.mark.parametrize(("state", "result"), JOB_STATES)
def test_every_job_state(state: str, result: str | None) -> None:
    translation = translate(job(state=state))
    if result is None:
        assert translation == Translation.skip(NOT_TERMINAL)
    else:
        outcome = only(job(state=state))
        assert (outcome.result, outcome.provider_result, outcome.run_attempt) == (result, state, 1)


def test_a_timed_out_job_is_timed_out() -> None:
    outcome = only(job(state="timed_out", exit_status=None, signal="SIGTERM"))
    assert (outcome.result, outcome.provider_result, outcome.is_verdict) == ("timed_out", "timed_out", False)
    assert job_id(outcome) == JOB


def test_a_soft_failure_is_neutral_and_does_not_fail_its_build() -> None:
    soft = only(job(state="failed", soft_failed=True, exit_status=2))
    assert (soft.result, soft.provider_result) == ("neutral", "failed/soft_failed")
    assert only(job(state="passed", soft_failed=True)).provider_result == "passed"  # only a failure is soft
    assert only(job(state="timed_out", soft_failed=True)).result == "timed_out"
    passing = only(job("job_finished_retried.json", retries_count=0, retry_source=None, id="another-job"))
    assert verdict([soft, passing]) == ("passed", False)  # Buildkite passes a build whose failure is soft
    assert verdict([soft]) == (None, False)  # nothing passed: no verdict


def test_the_signal_reason_is_kept() -> None:
    outcome = only(job(state="failed", exit_status=-1, signal="SIGTERM", signal_reason="agent_stop"))
    assert (outcome.result, outcome.reason) == ("failed", "agent_stop")


@pytest.mark.parametrize(("kind", "state"), [
    ("waiter", "passed"), ("manual", "unblocked"), ("manual", "passed"), ("trigger", "passed"), ("trigger", "failed"),
])
def test_jobs_that_run_no_command_are_declined(kind: str, state: str) -> None:
    delivery = job(type=kind, state=state)
    if kind == "trigger":
        delivery["payload"]["job"]["async"] = True
    assert translate(delivery) == Translation.skip(JOB_NOT_A_COMMAND)
    assert JOB_NOT_A_COMMAND in SKIP_REASONS


@pytest.mark.parametrize("event", ["job.scheduled", "job.started", "job.activated", "job.promised_exit_status"])
def test_other_job_events_are_not_final(event: str) -> None:
    delivery = job()  # a finished state: the event, not the state, says the job is not finished
    delivery["headers"]["X-Buildkite-Event"] = delivery["payload"]["event"] = event
    assert translate(delivery) == Translation.skip(NOT_TERMINAL)


def test_the_event_header_and_body_must_agree() -> None:
    delivery = job()
    delivery["headers"]["X-Buildkite-Event"] = "build.finished"
    with pytest.raises(TranslationError, match="event: 'job.finished' disagrees with the event 'build.finished'"):
        translate(delivery)


def test_a_bare_job_payload_reads_like_its_delivery() -> None:
    payload = load("job_finished.json")["payload"]
    assert translate_buildkite(payload, event="job.finished", org_id=ORG, captured_at=T0) == translate(job())


@pytest.mark.parametrize(("change", "message"), [
    (lambda p: p.pop("job"), "job: missing"),
    (lambda p: p.update(job=[1]), "job: expected an object, got list"),
    (lambda p: p["job"].pop("id"), "job.id: missing"),
    (lambda p: p["job"].update(id=""), "job.id: expected a number or a non-empty string"),
    (lambda p: p["job"].pop("type"), "job.type: missing"),
    (lambda p: p["job"].update(type=7), "job.type: expected a string, got int"),
    (lambda p: p["job"].pop("state"), "job.state: missing"),
    (lambda p: p["job"].update(soft_failed="true"), "job.soft_failed: expected true or false, got 'true'"),
    (lambda p: p["job"].update(retries_count="1"), "job.retries_count: expected an integer of at least 0, got '1'"),
    (lambda p: p["job"].update(retries_count=-1), "job.retries_count: expected an integer of at least 0, got -1"),
    (lambda p: p["job"].update(retries_count=True), "job.retries_count: expected an integer of at least 0, got True"),
    (lambda p: p["job"].update(retry_source={"job_id": JOB, "retry_type": "manual"}),
     r"job.retries_count: expected at least 1 for a job made by a retry \(job.retry_source is set\)"),
    (lambda p: p["job"].update(retry_source="manual"), "job.retry_source: expected an object, got str"),
    (lambda p: p["job"].update(signal_reason=3), "job.signal_reason: expected a string, got int"),
    (lambda p: p.pop("build"), "build: missing"),
    (lambda p: p["build"].update(commit="HEAD"), "build.commit: 'HEAD' is not a commit SHA"),
    (lambda p: p["build"].update(id=None), "build.id: missing"),
    (lambda p: p["pipeline"].update(repository="widget"), "pipeline.repository: 'widget' does not name"),
    (lambda p: p["build"]["pull_request"].update(id="057"), "build.pull_request.id: expected a pull request number"),
])
def test_a_bad_job_field_is_refused_naming_its_path(change: Any, message: str) -> None:
    delivery = job()
    change(delivery["payload"])
    with pytest.raises(TranslationError, match=message) as caught:
        translate(delivery)
    assert "\n" not in str(caught.value)


def test_a_build_outcome_is_never_taken_for_a_job() -> None:
    build = load("build_finished.json")
    build["payload"]["job"] = copy.deepcopy(load("job_finished.json")["payload"]["job"])  # a stray job object
    outcome = only(build)
    assert (outcome.source_event_type, job_id(outcome)) == ("build.finished", None)
    assert outcome.outcome_id == fact_id("ci", ORG, "buildkite", BUILD, 0, "at", "2024-04-30T09:20:00.000000Z")


# --- the jobs of a build -----------------------------------------------------------------------


def _jobs_of_build_88() -> list[dict[str, Any]]:
    """Build 88 as its jobs report it: lint passed, unit failed and was retried (passed)."""
    lint = job(id="0190a1b3-0000-4a5b-9c6d-7e8f90a1b2c3", name="Lint", step_key="lint", state="passed",
               exit_status=0)
    return [lint, load("job_finished.json"), load("job_finished_retried.json")]


def _stored(tmp_path: Path, deliveries: list[dict[str, Any]], tag: str) -> tuple[list[str], dict[str, int]]:
    files = []
    for index, delivery in enumerate(deliveries):
        path = tmp_path / f"{tag}-{index}.json"
        path.write_text(json.dumps(delivery), encoding="utf-8")
        files.append(str(path))
    store = FactStore(f"sqlite:///{tmp_path / f'{tag}.db'}")
    try:
        summary = ingest_files(files, translate, store)
        ids = sorted(f.outcome_id for f in store.facts("ci_outcomes", ORG) if isinstance(f, CIOutcome))
        return ids, dict(summary.duplicates)
    finally:
        store.close()


def test_a_redelivered_job_is_one_fact(tmp_path: Path) -> None:
    ids, duplicates = _stored(tmp_path, [load("job_finished.json"), load("job_finished.json")], "twice")
    assert ids == [only(load("job_finished.json")).outcome_id]
    assert duplicates == {"ci_outcomes": 1}


def test_the_jobs_of_one_build_never_collapse(tmp_path: Path) -> None:
    deliveries = [*_jobs_of_build_88(), load("build_finished.json")]
    outcomes = [only(d) for d in deliveries]
    assert {o.run_id for o in outcomes} == {BUILD}
    assert [job_id(o) for o in outcomes] == ["0190a1b3-0000-4a5b-9c6d-7e8f90a1b2c3", JOB, RETRY, None]
    assert [o.run_attempt for o in outcomes] == [1, 1, 2, None]
    ids, duplicates = _stored(tmp_path, deliveries, "all")
    assert ids == sorted(o.outcome_id for o in outcomes) and len(set(ids)) == 4
    assert duplicates == {}


def test_a_build_known_from_build_finished_is_judged_by_it_once() -> None:
    build = only(load("build_finished.json"))
    jobs = [only(d) for d in _jobs_of_build_88()]
    assert runs_of_jobs([*jobs, build]) == [build]
    result = resolve([*jobs, build])
    (resolution,) = result.resolutions
    (workflow,) = resolution.workflow_resolutions
    assert (workflow.run_id, workflow.verdict, workflow.source_outcome_ids) == (BUILD, "passed", (build.outcome_id,))
    assert (resolution.suspected_flake, result.skipped) == (False, {})
    failed = load("build_finished.json")
    failed["payload"]["build"]["state"] = "failed"
    assert verdict([*jobs, only(failed)]) == ("failed", False)  # the build speaks, not its passing retry


def test_a_build_known_only_from_its_jobs_is_judged_by_the_worst_job() -> None:
    lint, unit, retry = (only(d) for d in _jobs_of_build_88())
    assert verdict([lint, unit]) == ("failed", False)  # one failed job fails the build
    assert [o.outcome_id for o in runs_of_jobs([lint, unit])] == [unit.outcome_id]
    assert verdict([lint]) == ("passed", False)
    # The retry is attempt 2: it decides, and the lineage with both verdicts is a suspected flake.
    assert [o.outcome_id for o in runs_of_jobs([lint, unit, retry])] == [unit.outcome_id, retry.outcome_id]
    assert verdict([lint, unit, retry]) == ("passed", True)
    failing_again = only(job("job_finished_retried.json", state="failed", exit_status=1))
    assert verdict([lint, unit, failing_again]) == ("failed", False)
    timed_out = only(job("job_finished_retried.json", state="timed_out", exit_status=None))
    assert verdict([lint, unit, timed_out]) == ("failed", False)  # a timed-out retry is no verdict: 1 stands


def test_a_job_not_retried_still_counts_in_the_later_attempt() -> None:
    """Attempt 2 is every job at its latest try up to 2 (sediment.ci.jobs.judged_attempts): the
    Docs job failed and was not retried, so the build stays failed although the retried Unit job
    passed, as Buildkite judges it; once Docs is retried and passes too, the build passes."""
    lint, unit, retry = (only(d) for d in _jobs_of_build_88())
    other = only(job(id="0190a1b3-1111-4a5b-9c6d-7e8f90a1b2c3", name="Docs", step_key="docs", state="failed"))
    assert verdict([lint, unit, other, retry]) == ("failed", False)
    judged = [(o.outcome_id, attempt) for o, attempt in judged_attempts([lint, unit, other, retry])]
    assert judged == [(min(unit.outcome_id, other.outcome_id), 1), (other.outcome_id, 2)]
    docs_retry = only(job(id="0190a1b3-2222-4a5b-9c6d-7e8f90a1b2c3", name="Docs", step_key="docs", state="passed",
                          retries_count=1, retry_source={"job_id": other.raw["job"]["id"], "retry_type": "manual"}))
    assert verdict([lint, unit, other, retry, docs_retry]) == ("passed", True)
    failed = load("build_finished.json")
    failed["payload"]["build"]["state"] = "failed"
    assert verdict([lint, unit, other, retry, docs_retry, only(failed)]) == ("failed", False)  # the build decides


def test_storage_and_resolution_are_independent_of_order_and_repetition(tmp_path: Path) -> None:
    deliveries = [*_jobs_of_build_88(), load("build_finished.json"), job(state="running"), job(type="waiter")]
    once, _ = _stored(tmp_path, deliveries, "once")
    assert len(once) == 4  # a running job and a waiter store nothing
    shuffled = copy.deepcopy(deliveries * 2)
    random.Random(11).shuffle(shuffled)
    again, duplicates = _stored(tmp_path, shuffled, "shuffled")
    assert (again, duplicates) == (once, {"ci_outcomes": 4})
    jobs = [only(d) for d in _jobs_of_build_88()]
    resolutions = [resolve(order) for order in (jobs, list(reversed(jobs)), [jobs[2], jobs[0], jobs[1]], jobs * 2)]
    assert all(r == resolutions[0] for r in resolutions)
    assert resolutions[0].resolutions[0].verdict == "passed"
