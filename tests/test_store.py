"""The fact store, the same suite on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import hashlib
import json
import math
import random
import zlib
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select, text, update

from sediment.identifiers import FACT_ID_MAX_LENGTH
from sediment.model.facts import (
    DeveloperDecision,
    InferenceCall,
    InferenceMessage,
    SessionCommitObservation,
    TestCaseResult,
    TextPart,
    ToolCallPart,
    ToolDefinition,
)
from sediment.records import canonical_record_bytes, decode_record, encode_record, plain
from sediment.store import FactStore, PreparedFacts, StoreError, schema
from sediment.store.blob_codec import ZSTD_MAGIC, unpack
from sediment.store.interning import LONG_STRING, StringDigests, stored_form
from sediment.testing import ORG, T0, call, conversation, message, outcome


def test_append_is_idempotent_and_reads_back(store_url: str) -> None:
    store = FactStore(store_url)
    calls = conversation("s1", turns=4)
    facts = [*calls, outcome("o1", "a" * 40), outcome("o2", "a" * 40, run_id="2")]
    first = store.append(facts)
    assert first.stored == {"inference_calls": 4, "ci_outcomes": 2} and not first.duplicates
    again = store.append(reversed(facts))
    assert not again.stored and again.duplicates == {"inference_calls": 4, "ci_outcomes": 2}
    assert store.calls_for_session(ORG, "s1") == calls
    assert store.ci_outcomes_for_commits(ORG, [("owner/repo", "a" * 40)]) == [facts[4], facts[5]]
    assert store.session_ids(ORG) == ["s1"]
    assert store.counts(ORG)["inference_calls"] == {"stored": 4, "quarantined": 0}


def test_redelivery_with_a_new_id_collapses_on_the_natural_key(store_url: str) -> None:
    store = FactStore(store_url)
    store.append([outcome("o1", "a" * 40, run_id="7", attempt=2)])
    again = store.append([outcome("o1-redelivered", "a" * 40, run_id="7", attempt=2)])
    assert again.duplicates == {"ci_outcomes": 1}
    assert [o.outcome_id for o in store.facts("ci_outcomes", ORG)] == ["o1"]


def test_content_is_lossless(store_url: str) -> None:
    store = FactStore(store_url)
    raw = {"nan": float("nan"), "inf": float("inf"), "ninf": float("-inf"), "nul": "a\x00b",
           "\udc80key": "lone \ud800", "big": 2**70, "astral": "\U0001f600"}
    weird_call = call("s1", 0, [message("user", "nul\x00 and \ud800")],
                      [message("assistant", ToolCallPart(id="t", name="x", arguments={"v": float("nan")}))],
                      raw=raw)
    store.append([outcome("o1", "a" * 40, raw=raw), weird_call])
    [stored] = store.facts("ci_outcomes", ORG)
    assert math.isnan(stored.raw["nan"]) and stored.raw["inf"] == math.inf and stored.raw["ninf"] == -math.inf
    assert {k: v for k, v in stored.raw.items() if k != "nan"} == {k: v for k, v in raw.items() if k != "nan"}
    [back] = store.calls_for_session(ORG, "s1")
    assert back.input_messages[0].parts[0].content == "nul\x00 and \ud800"  # type: ignore[union-attr]
    assert encode_record(back) == encode_record(weird_call)


def test_a_plain_value_encodes_to_the_same_text_without_the_copy() -> None:
    """The store encodes interned blobs with canonical_record_bytes (no second plain() copy): the
    text is encode_record's, for the edge values too; and plain's exact-type shortcuts give what
    the general checks give (a str, int or dict subclass still takes the checks)."""
    from enum import IntEnum

    from sediment.identifiers import render_datetime

    class Level(IntEnum):
        HIGH = 2

    class Text(str):
        pass

    values: list[object] = [
        {"b": [1, 2.5, float("nan"), float("inf"), -0.0, True, None, 2**70], "a": {"z": "\udc80 \x00 \U0001f600"}},
        [[], {}, "", 0, False], "plain", 1.0,
    ]
    for value in values:
        assert plain(value) == value or value != value
        assert canonical_record_bytes(value) == encode_record(value).encode("ascii")
    odd = {"level": Level.HIGH, "text": Text("t"), "tuple": (1, (2,)), "nested": [{"when": T0}]}
    assert plain(odd) == {"level": 2, "text": "t", "tuple": [1, [2]], "nested": [{"when": render_datetime(T0)}]}
    assert canonical_record_bytes(plain(odd)) == encode_record(odd).encode("ascii")


_JSON_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12) | st.sampled_from(
    ["\x7f", "a\x7fb", "\x00", "\x1f\u2028", "\ud800", "\U0001f600", "/\\\"", "\x00sediment-string"])
_JSON_INTS = st.integers() | st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 2**200])
_EXACT_JSON = st.recursive(
    st.none() | st.booleans() | _JSON_INTS | _JSON_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_JSON_TEXT, inner, max_size=4), max_leaves=24)


@settings(max_examples=400, deadline=None)
@given(_EXACT_JSON)
def test_a_record_without_floats_is_the_standard_encoders_text_whichever_encoder_writes_it(value: object) -> None:
    """Without floats or other types, orjson may write a blob's record: the bytes are the
    canonical text's for every value (control characters, DEL, other characters, lone
    surrogates, integers at and beyond 64 bits, reserved keys), so a record's hash never depends
    on which encoder wrote it."""
    assert canonical_record_bytes(value, inexact=False) == encode_record(value).encode("ascii")
    assert canonical_record_bytes(value) == encode_record(value).encode("ascii")


def _standard(text: str) -> str:
    """What the standard parser makes of ``text``, typed (an int is not a float, -0.0 not 0),
    or the kind of error it raises."""
    import json

    from sediment.records import no_duplicate_keys

    try:
        return repr(json.loads(text, object_pairs_hook=no_duplicate_keys))
    except (ValueError, RecursionError) as exc:
        return f"error {type(exc).__name__}"


def _decoded(text: str) -> str:
    try:
        return repr(decode_record(text))
    except (ValueError, RecursionError) as exc:
        return f"error {type(exc).__name__}"


_FLOATS = st.floats() | st.sampled_from([1e16, 1e-05, 1e-07, 0.1, -0.0, 1.5e300, 5e-324, float("nan"), float("-inf")])
_ANY_JSON = st.recursive(
    st.none() | st.booleans() | _JSON_INTS | _JSON_TEXT | _FLOATS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_JSON_TEXT, inner, max_size=4), max_leaves=24)


@settings(max_examples=400, deadline=None)
@given(_ANY_JSON)
def test_a_record_reads_back_as_the_standard_parser_reads_it(value: object) -> None:
    """decode_record reads canonical text by orjson only when orjson writes the same text back:
    the value is then the standard parser's, types and all (floats, -0.0, integers past 64 bits,
    NaN, escapes and lone surrogates included)."""
    text = encode_record(value)
    assert _decoded(text) == _standard(text)


@settings(max_examples=400, deadline=None)
@given(st.text(st.sampled_from('{}[]",:0123456789.-+eE aNIfinity\\u/tnrulsx\x7f\x00é'), max_size=40)
       | st.sampled_from(['{"a":1,"a":2}', '{"a":1,"b":2,"a":3}', '{"b":1,"a":2}', "1 ", " 1", "-0", "1E5",
                          "18446744073709551616", '"\\ud800"', '"\\u0041"', '"\\/"', "[1,2]x", "NaN", "1e400"]))
def test_any_text_decodes_as_the_standard_parser_decodes_it(text: str) -> None:
    """Hostile or non-canonical text (duplicate keys, unsorted keys, trailing data, escapes orjson
    would not write, numbers spelled otherwise) gives the standard parser's value or error."""
    assert _decoded(text) == _standard(text)


