"""GitHub webhook deliveries → Facts (docs/ci-providers.md).

The deliveries under ``fixtures/github/`` follow GitHub's documented payload structure; their
origin is in ``fixtures/github/SOURCES.md``.
"""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sediment.ingest import Translation, TranslationError
from sediment.ingest.ci.github import SKIP_REASONS, evident_event, translate_github
from sediment.ingest.ci.github_fields import CONCLUSION_RESULTS, github_result
from sediment.ingest.facts_jsonl import content_hash
from sediment.model.facts import CIOutcome, PullRequestMerge, Push, RepositoryRename
from sediment.store.ids import fact_id

FIXTURES = Path(__file__).parent / "fixtures" / "github"
ORG = "acme"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
SHA_TEST = "3484a3fb816e0859fd6e1cea078d76385ff50625"
SHA_BUILD = "acb5820ced9479c074f688cc328bf03f341a511d"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def translate(delivery: dict[str, Any], *, event: str | None = None, org_id: str = ORG) -> Translation:
    return translate_github(delivery, event=event, org_id=org_id, captured_at=T0)


def only_fact(translation: Translation) -> Any:
    assert translation.skipped is None
    assert len(translation.facts) == 1
    return translation.facts[0]


def outcome_of(delivery: dict[str, Any], *, event: str | None = None) -> CIOutcome:
    fact = only_fact(translate(delivery, event=event))
    assert isinstance(fact, CIOutcome)
    return fact


def with_payload(name: str, **changes: Any) -> dict[str, Any]:
    """A fixture delivery with top-level ``workflow_run`` (or payload) keys replaced."""
    delivery = load(name)
    run = delivery["payload"].get("workflow_run")
    for key, value in changes.items():
        (run if run is not None and key in run else delivery["payload"])[key] = value
    return delivery


# --- workflow_run ------------------------------------------------------------------------


def test_workflow_run_completed_success_maps_every_field() -> None:
    delivery = load("workflow_run.completed.success.json")
    translation = translate(delivery)
    assert translation.warnings == ()
    outcome = only_fact(translation)
    assert isinstance(outcome, CIOutcome)
    assert outcome.model_dump() == {
        "schema_version": 2,  # the current identity-capable payload
        "repository_provider": "github",  # repository.id, GitHub's immutable id, on github.com
        "repository_host": "github.com",
        "repository_id": "300029405",
        "outcome_id": fact_id("ci", ORG, "github_actions", "289785012", 1),
        "org_id": ORG,
        "provider": "github_actions",
        "run_id": "289785012",
        "run_attempt": 1,
        "repo": "octo-org/octo-repo",
        "commit_sha": SHA_TEST,
        "branch": "master",
        "result": "passed",
        "workflow_name": "test",
        "workflow_id": "2823525",
        "workflow_path": ".github/workflows/test.yml",
        "run_url": "https://github.com/octo-org/octo-repo/actions/runs/289785012",
        "provider_result": "success",
        "error_type": None,
        "reason": None,
        "source_event_type": "github.workflow_run.completed",
        "source_spec_version": None,
        "source_event_id": "a5c1cc50-0726-11eb-9a4e-9f3d0bc8b2c5",
        "pr_number": None,
        "captured_at": T0,
        "raw": delivery["payload"]["workflow_run"],
    }
    assert outcome.is_verdict


def test_failed_attempt_then_successful_rerun_of_the_same_run() -> None:
    first = outcome_of(load("workflow_run.completed.failure.attempt1.json"))
    second = outcome_of(load("workflow_run.completed.success.attempt2.json"))
    assert (first.run_id, second.run_id) == ("30433642", "30433642")
    assert (first.run_attempt, second.run_attempt) == (1, 2)
    assert (first.result, second.result) == ("failed", "passed")
    assert (first.provider_result, second.provider_result) == ("failure", "success")
    assert first.outcome_id == fact_id("ci", ORG, "github_actions", "30433642", 1)
    assert second.outcome_id == fact_id("ci", ORG, "github_actions", "30433642", 2)
    assert first.outcome_id != second.outcome_id
    for outcome in (first, second):
        assert outcome.repo == "octo-org/octo-repo"
        assert outcome.commit_sha == SHA_BUILD
        assert outcome.branch == "cache-node-modules"
        assert outcome.workflow_name == "Build"
        assert outcome.workflow_id == "159038"
        # upstream's input notes do not say GitHub appends "@ref" to the path, so it is kept verbatim.
        assert outcome.workflow_path == ".github/workflows/build.yml@main"
        assert outcome.run_url == "https://github.com/octo-org/octo-repo/actions/runs/30433642"
        assert outcome.pr_number == 42
        assert outcome.source_event_type == "github.workflow_run.completed"
        assert outcome.captured_at == T0
    assert first.source_event_id == "0b7a1f00-2e2a-11ed-8a1b-d6f3a6b3c1e4"
    # attempt 2 arrives with lower-case header names (HTTP/2 style)
    assert second.source_event_id == "5d5e8c80-2e2c-11ed-9f5e-0b0e4d0b1a22"
    assert second.raw["previous_attempt_url"].endswith("/actions/runs/30433642/attempts/1")


