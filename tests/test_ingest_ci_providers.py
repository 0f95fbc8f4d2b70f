"""CI provider webhooks → CIOutcome (docs/ci-providers.md).

Payloads under ``fixtures/ci/<provider>/`` were written for these tests from the providers'
documented field names and structures (see ``fixtures/ci/SOURCES.md``); each state of the
mapping table is driven through the translator by setting the state field of a base payload.
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

from sediment.ci.jobs import runs_of_jobs
from sediment.ci.resolution import resolve_ci
from sediment.git.repositories import RepositoryContext
from sediment.ingest import Translation, TranslationError
from sediment.ingest.ci.buildkite import translate_buildkite
from sediment.ingest.ci.circleci import translate_circleci
from sediment.ingest.ci.github import translate_github
from sediment.ingest.ci.gitlab import translate_gitlab
from sediment.ingest.ci.runs import NOT_TERMINAL
from sediment.ingest.ci.webhooks import PROVIDERS, WebhookRefusal, event_header, translate
from sediment.ingest.reading.files import ingest_files
from sediment.model.ci_keys import job_id
from sediment.model.facts import CIOutcome
from sediment.store import FactStore
from sediment.store.ids import fact_id

FIXTURES = Path(__file__).parent / "fixtures" / "ci"
GITHUB_FIXTURES = Path(__file__).parent / "fixtures" / "github"
ORG = "acme"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
SHA = "9f2c4e1b7a3d5c6e8f0a1b2c3d4e5f60718293a4"
SHA2 = "0d1e2f3a4b5c6d7e8f90a1b2c3d4e5f6a7b8c9d0"
GH_SHA = "acb5820ced9479c074f688cc328bf03f341a511d"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


TRANSLATORS = {"gitlab": translate_gitlab, "circleci": translate_circleci, "buildkite": translate_buildkite,
               "github": translate_github}


def run(name: str, delivery: dict[str, Any] | None = None) -> Translation:
    provider = name.split("/", 1)[0]
    return TRANSLATORS[provider](load(name) if delivery is None else delivery, event=None, org_id=ORG,
                                 captured_at=T0)


def only(translation: Translation) -> CIOutcome:
    assert translation.skipped is None, translation.skipped
    (fact,) = translation.facts
    assert isinstance(fact, CIOutcome)
    return fact


def fields(outcome: CIOutcome) -> dict[str, Any]:
    return {key: value for key, value in outcome.model_dump().items() if key not in ("raw", "captured_at", "org_id")}


def payload_of(delivery: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = delivery["payload"] if "payload" in delivery and "headers" in delivery else delivery
    return body


LEGACY = {"repository_provider": None, "repository_host": None, "repository_id": None}
NONE = {"error_type": None, "reason": None, "source_spec_version": None}


# --- GitLab ------------------------------------------------------------------------------


GITLAB_IDENTITY = {"repository_provider": "gitlab", "repository_host": "gitlab.com", "repository_id": "41234567"}


def test_gitlab_pipeline_hook_of_a_merge_request() -> None:
    outcome = only(run("gitlab/pipeline_hook.json"))
    assert fields(outcome) == {
        "schema_version": 2, **GITLAB_IDENTITY, **NONE,
        # a retried pipeline keeps its id: the final event's own time keys it (sediment.ci.reruns)
        "outcome_id": fact_id("ci", ORG, "gitlab_ci", "1288401977", 0, "at", "2024-04-30T09:20:01.000000Z"),
        "provider": "gitlab_ci",
        "run_id": "1288401977",
        "run_attempt": None,
        "repo": "acme-group/widget",
        "commit_sha": SHA,
        "branch": "feature/parser",
        "result": "failed",  # one build failed with script_failure: not a timeout
        "workflow_name": "nightly checks",
        "workflow_id": None,
        "workflow_path": "ci/pipeline.yml",
        "run_url": "https://gitlab.com/acme-group/widget/-/pipelines/1288401977",
        "provider_result": "failed/failed",
        "source_event_type": "Pipeline Hook",
        "source_event_id": "6d1c0a54-8c1f-4b7e-9a51-2f5b8e0c4d11",
        "pr_number": 57,  # merge_request.iid, not its global id
    }
    assert outcome.raw == payload_of(load("gitlab/pipeline_hook.json"))
    assert job_id(outcome) is None


def test_gitlab_pipeline_timeout_is_inferred_from_its_failed_builds() -> None:
    outcome = only(run("gitlab/pipeline_hook_timeout.json"))
    assert (outcome.result, outcome.provider_result) == ("timed_out", "failed/failed")
    assert (outcome.branch, outcome.pr_number, outcome.workflow_name, outcome.workflow_path) == ("main", None, "", None)


def test_gitlab_pipeline_with_one_timeout_and_one_script_failure_is_failed() -> None:
    delivery = load("gitlab/pipeline_hook_timeout.json")
    delivery["payload"]["builds"][2]["failure_reason"] = "script_failure"
    assert only(run("gitlab/pipeline_hook_timeout.json", delivery)).result == "failed"


def test_gitlab_identity_host_is_configuration_and_the_project_id_must_be_a_number() -> None:
    outcome = only(translate_gitlab(load("gitlab/job_hook.json"), org_id=ORG, captured_at=T0,
                                    host="gitlab.example.org"))
    assert (outcome.repository_provider, outcome.repository_host, outcome.repository_id) == (
        "gitlab", "gitlab.example.org", "41234567")
    delivery = load("gitlab/pipeline_hook.json")
    delivery["payload"]["project"]["id"] = "41234567"
    with pytest.raises(TranslationError, match="project.id: expected an integer"):
        run("gitlab/pipeline_hook.json", delivery)
    with pytest.raises(TranslationError, match="repository_host must be a lowercase DNS host"):
        translate_gitlab(load("gitlab/job_hook.json"), org_id=ORG, captured_at=T0, host="GitLab Server")


def test_gitlab_old_server_tag_pipeline() -> None:
    outcome = only(run("gitlab/pipeline_hook_old_server_tag.json"))
    assert outcome.repository_provider is None  # no project.id: a legacy outcome
    assert (outcome.branch, outcome.provider_result, outcome.result) == ("", "success", "passed")
    assert outcome.run_url == "https://gitlab.example.org/acme/widget/-/pipelines/2031"
    assert outcome.source_event_type == "pipeline"  # no header: the object_kind
    assert (outcome.source_event_id, outcome.workflow_path, outcome.pr_number) == (None, None, None)


def test_gitlab_job_hook_is_a_job_of_its_pipeline() -> None:
    outcome = only(run("gitlab/job_hook.json"))
    assert (outcome.run_id, outcome.run_attempt, outcome.repo) == ("1288401977", 2, "acme-group/widget")
    assert (outcome.result, outcome.provider_result) == ("timed_out", "failed/job_execution_timeout")
    assert (outcome.branch, outcome.source_event_type) == ("feature/parser", "Job Hook")
    assert job_id(outcome) == "7102"
    assert outcome.outcome_id == fact_id("ci", ORG, "gitlab_ci", "1288401977", 2, "job", "7102")


def test_gitlab_created_job_with_a_failure_reason_is_not_terminal() -> None:
    assert run("gitlab/build_hook_created_old_server.json") == Translation.skip(NOT_TERMINAL)


GITLAB_PIPELINE_STATES = [
    ("success", "passed"), ("failed", "failed"), ("canceled", "cancelled"), ("canceling", "cancelled"),
    ("skipped", "skipped"),
    *[(state, None) for state in ("created", "waiting_for_resource", "preparing", "pending", "running", "manual",
                                  "scheduled", "a_state_gitlab_adds_later")],
]


@pytest.mark.parametrize(("status", "result"), GITLAB_PIPELINE_STATES)
def test_every_gitlab_pipeline_state(status: str, result: str | None) -> None:
    delivery = load("gitlab/pipeline_hook_old_server_tag.json")
    delivery["object_attributes"]["status"] = status
    translation = run("gitlab/pipeline_hook_old_server_tag.json", delivery)
    if result is None:
        assert translation == Translation.skip(NOT_TERMINAL)
    else:
        assert (only(translation).result, only(translation).provider_result) == (result, status)


def test_gitlab_passed_with_warnings_is_passed() -> None:
    delivery = load("gitlab/pipeline_hook.json")
    delivery["payload"]["object_attributes"].update(status="success", detailed_status="passed with warnings")
    outcome = only(run("gitlab/pipeline_hook.json", delivery))
    assert (outcome.result, outcome.provider_result) == ("passed", "success/passed with warnings")


GITLAB_JOB_STATES = [
    ("success", None, "passed", "success"), ("failed", "script_failure", "failed", "failed/script_failure"),
    ("failed", "stuck_or_timeout_failure", "timed_out", "failed/stuck_or_timeout_failure"),
    ("failed", "job_execution_timeout", "timed_out", "failed/job_execution_timeout"),
    ("failed", None, "failed", "failed"), ("canceled", None, "cancelled", "canceled"),
    ("skipped", None, "skipped", "skipped"),
    *[(state, "script_failure", None, None) for state in ("created", "pending", "running", "manual")],
]


@pytest.mark.parametrize(("status", "reason", "result", "provider_result"), GITLAB_JOB_STATES)
def test_every_gitlab_job_state(status: str, reason: str | None, result: str | None,
                                provider_result: str | None) -> None:
    delivery = load("gitlab/job_hook.json")
    delivery["payload"].update(build_status=status, build_failure_reason=reason)
    translation = run("gitlab/job_hook.json", delivery)
    if result is None:
        assert translation == Translation.skip(NOT_TERMINAL)
    else:
        assert (only(translation).result, only(translation).provider_result) == (result, provider_result)


def test_gitlab_other_object_kinds_are_unsupported_events() -> None:
    assert translate_gitlab({"object_kind": "push"}, org_id=ORG, captured_at=T0) == Translation.skip(
        "unsupported_event:push")


@pytest.mark.parametrize(("change", "message"), [
    (lambda p: p["object_attributes"].pop("sha"), "object_attributes.sha: missing"),
    (lambda p: p["object_attributes"].update(id=True), "object_attributes.id: expected a number"),
    (lambda p: p["project"].update(path_with_namespace="a/b/c"), "project.path_with_namespace:"),
    (lambda p: p["merge_request"].update(iid="57"), "merge_request.iid: expected an integer"),
    (lambda p: p.update(builds={}), "builds: expected an array"),
])
def test_gitlab_refusals_name_the_field(change: Any, message: str) -> None:
    delivery = load("gitlab/pipeline_hook.json")
    change(delivery["payload"])
    with pytest.raises(TranslationError, match=message.replace("[", r"\[")):
        run("gitlab/pipeline_hook.json", delivery)


@pytest.mark.parametrize("reason", [["stuck_or_timeout_failure"], {"reason": "x"}, 7, True])
def test_gitlab_failed_build_whose_failure_reason_is_not_a_string_is_refused_naming_it(reason: Any) -> None:
    """Regression: a list (unhashable) ``failure_reason`` raised TypeError instead of a refusal."""
    delivery = load("gitlab/pipeline_hook_timeout.json")
    delivery["payload"]["builds"][1]["failure_reason"] = reason
    assert delivery["payload"]["builds"][1]["status"] == "failed"
    with pytest.raises(TranslationError, match=r"^builds\[1\]\.failure_reason: expected a string, got "):
        run("gitlab/pipeline_hook_timeout.json", delivery)
    body = json.dumps(delivery["payload"]).encode()
    with pytest.raises(WebhookRefusal, match=r"builds\[1\]\.failure_reason: expected a string") as caught:
        translate("gitlab", "Pipeline Hook", body, org_id=ORG, captured_at=T0)  # the receiver's path
    assert "\n" not in str(caught.value)


# --- CircleCI ----------------------------------------------------------------------------


def test_circleci_workflow_completed() -> None:
    outcome = only(run("circleci/workflow_completed.json"))
    workflow = "f3a9c0de-2b1c-4e8d-9a7f-6b5c4d3e2f10"
    assert fields(outcome) == {
        "schema_version": 2, **LEGACY, **NONE,
        "outcome_id": fact_id("ci", ORG, "circleci", workflow, 0),
        "provider": "circleci", "run_id": workflow, "run_attempt": None, "repo": "acme/widget",
        "commit_sha": SHA, "branch": "feature/parser", "result": "failed", "workflow_name": "build-and-test",
        "workflow_id": None, "workflow_path": None,
        "run_url": f"https://app.circleci.com/pipelines/github/acme/widget/130/workflows/{workflow}",
        "provider_result": "failed", "source_event_type": "workflow-completed",
        "source_event_id": "3888f21b-eaa7-38e3-8f3d-75a63bba8895", "pr_number": None,
    }


def test_circleci_job_completed_is_a_job_of_its_workflow() -> None:
    outcome = only(run("circleci/job_completed.json"))
    assert (outcome.run_id, outcome.result, outcome.provider_result) == (
        "f3a9c0de-2b1c-4e8d-9a7f-6b5c4d3e2f10", "timed_out", "timedout")
    assert job_id(outcome) == "1d2c3b4a-5e6f-4a8b-9c0d-e1f2a3b4c5d6"


def test_circleci_project_without_vcs_reads_trigger_parameters() -> None:
    outcome = only(run("circleci/workflow_completed_gitlab_project.json"))
    assert (outcome.repo, outcome.commit_sha, outcome.branch, outcome.result) == (
        "acme-group/widget", SHA2, "main", "passed")


def test_circleci_tag_pipeline_has_no_branch() -> None:
    delivery = load("circleci/workflow_completed.json")
    delivery["payload"]["pipeline"]["vcs"]["branch"] = None
    delivery["payload"]["pipeline"]["vcs"]["tag"] = "v1.0.0"
    assert only(run("circleci/workflow_completed.json", delivery)).branch == ""


CIRCLECI_WORKFLOW_STATES = [
    ("success", "passed"), ("failed", "failed"), ("error", "failed"), ("canceled", "cancelled"),
    ("not_run", "skipped"), ("on_hold", None), ("running", None), ("failing", None), ("unauthorized", None),
]


@pytest.mark.parametrize(("status", "result"), CIRCLECI_WORKFLOW_STATES)
def test_every_circleci_workflow_state(status: str, result: str | None) -> None:
    delivery = load("circleci/workflow_completed.json")
    delivery["payload"]["workflow"]["status"] = status
    translation = run("circleci/workflow_completed.json", delivery)
    if result is None:
        assert translation == Translation.skip(NOT_TERMINAL)
    else:
        assert (only(translation).result, only(translation).provider_result) == (result, status)


CIRCLECI_JOB_STATES = [
    ("success", "passed"), ("failed", "failed"), ("infrastructure_fail", "failed"), ("timedout", "timed_out"),
    ("canceled", "cancelled"), ("not_run", "skipped"), ("unauthorized", None), ("terminated-unknown", None),
    ("running", None),
]


@pytest.mark.parametrize(("status", "result"), CIRCLECI_JOB_STATES)
def test_every_circleci_job_state(status: str, result: str | None) -> None:
    delivery = load("circleci/job_completed.json")
    delivery["payload"]["job"]["status"] = status
    translation = run("circleci/job_completed.json", delivery)
    if result is None:
        assert translation == Translation.skip(NOT_TERMINAL)
    else:
        assert (only(translation).result, only(translation).provider_result) == (result, status)


def test_circleci_header_and_type_must_agree() -> None:
    delivery = load("circleci/workflow_completed.json")
    delivery["headers"]["circleci-event-type"] = "job-completed"
    with pytest.raises(TranslationError, match="type: 'workflow-completed' disagrees"):
        run("circleci/workflow_completed.json", delivery)


# --- Buildkite ---------------------------------------------------------------------------


def test_buildkite_build_finished() -> None:
    outcome = only(run("buildkite/build_finished.json"))
    build = "0190a1b2-c3d4-4e5f-8a9b-0c1d2e3f4a5b"
    assert fields(outcome) == {
        "schema_version": 2, **LEGACY, **NONE,
        "outcome_id": fact_id("ci", ORG, "buildkite", build, 0, "at", "2024-04-30T09:20:00.000000Z"),  # finished_at
        "provider": "buildkite", "run_id": build, "run_attempt": None, "repo": "acme/widget",
        "commit_sha": SHA, "branch": "feature/parser", "result": "passed", "workflow_name": "Widget CI",
        "workflow_id": "849411f9-9e6d-4739-a0d8-e247088e9b52", "workflow_path": None,
        "run_url": "https://buildkite.com/acme/widget/builds/88", "provider_result": "passed",
        "source_event_type": "build.finished", "source_event_id": None, "pr_number": 57,
    }


def test_buildkite_blocked_build_is_not_terminal_whatever_its_state() -> None:
    assert run("buildkite/build_finished_blocked.json") == Translation.skip(NOT_TERMINAL)


BUILDKITE_STATES = [
    ("passed", "passed"), ("failed", "failed"), ("canceled", "cancelled"), ("canceling", "cancelled"),
    ("skipped", "skipped"), ("not_run", "skipped"),
    *[(state, None) for state in ("scheduled", "running", "waiting", "waiting_failed", "blocked", "failing")],
]


@pytest.mark.parametrize(("state", "result"), BUILDKITE_STATES)
def test_every_buildkite_build_state(state: str, result: str | None) -> None:
    delivery = load("buildkite/build_finished.json")
    delivery["payload"]["build"]["state"] = state
    translation = run("buildkite/build_finished.json", delivery)
    if result is None:
        assert translation == Translation.skip(NOT_TERMINAL)
    else:
        assert (only(translation).result, only(translation).provider_result) == (result, state)


def test_buildkite_cancel_reason_is_kept() -> None:
    delivery = load("buildkite/build_finished.json")
    delivery["payload"]["build"].update(state="canceled", cancel_reason="superseded by build 89")
    assert only(run("buildkite/build_finished.json", delivery)).reason == "superseded by build 89"


def test_buildkite_head_commit_is_refused() -> None:
    delivery = load("buildkite/build_finished.json")
    delivery["payload"]["build"]["commit"] = "HEAD"
    with pytest.raises(TranslationError, match="build.commit: 'HEAD' is not a commit SHA"):
        run("buildkite/build_finished.json", delivery)


def test_buildkite_job_finished_is_a_job_of_its_build() -> None:
    outcome = only(run("buildkite/job_finished.json"))
    build = "0190a1b2-c3d4-4e5f-8a9b-0c1d2e3f4a5b"
    assert (outcome.run_id, outcome.run_attempt, outcome.result, outcome.provider_result) == (
        build, 1, "failed", "failed")
    assert job_id(outcome) == "0190a1b3-1e2f-4a5b-9c6d-7e8f90a1b2c3"
    assert outcome.outcome_id == fact_id("ci", ORG, "buildkite", build, 1, "job", job_id(outcome))
    retried = only(run("buildkite/job_finished_retried.json"))
    assert (retried.run_id, retried.run_attempt, retried.result) == (build, 2, "passed")


def test_buildkite_other_events_are_unsupported() -> None:
    delivery = load("buildkite/build_finished.json")
    delivery["headers"]["X-Buildkite-Event"] = delivery["payload"]["event"] = "agent.connected"
    assert run("buildkite/build_finished.json", delivery) == Translation.skip("unsupported_event:agent.connected")


# --- GitHub jobs and checks --------------------------------------------------------------


def test_github_workflow_job_is_a_job_of_its_run() -> None:
    outcome = only(run("github/workflow_job.completed.failure.json"))
    assert fields(outcome) == {
        "schema_version": 2, "repository_provider": "github", "repository_host": "github.com",
        "repository_id": "300029405", **NONE,
        "outcome_id": fact_id("ci", ORG, "github_actions", "30433642", 1, "job", "8231001"),
        "provider": "github_actions", "run_id": "30433642", "run_attempt": 1, "repo": "octo-org/octo-repo",
        "commit_sha": GH_SHA, "branch": "cache-node-modules", "result": "failed", "workflow_name": "Build",
        "workflow_id": None, "workflow_path": None,
        "run_url": "https://github.com/octo-org/octo-repo/actions/runs/30433642/attempts/1",
        "provider_result": "completed/failure", "source_event_type": "github.workflow_job.completed",
        "source_event_id": "5d2e1c40-2e2a-11ed-9b7e-0242ac120002", "pr_number": None,
    }


def test_github_workflow_job_in_progress_is_not_terminal() -> None:
    assert run("github/workflow_job.in_progress.json") == Translation.skip(NOT_TERMINAL)


def test_github_check_run_timed_out_is_scored_from_the_check_not_its_suite() -> None:
    outcome = only(run("github/check_run.completed.timed_out.json"))
    assert (outcome.provider, outcome.run_id, outcome.run_attempt) == ("github_actions", "30433642", None)
    assert (outcome.result, outcome.provider_result) == ("timed_out", "completed/timed_out")
    assert outcome.raw["check_suite"]["conclusion"] == "cancelled"  # kept, never spread to the job
    assert (outcome.workflow_name, job_id(outcome)) == ("test (3.12)", "8231001")


def test_github_check_run_cancelled() -> None:
    outcome = only(run("github/check_run.completed.cancelled.json"))
    assert (outcome.result, outcome.provider_result) == ("cancelled", "completed/cancelled")


def test_github_third_party_check_run_belongs_to_its_suite() -> None:
    outcome = only(run("github/check_run.completed.third_party.json"))
    assert (outcome.provider, outcome.run_id, outcome.result) == ("github_checks", "1300001111", "failed")


def test_github_third_party_check_suite_is_run_level() -> None:
    outcome = only(run("github/check_suite.completed.third_party.json"))
    assert (outcome.provider, outcome.run_id, outcome.result, outcome.provider_result) == (
        "github_checks", "1300001111", "failed", "completed/failure")
    assert (outcome.workflow_name, outcome.pr_number, job_id(outcome)) == ("Octo Linter", 2, None)


def test_github_actions_check_suite_is_declined() -> None:
    assert run("github/check_suite.completed.actions.json") == Translation.skip("check_suite_of_actions_run")


def test_github_actions_check_run_without_a_run_id_is_refused() -> None:
    delivery = load("github/check_run.completed.timed_out.json")
    delivery["payload"]["check_run"]["details_url"] = "https://example.com/x"
    delivery["payload"]["check_run"]["html_url"] = "https://github.com/octo-org/octo-repo/runs/8231001"
    with pytest.raises(TranslationError, match="check_run.details_url: an Actions check run names no"):
        run("github/check_run.completed.timed_out.json", delivery)


GITHUB_STATES = [
    ("completed", "success", "passed"), ("completed", "failure", "failed"),
    ("completed", "startup_failure", "failed"), ("completed", "timed_out", "timed_out"),
    ("completed", "cancelled", "cancelled"), ("completed", "skipped", "skipped"),
    ("completed", "neutral", "skipped"), ("completed", "action_required", "unknown"),
    ("completed", "stale", "unknown"), ("completed", None, "unknown"),
    ("queued", None, None), ("in_progress", None, None), ("waiting", None, None), ("requested", None, None),
]


@pytest.mark.parametrize("event", ["workflow_job", "check_run"])
@pytest.mark.parametrize(("status", "conclusion", "result"), GITHUB_STATES)
def test_every_github_job_state(event: str, status: str, conclusion: str | None, result: str | None) -> None:
    name = "github/workflow_job.completed.failure.json" if event == "workflow_job" else \
        "github/check_run.completed.timed_out.json"
    delivery = load(name)
    delivery["payload"][event].update(status=status, conclusion=conclusion)
    translation = run(name, delivery)
    if result is None:
        assert translation == Translation.skip(NOT_TERMINAL)
    else:
        outcome = only(translation)
        assert (outcome.result, outcome.provider_result) == (result, f"{status}/{conclusion}" if conclusion
                                                             else status)


# --- runs, jobs, redelivery --------------------------------------------------------------

GITHUB_RUN_FILES = ["github/workflow_job.completed.failure.json", "github/workflow_job.completed.success.json",
                    "github/check_run.completed.timed_out.json", "github/check_run.completed.cancelled.json"]


def _facts(names: list[str]) -> list[CIOutcome]:
    found = []
    for name in names:
        translation = run(name)
        found.extend(f for f in translation.facts if isinstance(f, CIOutcome))
    return found


def _resolve(outcomes: list[CIOutcome]) -> Any:
    context = RepositoryContext.build(ORG, outcomes)
    return resolve_ci(outcomes, quarantine_revision=0, repositories=context)


def _workflow_run_failure() -> CIOutcome:
    delivery = json.loads((GITHUB_FIXTURES / "workflow_run.completed.failure.attempt1.json").read_text("utf-8"))
    return only(translate_github(delivery, event=None, org_id=ORG, captured_at=T0))


def test_a_run_that_also_arrived_as_workflow_run_is_counted_once() -> None:
    run_level = _workflow_run_failure()
    jobs = _facts(GITHUB_RUN_FILES)
    assert {o.run_id for o in jobs} == {run_level.run_id}  # the jobs name the same run
    assert len({o.outcome_id for o in [run_level, *jobs]}) == 5  # none shadows another in the store
    result = _resolve([*jobs, run_level])
    (resolution,) = result.resolutions
    (workflow,) = resolution.workflow_resolutions
    assert (workflow.run_id, workflow.verdict, workflow.source_outcome_ids) == (
        "30433642", "failed", (run_level.outcome_id,))
    assert result.skipped == {}


def test_a_run_known_only_from_its_jobs_is_judged_by_its_worst_job() -> None:
    jobs = _facts(GITHUB_RUN_FILES)
    chosen = runs_of_jobs(jobs)
    # the check runs name no attempt and the same jobs arrive as workflow_job: they are left out
    assert [(o.source_event_type, o.result) for o in chosen] == [("github.workflow_job.completed", "failed")]
    (resolution,) = _resolve(jobs).resolutions
    assert resolution.verdict == "failed"
    passing = [o for o in jobs if o.result == "passed"]
    (resolution,) = _resolve(passing).resolutions
    assert resolution.verdict == "passed"


def test_a_gitlab_job_retried_in_a_later_attempt_decides_the_lineage() -> None:
    first = load("gitlab/job_hook.json")
    first["payload"].update(retries_count=0, build_failure_reason="script_failure")
    retried = load("gitlab/job_hook.json")
    retried["payload"].update(build_id=7202, retries_count=1, build_status="success", build_failure_reason=None)
    other = load("gitlab/job_hook.json")
    other["payload"].update(build_id=7001, build_name="compile", retries_count=0, build_status="success",
                            build_failure_reason=None)
    outcomes = [only(run("gitlab/job_hook.json", d)) for d in (first, retried, other)]
    (resolution,) = _resolve(outcomes).resolutions
    assert resolution.repository_identity is not None
    assert resolution.repository_identity.provider == "gitlab"
    assert (resolution.verdict, resolution.suspected_flake) == ("passed", True)


ALL_FILES = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("*/*.json"))


def _stored(tmp_path: Path, names: list[str], tag: str) -> list[str]:
    store = FactStore(f"sqlite:///{tmp_path / f'{tag}.db'}")
    try:
        for name in names:
            provider = name.split("/", 1)[0]
            translator = TRANSLATORS[provider]
            ingest_files([str(FIXTURES / name)],
                         lambda record, t=translator: t(record, event=None, org_id=ORG, captured_at=T0), store)
        return sorted(f.outcome_id for f in store.facts("ci_outcomes", ORG) if isinstance(f, CIOutcome))
    finally:
        store.close()


def test_redelivery_in_any_order_stores_the_same_facts(tmp_path: Path) -> None:
    once = _stored(tmp_path, ALL_FILES, "once")
    assert len(once) == 16  # 20 deliveries, 4 not final (or an Actions suite)
    shuffled = ALL_FILES * 2
    random.Random(7).shuffle(shuffled)
    assert _stored(tmp_path, shuffled, "twice") == once
    resolutions = [_resolve(_facts([*GITHUB_RUN_FILES, "github/check_suite.completed.third_party.json"]))
                   for _ in range(2)]
    again = _facts([*list(reversed(GITHUB_RUN_FILES)), "github/check_suite.completed.third_party.json"])
    assert resolutions[0] == resolutions[1] == _resolve(again)


# --- the webhook registry ----------------------------------------------------------------


@pytest.mark.parametrize(("provider", "name"), [
    ("gitlab", "gitlab/pipeline_hook.json"), ("circleci", "circleci/workflow_completed.json"),
    ("buildkite", "buildkite/build_finished.json"), ("buildkite", "buildkite/job_finished.json"),
    ("github", "github/workflow_job.completed.failure.json"),
])
def test_webhook_registry_translates_a_body_like_the_ingest_command(provider: str, name: str) -> None:
    delivery = load(name)
    header = event_header(provider)
    assert header is not None
    event = next(v for k, v in delivery["headers"].items() if k.lower() == header.lower())
    delivery_id = delivery["headers"].get("X-GitHub-Delivery") or delivery["headers"].get("X-Gitlab-Event-UUID")
    body = json.dumps(delivery["payload"]).encode()
    live = translate(provider, event, body, org_id=ORG, captured_at=T0, delivery_id=delivery_id)
    assert live == run(name)


def test_webhook_registry_knows_every_provider() -> None:
    assert PROVIDERS == ("github", "gitlab", "circleci", "buildkite", "ci", "litellm")
    ci = load("gitlab/pipeline_hook.json")
    record = json.loads((FIXTURES / "gitlab_pipeline_hook.json").read_text("utf-8"))
    assert translate("ci", None, json.dumps(record).encode(), org_id=ORG, captured_at=T0).facts
    assert ci  # the vendor-neutral record and the vendor payload are different inputs


@pytest.mark.parametrize(("body", "message"), [
    (b'{"object_kind": "pipeline", "object_kind": "build"}', "body: duplicate key 'object_kind'"),
    (b"{not json", "body: not JSON"),
    (b"[1, 2]", "body: expected a JSON object, got list"),
    (b'\xff{}', "body: not UTF-8"),
    (b'{"object_kind": "pipeline", "object_attributes": {"status": "success"}}', "object_attributes.id: missing"),
])
def test_webhook_refusals_are_one_line(body: bytes, message: str) -> None:
    with pytest.raises(WebhookRefusal, match=message) as caught:
        translate("gitlab", "Pipeline Hook", body, org_id=ORG, captured_at=T0)
    assert "\n" not in str(caught.value)


def test_webhook_registry_refuses_an_unknown_provider() -> None:
    with pytest.raises(ValueError, match="unknown webhook provider 'jenkins'"):
        translate("jenkins", None, b"{}", org_id=ORG, captured_at=T0)


# --- the commands ------------------------------------------------------------------------


def sediment(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ.update(SEDIMENT_HOME=str(home), SEDIMENT_ORG_ID=ORG, SEDIMENT_CAPTURE_TIME="2026-03-03T09:00:00Z",
                   SEDIMENT_LOAD_PLUGINS="")
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=environ,
                          timeout=300, check=False)


def test_ingest_gitlab_refuses_a_list_failure_reason_in_one_line_and_keeps_the_rest(tmp_path: Path) -> None:
    """Regression: a failed build whose ``failure_reason`` is a list crashed the command (exit 1)
    and lost the good deliveries of the same file."""
    broken = load("gitlab/pipeline_hook_timeout.json")
    broken["payload"]["builds"][1]["failure_reason"] = ["stuck_or_timeout_failure"]
    path = tmp_path / "deliveries.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in (load("gitlab/pipeline_hook.json"), broken,
                                                         load("gitlab/job_hook.json"))) + "\n", encoding="utf-8")
    result = sediment(tmp_path, "ingest", "gitlab", str(path), "--json")
    assert result.returncode == 8, result.stderr
    assert "Traceback" not in result.stderr
    refusals = [line for line in result.stderr.splitlines() if f"{path}:" in line]
    assert refusals == [f"error: {path}:2: builds[1].failure_reason: expected a string, got list"], result.stderr
    summary = json.loads(result.stdout)
    assert (summary["stored"], summary["failed"]) == ({"ci_outcomes": 2}, 1)


@pytest.mark.slow
def test_ingest_commands_store_report_and_refuse_per_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    good = json.dumps(load("gitlab/pipeline_hook.json"))
    broken = copy.deepcopy(load("gitlab/pipeline_hook.json"))
    del broken["payload"]["object_attributes"]["sha"]
    bad.write_text(good + "\n" + json.dumps(broken) + "\n", encoding="utf-8")
    result = sediment(tmp_path, "ingest", "gitlab", str(bad), str(FIXTURES / "gitlab/job_hook.json"),
                      str(FIXTURES / "gitlab/build_hook_created_old_server.json"), "--json")
    assert result.returncode == 8, result.stderr
    assert f"{bad}:2: object_attributes.sha: missing" in result.stderr
    summary = json.loads(result.stdout)
    assert (summary["stored"], summary["skipped"], summary["failed"]) == (
        {"ci_outcomes": 2}, {NOT_TERMINAL: 1}, 1)
    for command, name in (("circleci", "circleci/job_completed.json"), ("buildkite", "buildkite/build_finished.json"),
                          ("buildkite", "buildkite/job_finished.json")):
        result = sediment(tmp_path, "ingest", command, str(FIXTURES / name), "--json")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["stored"] == {"ci_outcomes": 1}
        again = sediment(tmp_path, "ingest", command, str(FIXTURES / name), "--json")
        assert json.loads(again.stdout)["duplicates"] == {"ci_outcomes": 1}
    bare = sediment(tmp_path, "ingest", "circleci", str(FIXTURES / "circleci/workflow_completed_gitlab_project.json"),
                    "--event", "workflow-completed", "--json")
    assert json.loads(bare.stdout)["stored"] == {"ci_outcomes": 1}
    hosted = sediment(tmp_path / "other", "ingest", "gitlab", "--host", "gitlab.example.org",
                      str(FIXTURES / "gitlab/job_hook.json"), "--json")
    assert hosted.returncode == 0, hosted.stderr
    store = FactStore(f"sqlite:///{tmp_path / 'other' / 'facts.db'}")
    try:
        (outcome,) = store.facts("ci_outcomes", ORG)
        assert isinstance(outcome, CIOutcome) and outcome.repository_host == "gitlab.example.org"
    finally:
        store.close()
    helped = sediment(tmp_path, "ingest", "gitlab", "--help")
    assert "--host" in helped.stdout and "Pipeline Hook" in helped.stdout