@pytest.mark.parametrize("depth", [254, 255, 256, 320, 600, 1023, 1100])
def test_nesting_orjson_reads_but_cannot_write_back_takes_the_standard_parser(depth: int) -> None:
    """orjson reads 1024 levels but writes 254: a deeper record (the canonical encoder writes
    them, sources may nest 256 levels) is read by the standard parser, not refused; past the
    interpreter's recursion limit both give its error, as before."""
    for source in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
        assert _decoded(source) == _standard(source)
        assert depth > 320 or not _decoded(source).startswith("error")
    if depth > 320:
        return
    nested: object = 1
    for _ in range(depth):
        nested = [nested]
    assert decode_record(encode_record({"args": nested})) == {"args": nested}


@settings(max_examples=400, deadline=None)
@given(_ANY_JSON)
def test_any_value_is_the_canonical_text_whichever_encoder_writes_it(value: object) -> None:
    """record_bytes (bundle lines) writes encode_record's text for any value: floats orjson
    spells otherwise (exponents, NaN, the infinities) mark the value for the standard encoder."""
    from sediment.records import record_bytes

    assert record_bytes(value) == encode_record(value).encode("ascii")


def test_models_datetimes_and_other_types_are_the_canonical_text_too() -> None:
    from enum import IntEnum

    from sediment.records import record_bytes

    class Level(IntEnum):
        HIGH = 2

    made = call("s1", 0, [message("user", "caf\u00e9 \ud800")], [message("assistant", "ok")])
    for value in (made, {"when": T0, "calls": (made, made)}, {"level": Level.HIGH}, {1: "a", 10: "b", 2: "c"}, [1e-05, 0.5],
                  {"score": 1e16, "x": float("nan")}, (1, (2, 3.25))):
        assert record_bytes(value) == encode_record(value).encode("ascii")


@settings(max_examples=400, deadline=None)
@given(_JSON_TEXT | st.text(max_size=40))
def test_a_string_literal_is_the_canonical_encoders_whichever_encoder_writes_it(text: str) -> None:
    from sediment.records import canonical_json, json_string_ascii

    assert json_string_ascii(text) == canonical_json(text).encode("ascii")


def test_floats_and_other_types_are_marked_inexact_and_written_by_the_standard_encoder() -> None:
    """The walk that interns a blob's strings marks a float anywhere (NaN, which orjson writes as
    null, and exponents it spells otherwise) and any value that is not an exact JSON type; deep
    nesting beyond orjson's limit falls back to the standard encoder too. A datetime is rendered
    as plain() renders it (an exact string), so a call's body stays on orjson's path."""
    from sediment.store.interning import intern_plain

    class Name(str):
        pass

    for value in ({"a": [1, {"b": float("nan")}]}, [1e16], {"x": 1e-05}, {"name": Name("n")}, (1, 2.5)):
        inexact: list[bool] = []
        interned = intern_plain(value, {}, None, inexact)
        assert inexact
        assert canonical_record_bytes(interned, inexact=True) == encode_record(value).encode("ascii")
    for value in ({"a": [1, True, None, "s" * 600], "b": (2, 3)}, {"when": T0, "at": [T0]}):
        exact: list[bool] = []
        interned = intern_plain(value, {}, None, exact)
        assert not exact
        if "when" in value:
            assert canonical_record_bytes(interned, inexact=False) == encode_record(value).encode("ascii")
    deep: object = 1
    for _ in range(300):
        deep = [deep]
    assert canonical_record_bytes(deep, inexact=False) == encode_record(deep).encode("ascii")


def test_replayed_context_is_stored_once(store_url: str) -> None:
    """50 calls, each replaying every turn before it (in the messages and in the raw payload):
    stored bytes grow with the unique messages, not with the replay."""

    store = FactStore(store_url)
    rng = random.Random(11)
    words = [f"w{n}" for n in range(5000)]
    history = [message("user", " ".join(rng.choices(words, k=1600)))]  # ~8 KiB of user text
    calls = []
    for index in range(50):
        output = message("assistant", ToolCallPart(id=f"t{index}", name="edit", arguments={
            "content": " ".join(rng.choices(words, k=400))}))  # ~2 KiB of assistant text
        raw = {"request": {"messages": [json.loads(m.model_dump_json()) for m in history]}}
        calls.append(call("s1", index, history, [output], raw=raw))
        history = [*history, output, message("tool", " ".join(rng.choices(words, k=1600)))]
    store.append(calls)
    unique = {encode_record(m) for c in calls for m in (*c.input_messages, *c.output_messages)}
    unique_bytes = sum(len(m) for m in unique)
    replayed = sum(len(encode_record(m)) for c in calls for m in c.input_messages) * 2  # messages + raw
    stored = store.stored_bytes()
    compressed_unique = sum(len(zlib.compress(m.encode(), 1)) for m in unique)
    assert stored["blobs"] <= 2 * compressed_unique  # typed messages + their raw form, each once
    assert stored["total"] <= 1.5 * unique_bytes
    assert replayed > 40 * stored["total"]
    assert store.calls_for_session(ORG, "s1") == calls