def test_cancelled_run() -> None:
    outcome = outcome_of(load("workflow_run.completed.cancelled.json"))
    assert (outcome.result, outcome.provider_result) == ("cancelled", "cancelled")
    assert (outcome.run_id, outcome.run_attempt) == ("289790114", 1)
    assert not outcome.is_verdict


def test_startup_failure_is_failed_with_the_verbatim_conclusion() -> None:
    outcome = outcome_of(load("workflow_run.completed.startup_failure.json"))
    assert (outcome.result, outcome.provider_result) == ("failed", "startup_failure")
    assert outcome.run_id == "289790577"
    assert outcome.source_event_id == "4e8c2b10-0728-11eb-9d0f-1c2b3a4d5e6f"


@pytest.mark.parametrize(
    "name",
    ["workflow_run.in_progress.json", "workflow_run.requested.action_required.json"],
)
def test_runs_that_are_not_completed_are_skipped(name: str) -> None:
    translation = translate(load(name))
    assert translation == Translation.skip("workflow_run_not_completed")


def test_bare_payload_of_the_older_shape() -> None:
    payload = load("workflow_run.completed.bare_older_shape.json")
    translation = translate(payload, event="workflow_run")
    outcome = only_fact(translation)
    assert isinstance(outcome, CIOutcome)
    assert outcome.run_id == "289782451"
    assert outcome.run_attempt is None  # absent in older payloads
    assert outcome.outcome_id == fact_id("ci", ORG, "github_actions", "289782451", 0)
    assert outcome.workflow_name == "test"  # workflow_run.name is "", workflow.name is used
    assert outcome.workflow_path == ".github/workflows/test.yml"  # only workflow.path is present
    assert outcome.workflow_id == "2823525"
    assert outcome.source_event_id is None
    assert outcome.result == "passed"
    # pull_requests[0] is PR #2 of Codertocat/Hello-World, not of this repository
    assert outcome.pr_number is None
    assert translation.warnings == ("pull_request_of_other_repository",)
    assert outcome.raw == payload["workflow_run"]


def test_pr_number_is_the_first_pull_request_of_this_repository() -> None:
    delivery = load("workflow_run.completed.failure.attempt1.json")
    same_repo = delivery["payload"]["workflow_run"]["pull_requests"][0]
    other_repo = load("workflow_run.completed.bare_older_shape.json")["workflow_run"]["pull_requests"][0]
    delivery["payload"]["workflow_run"]["pull_requests"] = [other_repo, same_repo]
    translation = translate(delivery)
    assert only_fact(translation).pr_number == 42
    assert translation.warnings == ("pull_request_of_other_repository",)
    # without a repository id to compare, the first entry is taken
    del delivery["payload"]["repository"]["id"]
    assert only_fact(translate(delivery)).pr_number == 2


def test_completed_action_with_a_queued_status_is_unknown() -> None:
    delivery = with_payload("workflow_run.completed.success.json", status="queued", conclusion=None)
    translation = translate(delivery)
    outcome = only_fact(translation)
    assert (outcome.result, outcome.provider_result) == ("unknown", None)
    assert translation.warnings == ("workflow_run_status_not_completed",)


def test_null_head_branch_and_empty_pull_requests() -> None:
    delivery = with_payload("workflow_run.completed.success.json", head_branch=None, pull_requests=[])
    outcome = outcome_of(delivery)
    assert outcome.branch == ""
    assert outcome.pr_number is None


def test_string_run_id_is_kept_as_text() -> None:
    delivery = with_payload("workflow_run.completed.success.json", id="289785012")
    assert outcome_of(delivery).run_id == "289785012"


