"""Re-runs a CI provider does not number (sediment.ci.reruns; docs/ci-providers.md "Re-runs").

A retried GitLab pipeline and a re-requested third-party check suite keep their id: each final
event must be its own Fact, and the last one (by the provider's time) decides. A CircleCI rerun
and a Buildkite rebuild get a new id: the runs of one lineage resolve together. Payloads are the
documented-field fixtures under ``fixtures/ci/`` with the fields a re-run changes set by hand.
"""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from sediment.ci.reruns import lineage_position
from sediment.ci.resolution import CIResolutionResult, resolve_ci
from sediment.git.repositories import RepositoryContext
from sediment.identifiers import TimestampError
from sediment.ingest import Translation, TranslationError
from sediment.ingest.ci.buildkite import translate_buildkite
from sediment.ingest.ci.circleci import translate_circleci
from sediment.ingest.ci.github import translate_github
from sediment.ingest.ci.gitlab import translate_gitlab
from sediment.ingest.reading.files import ingest_files
from sediment.model.ci_keys import provider_time, rerun_time
from sediment.model.facts import CIOutcome
from sediment.store import FactStore, schema
from sediment.store.keys import table_and_key

FIXTURES = Path(__file__).parent / "fixtures" / "ci"
ORG = "acme"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
TRANSLATORS = {"gitlab": translate_gitlab, "circleci": translate_circleci, "buildkite": translate_buildkite,
               "github": translate_github}


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def translate(provider: str, delivery: dict[str, Any]) -> Translation:
    return TRANSLATORS[provider](delivery, event=None, org_id=ORG, captured_at=T0)


def only(translation: Translation) -> CIOutcome:
    assert translation.skipped is None, translation.skipped
    (fact,) = translation.facts
    assert isinstance(fact, CIOutcome)
    return fact


def resolve(outcomes: list[CIOutcome]) -> CIResolutionResult:
    return resolve_ci(outcomes, quarantine_revision=0, repositories=RepositoryContext.build(ORG, outcomes))


def verdict_of(outcomes: list[CIOutcome]) -> tuple[Any, ...]:
    result = resolve(outcomes)
    (resolution,) = result.resolutions
    (workflow,) = resolution.workflow_resolutions
    return (resolution.verdict, resolution.reliability, resolution.suspected_flake, workflow.verdict_outcome_id,
            workflow.source_outcome_ids, dict(result.skipped))


# --- a GitLab pipeline retried under its id -------------------------------------------------


def pipeline(status: str, finished_at: str | None, detailed: str | None = None) -> dict[str, Any]:
    delivery = load("gitlab/pipeline_hook.json")
    attributes = delivery["payload"]["object_attributes"]
    attributes.update(status=status, detailed_status=detailed or status, finished_at=finished_at)
    if status == "success":  # the retried job passed
        for build in delivery["payload"]["builds"]:
            build.update(status="success", failure_reason=None)
    delivery["headers"]["X-Gitlab-Event-UUID"] = f"uuid-{status}-{finished_at}"
    return delivery


FAILED = pipeline("failed", "2024-04-30 09:20:01 UTC")
RUNNING = pipeline("running", None)
PASSED = pipeline("success", "2024-04-30 10:05:44 UTC")


def _store_deliveries(tmp_path: Path, provider: str, deliveries: list[dict[str, Any]], tag: str
                      ) -> tuple[list[CIOutcome], Any]:
    """Ingest the deliveries (one file each, in this order) into a real store; its outcomes and
    the last report."""
    store = FactStore(f"sqlite:///{tmp_path / f'{tag}.db'}")
    try:
        report = None
        for index, delivery in enumerate(deliveries):
            path = tmp_path / f"{tag}-{index}.json"
            path.write_text(json.dumps(delivery), encoding="utf-8")
            report = ingest_files([str(path)], lambda record: translate(provider, record), store)
        outcomes = [f for f in store.facts("ci_outcomes", ORG) if isinstance(f, CIOutcome)]
        return sorted(outcomes, key=lambda o: o.outcome_id), report
    finally:
        store.close()