def test_blobs_are_zstandard_frames_and_a_store_of_zlib_blobs_still_reads(store_url: str) -> None:
    """Blobs are written as Zstandard frames (schema version 8); a version 7 store (zlib streams)
    migrates without rewriting a blob, reads back the same calls, and appending to it keeps both
    kinds readable side by side."""
    store = FactStore(store_url)
    calls = conversation("s1", turns=3)
    store.append(calls)
    with store.engine.begin() as conn:
        rows = conn.execute(select(schema.blobs.c.blob_hash, schema.blobs.c.content)).all()
        assert rows and all(content.startswith(ZSTD_MAGIC) for _, content in rows)
        for digest, content in rows:  # as a store of an earlier version holds them
            old = zlib.compress(unpack(content), 1)
            assert not old.startswith(ZSTD_MAGIC)
            conn.execute(update(schema.blobs).where(schema.blobs.c.blob_hash == digest).values(content=old))
        conn.execute(update(schema.meta).where(schema.meta.c.key == "schema_version").values(value="7"))
    store.close()
    reopened = FactStore(store_url)
    assert reopened.schema_version() == schema.SCHEMA_VERSION == 8  # the version moves; no blob is rewritten
    with reopened.engine.connect() as conn:
        assert not any(c.startswith(ZSTD_MAGIC) for (c,) in conn.execute(select(schema.blobs.c.content)))
    assert reopened.calls_for_session(ORG, "s1") == calls
    more = conversation("s2", turns=2)
    reopened.append(more)
    assert reopened.calls_for_session(ORG, "s1") == calls
    assert reopened.calls_for_session(ORG, "s2") == more


def test_a_store_written_by_a_newer_sediment_is_refused_in_one_line(store_url: str) -> None:
    """A store at a schema version this Sediment does not know (a newer release wrote it, its blobs
    perhaps in a form this one cannot read) is refused before anything is read or written."""
    store = FactStore(store_url)
    store.append(conversation("s1", turns=1))
    with store.engine.begin() as conn:
        conn.execute(update(schema.meta).where(schema.meta.c.key == "schema_version")
                     .values(value=str(schema.SCHEMA_VERSION + 1)))
    store.close()
    with pytest.raises(StoreError) as refused:
        FactStore(store_url)
    message = str(refused.value)
    assert "\n" not in message and f"schema version {schema.SCHEMA_VERSION + 1} is newer than this Sediment" in message
    assert "upgrade Sediment" in message

def test_quarantine_and_release(store_url: str) -> None:
    store = FactStore(store_url)
    calls = conversation("s1", turns=3)
    store.append(calls)
    assert store.quarantine_revision(ORG) == 0
    first = store.quarantine(ORG, "inference_calls", calls[1].inference_call_id, "poisoned payload")
    assert [c.inference_call_id for c in store.calls_for_session(ORG, "s1")] == [
        calls[0].inference_call_id, calls[2].inference_call_id]
    assert store.counts(ORG)["inference_calls"] == {"stored": 3, "quarantined": 1}
    with pytest.raises(StoreError, match="already quarantined"):
        store.quarantine(ORG, "inference_calls", calls[1].inference_call_id, "again")
    second = store.release(ORG, "inference_calls", calls[1].inference_call_id, "false alarm")
    assert second > first and store.quarantine_revision(ORG) == second
    assert len(store.calls_for_session(ORG, "s1")) == 3
    assert store.append([calls[1]]).duplicates == {"inference_calls": 1}
    with pytest.raises(StoreError, match="no inference_calls Fact"):
        store.quarantine(ORG, "inference_calls", "missing", "r")
    with pytest.raises(StoreError, match="unknown fact table"):
        store.quarantine(ORG, "nope", "x", "r")
    with pytest.raises(StoreError, match="needs a reason"):
        store.quarantine(ORG, "inference_calls", calls[0].inference_call_id, "  ")


def test_session_scoped_reads(store_url: str) -> None:
    store = FactStore(store_url)
    observation = SessionCommitObservation(observation_id="ob1", org_id=ORG, repo="owner/repo",
                                           commit_sha="b" * 40, session_id="s1", captured_at=T0)
    decision = DeveloperDecision(decision_id="d1", org_id=ORG, session_id="s1", agent_harness="codex",
                                 accepted=True, explicit=False, interaction_mode="agent", occurred_at=T0,
                                 captured_at=T0 + timedelta(seconds=1))
    store.append([observation, decision, *conversation("s2", turns=1)])
    assert store.observations_for_session(ORG, "s1") == [observation]
    assert store.decisions_for_session(ORG, "s1") == [decision]
    assert store.observations_for_session(ORG, "s2") == []
    assert store.session_ids("other-org") == []


def test_a_sessions_call_ids_are_read_without_its_messages(store_url: str, tmp_path: Path) -> None:
    """call_ids_for_session (what Recovery reads) names the calls calls_for_session gives, in its
    order, a quarantined call left out, whatever the ingest order; no id is ever an interned string."""
    assert FACT_ID_MAX_LENGTH < LONG_STRING
    facts = [*conversation("s1", turns=3), *conversation("s2", "x" * 2000, turns=2)]  # s2: interned text
    for seed in (1, 2):
        store = FactStore(store_url if seed == 1 else f"sqlite:///{tmp_path / 'shuffled.db'}")
        shuffled = list(facts)
        random.Random(seed).shuffle(shuffled)
        store.append(shuffled)
        store.quarantine(ORG, "inference_calls", "s1-c1", "poisoned payload")
        for session in ("s1", "s2"):
            assert store.call_ids_for_session(ORG, session) == [
                c.inference_call_id for c in store.calls_for_session(ORG, session)]
        assert store.call_ids_for_session(ORG, "s1") == ["s1-c0", "s1-c2"]
        assert store.call_ids_for_session(ORG, "s2") == ["s2-c0", "s2-c1"]
        assert store.call_ids_for_session(ORG, "absent") == []


