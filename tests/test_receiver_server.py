"""The live receiver end to end: ``sediment serve`` under uvicorn in a subprocess on a loopback
port, driven by real HTTP clients (httpx), its Facts read back from the real store."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import hmac
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ORG = "acme"
GITHUB_SECRET = "it's a secret to everybody"
GITLAB_TOKEN = "gitlab-token-0123456789"
CIRCLECI_SECRET = "circleci-signing-secret"
BUILDKITE_TOKEN = "buildkite-webhook-token"
TOKENS = {"litellm-gateway": "gateway-token-0123456789", "claude-hooks": "hooks-token-0123456789",
          "ci-sender": "ci-token-0123456789ab"}
FIXTURES = Path(__file__).parent / "fixtures"

# A LiteLLM StandardLoggingPayload as the gateway's callback posts it (fields as documented;
# the Session in the requester metadata).
LITELLM_PAYLOAD: dict[str, Any] = {
    "id": "chatcmpl-serve",
    "litellm_call_id": "3f1e0a52-4d3c-4c7e-9a55-0b7a1f1d2e01",
    "call_type": "acompletion",
    "stream": False,
    "status": "success",
    "custom_llm_provider": "anthropic",
    "model": "claude-sonnet-4-5",
    "startTime": 1750000000.25,
    "endTime": 1750000002.5,
    "metadata": {"requester_metadata": {"session_id": "sess-serve"}},
    "messages": [{"role": "user", "content": "Fix test_slug.py"}],
    "response": {
        "id": "chatcmpl-serve",
        "object": "chat.completion",
        "model": "claude-sonnet-4-5-20250929",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Fixed the slug."}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16},
    },
}


def datetime_now() -> datetime:
    return datetime.now(UTC)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def health(self) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(f"{self.url}/healthz", timeout=5).json()
        return body

    def drained(self, timeout: float = 30.0) -> dict[str, Any]:
        """Wait until no delivery is pending; the health report then."""
        deadline = time.monotonic() + timeout
        while True:
            health = self.health()
            if health["spool"]["pending"] == 0:
                return health
            if time.monotonic() > deadline:
                raise AssertionError(f"deliveries still pending after {timeout}s: {health}")
            time.sleep(0.05)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)


def environment(tmp_path: Path, store_url: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "SEDIMENT_HOME": str(tmp_path / "home"),
        "SEDIMENT_DATABASE_URL": store_url,
        "SEDIMENT_ORG_ID": ORG,
        "SEDIMENT_RECEIVER_SPOOL": str(tmp_path / "spool"),
        "SEDIMENT_GITHUB_WEBHOOK_SECRET": GITHUB_SECRET,
        "SEDIMENT_GITLAB_WEBHOOK_TOKEN": GITLAB_TOKEN,
        "SEDIMENT_CIRCLECI_WEBHOOK_SECRET": CIRCLECI_SECRET,
        "SEDIMENT_BUILDKITE_WEBHOOK_TOKEN": BUILDKITE_TOKEN,
        "SEDIMENT_INGEST_TOKENS": json.dumps(TOKENS),
        "SEDIMENT_CAPTURE_TIME": "",
    })
    env.update(extra)
    return env


@contextlib.contextmanager
def running(tmp_path: Path, env: dict[str, str], *args: str) -> Iterator[Server]:
    """``sediment serve`` on a free loopback port, up and healthy; stopped afterwards."""
    port = free_port()
    log = tmp_path / f"serve-{port}.log"
    with log.open("wb") as output:
        process = subprocess.Popen([sys.executable, "-m", "sediment", "serve", "--port", str(port), *args],
                                   env=env, stdout=output, stderr=subprocess.STDOUT, cwd=tmp_path)
    server = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise AssertionError(f"sediment serve exited {process.returncode}: {log.read_text()}")
            try:
                server.health()
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"sediment serve did not come up: {log.read_text()}") from None
                time.sleep(0.05)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def github_signature(body: bytes, secret: str = GITHUB_SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def workflow_run(run_id: int, *, attempt: int = 1) -> bytes:
    """The completed workflow_run fixture as run ``run_id`` (a distinct CIOutcome per run)."""
    delivery = json.loads((FIXTURES / "github" / "workflow_run.completed.success.json").read_text())
    payload = copy.deepcopy(delivery["payload"])
    payload["workflow_run"]["id"] = run_id
    payload["workflow_run"]["run_attempt"] = attempt
    return json.dumps(payload).encode()


def github_headers(body: bytes, delivery: str, *, event: str = "workflow_run",
                   signature: str | None = "good") -> dict[str, str]:
    headers = {"Content-Type": "application/json", "X-GitHub-Event": event, "X-GitHub-Delivery": delivery}
    if signature == "good":
        headers["X-Hub-Signature-256"] = github_signature(body)
    elif signature is not None:
        headers["X-Hub-Signature-256"] = signature
    return headers


def stored_run_ids(store_url: str) -> list[str]:
    from sediment.model.facts import CIOutcome
    from sediment.store import FactStore

    store = FactStore(store_url)
    try:
        ids = []
        for fact in store.facts("ci_outcomes", ORG):
            assert isinstance(fact, CIOutcome)
            ids.append(fact.run_id)
        return sorted(ids)
    finally:
        store.close()


def counts(store_url: str) -> dict[str, int]:
    from sediment.store import FactStore

    store = FactStore(store_url)
    try:
        return {table: value["stored"] for table, value in store.counts(ORG).items() if value["stored"]}
    finally:
        store.close()


# --- signatures, body cap, duplicates, health ---------------------------------------------


def test_health_reports_the_spool_and_version(tmp_path: Path) -> None:
    with running(tmp_path, environment(tmp_path, f"sqlite:///{tmp_path / 'facts.db'}")) as server:
        for path in ("/healthz", "/health"):
            response = httpx.get(server.url + path)
            assert response.status_code == 200
            body = response.json()
            assert body["status"] == "ok"
            assert body["spool"] == {"pending": 0, "done": 0, "refused": 0}


def test_github_signatures_good_bad_missing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    body = workflow_run(1001)
    with running(tmp_path, environment(tmp_path, url)) as server, httpx.Client(base_url=server.url) as client:
        wrong_secret = github_signature(body, "not the secret")
        tampered = github_signature(body + b" ")
        for signature in (None, wrong_secret, tampered, "sha256=", "sha1=" + "0" * 40, "garbage"):
            response = client.post("/ingest/github", content=body,
                                   headers=github_headers(body, f"bad-{signature}", signature=signature))
            assert response.status_code == 401, signature
            assert response.json() == {"error": "github webhook signature missing or invalid"}
        assert server.health()["spool"] == {"pending": 0, "done": 0, "refused": 0}
        good = client.post("/ingest/github", content=body, headers=github_headers(body, "d-1"))
        assert good.status_code == 202
        assert good.json()["accepted"] is True and good.json()["duplicate"] is False
        health = server.drained()
    assert health["spool"] == {"pending": 0, "done": 1, "refused": 0}
    assert stored_run_ids(url) == ["1001"]
    assert counts(url) == {"ci_outcomes": 1}


def test_every_github_path_takes_every_event(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    push = (FIXTURES / "github" / "push.json").read_bytes()
    push_payload = json.dumps(json.loads(push)["payload"]).encode() if b'"payload"' in push else push
    with running(tmp_path, environment(tmp_path, url)) as server, httpx.Client(base_url=server.url) as client:
        assert client.post("/ingest/github/push", content=push_payload,
                           headers=github_headers(push_payload, "p-1", event="push")).status_code == 202
        run = workflow_run(2002)
        assert client.post("/ingest/github/ci", content=run, headers=github_headers(run, "r-1")).status_code == 202
        server.drained()
    assert counts(url) == {"ci_outcomes": 1, "pushes": 1}


def test_redelivery_is_acknowledged_once_and_stored_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    body = workflow_run(3003)
    with running(tmp_path, environment(tmp_path, url)) as server, httpx.Client(base_url=server.url) as client:
        first = client.post("/ingest/github", content=body, headers=github_headers(body, "same-guid"))
        again = client.post("/ingest/github", content=body, headers=github_headers(body, "same-guid"))
        assert (first.status_code, again.status_code) == (202, 200)
        assert again.json() == {"accepted": True, "duplicate": True, "delivery": first.json()["delivery"]}
        # A new delivery id for the same run (GitHub re-sends the event): spooled, but its natural
        # key (org, provider, run id, attempt) stores nothing new.
        other = client.post("/ingest/github", content=body, headers=github_headers(body, "another-guid"))
        assert other.status_code == 202
        health = server.drained()
    assert health["spool"]["done"] == 2
    assert health["ingested"]["stored"] == {"ci_outcomes": 1}
    assert health["ingested"]["duplicates"] == {"ci_outcomes": 1}
    assert stored_run_ids(url) == ["3003"]


def test_body_cap_refuses_with_413_before_reading_it_all(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    fits = workflow_run(4004)
    limit = len(fits)  # a body of exactly the limit is accepted, one byte more is not
    with running(tmp_path, environment(tmp_path, url), "--max-body-bytes", str(limit)) as server, \
            httpx.Client(base_url=server.url) as client:
        over = fits + b" "
        declared = client.post("/ingest/github", content=over, headers=github_headers(over, "over-1"))
        assert (declared.status_code, declared.json()) == (413, {"error": f"request body larger than {limit} bytes"})

        def streamed() -> Iterator[bytes]:  # no Content-Length (chunked): refused once past the limit
            for _ in range(1024):
                yield b" " * 1024

        chunked = client.post("/ingest/github", content=streamed(),
                              headers={"X-GitHub-Event": "workflow_run", "X-Hub-Signature-256": "sha256=00"})
        assert chunked.status_code == 413
        bearer = client.post("/ingest/ci", content=over, headers={"Authorization": f"Bearer {TOKENS['ci-sender']}"})
        assert bearer.status_code == 413
        assert client.post("/ingest/github", content=fits, headers=github_headers(fits, "ok-1")).status_code == 202
        health = server.drained()
    assert health["spool"] == {"pending": 0, "done": 1, "refused": 0}
    assert stored_run_ids(url) == ["4004"]


def vendor_body(name: str) -> tuple[bytes, str]:
    """A provider's own webhook payload (kept as ``raw`` of the fixture's normalized record) and its run id."""
    record = json.loads((FIXTURES / "ci" / name).read_text())
    return json.dumps(record["raw"]).encode(), record["run_id"]


def test_gitlab_circleci_and_buildkite_webhooks_verify_then_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    gitlab, gitlab_run = vendor_body("gitlab_pipeline_hook.json")
    circleci, circleci_run = vendor_body("circleci_workflow_completed.json")
    buildkite, buildkite_run = vendor_body("buildkite_build_finished.json")
    stamp = str(int(time.time()))
    kite = hmac.new(BUILDKITE_TOKEN.encode(), f"{stamp}.".encode() + buildkite, hashlib.sha256).hexdigest()
    circle = hmac.new(CIRCLECI_SECRET.encode(), circleci, hashlib.sha256).hexdigest()
    refused = [
        ("/ingest/gitlab", gitlab, {"X-Gitlab-Event": "Pipeline Hook"}),
        ("/ingest/gitlab", gitlab, {"X-Gitlab-Event": "Pipeline Hook", "X-Gitlab-Token": GITLAB_TOKEN + "x"}),
        ("/ingest/circleci", circleci, {"circleci-event-type": "workflow-completed"}),
        ("/ingest/circleci", circleci, {"circleci-event-type": "workflow-completed",
                                        "circleci-signature": f"v1={circle}"[:-1] + "0"}),
        ("/ingest/buildkite", buildkite, {"X-Buildkite-Event": "build.finished"}),
        ("/ingest/buildkite", buildkite, {"X-Buildkite-Event": "build.finished",
                                          "X-Buildkite-Signature": f"timestamp={int(stamp) - 3600},signature={kite}"}),
        ("/ingest/buildkite", buildkite, {"X-Buildkite-Event": "build.finished", "X-Buildkite-Token": "nope"}),
    ]
    accepted = [
        ("/ingest/gitlab", gitlab, {"X-Gitlab-Event": "Pipeline Hook", "X-Gitlab-Token": GITLAB_TOKEN,
                                    "X-Gitlab-Event-UUID": "0e7c6a3b-5f6e-4b8e-a1d1-6e9a8c1b2f00"}),
        ("/ingest/circleci", circleci, {"circleci-event-type": "workflow-completed",
                                        "circleci-signature": f"v1={circle}"}),
        ("/ingest/buildkite", buildkite, {"X-Buildkite-Event": "build.finished",
                                          "X-Buildkite-Signature": f"timestamp={stamp},signature={kite}"}),
    ]
    env = environment(tmp_path, url, SEDIMENT_GITLAB_HOST="gitlab.example.com")
    with running(tmp_path, env) as server, httpx.Client(base_url=server.url) as client:
        for path, body, headers in refused:
            assert client.post(path, content=body, headers=headers).status_code == 401, (path, headers)
        assert server.health()["spool"]["pending"] + server.health()["spool"]["done"] == 0
        for path, body, headers in accepted:
            assert client.post(path, content=body, headers=headers).status_code == 202, path
        # The same GitLab delivery again (its event UUID); the Buildkite build by plain token.
        path, body, headers = accepted[0]
        assert client.post(path, content=body, headers=headers).json()["duplicate"] is True
        token = {"X-Buildkite-Event": "build.finished", "X-Buildkite-Token": BUILDKITE_TOKEN}
        # No delivery id from Buildkite: the same body on the same route is the same delivery …
        assert client.post("/ingest/buildkite", content=buildkite, headers=token).status_code == 200
        # … and a re-sent build whose bytes differ is spooled again but stored once (its natural key).
        assert client.post("/ingest/buildkite", content=buildkite + b"\n", headers=token).status_code == 202
        health = server.drained()
    assert health["spool"] == {"pending": 0, "done": 4, "refused": 0}
    assert stored_run_ids(url) == sorted([gitlab_run, circleci_run, buildkite_run])
    assert counts(url) == {"ci_outcomes": 3}
    from sediment.model.facts import CIOutcome
    from sediment.store import FactStore

    store = FactStore(url)
    try:
        hosts = {fact.provider: fact.repository_host for fact in store.facts("ci_outcomes", ORG)
                 if isinstance(fact, CIOutcome)}
    finally:
        store.close()
    project_id = json.loads(gitlab).get("project", {}).get("id")
    assert hosts["gitlab_ci"] == ("gitlab.example.com" if project_id is not None else None)  # the configured host


def test_a_retried_gitlab_pipeline_is_stored_as_each_final_event_and_resolves_to_the_retry(tmp_path: Path) -> None:
    """GitLab sends a failed, then a running, then a passing Pipeline Hook under one pipeline id
    when a job is retried: the receiver stores both final events (keyed by their finished_at)
    and CI resolution takes the retry's verdict; redelivering either stores nothing more."""
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    record = json.loads((FIXTURES / "ci" / "gitlab" / "pipeline_hook.json").read_text())
    bodies = []
    for status, finished in (("failed", "2024-04-30 09:20:01 UTC"), ("running", None),
                             ("success", "2024-04-30 10:05:44 UTC")):
        payload = copy.deepcopy(record["payload"])
        payload["object_attributes"].update(status=status, detailed_status=status, finished_at=finished)
        if status == "success":
            for build in payload["builds"]:
                build.update(status="success", failure_reason=None)
        bodies.append((json.dumps(payload).encode(), f"uuid-{status}"))
    with running(tmp_path, environment(tmp_path, url)) as server, httpx.Client(base_url=server.url) as client:
        for body, uuid in [*bodies, bodies[2], bodies[0]]:
            headers = {"X-Gitlab-Event": "Pipeline Hook", "X-Gitlab-Token": GITLAB_TOKEN, "X-Gitlab-Event-UUID": uuid}
            assert client.post("/ingest/gitlab", content=body, headers=headers).status_code in (200, 202)
        # the same events again under new delivery ids: spooled, and collapsed on their natural keys
        for body, uuid in (bodies[0], bodies[2]):
            headers = {"X-Gitlab-Event": "Pipeline Hook", "X-Gitlab-Token": GITLAB_TOKEN,
                       "X-Gitlab-Event-UUID": uuid + "-again"}
            assert client.post("/ingest/gitlab", content=body, headers=headers).status_code == 202
        server.drained()
    assert counts(url) == {"ci_outcomes": 2}
    from sediment.ci.resolution import resolve_ci
    from sediment.git.repositories import RepositoryContext
    from sediment.model.facts import CIOutcome
    from sediment.store import FactStore

    store = FactStore(url)
    try:
        outcomes = [f for f in store.facts("ci_outcomes", ORG) if isinstance(f, CIOutcome)]
    finally:
        store.close()
    (resolution,) = resolve_ci(outcomes, quarantine_revision=0,
                               repositories=RepositoryContext.build(ORG, outcomes)).resolutions
    assert (resolution.verdict, resolution.suspected_flake, len(resolution.source_outcome_ids)) == ("passed", True, 2)
    (passed,) = [o for o in outcomes if o.result == "passed"]
    assert resolution.verdict_outcome_ids == (passed.outcome_id,)