# --- the conclusion table (docs/ci-providers.md) -----------------------------------------------

CONCLUSION_TABLE = [
    ("success", "passed"),
    ("failure", "failed"),
    ("cancelled", "cancelled"),
    ("timed_out", "timed_out"),
    ("skipped", "skipped"),
    ("neutral", "skipped"),
    ("action_required", "unknown"),
    ("stale", "unknown"),
    ("startup_failure", "failed"),
    (None, "unknown"),
    ("a_conclusion_github_adds_later", "unknown"),
]


@pytest.mark.parametrize(("conclusion", "result"), CONCLUSION_TABLE)
def test_conclusion_maps_to_result(conclusion: str | None, result: str) -> None:
    assert github_result("completed", conclusion) == result
    outcome = outcome_of(with_payload("workflow_run.completed.success.json", conclusion=conclusion))
    assert outcome.result == result
    assert outcome.provider_result == conclusion


def test_conclusion_table_is_complete() -> None:
    assert dict(CONCLUSION_RESULTS) == {c: r for c, r in CONCLUSION_TABLE if r != "unknown"}
    assert "error" not in CONCLUSION_RESULTS.values()  # GitHub never yields "error"


@pytest.mark.parametrize("status", ["queued", "in_progress", "requested", "waiting", "pending"])
def test_a_non_terminal_status_is_unknown_whatever_the_conclusion(status: str) -> None:
    assert github_result(status, "success") == "unknown"
    assert github_result(None, "success") == "passed"


# --- push --------------------------------------------------------------------------------


def test_push_maps_every_field() -> None:
    delivery = load("push.json")
    push = only_fact(translate(delivery))
    assert isinstance(push, Push)
    before, after = "6113728f27ae82c7b1a177c8d03f9e96e0adf246", "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
    assert push.model_dump() == {
        "schema_version": 2,  # the current identity-capable payload
        "repository_provider": "github",
        "repository_host": "github.com",
        "repository_id": "186853002",
        # keyed by the repository's identity, not its name (docs/operate.md, "Repository identity")
        "push_id": fact_id("push", ORG, "identified", "github", "github.com", "186853002", "master", before, after),
        "org_id": ORG,
        "provider": "github",
        "repo": "codertocat/hello-world",
        "ref": "master",
        "before_sha": before,
        "after_sha": after,
        "commit_shas": ("f95f852bd8fca8fcc58a9a2d6c842781e32a215e", after),
        "pusher": "Codertocat",
        "source_event_id": "3d4e5f60-7728-11e9-8f9e-2a86e4085a59",
        "pushed_at": datetime(2019, 5, 15, 15, 20, 30, tzinfo=UTC),  # head_commit -07:00 → UTC
        "captured_at": T0,
        "raw": delivery["payload"],
    }


def test_push_creating_a_branch_has_no_before_sha() -> None:
    push = only_fact(translate(load("push.new_branch.json")))
    assert isinstance(push, Push)
    assert push.before_sha is None
    assert push.after_sha == "6113728f27ae82c7b1a177c8d03f9e96e0adf246"
    assert push.commit_shas == ("6113728f27ae82c7b1a177c8d03f9e96e0adf246",)
    assert push.push_id == fact_id("push", ORG, "identified", "github", "github.com", "186853002", "master", None,
                                   push.after_sha)


def test_push_deleting_a_branch_is_skipped() -> None:
    assert translate(load("push.branch_deleted.json")) == Translation.skip("push_deletion")


def test_push_with_a_zero_after_is_a_deletion_even_without_the_flag() -> None:
    delivery = load("push.branch_deleted.json")
    delivery["payload"]["deleted"] = False
    assert translate(delivery).skipped == "push_deletion"


def test_tag_push_is_skipped() -> None:
    assert translate(load("push.tag.json")) == Translation.skip("push_not_branch")


def test_push_without_head_commit_has_no_pushed_at() -> None:
    delivery = load("push.json")
    delivery["payload"]["head_commit"] = None
    push = only_fact(translate(delivery))
    assert push.pushed_at is None


# --- pull_request ------------------------------------------------------------------------