def test_order_of_ingest_does_not_matter(store_url: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    calls = conversation("s1", turns=6) + conversation("s2", turns=3)
    shuffled = calls[:]
    random.Random(3).shuffle(shuffled)
    store = FactStore(store_url)
    store.append(shuffled)
    other = FactStore(f"sqlite:///{tmp_path_factory.mktemp('o') / 'f.db'}")
    other.append(calls)
    for session in ("s1", "s2"):
        assert store.calls_for_session(ORG, session) == other.calls_for_session(ORG, session)


def test_schema_version_and_refusal_of_newer_stores(store_url: str) -> None:
    store = FactStore(store_url)
    assert store.schema_version() == schema.SCHEMA_VERSION
    with store.engine.begin() as conn:
        conn.execute(update(schema.meta).where(schema.meta.c.key == "schema_version").values(value="99"))
    store.close()
    with pytest.raises(StoreError, match="schema version 99 is newer"):
        FactStore(store_url)


def test_bad_urls() -> None:
    from sediment.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="unsupported database URL"):
        FactStore("mysql://x")


def test_version_1_store_migrates_forward(store_url: str) -> None:
    """A version 1 store (messages uncompressed in `messages`, no raw_refs, no tools_hash) opens
    as the current version."""
    from sqlalchemy import Column, MetaData, String, Table, Text

    store = FactStore(store_url)
    record = encode_record(message("user", "hello from version 1"))
    digest = hashlib.sha256(record.encode()).hexdigest()
    old = Table("messages", MetaData(), Column("message_hash", String(64), primary_key=True),
                Column("record", Text, nullable=False))
    v1_call = encode_record(call("s0", 0, [], [], raw={"v": 1}).model_copy(update={"input_messages": ()}))
    with store.engine.begin() as conn:
        schema.blobs.drop(conn)
        old.create(conn)
        conn.execute(old.insert().values(message_hash=digest, record=record))
        conn.execute(schema.inference_calls.insert().values(
            fact_id="s0-c0", org_id=ORG, natural_key='["id","s0-c0"]', session_id="s0",
            observed_at="2026-01-05T12:00:00.000000Z", input_hashes=json.dumps([digest]), output_hashes="[]",
            record=v1_call))
        conn.execute(text("ALTER TABLE inference_calls DROP COLUMN raw_refs"))
        conn.execute(text("ALTER TABLE inference_calls DROP COLUMN tools_hash"))
        schema.test_case_results.drop(conn)
        conn.execute(update(schema.meta).where(schema.meta.c.key == "schema_version").values(value="1"))
    store.close()
    migrated = FactStore(store_url)
    assert migrated.schema_version() == schema.SCHEMA_VERSION == 8
    with migrated.engine.connect() as conn:
        [(content,)] = conn.execute(select(schema.blobs.c.content).where(schema.blobs.c.blob_hash == digest)).all()
    assert content.startswith(ZSTD_MAGIC) and unpack(content).decode() == record  # rewritten by the migration
    migrated.append(conversation("s1", turns=2))
    assert len(migrated.calls_for_session(ORG, "s1")) == 2
    [old_call] = migrated.calls_for_session(ORG, "s0")
    assert old_call.raw == {"v": 1} and old_call.input_messages == (message("user", "hello from version 1"),)


def test_long_strings_are_stored_once_and_reserved_keys_survive(store_url: str) -> None:
    from sediment.store.interning import ESCAPED, LONG_STRING, STRING_REF

    store = FactStore(store_url)
    rng = random.Random(5)
    text_ = "lone \ud800 and NUL \x00 " + "".join(rng.choice("abcdefghij klmnop") for _ in range(8 * LONG_STRING))
    tricky = {STRING_REF: "not a reference", "other": 1}
    single = {STRING_REF: "looks like a reference"}
    escaped = {ESCAPED: {"x": 1}}
    first = call("s1", 0, [message("user", text_)], [message("assistant", "ok")],
                 raw={"tricky": tricky, "single": single, "escaped": escaped, "copy": text_})
    second = call("s2", 0, [message("user", text_)], [message("assistant", "ok")])
    store.append([first, second])
    assert store.calls_for_session(ORG, "s1") == [first]
    assert store.calls_for_session(ORG, "s2") == [second]
    compressed_once = len(zlib.compress(json.dumps(text_).encode(), 1))
    assert store.stored_bytes()["blobs"] < 2 * compressed_once


def test_one_walk_interns_exactly_what_plain_then_intern_give() -> None:
    """``intern_plain`` (the store's one walk) equals ``intern(plain(...))`` (its definition)
    on calls, models, tuples, datetimes, subclasses, reserved keys and long strings."""
    from collections import OrderedDict
    from enum import IntEnum
    from typing import NamedTuple

    from pydantic import BaseModel, ConfigDict, computed_field

    from sediment.store.interning import ESCAPED, STRING_REF, intern, intern_plain

    class Level(IntEnum):
        HIGH = 3

    class Text(str):
        pass

    class Items(list[Any]):
        pass

    class Pair(NamedTuple):
        left: Any
        right: Any

    class Loose(BaseModel):
        model_config = ConfigDict(extra="allow")
        text: str

        @computed_field  # type: ignore[prop-decorator]
        @property
        def shout(self) -> str:
            return self.text.upper()

    rng = random.Random(11)
    long_text = "\ud800 " + "".join(rng.choice("abc \x00\u00e9") for _ in range(2 * LONG_STRING))
    values: list[Any] = [
        call("s1", 0, [message("user", long_text)], [message("assistant", "ok")],
             raw={"request": {"messages": [{"content": long_text}]}, STRING_REF: 1}),
        message("tool", long_text),
        {STRING_REF: "looks like a reference"}, {ESCAPED: {"x": (1, 2.5, None)}},
        ({"nested": [long_text, (long_text[:LONG_STRING - 1], Text(long_text))]}, Level.HIGH, True),
        {"at": datetime(2026, 3, 3, 9, 0, tzinfo=UTC), "nan": float("nan"), "big": 2**70, "text": Text("short")},
        [], {}, (), "", long_text, None,
        OrderedDict([(STRING_REF, long_text)]), Items([long_text, {ESCAPED: 1}]), Pair(long_text, (1,)),
        Loose(text=long_text, extra_field=long_text), b"bytes", frozenset({1}),
    ]
    known = StringDigests()
    for value in values + values:  # the second time round, every long string is remembered
        one: dict[str, bytes] = {}
        two: dict[str, bytes] = {}
        three: dict[str, bytes | str] = {}
        assert repr(intern_plain(value, one)) == repr(intern(plain(value), two))
        assert repr(intern_plain(value, three, known)) == repr(intern(plain(value), {}))
        assert one == two == {digest: stored_form(string) for digest, string in three.items()}
    assert known.get(long_text) is not None