def test_a_retried_gitlab_pipeline_stores_each_final_event_and_the_last_decides(tmp_path: Path) -> None:
    failed, passed = only(translate("gitlab", FAILED)), only(translate("gitlab", PASSED))
    assert failed.run_id == passed.run_id and failed.run_attempt is None is passed.run_attempt
    assert failed.outcome_id != passed.outcome_id
    assert table_and_key(failed)[2] != table_and_key(passed)[2]
    assert (rerun_time(failed), rerun_time(passed)) == ("2024-04-30T09:20:01.000000Z", "2024-04-30T10:05:44.000000Z")

    stored, _ = _store_deliveries(tmp_path, "gitlab", [FAILED, RUNNING, PASSED, FAILED, PASSED], "retry")
    assert stored == sorted([failed, passed], key=lambda o: o.outcome_id)  # the running event and redeliveries add none
    # the retry passed: the verdict is the last final event's, and a failed-then-passed run is a suspected flake
    ids = tuple(sorted((failed.outcome_id, passed.outcome_id)))
    assert verdict_of(stored) == ("passed", 0.0, True, passed.outcome_id, ids, {})


def test_the_last_final_event_wins_whatever_the_arrival_order(tmp_path: Path) -> None:
    """A failure retried twice: passed, then failed again. Arrival order never changes the verdict."""
    again = pipeline("failed", "2024-04-30 11:00:00 +0100")  # 10:00 UTC: before the pass at 10:05:44
    latest = pipeline("failed", "2024-04-30T10:30:00.5Z")
    deliveries = [FAILED, PASSED, again, latest]
    expected = None
    for seed in range(6):
        order = copy.deepcopy(deliveries)
        random.Random(seed).shuffle(order)
        stored, _ = _store_deliveries(tmp_path, "gitlab", order, f"shuffle{seed}")
        assert len(stored) == 4
        outcome = verdict_of(stored)
        assert outcome[:3] == ("failed", 0.0, True)
        assert outcome[3] == only(translate("gitlab", latest)).outcome_id
        expected = expected or outcome
        assert outcome == expected
    assert sorted(rerun_time(only(translate("gitlab", d))) or "" for d in deliveries) == ["2024-04-30T09:20:01.000000Z", "2024-04-30T10:00:00.000000Z", "2024-04-30T10:05:44.000000Z",
                  "2024-04-30T10:30:00.500000Z"]


def test_a_final_event_without_a_time_cannot_be_ordered_against_another_result() -> None:
    untimed = only(translate("gitlab", pipeline("success", None)))
    failed = only(translate("gitlab", FAILED))
    assert rerun_time(untimed) is None
    result = resolve([untimed, failed])
    assert result.resolutions == () and result.skipped == {"conflicting_run_identity": 1}
    # agreeing results need no order
    assert verdict_of([untimed, only(translate("gitlab", PASSED))])[:3] == ("passed", 1.0, False)


@pytest.mark.parametrize("value", ["yesterday", "2024-04-30 09:20:01", "2024-04-30 09:20:01 CEST", "1714468801"])
def test_an_unreadable_finished_at_is_refused_naming_the_field(value: str) -> None:
    with pytest.raises(TranslationError, match=r"^object_attributes\.finished_at: .*got '"):
        translate("gitlab", pipeline("failed", value))
    bad = pipeline("failed", None)
    bad["payload"]["object_attributes"]["finished_at"] = 1714468801
    with pytest.raises(TranslationError, match=r"^object_attributes\.finished_at: expected a string, got int$"):
        translate("gitlab", bad)


def test_provider_times_in_every_gitlab_form_read_as_utc() -> None:
    assert provider_time("2016-08-12 15:23:28 UTC") == datetime(2016, 8, 12, 15, 23, 28, tzinfo=UTC)
    assert provider_time("2022-04-01 13:49:55 +0800") == datetime(2022, 4, 1, 5, 49, 55, tzinfo=UTC)
    assert provider_time("2021-02-23T02:41:37.886Z") == datetime(2021, 2, 23, 2, 41, 37, 886000, tzinfo=UTC)
    for bad in ("2022-04-01 13:49:55 +08", "2022-04-01 13:49:55 +0860", "2022-04-01 13:49:55"):
        with pytest.raises(TimestampError):
            provider_time(bad)


