"""The identity of an inference call: a provider's response id is unique only within a Session.

Test servers and local models reuse response ids (``chatcmpl-1`` in every Session), so a call
with a ``model_call_id`` is keyed, and its deterministic id derived, from
``(org, gateway, session, model_call_id)``. Schema version 5 re-keys the calls of older stores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from sediment.derive.sessions import StoreRollouts
from sediment.ingest.calls import translate_call
from sediment.ingest.facts_jsonl import translate_fact
from sediment.model.facts import InferenceCall
from sediment.model.policy import DerivationPolicy
from sediment.records import decode_record, encode_record, plain, sha256_hex
from sediment.store import FactStore, StoreError, schema
from sediment.store.blob_codec import unpack
from sediment.store.ids import fact_id, inference_call_id
from sediment.testing import ORG, call, message

CAPTURED = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)


def chat(session_id: str, response_id: str, user_turns: list[str], *, observed_at: str) -> dict[str, Any]:
    """An OpenAI Chat request/response pair: the request replays every earlier turn."""
    messages: list[dict[str, Any]] = []
    for index, text in enumerate(user_turns):
        messages.append({"role": "user", "content": text})
        if index < len(user_turns) - 1:
            messages.append({"role": "assistant", "content": f"answer to {text}"})
    return {
        "request": {"model": "gpt-4.1", "messages": messages},
        "response": {"id": response_id, "model": "gpt-4.1", "choices": [{
            "index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": f"answer to {user_turns[-1]}"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2}},
        "session_id": session_id,
        "observed_at": observed_at,
    }


def translated(record: dict[str, Any]) -> InferenceCall:
    translation = translate_call(record, format="openai-chat", org_id=ORG, captured_at=CAPTURED)
    (fact,) = translation.facts
    assert isinstance(fact, InferenceCall)
    return fact


def scenario() -> tuple[InferenceCall, InferenceCall, InferenceCall]:
    """``chatcmpl-1`` in Session A; ``chatcmpl-1`` and ``chatcmpl-2`` in Session B."""
    return (translated(chat("sess-A", "chatcmpl-1", ["list the files"], observed_at="2026-03-01T10:00:00Z")),
            translated(chat("sess-B", "chatcmpl-1", ["run the tests"], observed_at="2026-03-01T11:00:00Z")),
            translated(chat("sess-B", "chatcmpl-2", ["run the tests", "fix them"],
                            observed_at="2026-03-01T11:01:00Z")))


# --- the identity rule ------------------------------------------------------------------


def test_a_calls_id_is_one_formula_scoped_to_its_session() -> None:
    a1, b1, b2 = scenario()
    assert a1.model_call_id == b1.model_call_id == "chatcmpl-1"
    assert a1.inference_call_id != b1.inference_call_id
    assert a1.inference_call_id == fact_id("call", ORG, "unknown", "sess-A", "chatcmpl-1")
    assert b1.inference_call_id == inference_call_id(ORG, "sess-B", "unknown", "chatcmpl-1", lambda: "unused")
    # The same call redelivered in its Session (another envelope) keeps its id.
    again = translated(chat("sess-B", "chatcmpl-1", ["run the tests"], observed_at="2026-03-02T00:00:00Z"))
    assert again.inference_call_id == b1.inference_call_id
    # Canonical Fact JSONL derives the very same id from the same natural key (one formula).
    for fact in (a1, b1, b2):
        line = {"fact_type": "inference_call", **plain(fact)}
        del line["inference_call_id"]
        (from_jsonl,) = translate_fact(json.loads(encode_record(line)), org_id=ORG).facts
        assert isinstance(from_jsonl, InferenceCall)
        assert from_jsonl.inference_call_id == fact.inference_call_id
    # Calls without a provider id are keyed by their content, within their Session, as before.
    bare = call("sess-A", 0, [message("user", "hi")], [message("assistant", "ho")])
    line = {"fact_type": "inference_call", **plain(bare)}
    del line["inference_call_id"]
    (keyed,) = translate_fact(json.loads(encode_record(line)), org_id=ORG).facts
    # (an absent tools list or capture, fields added later, is left out: old ids stay)
    body = keyed.model_dump(mode="json", exclude={"inference_call_id", "org_id", "tools", "capture"})
    assert keyed.inference_call_id == fact_id("call", ORG, "sess-A", sha256_hex(encode_record(body)))


def test_one_response_id_in_two_sessions_is_two_calls(store_url: str) -> None:
    a1, b1, b2 = scenario()
    store = FactStore(store_url)
    first = store.append([a1])
    second = store.append([b1, b2])
    assert first.stored == {"inference_calls": 1} and second.stored == {"inference_calls": 2}
    assert not first.duplicates and not second.duplicates
    assert store.calls_for_session(ORG, "sess-A") == [a1]
    assert store.calls_for_session(ORG, "sess-B") == [b1, b2]
    with store.engine.connect() as conn:
        keys = {row.fact_id: json.loads(row.natural_key) for row in conn.execute(select(schema.inference_calls))}
    assert keys[b1.inference_call_id] == ["call", ORG, "unknown", "sess-B", "chatcmpl-1"]
    # A redelivery within a Session still collapses, under its id or another.
    renamed = b1.model_copy(update={"inference_call_id": "b1-redelivered"})
    assert store.append([b1, renamed]).duplicates == {"inference_calls": 2}
    # Quarantining A's call hides nothing of B's.
    store.quarantine(ORG, "inference_calls", a1.inference_call_id, "test server replay")
    assert store.calls_for_session(ORG, "sess-B") == [b1, b2]
    rollouts = StoreRollouts(store, ORG, policy=DerivationPolicy(), mirrors=None)
    assert [r.session_id for r in rollouts] == ["sess-B"]


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


def test_derive_reads_every_session_through_the_cli(store_url: str, tmp_path: Path) -> None:
    """The reported failure end to end: ingest A's chatcmpl-1, then B's chatcmpl-1 and chatcmpl-2,
    and ``sediment derive`` must derive both Sessions."""
    records = [chat("sess-A", "chatcmpl-1", ["list the files"], observed_at="2026-03-01T10:00:00Z"),
               chat("sess-B", "chatcmpl-1", ["run the tests"], observed_at="2026-03-01T11:00:00Z"),
               chat("sess-B", "chatcmpl-2", ["run the tests", "fix them"], observed_at="2026-03-01T11:01:00Z")]
    (tmp_path / "a.jsonl").write_text(json.dumps(records[0]) + "\n")
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[1:]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env |= {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": ORG, "SEDIMENT_DATABASE_URL": store_url,
            "SEDIMENT_CAPTURE_TIME": "2026-03-03T09:00:00Z"}
    for name in ("a.jsonl", "b.jsonl"):
        ingested = _run("ingest", "calls", "--format", "openai-chat", str(tmp_path / name), "--json", env=env)
        assert ingested.returncode == 0, ingested.stderr
        assert json.loads(ingested.stdout)["duplicates"] == {}
    derived = _run("derive", "--out", str(tmp_path / "bundle"), "--json", env=env)
    assert derived.returncode == 0, derived.stderr
    assert json.loads(derived.stdout)["counts"]["rollouts"] == 2


# --- schema version 5: re-keying an older store -----------------------------------------


def _v4_key(fact: InferenceCall) -> str:
    return json.dumps(["call", fact.org_id, fact.gateway_provider, fact.model_call_id], separators=(",", ":"))


def _v4_id(fact: InferenceCall) -> str:
    return fact_id("call", fact.org_id, fact.gateway_provider, fact.model_call_id)


def _body(conn: Any, fact_id_: str) -> tuple[str, dict[str, Any]]:
    calls = schema.inference_calls
    digest = conn.execute(select(calls.c.record).where(calls.c.fact_id == fact_id_)).scalar_one()
    content = conn.execute(select(schema.blobs.c.content).where(schema.blobs.c.blob_hash == digest)).scalar_one()
    return digest, decode_record(unpack(content).decode("ascii"))


def _point_at(conn: Any, row_id: str, base: str) -> None:
    """Make a stored call's replay deltas (input and raw) name ``base``, as version 4 wrote them
    when the call before it collapsed onto another Session's call."""
    calls = schema.inference_calls
    delta = json.loads(conn.execute(select(calls.c.input_hashes).where(calls.c.fact_id == row_id)).scalar_one())
    delta["base"], delta["keep"], delta["add"] = base, 2, delta["add"][2:]
    _, body = _body(conn, row_id)
    raw_delta = body["raw"]["request"]["messages"]
    raw_delta["base"], raw_delta["keep"], raw_delta["add"] = base, 2, raw_delta["add"][2:]
    record = encode_record(body).encode("ascii")
    digest = sha256_hex(record)
    conn.execute(schema.blobs.insert().values(blob_hash=digest, content=zlib.compress(record, 1)))
    conn.execute(update(calls).where(calls.c.fact_id == row_id)
                 .values(input_hashes=json.dumps(delta, separators=(",", ":")), record=digest))