def test_merged_pull_request_maps_every_field() -> None:
    translation = translate(load("pull_request.closed.merged.json"))
    merge = only_fact(translation)
    assert isinstance(merge, PullRequestMerge)
    assert translation.warnings == ()
    assert merge.model_dump() == {
        "schema_version": 2,  # the current identity-capable payload
        "repository_provider": "github",
        "repository_host": "github.com",
        "repository_id": "186853002",
        "merge_id": fact_id("merge", ORG, "identified", "github", "github.com", "186853002", 2),
        "org_id": ORG,
        "provider": "github",
        "repo": "codertocat/hello-world",
        "pr_number": 2,
        "head_repo": "octocoders/hello-world",
        "head_repository_provider": "github",  # the fork's own id, never the target's
        "head_repository_host": "github.com",
        "head_repository_id": "186853261",
        "head_ref": "changes",
        "head_sha": "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
        "base_ref": "master",
        "base_sha": "f95f852bd8fca8fcc58a9a2d6c842781e32a215e",
        "merge_commit_sha": "c4295bd74fb0f4fda03689c3df3f2803b658fd85",
        "merged_at": datetime(2019, 5, 15, 15, 21, 18, tzinfo=UTC),
        "source_event_id": "c8d9e0f1-7728-11e9-8a2b-3c4d5e6f7a8b",
        "captured_at": T0,
    }


def test_merged_pull_request_from_a_deleted_fork() -> None:
    delivery = load("pull_request.closed.merged.json")
    delivery["payload"]["pull_request"]["head"]["repo"] = None
    translation = translate(delivery)
    merge = only_fact(translation)
    assert merge.head_repo == "" and merge.head_repository_id is None
    assert merge.repository_id == "186853002"
    assert translation.warnings == ("head_repository_deleted",)


def test_closed_without_merge_is_skipped() -> None:
    assert translate(load("pull_request.closed.not_merged.json")) == Translation.skip("pull_request_not_merged")


@pytest.mark.parametrize("action", ["opened", "synchronize", "reopened", "edited"])
def test_other_pull_request_actions_are_skipped(action: str) -> None:
    delivery = load("pull_request.closed.merged.json")
    delivery["payload"]["action"] = action
    assert translate(delivery).skipped == "pull_request_not_merged"


# --- repository --------------------------------------------------------------------------


def test_repository_renamed_maps_every_field() -> None:
    rename = only_fact(translate(load("repository.renamed.json")))
    assert isinstance(rename, RepositoryRename)
    delivery_id = "e0f1a2b3-7728-11e9-8c4d-5e6f7a8b9c0d"
    assert rename.model_dump() == {
        "rename_id": fact_id("rename", ORG, "github", "github.com", delivery_id),
        "org_id": ORG,
        "provider": "github",
        "repository_host": "github.com",
        "repository_id": "186853261",
        "old_repo": "octocoders/hello-world",
        "new_repo": "octocoders/hello-universe",
        "renamed_at": T0,  # GitHub gives no occurrence time
        "source_event_id": delivery_id,
        "captured_at": T0,
    }


def test_rename_without_a_delivery_id_is_keyed_by_the_payload_hash() -> None:
    payload = load("repository.renamed.json")["payload"]
    first = only_fact(translate(payload, event="repository"))
    again = only_fact(translate_github(copy.deepcopy(payload), event="repository", org_id=ORG,
                                       captured_at=datetime(2025, 1, 1, tzinfo=UTC)))
    assert first.source_event_id is None
    assert first.rename_id == fact_id("rename", ORG, "github", "github.com", content_hash(payload))
    assert again.rename_id == first.rename_id  # a later capture of the same payload
    payload["changes"]["repository"]["name"]["from"] = "Hello-Moon"
    assert only_fact(translate(payload, event="repository")).rename_id != first.rename_id


@pytest.mark.parametrize("action", ["created", "edited", "transferred", "privatized"])
def test_other_repository_actions_are_skipped(action: str) -> None:
    delivery = load("repository.renamed.json")
    delivery["payload"]["action"] = action
    assert translate(delivery) == Translation.skip("repository_not_renamed")


# --- unsupported events ------------------------------------------------------------------


def test_check_run_of_a_third_party_app_is_a_check_of_its_suite() -> None:
    outcome = only_fact(translate(load("check_run.completed.json")))
    assert isinstance(outcome, CIOutcome)
    assert (outcome.provider, outcome.run_id, outcome.result, outcome.provider_result) == (
        "github_checks", "118578147", "skipped", "completed/neutral")