# --- a third-party check suite re-requested ------------------------------------------------


def suite(conclusion: str, updated_at: str, action: str = "completed") -> dict[str, Any]:
    delivery = load("github/check_suite.completed.third_party.json")
    body = delivery["payload"]
    body["action"] = action
    body["check_suite"].update(status="completed", conclusion=conclusion, updated_at=updated_at)
    delivery["headers"]["X-GitHub-Delivery"] = f"delivery-{conclusion}-{updated_at}"
    return delivery


def test_a_rerequested_check_suite_is_decided_by_its_last_final_event(tmp_path: Path) -> None:
    first, second = suite("failure", "2022-09-05T10:02:00Z"), suite("success", "2022-09-05T10:40:00Z")
    stored, _ = _store_deliveries(tmp_path, "github", [second, first, second], "suite")
    assert len(stored) == 2 and {o.provider for o in stored} == {"github_checks"}
    winner = only(translate("github", second)).outcome_id
    assert verdict_of(stored)[:4] == ("passed", 0.0, True, winner)
    with pytest.raises(TranslationError, match=r"^check_suite\.updated_at: "):
        translate("github", suite("failure", "Mon, 05 Sep 2022 10:02:00 GMT"))


# --- a CircleCI workflow rerun: a new workflow id ------------------------------------------


def workflow(workflow_id: str, status: str, created_at: str, name: str = "build-and-test") -> dict[str, Any]:
    delivery = load("circleci/workflow_completed.json")
    delivery["payload"]["workflow"].update(id=workflow_id, status=status, created_at=created_at, name=name)
    delivery["payload"]["id"] = f"delivery-{workflow_id}"
    return delivery


def test_a_circleci_rerun_joins_its_workflow_lineage() -> None:
    original = only(translate("circleci", workflow("wf-1", "failed", "2024-04-30T09:00:00.000Z")))
    rerun = only(translate("circleci", workflow("wf-2", "success", "2024-04-30T09:30:00.000Z")))
    assert (original.run_id, rerun.run_id) == ("wf-1", "wf-2")
    for outcomes in ([original, rerun], [rerun, original]):
        result = resolve(outcomes)
        (resolution,) = result.resolutions
        (lineage,) = resolution.workflow_resolutions
        assert (resolution.verdict, resolution.reliability, resolution.suspected_flake) == ("passed", 0.0, True)
        assert (lineage.run_id, lineage.verdict_outcome_id) == ("wf-1", rerun.outcome_id)  # named by the first run
        assert result.skipped == {}
    # a second workflow of the same pipeline is not a rerun: it stays its own run
    deploy = only(translate("circleci", workflow("wf-3", "failed", "2024-04-30T09:31:00.000Z", name="deploy")))
    result = resolve([original, rerun, deploy])
    assert result.resolutions[0].verdict is None  # passed and failed workflows on one commit disagree
    assert result.skipped == {"ambiguous_workflow_verdicts": 1}
    assert len(result.resolutions[0].workflow_resolutions) == 2


def test_circleci_jobs_of_a_rerun_join_the_same_lineage() -> None:
    job = load("circleci/job_completed.json")
    job["payload"]["job"].update(status="failed")
    retried = copy.deepcopy(load("circleci/job_completed.json"))
    retried["payload"]["workflow"].update(id="wf-rerun", created_at="2024-04-30T10:00:00.000Z")
    retried["payload"]["job"].update(id="job-rerun", status="success")
    outcomes = [only(translate("circleci", d)) for d in (job, retried)]
    assert verdict_of(outcomes)[:3] == ("passed", 0.0, True)


def test_an_unreadable_circleci_creation_time_is_refused() -> None:
    with pytest.raises(TranslationError, match=r"^workflow\.created_at: "):
        translate("circleci", workflow("wf-1", "failed", "30 April 2024"))