def make_version_4(store_url: str, facts: list[InferenceCall], *, point: tuple[str, str] | None = None,
                   quarantined: tuple[str, ...] = ()) -> dict[str, str]:
    """A version 4 store holding ``facts`` as version 4 keyed them: a call with a provider id under
    ``(org, gateway, model_call_id)``, with the id derived from that key unless the Fact named its own."""
    store = FactStore(store_url)
    store.append(facts)
    for fact_id_ in quarantined:
        store.quarantine(ORG, "inference_calls", fact_id_, "kept from version 4")
    with store.engine.begin() as conn:
        bodies = {fact.inference_call_id: _body(conn, fact.inference_call_id)[0] for fact in facts}
        for fact in facts:
            if fact.model_call_id is not None:
                conn.execute(update(schema.inference_calls)
                             .where(schema.inference_calls.c.fact_id == fact.inference_call_id)
                             .values(natural_key=_v4_key(fact)))
        if point is not None:
            _point_at(conn, *point)
        conn.execute(update(schema.meta).where(schema.meta.c.key == "schema_version").values(value="4"))
    store.close()
    return bodies  # the call bodies, as version 4 wrote them


def v4_ids(*facts: InferenceCall) -> Iterator[InferenceCall]:
    """Facts with the id version 4 derived for them."""
    for fact in facts:
        yield fact.model_copy(update={"inference_call_id": _v4_id(fact)})