def test_ping_is_an_unsupported_event_not_an_error() -> None:
    ping = {"zen": "Design for failure.", "hook_id": 292430182, "hook": {"type": "Repository", "events": ["*"]}}
    assert translate(ping, event="ping") == Translation.skip("unsupported_event:ping")


def test_skip_reasons_are_declared() -> None:
    assert SKIP_REASONS == (
        "workflow_run_not_completed",
        "push_not_branch",
        "push_deletion",
        "pull_request_not_merged",
        "repository_not_renamed",
        "ci_run_not_terminal",
        "check_suite_of_actions_run",
    )


# --- envelopes and the event name --------------------------------------------------------


def test_envelope_header_agrees_with_an_explicit_event() -> None:
    delivery = load("workflow_run.completed.success.json")
    assert translate(delivery, event="workflow_run") == translate(delivery)
    assert translate(delivery, event="Workflow_Run") == translate(delivery)


def test_envelope_header_disagreeing_with_the_event_is_an_error() -> None:
    with pytest.raises(TranslationError, match=r"X-GitHub-Event: 'workflow_run' disagrees with .*'push'"):
        translate(load("workflow_run.completed.success.json"), event="push")


def test_header_names_are_case_insensitive() -> None:
    delivery = load("workflow_run.completed.success.json")
    delivery["headers"] = {"X-GITHUB-EVENT": "workflow_run", "x-GitHub-delivery": "d-1"}
    assert outcome_of(delivery).source_event_id == "d-1"


def test_envelope_without_event_header_uses_the_given_or_the_evident_event() -> None:
    delivery = load("push.json")
    del delivery["headers"]["X-GitHub-Event"]
    assert isinstance(only_fact(translate(delivery, event="push")), Push)
    assert only_fact(translate(delivery)) == only_fact(translate(delivery, event="push"))  # its keys show a push
    delivery["payload"] = {"action": "started", "repository": delivery["payload"]["repository"]}  # a watch event
    with pytest.raises(TranslationError, match=r"^headers\.X-GitHub-Event: missing: .*pass --event NAME"):
        translate(delivery)


def test_envelope_without_delivery_id() -> None:
    delivery = load("workflow_run.completed.success.json")
    del delivery["headers"]["X-GitHub-Delivery"]
    assert outcome_of(delivery).source_event_id is None


def test_a_bare_payload_whose_keys_show_no_event_needs_one() -> None:
    watch = {"action": "started", "repository": load("push.json")["payload"]["repository"], "sender": {"id": 1}}
    with pytest.raises(TranslationError, match=r"^event: the payload's top-level keys \(action, repository, sender\) "
                                               r"do not show which GitHub event it is; pass --event NAME"):
        translate(watch)
    assert translate(watch, event="watch").skipped == "unsupported_event:watch"


def _fixture_deliveries() -> list[Path]:
    return sorted([*FIXTURES.glob("*.json"), *(FIXTURES.parent / "ci" / "github").glob("*.json")])


@pytest.mark.parametrize("path", [p for p in _fixture_deliveries() if "X-GitHub-Event" in p.read_text()],
                         ids=lambda p: p.name)
def test_a_bare_payload_is_translated_as_its_envelope_when_its_keys_show_the_event(path: Path) -> None:
    delivery = json.loads(path.read_text(encoding="utf-8"))
    bare = copy.deepcopy(delivery["payload"])
    assert evident_event(bare) == delivery["headers"]["X-GitHub-Event"]
    del delivery["headers"]["X-GitHub-Delivery"]  # a bare payload has no delivery id: compare without it
    enveloped, inferred = translate(delivery), translate(bare)
    assert (inferred.skipped, inferred.facts) == (enveloped.skipped, enveloped.facts)