# --- a Buildkite rebuild: a new build naming the build it rebuilt -------------------------


def build(build_id: str, number: int, state: str, rebuilt_from: tuple[str, int] | None) -> dict[str, Any]:
    delivery = load("buildkite/build_finished.json")
    body = delivery["payload"]["build"]
    body.update(id=build_id, number=number, state=state,
                rebuilt_from=None if rebuilt_from is None else {"id": rebuilt_from[0], "number": rebuilt_from[1]})
    return delivery


def test_a_buildkite_rebuild_chain_is_one_lineage_in_build_number_order() -> None:
    chain = [build("b-87", 87, "failed", None), build("b-88", 88, "failed", ("b-87", 87)),
             build("b-90", 90, "passed", ("b-88", 88))]
    outcomes = [only(translate("buildkite", d)) for d in chain]
    expected = None
    for seed in range(4):
        shuffled = list(outcomes)
        random.Random(seed).shuffle(shuffled)
        outcome = verdict_of(shuffled)
        assert outcome[:4] == ("passed", 0.0, True, outcomes[2].outcome_id)
        assert resolve(shuffled).resolutions[0].workflow_resolutions[0].run_id == "b-87"
        expected = expected or outcome
        assert outcome == expected
    # the rebuild of a build that was never recorded still resolves, alone
    assert verdict_of(outcomes[2:])[:3] == ("passed", 1.0, False)


def test_a_bad_rebuilt_from_or_build_number_is_refused() -> None:
    bad = build("b-88", 88, "passed", ("b-87", 87))
    bad["payload"]["build"]["rebuilt_from"] = {"number": 87}
    with pytest.raises(TranslationError, match=r"^build\.rebuilt_from\.id: missing$"):
        translate("buildkite", bad)
    bad = build("b-88", 88, "passed", None)
    bad["payload"]["build"]["number"] = "88"
    with pytest.raises(TranslationError, match=r"^build\.number: expected an integer"):
        translate("buildkite", bad)


# --- numbered attempts are untouched --------------------------------------------------------


def test_numbered_attempts_still_conflict_on_two_results_of_one_attempt() -> None:
    delivery = json.loads((Path(__file__).parent / "fixtures" / "github" /
                           "workflow_run.completed.failure.attempt1.json").read_text("utf-8"))
    failed = only(translate("github", delivery))
    passed = failed.model_copy(update={"outcome_id": "ci_other", "result": "passed"})
    assert (lineage_position(failed), rerun_time(failed)) == (None, None)
    result = resolve([failed, passed])
    assert result.resolutions == () and result.skipped == {"conflicting_run_identity": 1}


# --- stores of version 6 ---------------------------------------------------------------


def test_a_version_6_store_rekeys_its_ci_outcomes(store_url: str) -> None:
    """A version 6 store keyed a pipeline's final event without its time, so the retry's event was
    a duplicate. After migrating, the stored outcome keeps its id and record, a redelivery of it
    still collapses, and the retry's final event is stored."""
    url = store_url
    failed = only(translate("gitlab", FAILED))
    kept = failed.model_copy(update={"outcome_id": "ci_stored_by_version_6"})
    store = FactStore(url)
    store.append([kept])
    old_key = json.dumps([ORG, "gitlab_ci", "gitlab", "gitlab.com", failed.run_id, 0], separators=(",", ":"))
    with store.engine.begin() as conn:
        conn.execute(update(schema.ci_outcomes).values(natural_key=old_key))
        conn.execute(update(schema.meta).where(schema.meta.c.key == "schema_version").values(value="6"))
    store.close()

    migrated = FactStore(url)
    try:
        assert migrated.schema_version() == 8
        with migrated.engine.connect() as conn:
            (key,) = conn.execute(select(schema.ci_outcomes.c.natural_key)).scalars()
        assert key == table_and_key(failed)[2]
        again = migrated.append([failed, only(translate("gitlab", PASSED))])
        assert (again.stored["ci_outcomes"], again.duplicates["ci_outcomes"]) == (1, 1)
        stored = [f for f in migrated.facts("ci_outcomes", ORG) if isinstance(f, CIOutcome)]
        assert kept in stored and len(stored) == 2
        assert verdict_of(stored)[:3] == ("passed", 0.0, True)
    finally:
        migrated.close()


