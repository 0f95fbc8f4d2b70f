"""Vendor-neutral CI outcomes (docs/ci-providers.md, "Any other CI").

Each fixture under ``fixtures/ci/`` is what a sender would post after mapping its vendor's
webhook (kept whole in ``raw``) by upstream's mapping tables; see ``fixtures/ci/SOURCES.md``.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sediment.ingest import TranslationError
from sediment.ingest.ci.neutral import translate_ci
from sediment.ingest.facts_jsonl import json_copy
from sediment.model.facts import CIOutcome
from sediment.store.ids import fact_id

FIXTURES = Path(__file__).parent / "fixtures" / "ci"
ORG = "acme"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def outcome_of(record: dict[str, Any], *, org_id: str = ORG) -> CIOutcome:
    translation = translate_ci(record, org_id=org_id, captured_at=T0)
    assert translation.skipped is None and translation.warnings == ()
    (fact,) = translation.facts
    assert isinstance(fact, CIOutcome)
    return fact


def dump(outcome: CIOutcome) -> dict[str, Any]:
    return {key: value for key, value in outcome.model_dump().items() if key != "raw"}


COMMON = {
    "repository_provider": None,
    "repository_host": None,
    "repository_id": None,
    "org_id": ORG,
    "error_type": None,
    "reason": None,
    "source_spec_version": None,
}


def test_gitlab_pipeline_hook() -> None:
    record = load("gitlab_pipeline_hook.json")
    outcome = outcome_of(record)
    assert dump(outcome) == {
        **COMMON,
        "schema_version": 2,
        "outcome_id": fact_id("ci", ORG, "gitlab_ci", "31", 0, "at", "2016-08-12T15:26:29.000000Z"),  # finished_at
        "provider": "gitlab_ci",
        "run_id": "31",
        "run_attempt": None,
        "repo": "gitlab-org/gitlab-test",
        "commit_sha": "bcbb5ec396a2c0f828686f14fac9b80b780504f2",
        "branch": "test",  # merge_request.source_branch, not object_attributes.ref
        "result": "passed",
        "workflow_name": "",
        "workflow_id": None,
        "workflow_path": None,
        "run_url": "http://192.168.64.1:3005/gitlab-org/gitlab-test/-/pipelines/31",
        "provider_result": "success/passed",
        "source_event_type": "Pipeline Hook",
        "source_event_id": None,
        "pr_number": 1,  # merge_request.iid
        "captured_at": T0,
    }
    assert outcome.raw == record["raw"]
    assert outcome.raw["object_kind"] == "pipeline"


def test_circleci_workflow_completed() -> None:
    record = load("circleci_workflow_completed.json")
    outcome = outcome_of(record)
    run_id = "fda08377-fe7e-46b1-8992-3a7aaecac9c3"
    assert dump(outcome) == {
        **COMMON,
        "schema_version": 2,
        "outcome_id": fact_id("ci", ORG, "circleci", run_id, 0),
        "provider": "circleci",
        "run_id": run_id,
        "run_attempt": None,
        "repo": "circleci/webhook-service",
        "commit_sha": "1dc6aa69429bff4806ad6afe58d3d8f57e25973e",
        "branch": "main",
        "result": "passed",
        "workflow_name": "build-test-deploy",
        "workflow_id": None,
        "workflow_path": None,
        "run_url": f"https://app.circleci.com/pipelines/github/circleci/webhook-service/130/workflows/{run_id}",
        "provider_result": "success",
        "source_event_type": "workflow-completed",
        "source_event_id": "3888f21b-eaa7-38e3-8f3d-75a63bba8895",
        "pr_number": None,
        "captured_at": datetime(2021, 9, 1, 22, 49, 35, tzinfo=UTC),  # declared by the sender
    }
    assert outcome.raw == record["raw"]


def test_circleci_gitlab_project_failed_workflow() -> None:
    record = load("circleci_gitlab_workflow_failed.json")
    outcome = outcome_of(record)
    run_id = "c2006ece-778d-49fc-9e6e-b9965f72bee9"
    assert dump(outcome) == {
        **COMMON,
        "schema_version": 2,
        "outcome_id": fact_id("ci", ORG, "circleci", run_id, 0),
        "provider": "circleci",
        "run_id": run_id,
        "run_attempt": None,
        "repo": "circleci/hello-world",  # pipeline.trigger_parameters.gitlab.web_url
        "commit_sha": "850a1519f25d14e968649cc420d1bd381715c05c",
        "branch": "main",
        "result": "failed",
        "workflow_name": "build",
        "workflow_id": None,
        "workflow_path": None,
        "run_url": record["raw"]["workflow"]["url"],
        "provider_result": "failed",
        "source_event_type": "workflow-completed",
        "source_event_id": "cbabbb40-6084-4f91-8311-a326c0f4963a",
        "pr_number": None,
        "captured_at": T0,
    }
    assert outcome.is_verdict


def test_buildkite_build_finished() -> None:
    record = load("buildkite_build_finished.json")
    outcome = outcome_of(record)
    run_id = "f62a1b4d-10f9-4790-bc1c-e2c3a0c80983"
    assert dump(outcome) == {
        **COMMON,
        "schema_version": 1,
        "outcome_id": fact_id("ci", ORG, "buildkite", run_id, 0, "at", "2015-05-09T21:08:59.874000Z"),  # finished_at
        "provider": "buildkite",
        "run_id": run_id,
        "run_attempt": None,
        "repo": "my-great-org/my-pipeline",
        "commit_sha": "abcd0b72a1e580e90712cdd9eb26d3fb41cd09c8",
        "branch": "main",
        "result": "passed",
        "workflow_name": "Great Pipeline",
        "workflow_id": "849411f9-9e6d-4739-a0d8-e247088e9b52",
        "workflow_path": None,
        "run_url": "https://buildkite.com/my-great-org/my-pipeline/builds/2",
        "provider_result": "passed",
        "source_event_type": "build.finished",
        "source_event_id": None,
        "pr_number": None,
        "captured_at": T0,
    }
    assert outcome.raw["build"]["rebuilt_from"]["number"] == 1


def test_jenkins_notification() -> None:
    record = load("jenkins_notification.json")
    outcome = outcome_of(record)
    assert dump(outcome) == {
        **COMMON,
        "schema_version": 2,
        "outcome_id": fact_id("ci", ORG, "jenkins", "job/asgard/18/", 0),
        "provider": "jenkins",
        "run_id": "job/asgard/18/",
        "run_attempt": None,
        "repo": "netflix/asgard",
        "commit_sha": "c6d86dc7c2e2d3aa8a5a7cd1bbd4e8b1b6ba4f2c",
        "branch": "master",
        "result": "failed",
        "workflow_name": "asgard",
        "workflow_id": None,
        "workflow_path": None,
        "run_url": "http://localhost:8080/job/asgard/18/",
        "provider_result": "COMPLETED/FAILURE",
        "source_event_type": "jenkins.notification.COMPLETED",
        "source_event_id": None,
        "pr_number": None,
        "captured_at": T0,
    }


# --- defaults and derivation -------------------------------------------------------------

MINIMAL = {
    "provider": "other",
    "run_id": "  build-77  ",
    "repo": "Octo-Org/Octo-Repo",
    "commit_sha": "3484A3FB816E0859FD6E1CEA078D76385FF50625",
    "branch": "refs/heads/main",
    "result": "timed_out",
}


def test_minimal_record_defaults() -> None:
    outcome = outcome_of(dict(MINIMAL))
    assert outcome.outcome_id == fact_id("ci", ORG, "other", "build-77", 0)
    assert (outcome.run_id, outcome.repo, outcome.branch) == ("build-77", "octo-org/octo-repo", "main")
    assert outcome.commit_sha == "3484a3fb816e0859fd6e1cea078d76385ff50625"
    assert outcome.captured_at == T0
    assert outcome.raw == MINIMAL  # the record itself, as sent
    assert outcome.schema_version == 2


def test_run_attempt_is_part_of_the_derived_id() -> None:
    first = outcome_of({**MINIMAL, "run_attempt": 1})
    second = outcome_of({**MINIMAL, "run_attempt": 2})
    assert first.outcome_id == fact_id("ci", ORG, "other", "build-77", 1)
    assert second.outcome_id == fact_id("ci", ORG, "other", "build-77", 2)


def test_a_declared_outcome_id_is_kept() -> None:
    assert outcome_of({**MINIMAL, "outcome_id": "sender-7"}).outcome_id == "sender-7"


def test_the_same_record_twice_gives_the_same_fact() -> None:
    record = load("gitlab_pipeline_hook.json")
    assert outcome_of(record) == outcome_of(copy.deepcopy(record))
    reordered = dict(reversed(list(record.items())))
    assert outcome_of(reordered).outcome_id == outcome_of(record).outcome_id


def test_org_rules() -> None:
    assert outcome_of({**MINIMAL, "org_id": "ACME"}).org_id == ORG
    assert outcome_of({**MINIMAL, "org_id": None}).org_id == ORG
    with pytest.raises(TranslationError, match=r"^org_id: 'other-org' is not the acting org 'acme'$"):
        outcome_of({**MINIMAL, "org_id": "other-org"})
    with pytest.raises(TranslationError, match=r"^org_id: expected a string"):
        outcome_of({**MINIMAL, "org_id": 7})


def test_raw_is_copied_from_the_record() -> None:
    record = dict(MINIMAL)
    outcome = outcome_of(record)
    record["result"] = "passed"
    assert outcome.raw["result"] == "timed_out"


# --- validation errors name the field ----------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"provider": "gitlab"}, r"^provider: Input should be 'github_actions', 'jenkins', 'gitlab_ci'"),
        ({"result": "timeout"}, r"^result: Input should be 'passed', 'failed'"),
        ({"run_id": "   "}, r"^run_id: identifier must not be empty"),
        ({"commit_sha": "HEAD"}, r"^commit_sha: commit SHA must be 40 or 64 hex"),
        ({"repo": "git@github.com:my-great-org/my-pipeline"}, r"^repo: repository must be 'owner/repo'"),
        ({"run_attempt": 0}, r"^run_attempt: Input should be greater than or equal to 1"),
        ({"pr_number": 0}, r"^pr_number: Input should be greater than or equal to 1"),
        ({"reason": "x" * 4097}, r"^reason: String should have at most 4096 characters"),
        ({"raw": ["not", "an", "object"]}, r"^raw: Input should be a valid dictionary"),
        ({"captured_at": "2024-05-01T12:00:00"}, r"^captured_at: timestamp must carry a UTC offset"),
        ({"captured_at": "2"}, r"^captured_at: expected an RFC 3339 timestamp, got '2'$"),
        ({"captured_at": 1714564800}, r"^captured_at: expected an RFC 3339 timestamp string, got number$"),
        ({"captured_at": "0001-01-01T00:00:00+14:00"}, r"^captured_at: timestamp out of range$"),
        ({"run_attempt": True}, r"^run_attempt: Input should be a valid integer"),
        ({"run_attempt": "1"}, r"^run_attempt: Input should be a valid integer"),
        ({"run_attempt": 1.0}, r"^run_attempt: Input should be a valid integer"),
        ({"pr_number": "42"}, r"^pr_number: Input should be a valid integer"),
        ({"schema_version": True}, r"^schema_version: Input should be a valid integer, got boolean$"),
        ({"schema_version": "2"}, r"^schema_version: Input should be a valid integer, got str"),
        ({"outcome_id": "o" * 201}, r"^outcome_id: String should have at most 200 characters"),
        ({"pipeline_status": "success"}, r"^pipeline_status: Extra inputs are not permitted"),
        ({"repository_provider": "github"}, r"repository_provider, repository_host and repository_id are all present"),
    ],
)
def test_invalid_records_name_the_field(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(TranslationError, match=message):
        outcome_of({**MINIMAL, **changes})


def test_missing_required_fields_are_all_named() -> None:
    with pytest.raises(TranslationError) as caught:
        outcome_of({"provider": "other"})
    message = str(caught.value)
    for name in ("run_id", "repo", "commit_sha", "branch", "result"):
        assert f"{name}: Field required" in message


def test_a_record_without_a_version_is_the_current_identity_capable_version() -> None:
    """schema_version 2 is the current CIOutcome payload, with or without a repository identity;
    a sender may still declare the legacy 1 (as the Buildkite sender does)."""
    assert outcome_of(dict(MINIMAL)).schema_version == 2
    assert outcome_of({**MINIMAL, "schema_version": 1}).schema_version == 1


def test_raw_is_copied_without_recursion() -> None:
    """The record is copied into ``raw`` iteratively: a copy as deep as the interpreter's
    recursion limit (deeper than the reader ever passes on) neither fails nor shares a node."""
    deep: Any = {"leaf": [1.5, None, "x"]}
    for _ in range(5000):
        deep = [deep, 1]
    copied = json_copy({"deep": deep, "k": "v"})
    assert copied["k"] == "v"
    node, original, levels = copied["deep"], deep, 0
    while isinstance(node, list):
        assert node is not original and node[1] == 1
        node, original, levels = node[0], original[0], levels + 1
    assert levels == 5000 and node == {"leaf": [1.5, None, "x"]} and node is not original
    assert list(json_copy({"b": 1, "a": 2})) == ["b", "a"]  # key order kept


def test_identity_on_schema_version_1_is_refused() -> None:
    identity = {"repository_provider": "github", "repository_host": "github.com", "repository_id": "300029405"}
    assert outcome_of({**MINIMAL, **identity}).repository_id == "300029405"
    with pytest.raises(TranslationError, match=r"forbidden on schema_version 1"):
        outcome_of({**MINIMAL, **identity, "schema_version": 1})


def test_a_record_must_be_an_object() -> None:
    with pytest.raises(TranslationError, match=r"^record: expected a JSON object"):
        translate_ci([MINIMAL], org_id=ORG, captured_at=T0)  # type: ignore[arg-type]