def test_the_evident_event_is_never_a_guess_between_two() -> None:
    run = load("workflow_run.completed.success.json")["payload"]
    job = json.loads((FIXTURES.parent / "ci" / "github" / "workflow_job.completed.success.json").read_text())["payload"]
    pull = load("pull_request.closed.merged.json")["payload"]
    renamed = load("repository.renamed.json")["payload"]
    ambiguous = {
        "workflow_run and workflow_job": {**run, "workflow_job": job["workflow_job"]},
        "deployment (carries workflow_run)": {**run, "deployment": {"id": 1}},
        "deployment_status (carries check_run)": {"action": "created", "check_run": {"id": 1},
                                                  "deployment_status": {"id": 2}, "repository": run["repository"]},
        "pull_request_review": {**pull, "review": {"id": 1}},
        "pull_request_review_comment": {**pull, "comment": {"id": 1}},
        "watch (repository keys only)": {"action": "started", "repository": run["repository"]},
        "branch_protection_configuration": {"action": "enabled", "repository": run["repository"]},
        "an unknown key beside workflow_run": {**run, "something_new": 1},
        "create (ref without commits)": {"ref": "main", "ref_type": "branch", "repository": run["repository"]},
    }
    for what, payload in ambiguous.items():
        assert evident_event(payload) is None, what
        with pytest.raises(TranslationError, match=r"^event: .*pass --event NAME"):
            translate(payload)
    assert evident_event(renamed) == "repository" and evident_event({**renamed, "action": "edited"}) == "repository"
    assert evident_event({**pull, "action": "synchronize", "before": "a", "after": "b"}) == "pull_request"


def test_a_given_event_that_the_payload_contradicts_is_refused() -> None:
    bare = load("push.json")["payload"]
    assert isinstance(only_fact(translate(bare, event="push")), Push)
    with pytest.raises(TranslationError, match=r"^event: the payload's keys \(.*\) show a push delivery, not the "
                                               r"given event 'workflow_run'"):
        translate(bare, event="workflow_run")


@pytest.mark.parametrize(
    ("delivery", "message"),
    [
        ({"headers": {"X-GitHub-Event": "push"}, "payload": []}, r"^payload: expected an object"),
        ({"headers": [], "payload": {}}, r"^headers: expected an object"),
        ({"headers": {"X-GitHub-Event": 7}, "payload": {}}, r"^headers\.X-GitHub-Event: expected a string"),
        ({"headers": {"X-GitHub-Event": "push", "x-github-event": "ping"}, "payload": {}}, r"given twice"),
    ],
)
def test_malformed_envelopes(delivery: dict[str, Any], message: str) -> None:
    with pytest.raises(TranslationError, match=message):
        translate(delivery)


def test_a_delivery_must_be_an_object() -> None:
    with pytest.raises(TranslationError, match=r"^delivery: expected a JSON object"):
        translate([], event="push")  # type: ignore[arg-type]


# --- determinism -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "workflow_run.completed.success.json",
        "workflow_run.completed.failure.attempt1.json",
        "push.json",
        "pull_request.closed.merged.json",
        "repository.renamed.json",
    ],
)
def test_the_same_delivery_twice_gives_the_same_fact(name: str) -> None:
    first, second = translate(load(name)), translate(load(name))
    assert first == second
    assert first.facts[0].model_dump_json() == second.facts[0].model_dump_json()


def test_a_redelivery_keeps_the_outcome_id() -> None:
    delivery = load("workflow_run.completed.success.json")
    redelivered = copy.deepcopy(delivery)
    redelivered["headers"]["X-GitHub-Delivery"] = "ffffffff-0726-11eb-9a4e-9f3d0bc8b2c5"
    later = translate_github(redelivered, event=None, org_id=ORG, captured_at=datetime(2024, 6, 1, tzinfo=UTC))
    assert only_fact(later).outcome_id == outcome_of(delivery).outcome_id


def test_ids_are_scoped_by_org() -> None:
    delivery = load("workflow_run.completed.success.json")
    other = only_fact(translate(delivery, org_id="Other-Org"))
    assert other.org_id == "other-org"
    assert other.outcome_id == fact_id("ci", "other-org", "github_actions", "289785012", 1)
    assert other.outcome_id != outcome_of(delivery).outcome_id


def test_raw_is_a_copy_of_the_delivery() -> None:
    delivery = load("workflow_run.completed.success.json")
    outcome = outcome_of(delivery)
    delivery["payload"]["workflow_run"]["conclusion"] = "failure"
    assert outcome.raw["conclusion"] == "success"


# --- malformed payloads name the field ---------------------------------------------------


def _without(name: str, *path: str) -> dict[str, Any]:
    delivery = load(name)
    node = delivery["payload"]
    for step in path[:-1]:
        node = node[step]
    del node[path[-1]]
    return delivery


def _with(name: str, value: Any, *path: str | int) -> dict[str, Any]:
    delivery = load(name)
    node = delivery["payload"]
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return delivery