def test_ingest_gitlab_stores_a_retried_pipeline_and_collapses_its_redelivery(tmp_path: Path) -> None:
    files = []
    for index, delivery in enumerate((FAILED, RUNNING, PASSED)):
        path = tmp_path / f"hook-{index}.json"
        path.write_text(json.dumps(delivery), encoding="utf-8")
        files.append(str(path))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ.update(SEDIMENT_HOME=str(tmp_path / "home"), SEDIMENT_ORG_ID=ORG, SEDIMENT_LOAD_PLUGINS="",
                   SEDIMENT_CAPTURE_TIME="2026-03-03T09:00:00Z")
    summaries = []
    for _ in range(2):
        result = subprocess.run([sys.executable, "-m", "sediment", "ingest", "gitlab", *files, "--json"],
                                capture_output=True, text=True, env=environ, timeout=300, check=False)
        assert result.returncode == 0, result.stderr
        summary = json.loads(result.stdout)
        summaries.append((summary["stored"], summary["duplicates"], summary["skipped"]))
    assert summaries == [({"ci_outcomes": 2}, {}, {"ci_run_not_terminal": 1}),
                         ({}, {"ci_outcomes": 2}, {"ci_run_not_terminal": 1})]


def test_a_buildkite_build_whose_job_is_retried_finishes_again_and_the_retry_decides(tmp_path: Path) -> None:
    """A job of a finished build is retried: the build runs again under its id and sends a second
    ``build.finished``; both are stored, ordered by ``build.finished_at``, and its jobs are left out."""
    first = build("b-87", 87, "failed", None)
    first["payload"]["build"]["finished_at"] = "2024-04-30T09:20:01.000Z"
    again = build("b-87", 87, "passed", None)
    again["payload"]["build"]["finished_at"] = "2024-04-30T09:45:00.000Z"
    stored, _ = _store_deliveries(tmp_path, "buildkite", [again, first, again], "bk-retry")
    assert len(stored) == 2
    winner = only(translate("buildkite", again)).outcome_id
    assert verdict_of(stored)[:4] == ("passed", 0.0, True, winner)
    # the rebuild after it still comes later, whatever the times say: the build number orders builds
    rebuild = build("b-88", 88, "failed", ("b-87", 87))
    rebuild["payload"]["build"]["finished_at"] = "2024-04-30T09:00:00.000Z"
    assert verdict_of([*stored, only(translate("buildkite", rebuild))])[:3] == ("failed", 0.0, True)
    bad = build("b-87", 87, "failed", None)
    bad["payload"]["build"]["finished_at"] = "soon"
    with pytest.raises(TranslationError, match=r"^build\.finished_at: "):
        translate("buildkite", bad)


# --- a run known only from its jobs: every job at its latest try ---------------------------


def gitlab_job(build_id: int, name: str, status: str, retries: int) -> CIOutcome:
    delivery = load("gitlab/job_hook.json")
    delivery["payload"].update(build_id=build_id, build_name=name, build_status=status, retries_count=retries,
                               build_failure_reason="script_failure" if status == "failed" else None)
    return only(translate("gitlab", delivery))


def test_a_gitlab_job_not_retried_keeps_its_pipeline_failed() -> None:
    compile_failed = gitlab_job(7001, "compile", "failed", 0)
    test_failed = gitlab_job(7002, "test", "failed", 0)
    test_passed = gitlab_job(7003, "test", "success", 1)
    assert verdict_of([compile_failed, test_failed, test_passed])[:3] == ("failed", 1.0, False)
    compile_passed = gitlab_job(7004, "compile", "success", 1)
    jobs = [compile_failed, test_failed, test_passed, compile_passed]
    expected = verdict_of(jobs)
    assert expected[:4] == ("passed", 0.0, True, min(test_passed.outcome_id, compile_passed.outcome_id))
    for seed in range(4):
        shuffled = list(jobs)
        random.Random(seed).shuffle(shuffled)
        assert verdict_of(shuffled) == expected