def test_version_4_store_migrates_to_session_scoped_call_ids(store_url: str) -> None:
    """Version 4 → 5 re-keys every call with a provider id by its Session, renames the ids version 4
    derived (in the row, its body, the replay deltas naming it and the quarantine log), leaves
    ids a Fact named itself, and reads every call back as it was with only its id changed."""
    a1, _, _ = scenario()
    a2 = translated(chat("sess-A", "chatcmpl-2", ["list the files", "and the tests"],
                         observed_at="2026-03-01T10:01:00Z"))
    a3 = translated(chat("sess-A", "chatcmpl-3", ["list the files", "and the tests", "thanks"],
                         observed_at="2026-03-01T10:02:00Z"))
    named = call("sess-C", 0, [message("user", "named")], [message("assistant", "ok")], model_call_id="resp-9",
                 raw={"request": {"messages": [{"role": "user", "content": "named"}]}})
    bare = call("sess-C", 1, [message("user", "no provider id")], [message("assistant", "ok")])
    old = list(v4_ids(a1, a2, a3))
    old_bodies = make_version_4(store_url, [*old, named, bare], quarantined=(old[2].inference_call_id,))

    migrated = FactStore(store_url)
    assert migrated.schema_version() == schema.SCHEMA_VERSION == 8
    assert migrated.calls_for_session(ORG, "sess-A") == [a1, a2]  # a3 stays quarantined, under its new id
    assert migrated.counts(ORG)["inference_calls"] == {"stored": 5, "quarantined": 1}
    migrated.release(ORG, "inference_calls", a3.inference_call_id, "back")
    assert migrated.calls_for_session(ORG, "sess-A") == [a1, a2, a3]
    assert migrated.calls_for_session(ORG, "sess-C") == [named, bare]
    with migrated.engine.connect() as conn:
        rows = {row.fact_id: row for row in conn.execute(select(schema.inference_calls))}
        log = [(r.fact_id, r.action) for r in conn.execute(select(schema.quarantine_log)
                                                           .order_by(schema.quarantine_log.c.revision))]
        blobs = {digest for (digest,) in conn.execute(select(schema.blobs.c.blob_hash))}
        assert _body(conn, a2.inference_call_id)[1]["raw"]["request"]["messages"]["base"] == a1.inference_call_id
    assert json.loads(rows[a2.inference_call_id].input_hashes)["base"] == a1.inference_call_id
    assert json.loads(rows[a1.inference_call_id].natural_key) == ["call", ORG, "unknown", "sess-A", "chatcmpl-1"]
    assert json.loads(rows[named.inference_call_id].natural_key) == ["call", ORG, "unknown", "sess-C", "resp-9"]
    assert json.loads(rows[bare.inference_call_id].natural_key) == ["id", bare.inference_call_id]
    assert log == [(a3.inference_call_id, "quarantine"), (a3.inference_call_id, "release")]
    # The bodies naming the old ids are gone; the others are the very same blobs.
    assert not {old_bodies[f.inference_call_id] for f in old} & blobs
    assert {old_bodies[f.inference_call_id] for f in (named, bare)} <= blobs
    assert {r.record for r in rows.values()} <= blobs
    # Re-ingesting the same calls stores nothing new; reopening migrates nothing again.
    assert migrated.append([a1, a2, a3, named, bare]).duplicates == {"inference_calls": 5}
    migrated.close()
    assert FactStore(store_url).calls_for_session(ORG, "sess-A") == [a1, a2, a3]