@pytest.mark.parametrize(
    ("delivery", "message"),
    [
        (_without("workflow_run.completed.success.json", "workflow_run", "head_sha"), r"^workflow_run\.head_sha: missing$"),
        (_with("workflow_run.completed.success.json", "3484a3f", "workflow_run", "head_sha"),
         r"^workflow_run\.head_sha: .*40 or 64 hex"),
        (_with("workflow_run.completed.success.json", "z" * 40, "workflow_run", "head_sha"), r"^workflow_run\.head_sha: "),
        (_without("workflow_run.completed.success.json", "repository"), r"^repository\.full_name: missing$"),
        (_with("workflow_run.completed.success.json", "octo-repo", "repository", "full_name"),
         r"^repository\.full_name: .*owner/repo"),
        (_without("workflow_run.completed.success.json", "workflow_run", "id"), r"^workflow_run\.id: missing$"),
        (_with("workflow_run.completed.success.json", True, "workflow_run", "id"), r"^workflow_run\.id: expected a number"),
        (_with("workflow_run.completed.success.json", 0, "workflow_run", "run_attempt"),
         r"^workflow_run\.run_attempt: expected a positive integer"),
        (_without("workflow_run.completed.success.json", "workflow_run"), r"^workflow_run: missing$"),
        (_without("workflow_run.completed.success.json", "action"), r"^action: missing$"),
        (_with("workflow_run.completed.success.json", 5, "workflow_run", "conclusion"),
         r"^workflow_run\.conclusion: expected a string"),
        (_with("workflow_run.completed.failure.attempt1.json", "42", "workflow_run", "pull_requests", 0, "number"),
         r"^workflow_run\.pull_requests\[0\]\.number: expected a positive integer"),
        (_with("push.json", "ec26c3e", "commits", 1, "id"), r"^commits\[1\]\.id: .*40 or 64 hex"),
        (_with("push.json", "not-a-sha", "after"), r"^after: "),
        (_without("push.json", "repository"), r"^repository\.full_name: missing$"),
        (_without("push.json", "ref"), r"^ref: missing$"),
        (_with("push.json", "yesterday", "head_commit", "timestamp"), r"^head_commit\.timestamp: "),
        (_with("pull_request.closed.merged.json", None, "pull_request", "merge_commit_sha"),
         r"^pull_request\.merge_commit_sha: missing$"),
        (_with("pull_request.closed.merged.json", "f95f852", "pull_request", "base", "sha"), r"^pull_request\.base\.sha: "),
        (_without("pull_request.closed.merged.json", "repository"), r"^repository\.full_name: missing$"),
        (_with("pull_request.closed.merged.json", None, "pull_request", "merged_at"), r"^pull_request\.merged_at: missing$"),
        (_without("repository.renamed.json", "changes"), r"^changes\.repository\.name\.from: missing$"),
        (_without("repository.renamed.json", "repository", "owner"), r"^repository\.owner\.login: missing$"),
    ],
)
def test_malformed_payloads_name_the_field(delivery: dict[str, Any], message: str) -> None:
    with pytest.raises(TranslationError, match=message):
        translate(delivery)


@pytest.mark.parametrize(
    ("delivery", "message"),
    [
        (_with("workflow_run.completed.success.json", "1", "workflow_run", "run_attempt"),
         r"^workflow_run\.run_attempt: expected a positive integer, got '1'$"),
        (_with("workflow_run.completed.success.json", True, "workflow_run", "run_attempt"),
         r"^workflow_run\.run_attempt: expected a positive integer, got True$"),
        (_with("workflow_run.completed.success.json", 1.0, "workflow_run", "run_attempt"),
         r"^workflow_run\.run_attempt: expected a positive integer, got 1\.0$"),
        (_with("push.json", 1557933630, "head_commit", "timestamp"),
         r"^head_commit\.timestamp: expected a string, got int$"),
        (_with("push.json", "1557933630", "head_commit", "timestamp"),
         r"^head_commit\.timestamp: expected an RFC 3339 timestamp, got '1557933630'$"),
        (_with("push.json", "2019-05-15T15:20:30", "head_commit", "timestamp"),
         r"^head_commit\.timestamp: timestamp must carry a UTC offset"),
        (_with("push.json", "0001-01-01T00:00:00+14:00", "head_commit", "timestamp"),
         r"^head_commit\.timestamp: timestamp out of range$"),
        (_with("pull_request.closed.merged.json", "9999-12-31T23:59:59-10:00", "pull_request", "merged_at"),
         r"^pull_request\.merged_at: timestamp out of range$"),
        (_with("pull_request.closed.merged.json", "2", "pull_request", "number"),
         r"^pull_request\.number: expected a positive integer, got '2'$"),
    ],
)
def test_values_are_never_coerced(delivery: dict[str, Any], message: str) -> None:
    with pytest.raises(TranslationError, match=message):
        translate(delivery)