def test_long_strings_remembered_across_a_failed_write_are_still_stored(store_url: str) -> None:
    """A long string's digest is remembered from one blob to the next; when a write fails (the
    store forgets which blobs it holds), a string met again is still written with its blob."""
    store = FactStore(store_url)
    rng = random.Random(9)
    text_ = "".join(rng.choice("abcdefghij klmnop") for _ in range(4 * LONG_STRING))
    first = call("s1", 0, [message("user", text_)], [message("assistant", "ok")])
    prepared = store.prepare([first])
    broken = PreparedFacts({}, [("no_such_table", {})])
    with pytest.raises(Exception):  # noqa: B017 - any failure rolls the write back
        store.write(broken)
    second = call("s2", 0, [message("user", text_)], [message("assistant", "ok")])
    store.write(store.prepare([second]))
    assert store.calls_for_session(ORG, "s2") == [second]
    store.write(prepared)
    assert store.calls_for_session(ORG, "s1") == [first]


# --- tool definitions ----------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"path": {"type": "string", "enum": ["a.py", "b.py"]}},
          "required": ["path"], "additionalProperties": False}


def tool_set(count: int = 5) -> tuple[ToolDefinition, ...]:
    """``count`` function tools, built afresh on each call (equal, never the same objects)."""
    return tuple(ToolDefinition(name=f"tool_{n}", description=f"Tool {n}.", parameters={**SCHEMA, "title": f"t{n}"},
                                strict=n % 2 == 0) for n in range(count))


def test_tool_lists_read_back_exactly(store_url: str) -> None:
    store = FactStore(store_url)
    long_description = "Runs a shell command. " * 40  # long strings are interned like message text
    tools = (
        ToolDefinition(name="shell", description=long_description, parameters=SCHEMA, strict=True),
        ToolDefinition(name="edit", description="", parameters={"type": "object", "default": {"n": float("nan")},
                                                                "examples": ["\ud800 lone", "nul \x00", "\U0001f600"]}),
        ToolDefinition(type="web_search_20250305", name="web_search"),
        ToolDefinition(type="custom", name="apply_patch", description=None),
    )
    calls = [
        call("s1", 0, [message("user", "go")], [message("assistant", "ok")], tools=tools),
        call("s1", 1, [message("user", "go")], [message("assistant", "again")], tools=()),
        call("s1", 2, [message("user", "go")], [message("assistant", "done")]),
        call("s1", 3, [message("user", "go")], [message("assistant", "more")], tools=tools[2:]),
    ]
    store.append(calls)
    back = store.calls_for_session(ORG, "s1")
    assert [encode_record(c) for c in back] == [encode_record(c) for c in calls]  # NaN compares unequal
    assert [c.tools for c in back[1:]] == [(), None, tools[2:]]
    assert back[0].tools is not None and back[0].tools[0] == tools[0]
    assert store.append(calls).duplicates == {"inference_calls": 4}