def test_bearer_routes_need_a_configured_capture_token(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    body = (FIXTURES / "ci" / "buildkite_build_finished.json").read_bytes()  # a sender-normalized record
    with running(tmp_path, environment(tmp_path, url)) as server, httpx.Client(base_url=server.url) as client:
        for authorization in (None, "Bearer nope-nope-nope-nope", f"Basic {TOKENS['ci-sender']}", "Bearer"):
            headers = {} if authorization is None else {"Authorization": authorization}
            assert client.post("/ingest/ci", content=body, headers=headers).status_code == 401
        response = client.post("/ingest/ci", content=body, headers={"Authorization": f"Bearer {TOKENS['ci-sender']}"})
        assert response.status_code == 202
        assert client.post("/ingest/ci", content=b"{not json",
                           headers={"Authorization": f"Bearer {TOKENS['ci-sender']}"}).status_code == 400
        health = server.drained()
    assert health["spool"] == {"pending": 0, "done": 1, "refused": 0}
    assert counts(url) == {"ci_outcomes": 1}
    assert stored_run_ids(url) == [json.loads(body)["run_id"]]


def test_litellm_callback_and_otlp_logs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    otlp = (FIXTURES / "otlp" / "claude_code.json").read_bytes()
    call = json.dumps(LITELLM_PAYLOAD).encode()
    with running(tmp_path, environment(tmp_path, url)) as server, httpx.Client(base_url=server.url) as client:
        hooks = {"Authorization": f"Bearer {TOKENS['claude-hooks']}", "Content-Type": "application/json"}
        logs = client.post("/v1/logs", content=otlp, headers=hooks)
        assert (logs.status_code, logs.json()) == (200, {})
        protobuf = client.post("/v1/logs", content=b"\x0a\x00",
                               headers={**hooks, "Content-Type": "application/x-protobuf"})
        assert protobuf.status_code == 415
        gateway = client.post("/ingest/gateway", content=call,
                              headers={"Authorization": f"Bearer {TOKENS['litellm-gateway']}"})
        assert gateway.status_code == 202
        health = server.drained()
    stored = counts(url)
    assert stored["inference_calls"] == 1
    assert stored["developer_decisions"] >= 1
    from sediment.ingest.otlp import translate_otlp
    from sediment.ingest.reading.files import records

    # The receiver stores what `sediment ingest otlp` would: the same Facts from the same export.
    expected = [translate_otlp(record, org_id=ORG, captured_at=datetime_now()) for _, record in
                records(str(FIXTURES / "otlp" / "claude_code.json"), keep_flaws=True)]
    assert stored["developer_decisions"] == sum(
        1 for t in expected for f in t.facts if type(f).__name__ == "DeveloperDecision")
    assert health["spool"]["refused"] == 0


def test_litellm_batches_keep_the_good_calls_around_a_bad_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    second = {**LITELLM_PAYLOAD, "litellm_call_id": "3f1e0a52-4d3c-4c7e-9a55-0b7a1f1d2e02"}
    third = {**LITELLM_PAYLOAD, "litellm_call_id": "3f1e0a52-4d3c-4c7e-9a55-0b7a1f1d2e03"}
    broken = {**LITELLM_PAYLOAD, "litellm_call_id": "3f1e0a52-4d3c-4c7e-9a55-0b7a1f1d2e04", "messages": 7}
    array = json.dumps([LITELLM_PAYLOAD, broken, second]).encode()  # LiteLLM's json_array log format
    ndjson = (json.dumps(third) + "\n{oops\n").encode()  # its ndjson format, one line broken
    gateway = {"Authorization": f"Bearer {TOKENS['litellm-gateway']}"}
    with running(tmp_path, environment(tmp_path, url)) as server, httpx.Client(base_url=server.url) as client:
        assert client.post("/ingest/gateway", content=array, headers=gateway).status_code == 202
        assert client.post("/ingest/gateway", content=ndjson, headers=gateway).status_code == 202
        assert client.post("/ingest/gateway", content=b"{oops\n{oops\n", headers=gateway).status_code == 400
        health = server.drained()
    assert health["spool"] == {"pending": 0, "done": 0, "refused": 2}
    assert counts(url) == {"inference_calls": 3}
    reasons = sorted(p.read_text().strip() for p in (tmp_path / "spool" / "refused").glob("*.reason"))
    assert reasons[0].startswith("[1]: messages: ") and reasons[1].startswith("[1]: not JSON: ")


def test_a_malformed_delivery_is_refused_with_its_reason_and_the_next_still_ingests(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'facts.db'}"
    broken = json.loads(workflow_run(5005))
    broken["workflow_run"]["head_sha"] = "abc"
    bad = json.dumps(broken).encode()
    good = workflow_run(5006)
    with running(tmp_path, environment(tmp_path, url)) as server, httpx.Client(base_url=server.url) as client:
        assert client.post("/ingest/github", content=bad, headers=github_headers(bad, "bad-sha")).status_code == 202
        assert client.post("/ingest/github", content=good, headers=github_headers(good, "good")).status_code == 202
        health = server.drained()
    assert health["spool"] == {"pending": 0, "done": 1, "refused": 1}
    reasons = [p.read_text() for p in (tmp_path / "spool" / "refused").glob("*.reason")]
    assert len(reasons) == 1 and "head_sha" in reasons[0]
    assert stored_run_ids(url) == ["5006"]


# --- load: concurrency, duplicates, bad signatures; kill -9 -----------------------------


async def _deliver(client: httpx.AsyncClient, body: bytes, headers: dict[str, str]) -> int:
    response = await client.post("/ingest/github", content=body, headers=headers)
    return response.status_code


def test_bounded_load_with_duplicates_and_bad_signatures_stores_exactly(tmp_path: Path, store_url: str) -> None:
    import asyncio

    runs = 80
    deliveries: list[tuple[bytes, dict[str, str], int]] = []
    for n in range(runs):
        body = workflow_run(10_000 + n)
        deliveries.append((body, github_headers(body, f"load-{n}"), 202))
        deliveries.append((body, github_headers(body, f"load-{n}"), 200))  # the same delivery again
        if n % 3 == 0:  # the same run under a new delivery id: spooled, collapsed by its natural key
            deliveries.append((body, github_headers(body, f"load-{n}-resent"), 202))
        if n % 4 == 0:
            deliveries.append((body, github_headers(body, f"forged-{n}", signature="sha256=" + "0" * 64), 401))
    random.Random(7).shuffle(deliveries)

    async def fire(base: str) -> list[int]:
        limits = httpx.Limits(max_connections=16)
        async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:
            return await asyncio.gather(*(_deliver(client, body, headers) for body, headers, _ in deliveries))

    with running(tmp_path, environment(tmp_path, store_url)) as server:
        started = time.monotonic()
        statuses = asyncio.run(fire(server.url))
        elapsed = time.monotonic() - started
        health = server.drained()
    forged = sum(1 for *_, expected in deliveries if expected == 401)
    assert statuses.count(401) == forged
    # A delivery and its repeat race: exactly one of each pair is the 202, the other the 200.
    assert statuses.count(202) == runs + len(range(0, runs, 3))
    assert statuses.count(200) == runs
    assert health["spool"] == {"pending": 0, "done": runs + len(range(0, runs, 3)), "refused": 0}
    assert stored_run_ids(store_url) == sorted(str(10_000 + n) for n in range(runs))
    assert counts(store_url) == {"ci_outcomes": runs}
    assert elapsed < 60, f"{len(deliveries)} deliveries took {elapsed:.1f}s"
    print(f"load: {len(deliveries)} deliveries ({forged} forged) answered in {elapsed:.2f}s, "
          f"{health['spool']['done']} spooled, {runs} CIOutcomes stored")


def test_kill_9_mid_load_loses_no_acknowledged_delivery(tmp_path: Path, store_url: str) -> None:
    import threading

    env = environment(tmp_path, store_url)
    acknowledged: list[int] = []
    runs = 400
    stop = threading.Event()

    def sender(base: str, offset: int) -> None:
        with httpx.Client(base_url=base, timeout=10) as client:
            for n in range(offset, runs, 4):
                if stop.is_set():
                    return
                body = workflow_run(20_000 + n)
                try:
                    response = client.post("/ingest/github", content=body, headers=github_headers(body, f"k-{n}"))
                except httpx.TransportError:
                    return  # the server is gone: this delivery was never acknowledged
                if response.status_code in (200, 202):
                    acknowledged.append(20_000 + n)

    with running(tmp_path, env) as server:
        threads = [threading.Thread(target=sender, args=(server.url, offset)) for offset in range(4)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while len(acknowledged) < 60 and time.monotonic() < deadline:
            time.sleep(0.01)
        server.kill()
        stop.set()
        for thread in threads:
            thread.join(15)
        killed_with = set(acknowledged)
        left_pending = len(list((tmp_path / "spool" / "pending").iterdir()))
        assert len(killed_with) >= 60, f"only {len(killed_with)} deliveries acknowledged before the kill"
    assert len(killed_with) < runs, "the kill came after the load ended; it proves nothing"
    with running(tmp_path, env) as server:
        health = server.drained()
    stored = {int(run_id) for run_id in stored_run_ids(store_url)}
    assert killed_with <= stored, f"acknowledged but lost: {sorted(killed_with - stored)[:10]}"
    # Nothing beyond what was sent, and nothing twice.
    assert stored <= {20_000 + n for n in range(runs)}
    assert counts(store_url) == {"ci_outcomes": len(stored)}
    assert health["spool"]["pending"] == 0 and health["spool"]["refused"] == 0
    print(f"kill -9: {len(killed_with)} acknowledged before the kill, {left_pending} of them still pending, "
          f"{len(stored)} stored after the restart")


# --- a push refreshes the pushed repository's mirror in the background -------------------


def test_push_refreshes_the_mirror_and_stores_new_note_edges(tmp_path: Path) -> None:
    from sediment.git.mirror_root import MirrorRoot
    from sediment.git.mirror_writer import MirrorWriter
    from sediment.model.facts import RepositoryIdentity

    delivery = json.loads((FIXTURES / "github" / "push.json").read_text())
    payload = delivery["payload"]
    repo, repository_id = payload["repository"]["full_name"], str(payload["repository"]["id"])
    origin = MirrorWriter(tmp_path / "origin.git")
    first = origin.commit({"a.py": "x = 1\n"}, "first", when=1_700_000_000)
    origin.add_note(first, [{"tool": "claude-code", "session_id": "sess-before", "stamped_at": "2024-05-01T12:00:00Z"}])
    mirror_root = tmp_path / "mirrors"
    mirror_root.mkdir()
    identity = RepositoryIdentity(provider="github", host="github.com", repository_id=repository_id)
    MirrorRoot(mirror_root).add(ORG, repo, str(tmp_path / "origin.git"), identity)
    second = origin.commit({"a.py": "x = 2\n"}, "second", when=1_700_000_100)
    origin.add_note(second, [{"tool": "claude-code", "session_id": "sess-pushed", "stamped_at": "2024-05-01T12:05:00Z"}])

    url = f"sqlite:///{tmp_path / 'facts.db'}"
    body = json.dumps(payload).encode()
    env = environment(tmp_path, url, SEDIMENT_MIRROR_PATH=str(mirror_root))
    with running(tmp_path, env) as server:
        response = httpx.post(f"{server.url}/ingest/github", content=body,
                              headers=github_headers(body, delivery["headers"]["X-GitHub-Delivery"], event="push"))
        assert response.status_code == 202
        server.drained()
        deadline = time.monotonic() + 20
        while server.health()["ingested"]["mirror_refreshes"] < 1:
            assert time.monotonic() < deadline, server.log.read_text()
            time.sleep(0.05)
    from sediment.model.facts import SessionCommitObservation
    from sediment.store import FactStore

    store = FactStore(url)
    try:
        observed = sorted((fact.session_id, fact.commit_sha) for fact in store.facts("session_commit_observations", ORG)
                          if isinstance(fact, SessionCommitObservation))
    finally:
        store.close()
    assert observed == sorted([("sess-before", first), ("sess-pushed", second)])
    assert counts(url) == {"pushes": 1, "session_commit_observations": 2}
