"""The receiver's parts: forge signature schemes, capture tokens, the durable spool, its config."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sediment.errors import ConfigurationError
from sediment.receiver import auth
from sediment.receiver.config import from_environment, ingest_tokens
from sediment.receiver.spool import Spool, body_digest, delivery_key
from sediment.receiver.translators import FORGES, TRANSLATORS, Acting, provider_supported, translate_delivery

FIXTURES = Path(__file__).parent / "fixtures"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def hex_hmac(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


# --- signatures ---------------------------------------------------------------------------


def test_github_signature_is_hmac_sha256_of_the_exact_body() -> None:
    body = (FIXTURES / "github" / "push.json").read_bytes()
    good = "sha256=" + hex_hmac("s3cret", body)
    assert auth.github_signature("s3cret", body, good)
    assert not auth.github_signature("s3cret", body + b"\n", good)
    assert not auth.github_signature("other", body, good)
    assert not auth.github_signature("s3cret", body, good.upper())  # GitHub sends lowercase hex
    assert not auth.github_signature("s3cret", body, good.removeprefix("sha256="))
    assert not auth.github_signature("s3cret", body, None)
    assert not auth.github_signature(None, body, good)
    assert not auth.github_signature("", body, "sha256=" + hex_hmac("", body))


def test_gitlab_token_is_the_secret_itself() -> None:
    assert auth.gitlab_token("tok-123", "tok-123")
    assert not auth.gitlab_token("tok-123", "tok-1234")
    assert not auth.gitlab_token("tok-123", None)
    assert not auth.gitlab_token(None, "tok-123")
    assert not auth.gitlab_token("tok-123", "tök-123")


def test_circleci_signature_takes_any_v1_entry() -> None:
    body = (FIXTURES / "ci" / "circleci_workflow_completed.json").read_bytes()
    v1 = hex_hmac("circle", body)
    assert auth.circleci_signature("circle", body, f"v1={v1}")
    assert auth.circleci_signature("circle", body, f"v2=abc,v1={v1}")
    assert auth.circleci_signature("circle", body, f"v1={'0' * 64}, v1={v1}")
    assert not auth.circleci_signature("circle", body, f"v2={v1}")
    assert not auth.circleci_signature("circle", body, v1)
    assert not auth.circleci_signature("circle", body + b" ", f"v1={v1}")
    assert not auth.circleci_signature(None, body, f"v1={v1}")


def test_buildkite_signature_covers_the_timestamp_and_has_a_window() -> None:
    body = (FIXTURES / "ci" / "buildkite_build_finished.json").read_bytes()
    now = 1_750_000_000
    signed = hex_hmac("kite", f"{now}.".encode() + body)
    header = f"timestamp={now},signature={signed}"
    assert auth.buildkite_signature("kite", body, header, None, now=now)
    assert auth.buildkite_signature("kite", body, header, None, now=now + auth.BUILDKITE_TOLERANCE_SECONDS)
    assert not auth.buildkite_signature("kite", body, header, None, now=now + auth.BUILDKITE_TOLERANCE_SECONDS + 1)
    assert not auth.buildkite_signature("kite", body, f"timestamp={now + 1},signature={signed}", None, now=now)
    assert not auth.buildkite_signature("kite", body + b" ", header, None, now=now)
    # A signature header is checked on its own: a good plain token does not rescue a bad one.
    assert not auth.buildkite_signature("kite", body, "timestamp=1,signature=zz", "kite", now=now)
    assert auth.buildkite_signature("kite", body, None, "kite")
    assert not auth.buildkite_signature("kite", body, None, "kit")
    assert not auth.buildkite_signature(None, body, None, "kite")


def test_bearer_source_names_the_capture_source() -> None:
    tokens = {"gateway": "a" * 20, "hooks": "b" * 20}
    assert auth.bearer_source(tokens, f"Bearer {'a' * 20}") == "gateway"
    assert auth.bearer_source(tokens, f"bearer {'b' * 20}") == "hooks"
    assert auth.bearer_source(tokens, f"Bearer {'c' * 20}") is None
    assert auth.bearer_source(tokens, f"Basic {'a' * 20}") is None
    assert auth.bearer_source(tokens, "Bearer") is None
    assert auth.bearer_source(tokens, None) is None
    assert auth.bearer_source({}, f"Bearer {'a' * 20}") is None


# --- configuration -------------------------------------------------------------------------


def test_ingest_tokens_are_checked_in_one_line() -> None:
    assert ingest_tokens('{"gateway": "0123456789abcdef"}') == {"gateway": "0123456789abcdef"}
    assert ingest_tokens("") == {}
    for raw, message in (
        ("[1]", "must be a JSON object"),
        ("{oops", "must be a JSON object"),
        ('{"gateway": "short"}', "at least 16 characters"),
        ('{"gateway": 12345678901234567}', "at least 16 characters"),
        ('{"a": "0123456789abcdef", "b": "0123456789abcdef"}', "share a token"),
    ):
        with pytest.raises(ConfigurationError, match=message):
            ingest_tokens(raw)


def test_config_defaults_to_loopback_and_reads_the_environment(tmp_path: Path) -> None:
    config = from_environment(org_id="acme", database_url="sqlite://", home=tmp_path, mirror_path=None, environ={})
    assert (config.host, config.port, config.max_body_bytes) == ("127.0.0.1", 8000, 25 * 1024 * 1024)
    assert config.spool == tmp_path / "spool"
    assert config.secrets == {}
    env = {"SEDIMENT_RECEIVER_PORT": "9000", "SEDIMENT_RECEIVER_MAX_BODY_BYTES": "1024",
           "SEDIMENT_GITHUB_WEBHOOK_SECRET": "x", "SEDIMENT_BUILDKITE_WEBHOOK_TOKEN": "y",
           "SEDIMENT_RECEIVER_SPOOL": str(tmp_path / "elsewhere")}
    config = from_environment(org_id="acme", database_url="sqlite://", home=tmp_path, mirror_path=None, environ=env)
    assert (config.port, config.max_body_bytes, config.spool) == (9000, 1024, tmp_path / "elsewhere")
    assert config.secrets == {"github": "x", "buildkite": "y"}
    flags = from_environment(org_id="acme", database_url="sqlite://", home=tmp_path, mirror_path=None, environ=env,
                             host="0.0.0.0", port=9100, max_body_bytes=10)
    assert (flags.host, flags.port, flags.max_body_bytes) == ("0.0.0.0", 9100, 10)
    assert config.gitlab_host == "gitlab.com"
    hosted = from_environment(org_id="acme", database_url="sqlite://", home=tmp_path, mirror_path=None,
                              environ={"SEDIMENT_GITLAB_HOST": "gitlab.example.com"})
    assert hosted.gitlab_host == "gitlab.example.com"
    for name, value in (("SEDIMENT_GITLAB_HOST", "https://gitlab.example.com"), ("SEDIMENT_GITLAB_HOST", "GitLab"),
                        ("SEDIMENT_RECEIVER_PORT", "70000"), ("SEDIMENT_RECEIVER_PORT", "http"),
                        ("SEDIMENT_RECEIVER_MAX_BODY_BYTES", "0"), ("SEDIMENT_RECEIVER_MAX_BODY_BYTES", "1e6")):
        with pytest.raises(ConfigurationError, match=name):
            from_environment(org_id="acme", database_url="sqlite://", home=tmp_path, mirror_path=None,
                             environ={name: value})


# --- the spool ------------------------------------------------------------------------------


def accept(spool: Spool, key: str, body: bytes = b"{}", route: str = "github") -> bool:
    return spool.accept(key, route=route, source=route, headers={"x-github-event": "push"}, received_at=T0,
                        body=body)


def test_spool_keeps_the_body_byte_for_byte(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    body = b'{"a": "\\ud800", "n": 123456789012345678901234567890}\n\x00\xff'
    key = delivery_key("github", body_digest(body))
    assert accept(spool, key, body)
    delivery = spool.read(key)
    assert delivery.body == body
    assert (delivery.route, delivery.received_at, delivery.header("X-GitHub-Event")) == ("github", T0, "push")


def test_spool_refuses_a_key_twice_in_any_state(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    keys = [delivery_key("github", f"d-{n}") for n in range(3)]
    assert all(accept(spool, key) for key in keys)
    assert not accept(spool, keys[0])
    spool.mark_done(keys[0])
    spool.mark_refused(keys[1], "head_sha: too short")
    assert not any(accept(spool, key) for key in keys)
    assert spool.counts() == {"pending": 1, "done": 1, "refused": 1}
    assert list(spool.refusals()) == [(keys[1], "head_sha: too short")]
    assert spool.pending() == [keys[2]]


def test_spool_keys_depend_on_route_and_identity() -> None:
    assert delivery_key("github", "x") != delivery_key("gitlab", "x")
    assert delivery_key("github", "x") == delivery_key("github", "x")
    assert len({delivery_key("ci", body_digest(bytes([n]))) for n in range(256)}) == 256


def test_spool_pending_is_in_arrival_order_and_survives_reopening(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    keys = [delivery_key("ci", f"n-{n}") for n in range(20)]
    for n, key in enumerate(keys):
        accept(spool, key, body=f'{{"n": {n}}}'.encode())
        os.utime(spool.path / "pending" / key, ns=(n * 1_000_000, n * 1_000_000))
    (tmp_path / "tmp" / "half-written").write_bytes(b"never acknowledged")
    reopened = Spool(tmp_path)
    assert reopened.pending() == keys
    assert [json.loads(reopened.read(key).body)["n"] for key in keys] == list(range(20))
    assert list((tmp_path / "tmp").iterdir()) == []  # an unacknowledged write is dropped


def test_spool_is_the_same_whatever_the_order_of_arrival(tmp_path: Path) -> None:
    bodies = [f'{{"n": {n}}}'.encode() for n in range(30)] * 2
    results = []
    for seed in (1, 2):
        shuffled = list(bodies)
        random.Random(seed).shuffle(shuffled)
        spool = Spool(tmp_path / str(seed))
        accepted = [accept(spool, delivery_key("ci", body_digest(b)), b) for b in shuffled]
        assert accepted.count(True) == 30
        results.append(sorted(spool.pending()))
    assert results[0] == results[1]


def test_spool_directory_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigurationError, match="cannot create the receiver spool"):
        Spool(tmp_path / "file" / "spool")


# --- translators ----------------------------------------------------------------------------


def test_every_route_has_a_translator_and_forges_come_from_the_registry() -> None:
    assert set(TRANSLATORS) == {"ci", "gateway", "otlp", *FORGES}
    assert all(provider_supported(forge) for forge in FORGES)


def test_a_spooled_github_delivery_translates_like_ingest_github(tmp_path: Path) -> None:
    from sediment.ingest.ci.github import translate_github

    delivery_file = json.loads((FIXTURES / "github" / "workflow_run.completed.success.json").read_text())
    body = json.dumps(delivery_file["payload"]).encode()
    spool = Spool(tmp_path)
    key = delivery_key("github", "x-github-delivery:abc")
    spool.accept(key, route="github", source="github", received_at=T0, body=body,
                 headers={"x-github-event": "workflow_run", "x-github-delivery": "abc"})
    (translation,) = translate_delivery(spool.read(key), Acting("acme"))
    expected = translate_github({"headers": {"X-GitHub-Event": "workflow_run", "X-GitHub-Delivery": "abc"},
                                 "payload": delivery_file["payload"]}, event=None, org_id="acme", captured_at=T0)
    assert translation == expected
    assert translation.facts[0].source_event_id == "abc"  # type: ignore[attr-defined]


def test_a_spooled_buildkite_job_finished_is_a_job_of_its_build(tmp_path: Path) -> None:
    from sediment.ingest.ci.buildkite import translate_buildkite
    from sediment.model.ci_keys import job_id

    delivery_file = json.loads((FIXTURES / "ci" / "buildkite" / "job_finished.json").read_text())
    body = json.dumps(delivery_file["payload"]).encode()
    spool = Spool(tmp_path)
    key = delivery_key("buildkite", body_digest(body))
    spool.accept(key, route="buildkite", source="buildkite", received_at=T0, body=body,
                 headers={"x-buildkite-event": "job.finished"})
    (translation,) = translate_delivery(spool.read(key), Acting("acme"))
    assert translation == translate_buildkite(delivery_file, event=None, org_id="acme", captured_at=T0)
    (outcome,) = translation.facts
    assert job_id(outcome) == delivery_file["payload"]["job"]["id"]  # type: ignore[arg-type]
    assert outcome.run_id == delivery_file["payload"]["build"]["id"]  # type: ignore[attr-defined]


# --- the worker, in process ----------------------------------------------------------------


def test_worker_drains_in_order_and_survives_a_translator_bug(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from sediment.receiver import translators
    from sediment.receiver.worker import IngestWorker
    from sediment.store import FactStore

    record = json.loads((FIXTURES / "ci" / "buildkite_build_finished.json").read_text())
    spool = Spool(tmp_path / "spool")
    bodies = []
    for n in range(3):
        body = json.dumps({**record, "run_id": f"run-{n}"}).encode()
        bodies.append(body)
        spool.accept(delivery_key("ci", body_digest(body)), route="ci", source="ci-sender", headers={},
                     received_at=T0, body=body)
    real = translators.TRANSLATORS["ci"]

    def buggy(delivery, body, acting, received_at):  # type: ignore[no-untyped-def]
        if b'"run-1"' in delivery.body:
            raise RuntimeError("a bug")
        return real(delivery, body, acting, received_at)

    monkeypatch.setitem(translators.TRANSLATORS, "ci", buggy)
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    worker = IngestWorker(spool, org_id="acme", database_url=url, mirror_path=None)
    worker.start()
    try:
        deadline = time.monotonic() + 20
        while spool.counts()["pending"]:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert worker.alive
    finally:
        worker.stop()
    assert spool.counts() == {"pending": 0, "done": 2, "refused": 1}
    ((_, reason),) = spool.refusals()
    assert reason == "internal error: RuntimeError: a bug"
    store = FactStore(url)
    try:
        assert sorted(fact.run_id for fact in store.facts("ci_outcomes", "acme")) == ["run-0", "run-2"]  # type: ignore[attr-defined]
        # captured_at is the receive time, so processing a delivery again yields the same Fact
        assert {fact.captured_at for fact in store.facts("ci_outcomes", "acme")} == {T0}  # type: ignore[attr-defined]
    finally:
        store.close()


@pytest.mark.parametrize(("env", "message"), [
    ({}, "error: SEDIMENT_ORG_ID is not set; pass --org or export SEDIMENT_ORG_ID"),
    ({"SEDIMENT_ORG_ID": "acme", "SEDIMENT_INGEST_TOKENS": '{"gateway": "short"}'},
     "error: SEDIMENT_INGEST_TOKENS: the token of 'gateway' must be a string of at least 16 characters"),
    ({"SEDIMENT_ORG_ID": "acme", "SEDIMENT_RECEIVER_PORT": "99999"},
     "error: SEDIMENT_RECEIVER_PORT must be a port number (0-65535): '99999'"),
])
def test_serve_refuses_bad_settings_in_one_line_before_listening(tmp_path: Path, env: dict[str, str],
                                                                 message: str) -> None:
    import subprocess
    import sys

    environ = {**os.environ, "SEDIMENT_HOME": str(tmp_path), **env}
    result = subprocess.run([sys.executable, "-m", "sediment", "serve"], env=environ, capture_output=True, text=True,
                            timeout=60)
    assert (result.returncode, result.stderr.strip(), result.stdout) == (1, message, "")