def test_a_sessions_tool_list_is_stored_once(store_url: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """50 calls of one Session resend the same 5 tools: one blob holds them, each call a hash."""
    history = [message("user", "fix the bug")]
    bare = []
    for index in range(50):
        output = message("assistant", ToolCallPart(id=f"t{index}", name="tool_1", arguments={"path": "a.py"}))
        bare.append(call("s1", index, history, [output]))
        history = [*history, output, message("tool", f"result {index}")]
    calls = [c.model_copy(update={"tools": tool_set()}) for c in bare]
    store = FactStore(store_url)
    store.append(calls)
    assert store.calls_for_session(ORG, "s1") == calls
    tools_record = encode_record(list(tool_set())).encode()
    with store.engine.connect() as conn:
        hashes = {h for (h,) in conn.execute(select(schema.inference_calls.c.tools_hash))}
        stored = [c for (c,) in conn.execute(select(schema.blobs.c.content))
                  if unpack(c) == tools_record]
    assert len(hashes) == 1 and len(stored) == 1
    assert decode_record(unpack(stored[0]).decode()) == [plain(t) for t in tool_set()]
    # In bytes: the same calls without tools cost exactly one blob and 50 hashes less.
    without = FactStore(f"sqlite:///{tmp_path_factory.mktemp('bare') / 'f.db'}")
    without.append(bare)
    grown = {key: store.stored_bytes()[key] - without.stored_bytes()[key] for key in ("blobs", "calls")}
    assert grown == {"blobs": len(stored[0]), "calls": 50 * 64}


def test_a_call_without_tools_stores_the_bytes_it_always_did(store_url: str) -> None:
    """Pinned from the version 2 store: no tools column value, the same body, the same hashes."""
    store = FactStore(store_url)
    fact = InferenceCall(
        inference_call_id="call-1", org_id="acme", session_id="s1", model="gpt-4.1",
        input_messages=(InferenceMessage(role="user", parts=(TextPart(content="list the files"),)),),
        output_messages=(InferenceMessage(role="assistant", parts=(TextPart(content="a.py"),), finish_reason="stop"),),
        input_tokens=12, output_tokens=3, model_call_id="chatcmpl-1", observed_at=T0,
        raw={"request": {"messages": [{"role": "user", "content": "list the files"}]}, "response": {"id": "chatcmpl-1"}})
    store.append([fact])
    with store.engine.connect() as conn:
        row = conn.execute(select(schema.inference_calls)).one()
        blobs = sorted(d for (d,) in conn.execute(select(schema.blobs.c.blob_hash)))
    assert row.tools_hash is None
    assert (row.record, row.input_hashes, row.output_hashes, row.raw_refs) == (
        "82182df793d513a2048a4ad8ea4922f0f8d8d41f66cbceb82dbeb9159715a711",
        '{"base":null,"keep":0,"add":["2cab262f920ff59b7bb6cf18eefe61f1f8c21f0f09621611be3e9122c2c6a40a"]}',
        '["3f039b2dafac438efdec22b1d0270a41716b26aaf89e8191ac99875df9c175e8"]',
        '[["request", "messages"]]',
    )
    assert blobs == sorted([  # what the store wrote before InferenceCall had a tools field
        "2cab262f920ff59b7bb6cf18eefe61f1f8c21f0f09621611be3e9122c2c6a40a",
        "3f039b2dafac438efdec22b1d0270a41716b26aaf89e8191ac99875df9c175e8",
        "a541255ba83f1a60aca6694511e5a9d9711c28557163223a615ebe4ca54863ed",
        "82182df793d513a2048a4ad8ea4922f0f8d8d41f66cbceb82dbeb9159715a711",
    ])
    stored = store.stored_bytes()  # the blobs' compressed size is the Zstandard library's to decide
    with store.engine.connect() as conn:
        compressed = sum(len(c) for (c,) in conn.execute(select(schema.blobs.c.content)))
    assert stored == {"blobs": compressed, "calls": 229, "other_facts": 0, "total": compressed + 229}
    assert store.calls_for_session("acme", "s1") == [fact]


def test_version_2_store_migrates_forward(store_url: str) -> None:
    """A version 2 store (no tools_hash) opens as the current version and reads back every call unchanged:
    tool-less calls with ``tools`` None, whether their body spells it or predates the field, and
    a tool list kept inside a body from there."""
    store = FactStore(store_url)
    calls = conversation("s1", turns=3)
    store.append(calls)
    inline = call("s2", 0, [message("user", "hi")], [message("assistant", "ok")], tools=tool_set(2))
    predating = call("s3", 0, [message("user", "hi")], [message("assistant", "old")])
    store.append([inline, predating])
    with store.engine.begin() as conn:
        for fact, body in ((inline, plain(inline)), (predating, plain(predating))):
            body.update(input_messages=[], output_messages=[])
            if fact is predating:
                del body["tools"]  # written before InferenceCall had the field
            record = encode_record(body).encode()
            digest = hashlib.sha256(record).hexdigest()
            if conn.execute(select(schema.blobs.c.blob_hash).where(schema.blobs.c.blob_hash == digest)).first() is None:
                conn.execute(schema.blobs.insert().values(blob_hash=digest, content=zlib.compress(record, 1)))
            conn.execute(update(schema.inference_calls).where(schema.inference_calls.c.fact_id == fact.inference_call_id)
                         .values(record=digest))
        conn.execute(text("ALTER TABLE inference_calls DROP COLUMN tools_hash"))
        schema.test_case_results.drop(conn)
        conn.execute(update(schema.meta).where(schema.meta.c.key == "schema_version").values(value="2"))
    store.close()
    migrated = FactStore(store_url)
    assert migrated.schema_version() == schema.SCHEMA_VERSION
    assert migrated.calls_for_session(ORG, "s1") == calls
    assert [c.tools for c in calls] == [None, None, None]
    assert migrated.calls_for_session(ORG, "s2") == [inline]
    assert migrated.calls_for_session(ORG, "s3") == [predating]
    with migrated.engine.connect() as conn:
        assert {h for (h,) in conn.execute(select(schema.inference_calls.c.tools_hash))} == {None}
    later = call("s1", 3, [message("user", "fix the bug")], [message("assistant", "done")], tools=tool_set())
    migrated.append([later])
    assert migrated.calls_for_session(ORG, "s1") == [*calls, later]


def test_a_failed_write_stores_everything_when_retried(store_url: str) -> None:
    """A rolled-back write forgets which blobs it stored, cached hashes included."""
    store = FactStore(store_url)
    calls = [c.model_copy(update={"tools": tool_set()}) for c in conversation("s1", turns=3)]
    prepared = store.prepare(calls)
    broken = PreparedFacts(prepared.blobs, [*prepared.rows, ("inference_calls", {"fact_id": "x"})])
    with pytest.raises(Exception):  # noqa: B017 - whichever IntegrityError the driver raises
        store.write(broken)
    store.append(calls)
    assert store.calls_for_session(ORG, "s1") == calls


# --- test case results ---------------------------------------------------------------

SHA_A, SHA_B = "a" * 40, "b" * 40


def result(test_id: str, sha: str = SHA_A, outcome: str = "passed", *, repo: str = "owner/repo", run_id: str = "7",
           attempt: int = 1, provider: str = "github_actions", report: str = "1", index: int = 0,
           org_id: str = ORG, **fields: object) -> TestCaseResult:
    """A result as the JUnit translator writes one; its id follows its natural key."""
    report_sha256 = hashlib.sha256(report.encode()).hexdigest()
    locator = f"testsuites/testsuite[0]/testcase[{index}]"
    values: dict[str, object] = {
        "test_result_id": f"test_{org_id}_{provider}_{repo}_{run_id}_{attempt}_{report}_{index}", "org_id": org_id,
        "provider": provider, "run_id": run_id, "run_attempt": attempt, "repo": repo, "commit_sha": sha,
        "runner": "pytest", "test_id": test_id, "outcome": outcome, "classname": "tests.test_calc",
        "name": test_id.rsplit("::", 1)[-1], "suite": "pytest", "test_file": "tests/test_calc.py",
        "duration_ms": 3, "report_sha256": report_sha256, "locator": locator, "captured_at": T0,
        "raw": {"tag": "testcase", "attributes": {"classname": "tests.test_calc", "name": test_id}},
    }
    values.update(fields)
    return TestCaseResult.model_validate(values)


def test_test_results_read_back_exactly(store_url: str) -> None:
    store = FactStore(store_url)
    weird = result("tests/test_calc.py::test_weird[\u00e9 \U0001f600]", outcome="failed", index=1, flaky_reruns=2,
                   duration_ms=None, classname=None, suite=None, test_file=None,
                   raw={"tag": "testcase", "attributes": {"name": "x"}, "text": "nul \x00 and lone \ud800",
                        "children": [{"tag": "failure", "attributes": {"message": "boom"}, "text": "E  1 != 2",
                                      "tail": "\n  "}], "nan": float("nan"), "big": 2**70})
    plain_result = result("tests/test_calc.py::test_add")
    assert store.append([weird, plain_result]).stored == {"test_case_results": 2}
    back = store.test_results_for_commits(ORG, [("owner/repo", SHA_A)])
    assert [encode_record(r) for r in back] == [encode_record(plain_result), encode_record(weird)]
    assert back[0] == plain_result and math.isnan(back[1].raw["nan"]) and back[1].raw["big"] == 2**70
    with store.engine.connect() as conn:
        row = conn.execute(select(schema.test_case_results).where(
            schema.test_case_results.c.fact_id == weird.test_result_id)).one()
    assert decode_record(row.record)["raw"]["text"] == "nul \x00 and lone \ud800"
    assert (row.repo, row.commit_sha, row.provider, row.run_id, row.run_attempt, row.test_id) == (
        "owner/repo", SHA_A, "github_actions", "7", 1, weird.test_id)
    assert row.natural_key == json.dumps([ORG, "github_actions", "owner/repo", "7", 1, weird.report_sha256,
                                          weird.locator], separators=(",", ":"))
    assert list(store.facts("test_case_results", ORG)) == sorted(back, key=lambda r: r.test_result_id)


def test_test_results_are_idempotent_on_their_natural_key(store_url: str) -> None:
    store = FactStore(store_url)
    results = [result(f"tests/test_calc.py::test_{n}", index=n) for n in range(5)]
    assert store.append(results).stored == {"test_case_results": 5}
    again = store.append(list(reversed(results)))
    assert not again.stored and again.duplicates == {"test_case_results": 5}
    # The same element of the same report of the same attempt under another id is the same Fact.
    renamed = results[0].model_copy(update={"test_result_id": "test_other", "outcome": "failed"})
    assert store.append([renamed]).duplicates == {"test_case_results": 1}
    # Another attempt, report or element is a new Fact.
    new = [results[0].model_copy(update={"test_result_id": f"t{n}", **change}) for n, change in enumerate([
        {"run_attempt": 2}, {"run_id": "8"}, {"provider": "jenkins"}, {"repo": "owner/other"},
        {"report_sha256": "c" * 64}, {"locator": "testsuites/testsuite[1]/testcase[0]"}])]
    assert store.append(new).stored == {"test_case_results": 6}
    assert store.counts(ORG)["test_case_results"] == {"stored": 11, "quarantined": 0}
    assert store.stored_bytes()["other_facts"] > 0


def test_test_results_for_commits_order_and_scope(store_url: str) -> None:
    store = FactStore(store_url)
    facts = [
        result("t::z", SHA_B, report="r1", index=0),
        result("t::a", SHA_B, report="r1", index=1),
        result("t::a", SHA_A, run_id="10", report="r2", index=0),
        result("t::a", SHA_A, run_id="9", attempt=2, report="r3", index=0),
        result("t::a", SHA_A, run_id="9", attempt=1, report="r4", index=0),
        result("t::a", SHA_A, run_id="9", attempt=1, report="r4", index=10),
        result("t::a", SHA_A, run_id="9", attempt=1, report="r4", index=2),
        result("t::b", SHA_A, run_id="9", attempt=1, report="r4", index=1, provider="circleci"),
        result("t::a", SHA_A, repo="aaa/first", report="r5"),
        result("t::a", SHA_A, org_id="other-org", report="r6"),
        result("t::a", "c" * 40, report="r7"),
    ]
    shuffled = facts[:]
    random.Random(4).shuffle(shuffled)
    store.append(shuffled)
    got = store.test_results_for_commits(ORG, [("owner/repo", SHA_B), ("owner/repo", SHA_A), ("aaa/first", SHA_A),
                                               ("owner/repo", SHA_A), ("nobody/none", SHA_A)])
    assert [r.test_result_id for r in got] == [f.test_result_id for f in (
        facts[8],                      # repo aaa/first sorts first
        facts[7],                      # circleci before github_actions
        facts[2],                      # run "10" < "9" as text
        facts[4], facts[5], facts[6],  # same test: by report, then locator text ("[10]" < "[2]")
        facts[3],                      # attempt 2 after attempt 1
        facts[1], facts[0],            # commit b after commit a; test ids in order
    )]
    assert store.test_results_for_commits(ORG, []) == []
    assert store.test_results_for_commits("other-org", [("owner/repo", SHA_A)]) == [facts[9]]


def test_test_results_quarantine_and_release(store_url: str) -> None:
    store = FactStore(store_url)
    first, second = result("t::a", index=0), result("t::b", index=1)
    store.append([first, second])
    revision = store.quarantine(ORG, "test_case_results", first.test_result_id, "report from a forked runner")
    assert store.test_results_for_commits(ORG, [("owner/repo", SHA_A)]) == [second]
    assert list(store.facts("test_case_results", ORG)) == [second]
    assert store.counts(ORG)["test_case_results"] == {"stored": 2, "quarantined": 1}
    assert store.quarantine_revision(ORG) == revision
    with pytest.raises(StoreError, match="already quarantined"):
        store.quarantine(ORG, "test_case_results", first.test_result_id, "again")
    with pytest.raises(StoreError, match="no test_case_results Fact"):
        store.quarantine("other-org", "test_case_results", first.test_result_id, "wrong org")
    assert store.release(ORG, "test_case_results", first.test_result_id, "false alarm") > revision
    assert store.test_results_for_commits(ORG, [("owner/repo", SHA_A)]) == [first, second]


def test_version_3_store_migrates_forward(store_url: str) -> None:
    """A version 3 store (no test_case_results) opens as the current version: its Facts read back unchanged,
    and per-test results can be stored and read, with their indexes in place."""
    from sqlalchemy import inspect

    store = FactStore(store_url)
    calls = conversation("s1", turns=2)
    outcomes = [outcome("o1", SHA_A)]
    store.append([*calls, *outcomes])
    with store.engine.begin() as conn:
        schema.test_case_results.drop(conn)
        conn.execute(update(schema.meta).where(schema.meta.c.key == "schema_version").values(value="3"))
        assert not inspect(conn).has_table("test_case_results")
    store.close()
    migrated = FactStore(store_url)
    assert migrated.schema_version() == schema.SCHEMA_VERSION
    with migrated.engine.connect() as conn:
        indexes = {index["name"] for index in inspect(conn).get_indexes("test_case_results")}
    assert {"ix_test_case_results_org_id_repo_commit_sha",
            "ix_test_case_results_org_id_provider_run_id_run_attempt"} <= indexes
    assert migrated.calls_for_session(ORG, "s1") == calls
    assert migrated.ci_outcomes_for_commits(ORG, [("owner/repo", SHA_A)]) == outcomes
    assert migrated.counts(ORG)["test_case_results"] == {"stored": 0, "quarantined": 0}
    results = [result("t::a"), result("t::b", index=1)]
    assert migrated.append(results).stored == {"test_case_results": 2}
    assert migrated.test_results_for_commits(ORG, [("owner/repo", SHA_A)]) == results
    migrated.close()
    assert FactStore(store_url).append(results).duplicates == {"test_case_results": 2}


# --- replay deltas are computed only against stored calls -------------------------------


def _replaying(session_id: str, index: int, model_call_id: str, inputs: list[InferenceMessage]) -> InferenceCall:
    """A gateway call whose raw request replays its input messages too (both lists are delta-encoded)."""
    raw = {"request": {"messages": [plain(m) for m in inputs]}, "response": {"id": model_call_id}}
    return call(session_id, index, inputs, [message("assistant", f"reply {index}")], model_call_id=model_call_id,
                raw=raw).model_copy(update={"inference_call_id": f"{session_id}-{model_call_id}"})


def redelivery_case(session_id: str = "s1") -> tuple[InferenceCall, InferenceCall, InferenceCall]:
    """id1 with [m1, m2]; id1 redelivered with [m1, m3] (a duplicate); id2 with [m1, m3, m4]."""
    m1, m2, m3, m4 = (message("user", f"m{n}") for n in range(1, 5))
    return (_replaying(session_id, 0, "id1", [m1, m2]), _replaying(session_id, 1, "id1", [m1, m3]),
            _replaying(session_id, 2, "id2", [m1, m3, m4]))


@pytest.mark.parametrize("batches", ["one_batch", "one_call_per_append", "prepared_elsewhere"])
def test_a_redelivered_call_id_does_not_rewrite_the_next_call(store_url: str, batches: str) -> None:
    """The replay delta of id2 must be computed against what the store holds for id1 ([m1, m2]),
    never against the redelivery that collapsed onto it, in one batch and across batches alike."""
    first, redelivered, second = redelivery_case()
    store = FactStore(store_url)
    if batches == "one_batch":
        results = [store.append([first, redelivered, second])]
    elif batches == "one_call_per_append":
        results = [store.append([fact]) for fact in (first, redelivered, second)]
    else:  # ingest --workers: another process encodes the batches, this one writes them in order
        worker = FactStore(store_url)
        prepared = [worker.prepare([fact]) for fact in (first, redelivered, second)]
        results = [store.write(p) for p in prepared]
    assert sum((r.stored for r in results), Counter()) == {"inference_calls": 2}
    assert sum((r.duplicates for r in results), Counter()) == {"inference_calls": 1}
    back = store.calls_for_session(ORG, "s1")
    assert back == [first, second]
    assert [[m.parts[0].content for m in c.input_messages] for c in back] == [  # type: ignore[union-attr]
        ["m1", "m2"], ["m1", "m3", "m4"]]
    assert [len(c.raw["request"]["messages"]) for c in back] == [2, 3]
    assert FactStore(store_url).calls_for_session(ORG, "s1") == [first, second]


def _stored_rows(store: FactStore) -> list[tuple[str, ...]]:
    with store.engine.connect() as conn:
        rows = conn.execute(select(schema.inference_calls).order_by(schema.inference_calls.c.fact_id)).all()
        blobs = sorted(d for (d,) in conn.execute(select(schema.blobs.c.blob_hash)))
    return [(r.fact_id, r.natural_key, r.input_hashes, r.output_hashes, r.raw_refs, r.record) for r in rows] + [
        tuple(blobs)]


def test_the_store_holds_the_same_bytes_however_the_calls_were_batched(store_url: str,
                                                                        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Two replaying Sessions with redeliveries, appended in one batch, one call at a time, or
    prepared by two workers taking alternate batches (``ingest --workers 2``) and written in
    order: the same rows and blobs, no orphaned body, every call read back as appended."""
    first, redelivered, second = redelivery_case("s1")
    m5 = message("user", "m5")
    third = _replaying("s1", 3, "id3", [*second.input_messages, m5])
    other = [_replaying("s2", n, f"x{n}", [message("user", f"q{k}") for k in range(n + 1)]) for n in range(4)]
    facts = [first, other[0], redelivered, other[1], second, other[1], other[2], third, other[3], first]
    expected = {"s1": [first, second, third], "s2": other}

    reference = FactStore(f"sqlite:///{tmp_path_factory.mktemp('ref') / 'f.db'}")
    reference.append(facts)
    one_by_one = FactStore(store_url)
    for fact in facts:
        one_by_one.append([fact])
    assert _stored_rows(one_by_one) == _stored_rows(reference)

    workers = [FactStore(f"sqlite:///{tmp_path_factory.mktemp(f'w{n}') / 'f.db'}") for n in range(2)]
    batches = [facts[start:start + 3] for start in range(0, len(facts), 3)]
    prepared = [workers[n % 2].prepare(batch) for n, batch in enumerate(batches)]
    parent = FactStore(f"sqlite:///{tmp_path_factory.mktemp('parent') / 'f.db'}")
    for batch in prepared:
        parent.write(batch)
    assert _stored_rows(parent) == _stored_rows(reference)
    for store in (reference, one_by_one, parent):
        for session, calls in expected.items():
            assert store.calls_for_session(ORG, session) == calls
        with store.engine.connect() as conn:
            records = {r for (r,) in conn.execute(select(schema.inference_calls.c.record))}
            bodies = {d for (d, c) in conn.execute(select(schema.blobs.c.blob_hash, schema.blobs.c.content))
                      if "inference_call_id" in unpack(c).decode()}
        assert bodies == records


def test_a_body_blob_shared_by_two_rows_is_filled_in_on_copies_of_its_own() -> None:
    """Reading a Session hands each call row its decoded body to fill in: the decoded value for
    the first row with that blob, a deep copy for every later one (no deep copy per row)."""
    from sediment.store.read import _own

    decoded = {"b1": {"raw": {"request": {"messages": {"base": None}}}}, "b2": {"raw": {}}}
    taken: set[str] = set()
    first, second, other = _own(decoded, "b1", taken), _own(decoded, "b1", taken), _own(decoded, "b2", taken)
    assert first is decoded["b1"] and other is decoded["b2"]
    assert second == first and second is not first
    assert second["raw"]["request"] is not first["raw"]["request"]
    first["raw"]["request"]["messages"] = ["filled"]
    assert second["raw"]["request"]["messages"] == {"base": None}