def test_identity_capable_facts_carry_the_current_schema_version() -> None:
    """Version 2 is the current payload of CIOutcome, Push and PullRequestMerge, with the
    repository identity when the payload has ``repository.id`` and without it otherwise
    (docs/evidence.md; version 1 is the legacy payload)."""
    for name, model in [("workflow_run.completed.success.json", CIOutcome), ("push.json", Push),
                        ("pull_request.closed.merged.json", PullRequestMerge)]:
        fact = only_fact(translate(load(name)))
        assert isinstance(fact, model)
        assert fact.schema_version == 2 and fact.is_identified, name
        delivery = load(name)
        del delivery["payload"]["repository"]["id"]
        legacy = only_fact(translate(delivery))
        assert legacy.schema_version == 2 and not legacy.is_identified, name
        assert (legacy.repository_provider, legacy.repository_host) == (None, None)


@pytest.mark.parametrize("name", ["workflow_run.completed.success.json", "push.json",
                                  "pull_request.closed.merged.json"])
@pytest.mark.parametrize("bad", ["300029405", 0, -5, True, 1.5, {"id": 1}])
def test_a_repository_id_that_is_not_a_positive_integer_is_refused(name: str, bad: Any) -> None:
    """GitHub's ``repository.id`` is an integer; a string, zero, a bool or a float is a
    malformed payload, refused in one line naming the field, never coerced."""
    delivery = load(name)
    delivery["payload"]["repository"]["id"] = bad
    with pytest.raises(TranslationError, match=rf"^repository\.id: expected a positive integer, got {re.escape(repr(bad))}$"):
        translate(delivery)
    if name.startswith("pull_request"):
        delivery = load(name)
        delivery["payload"]["pull_request"]["head"]["repo"]["id"] = bad
        with pytest.raises(TranslationError, match=r"^pull_request\.head\.repo\.id: expected a positive integer"):
            translate(delivery)


def test_a_naive_capture_time_is_refused() -> None:
    with pytest.raises(TranslationError, match=r"^captured_at: "):
        translate_github(load("push.json"), event=None, org_id=ORG, captured_at=datetime(2024, 5, 1))


def test_an_invalid_acting_org_is_refused() -> None:
    with pytest.raises(TranslationError, match=r"^org_id: "):
        translate(load("push.json"), org_id="not an org!")


def test_cli_ingests_a_folder_of_bare_payloads_of_mixed_events_in_one_command(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    folder = tmp_path / "inputs"
    folder.mkdir()
    expected = {}
    for path in _fixture_deliveries():
        delivery = json.loads(path.read_text(encoding="utf-8"))
        if "headers" in delivery and "X-GitHub-Event" in delivery["headers"]:
            (folder / path.name).write_text(json.dumps(delivery["payload"]), encoding="utf-8")
            expected[path.name] = delivery["headers"]["X-GitHub-Event"]
    assert set(expected.values()) == {"workflow_run", "workflow_job", "check_run", "check_suite", "push",
                                      "pull_request", "repository"}
    (folder / "zz-watch.json").write_text(json.dumps({"action": "started", "repository": {"id": 1}}))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    environ |= {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": ORG}
    result = subprocess.run([sys.executable, "-m", "sediment", "ingest", "github",
                             *sorted(str(p) for p in folder.glob("*.json")), "--json"],
                            capture_output=True, text=True, env=environ, timeout=120, check=False)
    assert result.returncode == 8, result.stderr  # the one payload whose keys show no event
    [problem] = [line for line in result.stderr.splitlines() if "zz-watch.json" in line]
    assert "pass --event NAME" in problem and "Traceback" not in result.stderr
    assert "bare payload needs" not in result.stderr
    report = json.loads(result.stdout)
    assert report["failed"] == 1 and report["records"] == len(expected) + 1
    assert report["stored"]["ci_outcomes"] == 11 and report["stored"]["pushes"] == 2
