"""Mutation property tests of the webhook and OTLP ingest paths, both ways in (issue 20).

The GitLab, CircleCI and Buildkite deliveries (``fixtures/ci/<provider>``), the GitHub check and
job events (``fixtures/ci/github``) and the agent OTLP exports (``fixtures/otlp``) are mutated
the way :mod:`test_fuzz_ingest` mutates them (its generic mutations, reused), plus mutations
aimed at what the translators read: a state field set to a word of some provider's vocabulary
(so a pipeline turns ``failed`` and its ``builds[]`` are read), and a field the translators read
given another JSON kind (a ``failure_reason`` that is a list, an id that is an object).

Each example is checked both ways a delivery reaches the store:

- ``sediment ingest <provider>`` (a JSON Lines file of envelopes): every record is stored
  exactly (the Fact read back encodes to the Fact translated from the record parsed exactly,
  ``raw`` is the payload as sent, no field coerced) or refused in one line naming file and line,
  and the other records are kept (:func:`test_fuzz_ingest.run_ingest`);
- ``sediment serve`` (the spooled delivery: headers as received, the payload as the body):
  the receiver's translation is the same Facts or skip as the command's, or both refuse; a
  refusal is one line; nothing else is raised (that would be an ``internal error`` in
  ``refused/``).

``SEDIMENT_FUZZ_EXAMPLES`` sets the examples per test (default 30; no deadline).
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from sediment.ingest import Translation, TranslationError
from sediment.ingest.otlp import translate_otlp
from sediment.ingest.reading.files import describe_refusal
from sediment.receiver.spool import Delivery
from sediment.receiver.translators import EVENT_HEADERS, Acting, translate_delivery
from sediment.records import encode_record

sys.path.insert(0, str(Path(__file__).parent))
from test_fuzz_ingest import (
    OTLP_SEEDS,
    REFUSED,
    Path_,
    _github,
    _github_raw,
    _provider_raw,
    _provider_translator,
    get,
    mutate,
    otlp_mutate,
    otlp_reference,
    paths,
    provider_seeds,
    reference,
    render,
    replaced,
    run_ingest,
    text_mutation,
)

HERE = Path(__file__).parent
ORG = "acme"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
EXAMPLES = int(os.environ.get("SEDIMENT_FUZZ_EXAMPLES", "30"))
BUDGET = settings(max_examples=EXAMPLES, deadline=None, database=None, print_blob=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

STATE_KEYS = frozenset({"status", "state", "conclusion", "build_status", "object_kind", "type", "event",
                        "failure_reason", "build_failure_reason", "detailed_status", "action", "name", "app",
                        "slug", "blocked", "soft_failed", "retried", "tag", "exit_status"})
"""Keys whose value picks a translator's branch (a state, a kind, a flag)."""

STATE_WORDS: list[Any] = [
    # GitLab
    "success", "failed", "canceled", "canceling", "skipped", "created", "waiting_for_resource", "preparing",
    "pending", "running", "manual", "scheduled", "passed with warnings", "pipeline", "build",
    "stuck_or_timeout_failure", "job_execution_timeout", "script_failure",
    # CircleCI
    "failing", "error", "failed", "on_hold", "unauthorized", "not_run", "infrastructure_fail", "timedout",
    "terminated-unknown", "workflow-completed", "job-completed",
    # Buildkite
    "passed", "blocked", "canceled", "cancelling", "not_run", "finished", "broken", "timed_out", "script",
    "waiter", "manual", "build.finished", "job.finished", "build.running",
    # GitHub
    "completed", "in_progress", "queued", "requested", "waiting", "failure", "cancelled", "neutral",
    "action_required", "stale", "startup_failure", "github-actions", "check_run", "check_suite", "workflow_job",
    # other kinds in the same place
    "", " ", "SUCCESS", None, True, False, 0, 1, -1, 2**63, 1.5, [], ["failed"], {}, {"status": "failed"},
]


def kind_swaps(node: Any) -> list[Any]:
    """The same value as other JSON kinds (a list, an object, text, a number, a flag, null)."""
    swaps: list[Any] = [[node], {"value": node}, None, True, 0, -1, 1.5, 2**64, "", "x", [], {}]
    if not isinstance(node, str):
        swaps.append(render(node))  # its JSON text, as a string
    if isinstance(node, str) and node.isascii() and node.isdigit():
        swaps.append(int(node))
    return swaps


def aimed(data: st.DataObject, record: Any) -> Any:
    """A mutation aimed at what the translators read: a state word at a state key, or another
    JSON kind at any key; else a generic mutation."""
    where: list[Path_] = list(paths(record))
    states = [p for p in where if p and p[-1] in STATE_KEYS]
    kind = data.draw(st.sampled_from(["state", "state", "kind", "generic"]), label="aimed mutation")
    event(f"aimed: {kind}")
    if kind == "state" and states:
        path = data.draw(st.sampled_from(states), label="state path")
        return replaced(record, path, data.draw(st.sampled_from(STATE_WORDS), label="word"))
    if kind == "kind" and len(where) > 1:
        path = data.draw(st.sampled_from(where[1:]), label="path")
        return replaced(record, path, data.draw(st.sampled_from(kind_swaps(get(record, path))), label="swap"))
    return mutate(data, record)


def mutated(data: st.DataObject, seed: Any) -> Any:
    record = seed
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        record = aimed(data, record)
    return record


def file_lines(data: st.DataObject, seeds: list[Any]) -> list[bytes]:
    """The lines of one JSON Lines file: an intact seed first (so it reads as JSON Lines), then
    seeds mutated by :func:`aimed`, some of their bytes damaged."""
    lines = [render(seeds[data.draw(st.integers(0, len(seeds) - 1), label="first")]).encode("utf-8", "surrogatepass")]
    for _ in range(data.draw(st.integers(1, 4), label="records")):
        text = render(mutated(data, seeds[data.draw(st.integers(0, len(seeds) - 1), label="seed")]))
        encoded = text.encode("utf-8", "surrogatepass")
        if data.draw(st.integers(0, 5), label="damage") == 0:
            encoded = text_mutation(data, encoded)
        lines.append(encoded)
    return lines


