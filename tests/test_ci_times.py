"""The provider's time of a CI attempt's final event (sediment.ci.times), read from each provider's
fixture deliveries as ingested; outcomes without one give none."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sediment.ci.times import finished_time
from sediment.ingest.ci.buildkite import translate_buildkite
from sediment.ingest.ci.circleci import translate_circleci
from sediment.ingest.ci.github import translate_github
from sediment.ingest.ci.gitlab import translate_gitlab
from sediment.model.facts import CIOutcome
from sediment.testing import outcome

FIXTURES = Path(__file__).parent / "fixtures"
CAPTURED = datetime(2030, 1, 1, tzinfo=UTC)
TRANSLATORS: dict[str, Any] = {"github": translate_github, "gitlab": translate_gitlab,
                               "circleci": translate_circleci, "buildkite": translate_buildkite}


def ingested(name: str) -> CIOutcome:
    delivery = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    translate = TRANSLATORS[name.split("/")[-2]]
    [fact] = translate(delivery, event=None, org_id="acme", captured_at=CAPTURED).facts
    assert isinstance(fact, CIOutcome)
    return fact


@pytest.mark.parametrize(("name", "time"), [
    ("github/workflow_run.completed.failure.attempt1.json", "2022-09-06T09:14:51.000000Z"),  # updated_at
    ("ci/github/workflow_job.completed.failure.json", "2022-09-05T10:04:00.000000Z"),  # completed_at
    ("ci/github/check_run.completed.third_party.json", "2022-09-05T11:00:05.000000Z"),  # completed_at
    ("ci/github/check_suite.completed.third_party.json", "2022-09-05T10:02:00.000000Z"),  # updated_at
    ("ci/gitlab/pipeline_hook.json", "2024-04-30T09:20:01.000000Z"),  # object_attributes.finished_at
    ("ci/gitlab/job_hook.json", "2024-04-30T10:01:00.000000Z"),  # build_finished_at
    ("ci/circleci/workflow_completed.json", "2024-04-30T09:20:01.000000Z"),  # workflow.stopped_at
    ("ci/circleci/job_completed.json", "2024-04-30T09:19:00.000000Z"),  # job.stopped_at
    ("ci/buildkite/build_finished.json", "2024-04-30T09:20:00.000000Z"),  # build.finished_at
    ("ci/buildkite/job_finished.json", "2024-04-30T09:08:00.000000Z"),  # job.finished_at
])
def test_each_providers_final_time_is_read_from_its_own_field(name: str, time: str) -> None:
    assert finished_time(ingested(name)) == time


def test_no_time_without_one_the_provider_gave() -> None:
    assert finished_time(outcome("o1", "a" * 40)) is None  # a generic record: no payload
    bare = outcome("o1", "a" * 40, source_event_type="github.workflow_run.completed", raw={"updated_at": "soon"})
    assert finished_time(bare) is None  # unreadable
    jenkins = outcome("o1", "a" * 40, provider="jenkins", raw={"updated_at": "2024-01-01T00:00:00Z"})
    assert finished_time(jenkins) is None
    offset = outcome("o1", "a" * 40, source_event_type="github.workflow_run.completed",
                     raw={"updated_at": "2024-01-01T02:00:00+02:00"})
    assert finished_time(offset) == "2024-01-01T00:00:00.000000Z"  # the instant, in UTC