def test_version_4_calls_replaying_another_sessions_call_are_quarantined(store_url: str) -> None:
    """What version 4 wrote for the reported case: B's chatcmpl-1 collapsed onto A's, so B's
    chatcmpl-2 replays "A's" call. Its messages cannot be rebuilt: version 5 quarantines it (and
    any call replaying it), renamed out of the way, so derive works for the whole org and
    re-ingesting Session B stores its calls afresh."""
    a1, b1, b2 = scenario()
    b3 = translated(chat("sess-B", "chatcmpl-3", ["run the tests", "fix them", "again"],
                         observed_at="2026-03-01T11:02:00Z"))
    old_a1, old_b2, old_b3 = v4_ids(a1, b2, b3)
    make_version_4(store_url, [old_a1, old_b2, old_b3], point=(old_b2.inference_call_id, old_a1.inference_call_id))
    migrated = FactStore(store_url)
    assert migrated.calls_for_session(ORG, "sess-A") == [a1]
    assert migrated.calls_for_session(ORG, "sess-B") == []
    assert migrated.session_ids(ORG) == ["sess-A"]
    assert migrated.counts(ORG)["inference_calls"] == {"stored": 3, "quarantined": 2}
    with migrated.engine.connect() as conn:
        log = list(conn.execute(select(schema.quarantine_log).order_by(schema.quarantine_log.c.revision)))
    lost = [fact_id("call-lost", old.inference_call_id) for old in (old_b2, old_b3)]
    assert [(r.fact_id, r.action) for r in log] == [(lost[0], "quarantine"), (lost[1], "quarantine")]
    assert all(f"leads to call {old_a1.inference_call_id}, which is not a call of its Session" in r.reason
               for r in log)
    with migrated.engine.connect() as conn:
        keys = {r.fact_id: json.loads(r.natural_key) for r in conn.execute(select(schema.inference_calls))}
    assert keys == {a1.inference_call_id: ["call", ORG, "unknown", "sess-A", "chatcmpl-1"],
                    lost[0]: ["id", lost[0]], lost[1]: ["id", lost[1]]}
    assert [r.session_id for r in StoreRollouts(migrated, ORG, policy=DerivationPolicy(), mirrors=None)] == ["sess-A"]
    # Session B's log ingested again: every call is new (b1 was never stored), and reads back exactly.
    assert migrated.append([b1, b2, b3]).stored == {"inference_calls": 3}
    assert migrated.calls_for_session(ORG, "sess-B") == [b1, b2, b3]
    assert migrated.calls_for_session(ORG, "sess-A") == [a1]


def test_a_visible_call_with_a_missing_base_names_it(store_url: str) -> None:
    """A store damaged by hand: the one Session fails with one line naming the call; others read."""
    a1, b1, b2 = scenario()
    store = FactStore(store_url)
    store.append([a1, b1, b2])
    with store.engine.begin() as conn:
        _point_at(conn, b2.inference_call_id, "call_gone")
    with pytest.raises(StoreError, match=f"inference call {b2.inference_call_id} of Session 'sess-B'.*call_gone"):
        store.calls_for_session(ORG, "sess-B")
    assert store.calls_for_session(ORG, "sess-A") == [a1]
    store.quarantine(ORG, "inference_calls", b2.inference_call_id, "damaged")
    assert store.calls_for_session(ORG, "sess-B") == [b1]
