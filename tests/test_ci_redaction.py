"""Credentials in CI webhooks are redacted before a CIOutcome (or a Push) keeps the payload as
``raw``: Buildkite ``build.env`` secrets, tokens in repository URLs' userinfo, credential-named
members anywhere. The stored record is the redacted one, read back exactly; ids and every
other field come from the payload as received, so they do not change."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sediment.ingest import Translation
from sediment.ingest.ci.buildkite import translate_buildkite
from sediment.ingest.ci.circleci import translate_circleci
from sediment.ingest.ci.github import translate_github
from sediment.ingest.ci.gitlab import translate_gitlab
from sediment.ingest.ci.neutral import translate_ci
from sediment.ingest.ci.webhooks import translate
from sediment.ingest.reading.files import ingest_files
from sediment.ingest.redaction.credentials import marker
from sediment.model.facts import CIOutcome, Push
from sediment.store import FactStore

FIXTURES = Path(__file__).parent / "fixtures"
ORG = "acme"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
TRANSLATORS = {"gitlab": translate_gitlab, "circleci": translate_circleci, "buildkite": translate_buildkite,
               "github": translate_github}

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB_TOKEN = "ghp_" + "Zx9" * 12
GITLAB_TOKEN = "glpat-" + "q7W" * 7
BITBUCKET_PASSWORD = "app-password-1f2e3d"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def payload(delivery: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = delivery["payload"] if "headers" in delivery and "payload" in delivery else delivery
    return body


def translated(provider: str, delivery: dict[str, Any]) -> Translation:
    return TRANSLATORS[provider](delivery, event=None, org_id=ORG, captured_at=T0)


def with_secrets(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fixture ``name`` and a copy carrying credentials where each provider sends them."""
    clean = load(name)
    dirty = copy.deepcopy(clean)
    body = payload(dirty)
    if name.startswith("ci/buildkite/"):
        body["build"]["env"] = {"AWS_SECRET_ACCESS_KEY": AWS_SECRET, "GITHUB_TOKEN": GITHUB_TOKEN, "CI": "true"}
        body["pipeline"]["repository"] = f"https://x-token-auth:{BITBUCKET_PASSWORD}@bitbucket.org/acme/widget.git"
    elif name.startswith("ci/gitlab/"):
        body["project"]["git_http_url"] = f"https://oauth2:{GITLAB_TOKEN}@gitlab.com/acme-group/widget.git"
    elif name.startswith("ci/circleci/"):
        body["pipeline"]["vcs"]["origin_repository_url"] = f"https://{GITHUB_TOKEN}@github.com/acme/widget"
    elif name.startswith("github/workflow_run"):
        body["workflow_run"]["head_repository"] = {"clone_url": f"https://x:{GITHUB_TOKEN}@github.com/o/r.git"}
    elif name.startswith("github/push"):
        body["repository"]["clone_url"] = f"https://x-access-token:{GITHUB_TOKEN}@github.com/o/r.git"
    return clean, dirty


SECRETS = (AWS_SECRET, GITHUB_TOKEN, GITLAB_TOKEN, BITBUCKET_PASSWORD)
CASES = ["ci/buildkite/build_finished.json", "ci/gitlab/pipeline_hook.json", "ci/circleci/workflow_completed.json",
         "github/workflow_run.completed.success.json", "github/push.json"]


def _provider(name: str) -> str:
    return name.split("/")[1] if name.startswith("ci/") else "github"


def _only(translation: Translation) -> CIOutcome | Push:
    (fact,) = translation.facts
    assert isinstance(fact, CIOutcome | Push)
    return fact


@pytest.mark.parametrize("name", CASES)
def test_webhook_credentials_are_redacted_and_nothing_else_changes(name: str) -> None:
    clean, dirty = with_secrets(name)
    received = copy.deepcopy(dirty)
    fact = _only(translated(_provider(name), dirty))
    assert dirty == received  # the delivery itself is never mutated
    stored = json.dumps(fact.raw)
    assert not any(secret in stored for secret in SECRETS)
    assert "[redacted sha256:" in stored
    reference = _only(translated(_provider(name), clean))
    # every field but raw, the id included, is what the clean delivery gives
    assert fact.model_dump(exclude={"raw"}) == reference.model_dump(exclude={"raw"})


def test_buildkite_env_secrets_and_url_userinfo_keep_a_marker_of_their_sha256() -> None:
    _clean, dirty = with_secrets("ci/buildkite/build_finished.json")
    raw = _only(translated("buildkite", dirty)).raw
    assert raw["build"]["env"] == {"AWS_SECRET_ACCESS_KEY": marker(AWS_SECRET), "GITHUB_TOKEN": marker(GITHUB_TOKEN),
                                   "CI": "true"}
    assert raw["pipeline"]["repository"] == f"https://x-token-auth:{marker(BITBUCKET_PASSWORD)}@bitbucket.org/acme/widget.git"


def test_gitlab_and_circleci_repository_url_tokens_keep_the_host() -> None:
    _clean, gitlab = with_secrets("ci/gitlab/pipeline_hook.json")
    raw = _only(translated("gitlab", gitlab)).raw
    assert raw["project"]["git_http_url"] == f"https://oauth2:{marker(GITLAB_TOKEN)}@gitlab.com/acme-group/widget.git"
    _clean, circleci = with_secrets("ci/circleci/workflow_completed.json")
    raw = _only(translated("circleci", circleci)).raw
    assert raw["pipeline"]["vcs"]["origin_repository_url"] == f"https://{marker(GITHUB_TOKEN)}@github.com/acme/widget"


def test_the_live_receiver_path_stores_the_redacted_record_and_reads_it_back_exactly(tmp_path: Path) -> None:
    _clean, dirty = with_secrets("ci/buildkite/build_finished.json")
    body = json.dumps(payload(dirty)).encode()
    live = _only(translate("buildkite", "build.finished", body, org_id=ORG, captured_at=T0))
    assert AWS_SECRET not in json.dumps(live.raw)
    path = tmp_path / "deliveries.json"
    path.write_text(json.dumps(dirty), encoding="utf-8")
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")
    try:
        ingest_files([str(path)], lambda record: translated("buildkite", record), store)
        (back,) = list(store.facts("ci_outcomes", ORG))
    finally:
        store.close()
    assert isinstance(back, CIOutcome)
    assert back.raw == live.raw  # the stored record is the redacted one, decoded back equal
    assert back.outcome_id == live.outcome_id


def test_vendor_neutral_ci_records_have_their_raw_redacted() -> None:
    record = load("ci/jenkins_notification.json")
    dirty = copy.deepcopy(record)
    dirty["raw"]["build"]["scm"]["url"] = f"https://jenkins:{GITHUB_TOKEN}@github.com/Netflix/asgard.git"
    dirty["raw"]["build"]["parameters"] = {"NPM_TOKEN": "npm_secretvalue", "DEPLOY_PASSWORD": "hunter2", "ENV": "prod"}
    (fact,) = translate_ci(dirty, org_id=ORG, captured_at=T0).facts
    (reference,) = translate_ci(record, org_id=ORG, captured_at=T0).facts
    assert isinstance(fact, CIOutcome) and isinstance(reference, CIOutcome)
    build = fact.raw["build"]
    assert build["scm"]["url"] == f"https://jenkins:{marker(GITHUB_TOKEN)}@github.com/Netflix/asgard.git"
    assert build["parameters"] == {"NPM_TOKEN": marker("npm_secretvalue"), "DEPLOY_PASSWORD": marker("hunter2"),
                                   "ENV": "prod"}
    assert fact.outcome_id == reference.outcome_id