def check_run(job: int, name: str, conclusion: str, completed_at: str | None) -> CIOutcome:
    delivery = load("github/check_run.completed.timed_out.json")
    body = delivery["payload"]["check_run"]
    body.update(id=job, name=name, conclusion=conclusion, completed_at=completed_at,
                details_url=f"https://github.com/octo-org/octo-repo/actions/runs/30433642/job/{job}",
                html_url=f"https://github.com/octo-org/octo-repo/actions/runs/30433642/job/{job}")
    delivery["headers"]["X-GitHub-Delivery"] = f"delivery-{job}"
    return only(translate("github", delivery))


def test_check_runs_of_a_rerun_job_are_tried_in_completion_order() -> None:
    """Check runs name no attempt: a re-run job is a new check run of the same name, numbered by
    ``completed_at``; a run whose failed job passed on its re-run passes, as a suspected flake."""
    lint = check_run(9001, "lint", "success", "2022-09-05T10:50:00Z")
    first = check_run(9002, "test (3.12)", "failure", "2022-09-05T11:00:05Z")
    rerun = check_run(9103, "test (3.12)", "success", "2022-09-05T11:30:00Z")
    assert {o.run_id for o in (lint, first, rerun)} == {"30433642"} and first.run_attempt is None
    expected = verdict_of([lint, first, rerun])
    assert expected[:4] == ("passed", 0.0, True, min(lint.outcome_id, rerun.outcome_id))
    (workflow,) = resolve([lint, first, rerun]).resolutions[0].workflow_resolutions
    assert workflow.workflow_name == ""  # a check run's name is its job's, not its run's
    assert verdict_of([rerun, lint, first]) == expected
    # without a completion time the two tries cannot be ordered: both count, and the failure stands
    untimed = check_run(9103, "test (3.12)", "success", None)
    assert verdict_of([lint, first, untimed])[:3] == ("failed", 1.0, False)


def test_check_run_times_in_other_offsets_order_by_the_instant() -> None:
    """``completed_at`` is read as a time, not compared as text: +02:00 at 12:10 is 10:10 UTC."""
    first = check_run(9002, "test (3.12)", "failure", "2022-09-05T12:10:00+02:00")
    rerun = check_run(9103, "test (3.12)", "success", "2022-09-05T10:20:00Z")
    assert verdict_of([first, rerun])[:4] == ("passed", 0.0, True, rerun.outcome_id)
    with pytest.raises(TranslationError, match=r"^check_run\.completed_at: "):
        check_run(9104, "test (3.12)", "success", "5 Sep 2022")


def test_a_build_number_beyond_twenty_digits_gives_no_place_rather_than_a_wrong_one() -> None:
    huge = build("b-1", 10**20, "passed", None)
    assert lineage_position(only(translate("buildkite", huge))) is None
    assert lineage_position(only(translate("buildkite", build("b-2", 10**20 - 1, "passed", None)))) == "9" * 20


def test_a_long_shuffled_rebuild_chain_is_one_lineage() -> None:
    base = only(translate("buildkite", build("b-0", 0, "failed", None)))
    chain = []
    for index in range(500):
        raw = copy.deepcopy(base.raw)
        raw["build"].update(id=f"b-{index:04d}", number=index,
                            rebuilt_from=None if index == 0 else {"id": f"b-{index - 1:04d}", "number": index - 1})
        chain.append(base.model_copy(update={"outcome_id": f"ci_{index:04d}", "run_id": f"b-{index:04d}", "raw": raw,
                                             "result": "passed" if index == 499 else "failed"}))
    for seed in range(2):
        random.Random(seed).shuffle(chain)
        result = resolve(chain)
        (resolution,) = result.resolutions
        (lineage,) = resolution.workflow_resolutions
        assert (lineage.run_id, lineage.verdict_outcome_id, len(lineage.source_outcome_ids)) == ("b-0000", "ci_0499", 500)
        assert (resolution.verdict, resolution.suspected_flake) == ("passed", True)