# --- the receiver's way in -------------------------------------------------------------------


def spooled(route: str, headers: dict[str, str], body: bytes) -> Delivery:
    return Delivery(key="k", route=route, source="fuzz", headers={k.lower(): v for k, v in headers.items()},
                    received_at=T0, body=body)


def live(delivery: Delivery) -> list[Translation] | str:
    """The receiver's translation of a spooled delivery, or its one-line refusal."""
    try:
        return translate_delivery(delivery, Acting(org_id=ORG))
    except (TranslationError, ValidationError) as exc:
        reason = describe_refusal(exc)
        assert "\n" not in reason and reason.strip(), reason
        return reason


def same(translation: Translation, other: Translation) -> None:
    assert [encode_record(f) for f in translation.facts] == [encode_record(f) for f in other.facts]
    assert (translation.skipped, translation.skips, translation.problems) == (other.skipped, other.skips,
                                                                             other.problems)


def check_receiver(provider: str, seed: dict[str, Any], payload: Any, body: bytes) -> None:
    """The receiver stores what ``sediment ingest`` stores from the envelope of the same
    headers and payload, or refuses it too."""
    headers = {k: v for k, v in (seed.get("headers") or {}).items() if isinstance(v, str)}
    got = live(spooled(provider, headers, body))
    value = reference(body)
    translate = _github if provider == "github" else _provider_translator(provider)
    try:
        if value is REFUSED or not isinstance(value, dict):
            raise TranslationError("not one exact JSON object")
        wanted = translate({"headers": headers, "payload": value} if headers else value)
    except (TranslationError, ValidationError):
        assert isinstance(got, str), f"the receiver stored what the command refuses: {payload!r:.300}"
        event("receiver: refused")
        return
    assert not isinstance(got, str), f"the receiver refused what the command stores: {got}"
    [translation] = got
    same(translation, wanted)
    event("receiver: skipped" if translation.skipped else "receiver: stored")


def receiver_example(data: st.DataObject, provider: str, seeds: list[dict[str, Any]]) -> None:
    seed = seeds[data.draw(st.integers(0, len(seeds) - 1), label="seed")]
    payload = mutated(data, seed.get("payload", seed))
    body = render(payload).encode("utf-8", "surrogatepass")
    if data.draw(st.integers(0, 5), label="damage") == 0:
        body = text_mutation(data, body)
    if data.draw(st.integers(0, 4), label="event header") == 0 and EVENT_HEADERS.get(provider):
        header = next((k for k in seed.get("headers", {}) if k.lower() == EVENT_HEADERS[provider]), None)
        word = data.draw(st.sampled_from([w for w in STATE_WORDS if isinstance(w, str)]), label="event")
        seed = {**seed, "headers": {**seed.get("headers", {}), header or EVENT_HEADERS[provider]: word}}
    check_receiver(provider, seed, payload, body)


# --- the tests -------------------------------------------------------------------------------

PROVIDERS = ["gitlab", "circleci", "buildkite"]


def github_check_seeds() -> list[dict[str, Any]]:
    """The GitHub check-run, check-suite and workflow-job deliveries."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((HERE / "fixtures" / "ci" / "github").glob("*.json"))]


@pytest.mark.parametrize("provider", PROVIDERS)
@BUDGET
@given(data=st.data())
def test_ingest_command_stores_exactly_or_refuses_one_line(provider: str, data: st.DataObject) -> None:
    translate = _provider_translator(provider)
    run_ingest(file_lines(data, provider_seeds(provider)), translate, lambda: translate, _provider_raw)


@BUDGET
@given(data=st.data())
def test_ingest_github_checks_stores_exactly_or_refuses_one_line(data: st.DataObject) -> None:
    run_ingest(file_lines(data, github_check_seeds()), _github, lambda: _github, _github_raw)


@pytest.mark.parametrize("provider", [*PROVIDERS, "github"])
@BUDGET
@given(data=st.data())
def test_receiver_stores_what_the_command_stores_or_refuses_one_line(provider: str, data: st.DataObject) -> None:
    seeds = github_check_seeds() if provider == "github" else provider_seeds(provider)
    receiver_example(data, provider, [s for s in seeds if "headers" in s and "payload" in s])


@BUDGET
@given(data=st.data())
def test_receiver_otlp_translates_as_the_command_or_refuses_one_line(data: st.DataObject) -> None:
    batch = OTLP_SEEDS[data.draw(st.integers(0, len(OTLP_SEEDS) - 1), label="seed")]
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        batch = otlp_mutate(data, batch)
    body = render(batch).encode("utf-8", "surrogatepass")
    if data.draw(st.integers(0, 5), label="damage") == 0:
        body = text_mutation(data, body)
    got = live(spooled("otlp", {"content-type": "application/json"}, body))
    value = otlp_reference(body)
    try:
        if value is REFUSED or not isinstance(value, dict):
            raise TranslationError("not one JSON object")
        wanted = translate_otlp(value, org_id=ORG, captured_at=T0)
    except TranslationError:
        assert isinstance(got, str), "the receiver stored a batch the command refuses"
        event("receiver: refused")
        return
    assert not isinstance(got, str), f"the receiver refused a batch the command reads: {got}"
    [translation] = got
    same(translation, wanted)
    assert translation.elements == wanted.elements
    event(f"receiver: {len(translation.facts)} Fact(s), {len(translation.problems)} problem(s)")
