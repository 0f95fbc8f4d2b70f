"""Fuzzing every ingest command with mutated real payloads (hypothesis).

Seeds are real payloads: the vendor-neutral CI records (``fixtures/ci``), the GitHub webhook
deliveries (``fixtures/github``, and the job and check events of ``fixtures/ci/github``), the
GitLab, CircleCI and Buildkite deliveries (``fixtures/ci/<provider>``), canonical Fact lines made
from the CI and GitHub ones, the recorded model calls of the shared cassettes (``<repository
root>/../shared/fixtures/inputs/llm_calls``, or ``$SEDIMENT_INPUT_FIXTURES/llm_calls``: each
format's envelopes, and LiteLLM payloads made from the Chat ones, beside the StandardLoggingPayload
of ``fixtures/litellm``), the JUnit reports (``fixtures/junit``) and the agent OTLP log exports
(``fixtures/otlp``: real Claude Code captures, and batches hand-built in each other client's
record shape). Each example writes one file of
several records, some of them mutated (values, types, keys, duplicate keys, nesting, numbers
JSON cannot hold in a double, broken bytes and lines), ingests it as the command does, and
asserts the ingest rule for every record:

- nothing raises (a traceback is a bug);
- a record is either refused with one problem line naming the file and the record's line (or
  array index), or skipped on purpose, or its Facts are in the store exactly: the Fact read back
  encodes to the same canonical record as the Fact translated from the record parsed exactly,
  its ``raw`` is the record as sent (credentials redacted for calls), and a typed field holds
  the type it was sent as (no ``"2"`` read as a time, no ``true`` as 1);
- the other records of the file are kept.

An OTLP batch is one record holding many log records, each read on its own: there the rule
holds per log record (one problem line each, naming its locator), and a batch's Facts, skips and
problems are exactly those of its log records translated one at a time.

``SEDIMENT_FUZZ_EXAMPLES`` sets the examples per command (default 25, well under two minutes
for all of them); run longer with, for example::

    SEDIMENT_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest -p no:cacheprovider tests/test_fuzz_ingest.py \\
        --hypothesis-show-statistics

Without the shared cassettes the call commands skip, saying so, except under CI (``CI=true``),
where they fail.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from sediment.cli.console import visible
from sediment.identifiers import TimestampError, utc_timestamp
from sediment.ingest import Translation, TranslationError
from sediment.ingest.calls import ReplayMemo, translate_call
from sediment.ingest.ci.github import translate_github
from sediment.ingest.ci.neutral import translate_ci
from sediment.ingest.facts_jsonl import FACT_TYPES, translate_fact
from sediment.ingest.junit import ReportError, RunAttempt, ingest_junit_reports, translate_report
from sediment.ingest.otlp import translate_otlp
from sediment.ingest.otlp.provenance import ACCOUNT_ATTRIBUTES, provenance
from sediment.ingest.reading.files import MAX_DEPTH, IngestReport, ingest_files
from sediment.ingest.reading.json_text import Flaw, FlawedObject, first_flaw
from sediment.model.facts import CIOutcome, DeveloperDecision, FactModel, Push
from sediment.records import encode_record
from sediment.store import FactStore
from sediment.store.keys import table_and_key
from sediment.testing import require_path, unavailable

try:  # the calls translator redacts credentials from raw (sediment.ingest.redaction.credentials)
    from sediment.ingest.redaction.credentials import redact_record
except ImportError:  # pragma: no cover - before redaction existed
    def redact_record(record: dict[str, Any]) -> dict[str, Any]:
        return record

HERE = Path(__file__).parent
REPOSITORY_ROOT = HERE.parent
ORG = "acme"
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
EXAMPLES = int(os.environ.get("SEDIMENT_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=timedelta(seconds=20), database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


def cassette_dir() -> Path:
    inputs = os.environ.get("SEDIMENT_INPUT_FIXTURES") or REPOSITORY_ROOT.parent / "shared" / "fixtures" / "inputs"
    return Path(inputs) / "llm_calls"


CASSETTES = cassette_dir()  # read at import: the test kit clears SEDIMENT_* for each test


def require_cassettes() -> None:
    if CASSETTES.is_dir() and any(CASSETTES.glob("*.yaml")):
        return
    unavailable(f"the shared cassettes not found at {CASSETTES} (set SEDIMENT_INPUT_FIXTURES to their inputs directory)")


# --- seeds: real payloads ---------------------------------------------------------------


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def ci_seeds() -> list[dict[str, Any]]:
    return [_load(p) for p in sorted((HERE / "fixtures" / "ci").glob("*.json"))]


def github_seeds() -> list[dict[str, Any]]:
    return [_load(p) for p in sorted((HERE / "fixtures" / "github").glob("*.json"))
            + sorted((HERE / "fixtures" / "ci" / "github").glob("*.json"))]


def provider_seeds(provider: str) -> list[dict[str, Any]]:
    """The webhook deliveries of one CI provider (``fixtures/ci/<provider>``)."""
    return [_load(p) for p in sorted((HERE / "fixtures" / "ci" / provider).glob("*.json"))]


def fact_seeds() -> list[dict[str, Any]]:
    """Canonical Fact lines: the Facts the CI and GitHub seeds translate to, as ``ingest facts`` reads them."""
    names = {model: name for name, (model, _) in FACT_TYPES.items()}
    facts: list[FactModel] = []
    for record in ci_seeds():
        facts.extend(translate_ci(record, org_id=ORG, captured_at=T0).facts)
    for delivery in github_seeds():
        event_name = None if "headers" in delivery else "workflow_run"  # the bare payload of the older shape
        facts.extend(translate_github(delivery, event=event_name, org_id=ORG, captured_at=T0).facts)
    seeds = []
    for fact in facts:
        body = json.loads(encode_record(fact))
        seeds.append({"fact_type": names[type(fact)], **{k: v for k, v in body.items() if k != "org_id"}})
    return seeds


def _call_format(uri: str) -> str | None:
    path = urlparse(uri).path
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path.endswith("/chat/completions"):
        return "openai-chat"
    if path.endswith("/responses"):
        return "openai-responses"
    return None


def _body(record: dict[str, Any]) -> Any:
    if "parsed_body" in record:
        return record["parsed_body"]
    raw = record.get("body")
    if isinstance(raw, dict):
        raw = raw.get("string")
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw  # an SSE stream, assembled by the translator
    return raw


def call_seeds(call_format: str) -> list[dict[str, Any]]:
    """The envelopes of ``call_format`` in the cassettes (LiteLLM: payloads made from the Chat ones)."""
    wanted = "openai-chat" if call_format == "litellm" else call_format
    seeds = []
    for path in sorted(CASSETTES.glob("*.yaml")):
        cassette = yaml.safe_load(path.read_text(encoding="utf-8"))
        for index, interaction in enumerate(cassette["interactions"]):
            if _call_format(interaction["request"]["uri"]) != wanted:
                continue
            request, response = _body(interaction["request"]), _body(interaction["response"])
            session = f"s-{path.stem}"
            if call_format != "litellm":
                seeds.append({"request": request, "response": response, "session_id": session,
                              "observed_at": (T0 + timedelta(seconds=index)).isoformat().replace("+00:00", "Z")})
            elif isinstance(request, dict) and isinstance(response, dict):
                seeds.append({
                    "id": response.get("id"), "litellm_call_id": f"{path.stem}-{index}", "call_type": "acompletion",
                    "status": "success", "custom_llm_provider": "openai", "model": request.get("model"),
                    "startTime": 1750000000.25 + index, "endTime": 1750000002.5 + index,
                    "metadata": {"requester_metadata": {"session_id": session}},
                    "messages": request.get("messages"), "response": response,
                    "model_parameters": {k: v for k, v in request.items() if k not in ("messages", "model")},
                })
    if call_format == "litellm":  # a StandardLoggingPayload as a proxy logger writes it: naive times, spend-log Session
        seeds.append(_load(HERE / "fixtures" / "litellm" / "standard_logging_payload.json"))
    return seeds


JUNIT_SEEDS = sorted((HERE / "fixtures" / "junit").glob("*.xml"))


# --- the reference reading of a record --------------------------------------------------


class Refused:
    """A record the reader must refuse (not JSON, a duplicate key, too deep, out of range)."""


REFUSED = Refused()


def _strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate key")
    return result


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError("out of range")
    return value


def depth_of(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def reference(data: bytes) -> Any:
    """The record in ``data`` read exactly by the standard parser, or REFUSED."""
    try:
        text = data.decode("utf-8")
        value = json.loads(text, object_pairs_hook=_strict_object, parse_float=_finite)
    except (ValueError, RecursionError):
        return REFUSED
    return REFUSED if depth_of(value) > MAX_DEPTH else value


# --- mutations --------------------------------------------------------------------------


@dataclass
class Pairs:
    """An object written as these pairs, in order (a key may repeat)."""

    pairs: list[tuple[str, Any]]


@dataclass
class Raw:
    """JSON text written as it is (numbers no double holds, nesting past the limit)."""

    text: str


def render(value: Any) -> str:
    """JSON text of a value with Pairs and Raw nodes (NaN and Infinity as their tokens)."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Pairs):
        return "{" + ", ".join(f"{json.dumps(k)}: {render(v)}" for k, v in value.pairs) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(render(v) for v in value) + "]"
    return json.dumps(value)


SPECIAL_STRINGS = [
    "", " ", "2", "1", "0", "-1", "true", "null", "1e400", "NaN", "2024-05-01T12:00:00Z", "2024-05-01T12:00:00",
    "2024-05-01", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-10:00", "2024-02-30T00:00:00Z",
    "2024-05-01T12:00:00.1234567Z", "1714564800", "refs/heads/main", "main", "Acme", "acme/widget", "a/b/c",
    "3484a3fb816e0859fd6e1cea078d76385ff50625", "3484A3FB", "success", "failure", "completed", "passed",
    "github_actions", "other", "workflow_run", "push", "\x00", "a\x00b", "\ud800", "\udc00x", "🙂",
    "data: {\"a\": 1}\n\n", "data: [DONE]\n\n",
]
SPECIAL_NUMBERS: list[Any] = [
    0, 1, -1, 2, 7, 2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**64), 10**40, 0.0, -0.0, 0.5, 1.0,
    1.5, 1e308, -1e-308, 5e-324, math.nan, math.inf, -math.inf, True, False, None,
]
RAW_TOKENS = ["1e400", "-1e400", "-0", "1E2", "0.1e1", "123456789012345678901234567890", "1.8446744073709552e19"]


def deep(levels: int) -> Raw:
    return Raw("[" * levels + "]" * levels)


scalars = st.one_of(
    st.sampled_from(SPECIAL_NUMBERS),
    st.sampled_from(SPECIAL_STRINGS),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.builds(Raw, st.sampled_from(RAW_TOKENS)),
    st.just(5000).map(lambda n: "x" * n),  # long strings are stored once, by reference
    st.just(4400).map(lambda n: Raw("1" + "0" * n)),  # more digits than an int may have
    st.builds(deep, st.sampled_from([MAX_DEPTH - 8, MAX_DEPTH - 2, MAX_DEPTH + 1, 300, 600, 1100])),
)
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=6)

Path_ = tuple[str | int, ...]


def paths(value: Any, here: Path_ = ()) -> Iterator[Path_]:
    """Every position in a value tree (the root included)."""
    yield here
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*here, index))


def get(value: Any, path: Path_) -> Any:
    for step in path:
        value = value[step]
    return value


def replaced(value: Any, path: Path_, new: Any) -> Any:
    """``value`` with the node at ``path`` replaced (copies along the path only)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (replaced(v, rest, new) if k == head else v) for k, v in value.items()}
    if isinstance(value, list):
        return [replaced(v, rest, new) if i == head else v for i, v in enumerate(value)]
    return value


FIELD_NAMES = sorted({name for model, _ in FACT_TYPES.values() for name in model.model_fields}
                     | {"fact_type", "headers", "payload", "workflow_run", "request", "response", "session_id",
                        "observed_at", "messages", "content", "role", "conclusion", "run_attempt", "id"})


def mutate(data: st.DataObject, record: Any) -> Any:
    """One change to a record's value tree: a value, a type, a key, a duplicate key, nesting."""
    where = data.draw(st.sampled_from(list(paths(record))), label="path")
    node = get(record, where)
    kind = data.draw(st.sampled_from(["value", "type", "delete", "add", "rename", "duplicate", "nest", "container"]),
                     label="mutation")
    event(f"mutation: {kind}")
    if kind == "value":
        return replaced(record, where, data.draw(json_values, label="value"))
    if kind == "type":
        if isinstance(node, bool):
            new: Any = int(node)
        elif isinstance(node, int):
            new = data.draw(st.sampled_from([str(node), float(node), bool(node % 2), [node]]))
        elif isinstance(node, float):
            new = data.draw(st.sampled_from([repr(node), int(node) if math.isfinite(node) else None, [node]]))
        elif isinstance(node, str):
            new = data.draw(st.sampled_from([int(node) if node.isascii() and node.isdigit() else len(node), None,
                                             [node], {"value": node}, node.upper(), f" {node} "]))
        elif isinstance(node, dict):
            new = list(node.values())
        elif isinstance(node, list):
            new = {str(i): v for i, v in enumerate(node)}
        else:
            new = data.draw(scalars)
        return replaced(record, where, new)
    if kind in ("delete", "rename", "duplicate") and isinstance(node, dict) and node:
        key = data.draw(st.sampled_from(list(node)), label="key")
        if kind == "delete":
            return replaced(record, where, {k: v for k, v in node.items() if k != key})
        if kind == "rename":
            name = data.draw(st.sampled_from([*FIELD_NAMES, key.upper(), f"{key} ", ""]), label="name")
            return replaced(record, where, {(name if k == key else k): v for k, v in node.items()})
        again = data.draw(st.one_of(st.just(node[key]), json_values), label="again")
        pairs = list(node.items())
        position = data.draw(st.integers(0, len(pairs)), label="position")
        pairs.insert(position, (key, again))
        return replaced(record, where, Pairs(pairs))
    if kind == "add" and isinstance(node, dict):
        name = data.draw(st.one_of(st.sampled_from(FIELD_NAMES), st.text(max_size=6)), label="name")
        return replaced(record, where, {**node, name: data.draw(json_values, label="value")})
    if kind == "nest":
        levels = data.draw(st.sampled_from([1, 2, MAX_DEPTH - 10, MAX_DEPTH, 400, 1100]), label="levels")
        return replaced(record, where, Raw("[" * levels + render(node) + "]" * levels))
    return replaced(record, where, data.draw(st.sampled_from([[node], {"value": node}, [], {}, None])))


BYTE_NOISE = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\n", b"\r", b"\x0c", b"{", b"}", b"]", b",", b'"',
              b"\\", b"\\u", b"\xef\xbb\xbf", b" ", b"NaN", b"//"]


def text_mutation(data: st.DataObject, text: bytes) -> bytes:
    """Damage a line's bytes: truncate it, or insert noise (which may split it into lines)."""
    at = data.draw(st.integers(0, len(text)), label="at")
    if data.draw(st.booleans(), label="truncate"):
        event("mutation: truncate")
        return text[:at]
    event("mutation: bytes")
    return text[:at] + data.draw(st.sampled_from(BYTE_NOISE), label="noise") + text[at:]


# --- one file, many records -------------------------------------------------------------


@dataclass
class Expected:
    """What the ingest of one file must give, record by record."""

    problems: set[int] = field(default_factory=set)
    skipped: int = 0
    facts: list[tuple[int, FactModel, dict[str, Any]]] = field(default_factory=list)  # (line, fact, record)


def build_file(data: st.DataObject, seeds: list[Any], *, text_damage: bool, first_intact: bool = True
               ) -> list[bytes]:
    """The lines of one JSON Lines file: seeds, some mutated. The first line is an intact seed
    (so the file reads as JSON Lines, not as one document)."""
    count = data.draw(st.integers(2, 5), label="records")
    lines = []
    for index in range(count):
        record = seeds[data.draw(st.integers(0, len(seeds) - 1), label="seed")]
        if index > 0 or not first_intact:
            for _ in range(data.draw(st.integers(0, 3), label="mutations")):
                record = mutate(data, record)
        text = render(record).encode("utf-8", "surrogatepass")
        if text_damage and index > 0 and data.draw(st.integers(0, 4), label="damage") == 0:
            text = text_mutation(data, text)
        lines.append(text)
    return lines


def expect(records: list[tuple[int, bytes]], translate: Callable[[Any], Translation]) -> Expected:
    """Each record read by :func:`reference` and translated: a problem, a skip, or Facts."""
    expected = Expected()
    for number, text in records:
        value = reference(text)
        if value is REFUSED or not isinstance(value, dict):
            expected.problems.add(number)
            event("record: refused while reading" if value is REFUSED else "record: not an object")
            continue
        try:
            translation = translate(value)
        except (TranslationError, ValidationError):
            expected.problems.add(number)
            event("record: refused by the translator")
            continue
        if translation.skipped:
            expected.skipped += 1
            event("record: skipped on purpose")
        for fact in translation.facts:
            expected.facts.append((number, fact, value))
        if translation.facts:
            event("record: stored")
    return expected


def physical_lines(content: bytes) -> list[tuple[int, bytes]]:
    """Non-blank lines with their numbers, split as the reader splits them (on newlines)."""
    found = []
    for number, line in enumerate(content.split(b"\n"), start=1):
        if line.strip(b" \t\r"):
            found.append((number, line))
    return found


def stored_facts(store: FactStore, tables: set[str]) -> dict[str, FactModel]:
    found: dict[str, FactModel] = {}
    for table in tables:
        for fact in store.facts(table, ORG):
            found[table_and_key(fact)[1]] = fact
    return found


def check(report: IngestReport, store: FactStore, path: Path, expected: Expected, record_count: int,
          raw_of: Callable[[FactModel, dict[str, Any]], tuple[Any, Any]] | None) -> None:
    """The ingest rule, for every record of the file."""
    for problem in report.problems:
        assert problem.path == str(path)
        assert "\n" not in problem.message and problem.message.strip(), problem
    assert {p.line for p in report.problems} == expected.problems, [str(p) for p in report.problems]
    assert len(report.problems) == len(expected.problems), "one problem line per refused record"
    assert all(1 <= p.line <= record_count for p in report.problems)
    assert sum(report.skipped.values()) == expected.skipped
    first: dict[str, FactModel] = {}
    seen_keys: set[tuple[str, str]] = set()
    for _, fact, _ in expected.facts:  # a redelivery (same natural key or id) stores nothing new
        table, fact_id, key = table_and_key(fact)
        if (table, key) in seen_keys or fact_id in first:
            continue
        seen_keys.add((table, key))
        first[fact_id] = fact
    tables = {table_and_key(fact)[0] for _, fact, _ in expected.facts} | {"ci_outcomes", "inference_calls"}
    stored = stored_facts(store, tables)
    assert set(stored) == set(first), "a good record was lost, or a refused one stored"
    for fact_id, fact in first.items():
        assert encode_record(stored[fact_id]) == encode_record(fact), f"{fact_id} not stored exactly"
    for _, fact, record in expected.facts:
        if raw_of is not None:
            raw, sent = raw_of(fact, record)
            assert encode_record(raw) == encode_record(sent), "raw is not the record as sent"
        check_not_coerced(fact, record)


def check_not_coerced(fact: FactModel, record: dict[str, Any]) -> None:
    """A typed field holds what was sent, in the type it was sent as (a Fact line or CI record)."""
    if "fact_type" not in record and "provider" not in record:
        return
    fields = type(fact).model_fields
    for name, sent in record.items():
        if name not in fields or name in ("raw", "org_id") or sent is None:
            continue
        kept = getattr(fact, name)
        if isinstance(sent, bool):
            assert kept is sent, (name, sent, kept)
        elif isinstance(sent, int):
            assert (type(kept) is int and kept == sent) or (type(kept) is float and kept == sent), (name, sent, kept)
        elif isinstance(sent, float):
            assert type(kept) is float and (kept == sent or (math.isnan(sent) and math.isnan(kept))), (name, sent, kept)
        elif isinstance(sent, str) and isinstance(kept, datetime):
            try:
                assert kept == utc_timestamp(sent), (name, sent, kept)
            except TimestampError:
                pytest.fail(f"{name}: {sent!r} is not an RFC 3339 timestamp, yet it was read as {kept}")
        elif isinstance(sent, str):
            assert isinstance(kept, str), (name, sent, kept)


def run_ingest(lines: list[bytes], translate: Callable[[Any], Translation], make_translate: Callable[[], Callable[
        [Any], Translation]], raw_of: Callable[[FactModel, dict[str, Any]], tuple[Any, Any]] | None) -> None:
    content = b"\n".join(lines) + b"\n"
    with tempfile.TemporaryDirectory(prefix="sediment-fuzz-") as work:
        path = Path(work) / "input.jsonl"
        path.write_bytes(content)
        store = FactStore(f"sqlite:///{Path(work) / 'facts.db'}")
        try:
            report = ingest_files([str(path)], translate, store)
            records = physical_lines(content)
            expected = expect(records, make_translate())
            check(report, store, path, expected, content.count(b"\n") + 1, raw_of)
        finally:
            store.close()


# --- the commands -----------------------------------------------------------------------


def _ci(record: Any) -> Translation:
    return translate_ci(record, org_id=ORG, captured_at=T0)


def _github(record: Any) -> Translation:
    return translate_github(record, event=None, org_id=ORG, captured_at=T0)


def _fact(record: Any) -> Translation:
    return translate_fact(record, org_id=ORG)


def _ci_raw(fact: FactModel, record: dict[str, Any]) -> tuple[Any, Any]:
    return getattr(fact, "raw"), record["raw"] if record.get("raw") is not None else record  # noqa: B009


def _github_raw(fact: FactModel, record: dict[str, Any]) -> tuple[Any, Any]:
    """A run, job or check keeps its event's object (``workflow_run``, ``workflow_job``, …), a
    push its whole payload; merges and renames keep none."""
    if not isinstance(fact, CIOutcome | Push):
        return None, None
    payload = record.get("payload", record)  # an envelope, or a bare payload
    if isinstance(fact, CIOutcome):
        event = (fact.source_event_type or "").split(".")[1]  # github.<event>.<action>
        return fact.raw, payload[event]
    return fact.raw, payload


def _provider_translator(provider: str) -> Callable[[Any], Translation]:
    from sediment.ingest.ci.buildkite import translate_buildkite
    from sediment.ingest.ci.circleci import translate_circleci
    from sediment.ingest.ci.gitlab import translate_gitlab

    function = {"gitlab": translate_gitlab, "circleci": translate_circleci, "buildkite": translate_buildkite}[provider]

    def translate(record: Any) -> Translation:
        return function(record, event=None, org_id=ORG, captured_at=T0)
    return translate


def _provider_raw(fact: FactModel, record: dict[str, Any]) -> tuple[Any, Any]:
    """A provider's outcome keeps the whole delivered payload (the envelope's, or the bare one)."""
    payload = record["payload"] if "headers" in record and "payload" in record else record
    return getattr(fact, "raw"), payload  # noqa: B009


def _fact_raw(fact: FactModel, record: dict[str, Any]) -> tuple[Any, Any]:
    if "raw" not in type(fact).model_fields:
        return None, None
    return getattr(fact, "raw"), record.get("raw", {})  # noqa: B009


def _call_raw(fact: FactModel, record: dict[str, Any]) -> tuple[Any, Any]:
    return getattr(fact, "raw"), redact_record(record)  # noqa: B009


@FUZZ
@given(data=st.data())
def test_fuzz_ingest_ci(data: st.DataObject) -> None:
    run_ingest(build_file(data, ci_seeds(), text_damage=True), _ci, lambda: _ci, _ci_raw)


@FUZZ
@given(data=st.data())
def test_fuzz_ingest_github(data: st.DataObject) -> None:
    run_ingest(build_file(data, github_seeds(), text_damage=True), _github, lambda: _github, _github_raw)


@pytest.mark.parametrize("provider", ["gitlab", "circleci", "buildkite"])
@FUZZ
@given(data=st.data())
def test_fuzz_ingest_ci_providers(provider: str, data: st.DataObject) -> None:
    translate = _provider_translator(provider)
    run_ingest(build_file(data, provider_seeds(provider), text_damage=True), translate, lambda: translate,
               _provider_raw)


@FUZZ
@given(data=st.data())
def test_fuzz_ingest_facts(data: st.DataObject) -> None:
    run_ingest(build_file(data, fact_seeds(), text_damage=True), _fact, lambda: _fact, _fact_raw)


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_fuzz_a_document_of_records(data: st.DataObject) -> None:
    """One pretty-printed JSON array of GitHub deliveries (as a webhook archive is saved): each
    element is a record; a bad element fails alone."""
    seeds = github_seeds()
    count = data.draw(st.integers(1, 4), label="records")
    elements = []
    for _ in range(count):
        record = seeds[data.draw(st.integers(0, len(seeds) - 1), label="seed")]
        for _ in range(data.draw(st.integers(0, 2), label="mutations")):
            record = mutate(data, record)
        elements.append(render(record).encode("utf-8", "surrogatepass"))
    content = b"[\n" + b",\n".join(elements) + b"\n]\n"
    with tempfile.TemporaryDirectory(prefix="sediment-fuzz-") as work:
        path = Path(work) / "deliveries.json"
        path.write_bytes(content)
        store = FactStore(f"sqlite:///{Path(work) / 'facts.db'}")
        try:
            report = ingest_files([str(path)], _github, store)
            if reference(content) is REFUSED and all(reference(e) is not REFUSED for e in elements):
                pytest.fail("the document is refused though each element reads")
            expected = expect(list(enumerate(elements, start=1)), _github)
            check(report, store, path, expected, count, _github_raw)
        finally:
            store.close()


CALL_FORMATS = ["litellm", "openai-chat", "openai-responses", "anthropic"]
_CALL_SEEDS: dict[str, list[dict[str, Any]]] = {}


def _seeds_for(call_format: str) -> list[dict[str, Any]]:
    if call_format not in _CALL_SEEDS:
        _CALL_SEEDS[call_format] = call_seeds(call_format)
    return _CALL_SEEDS[call_format]


def _call_translator(call_format: str) -> Callable[[Any], Translation]:
    memo = ReplayMemo()  # shared across the calls of a file, as the command shares it

    def translate(record: Any) -> Translation:
        return translate_call(record, format=call_format, org_id=ORG, captured_at=T0, memo=memo)

    return translate


@pytest.mark.parametrize("call_format", CALL_FORMATS)
def test_every_call_format_has_seeds_that_translate(call_format: str) -> None:
    require_cassettes()
    seeds = _seeds_for(call_format)
    assert seeds, f"no {call_format} calls in the cassettes"
    translate = _call_translator(call_format)
    assert any(translate(seed).facts for seed in seeds)


@pytest.mark.parametrize("call_format", CALL_FORMATS)
@FUZZ
@given(data=st.data())
def test_fuzz_ingest_calls(call_format: str, data: st.DataObject) -> None:
    require_cassettes()
    lines = build_file(data, _seeds_for(call_format), text_damage=True)
    run_ingest(lines, _call_translator(call_format), lambda: _call_translator(call_format), _call_raw)


# --- transcripts: whole files, read line by line -------------------------------------------

TRANSCRIPTS = CASSETTES.parent
TRANSCRIPT_SEEDS = {
    "claude-code": ["claude_code/git-ai.example-claude-code.jsonl", "claude_code/git-ai.claude-code-with-thinking.jsonl"],
    "codex": ["codex_rollout/localpush.rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
              "codex_rollout/localpush.rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"],
}
DRIFTED_ENTRIES = [{"type": "agent-telemetry", "payload": {"n": 1}}, {"type": "progress", "uuid": "fuzz-progress"},
                   {"type": "event_msg", "payload": {"type": "new_event", "x": [1]}},
                   {"type": "response_item", "payload": {"type": "ghost_snapshot", "commit": "abc"}}]
EARLY = datetime(2000, 1, 1, tzinfo=UTC)  # a capture time before every seed: no turn settles by age


def require_transcripts(relative: str) -> Path:
    return require_path(TRANSCRIPTS / relative, "the shared transcript fixture", hint="set SEDIMENT_INPUT_FIXTURES")


_SPANS: dict[tuple[str, int], list[tuple[int, FactModel]]] = {}


def _call_spans(client: str, lines: list[bytes], directory: Path) -> list[tuple[int, FactModel]]:
    """Each call of the file with the fewest leading lines that give it exactly."""
    from sediment.ingest.transcripts import translate_transcript

    key = (client, hash(tuple(lines)))
    if key in _SPANS:
        return _SPANS[key]

    def calls(count: int, at: datetime) -> list[FactModel]:
        path = directory / f"span-{count}.jsonl"
        path.write_bytes(b"".join(line + b"\n" for line in lines[:count]))
        return [f for f in translate_transcript(path, client, org_id=ORG, captured_at=at).facts  # type: ignore[arg-type]
                if type(f).__name__ == "InferenceCall"]

    whole = calls(len(lines), T0)
    assert whole
    prefixes = [calls(n, EARLY) for n in range(1, len(lines) + 1)]
    _SPANS[key] = [(next((n for n, found in enumerate(prefixes, start=1) if call in found), len(lines)), call)
                   for call in whole]
    return _SPANS[key]


TRANSCRIPT_CHANGES = ["mutate", "damage", "drift", "duplicate", "delete"]


@pytest.mark.parametrize("client", sorted(TRANSCRIPT_SEEDS))
@FUZZ
@given(data=st.data())
def test_fuzz_ingest_transcripts(client: str, data: st.DataObject) -> None:
    """A transcript with damaged, mutated, drifted, duplicated and deleted lines, ingested as
    ``sediment ingest transcripts`` does: nothing raises; every line that is not a JSON object
    is one problem naming its line (a cut last line is waited for); every problem is one line
    of text naming the file and a line that was changed; a line that is a JSON object is
    refused naming its field; the Facts are in the store exactly; and every call whose lines
    all come before the first change is kept as it was."""
    from sediment.ingest.transcripts import ingest_transcripts, translate_transcript

    seed = require_transcripts(data.draw(st.sampled_from(TRANSCRIPT_SEEDS[client]), label="seed"))
    original = seed.read_bytes().splitlines()
    lines = list(original)
    changed = [False] * len(lines)
    for _ in range(data.draw(st.integers(1, 4), label="changes")):
        at = data.draw(st.integers(0, len(lines) - 1), label="line")
        change = data.draw(st.sampled_from(TRANSCRIPT_CHANGES), label="change")
        event(f"transcript change: {change}")
        parsed = reference(lines[at])
        if change == "mutate" and parsed is not REFUSED:
            lines[at] = render(mutate(data, parsed)).encode("utf-8", "surrogatepass")
            changed[at] = True
        elif change == "drift":
            lines.insert(at, json.dumps(data.draw(st.sampled_from(DRIFTED_ENTRIES))).encode())
            changed.insert(at, True)
        elif change == "duplicate":
            lines.insert(at, lines[at])
            changed.insert(at, True)
        elif change == "delete" and len(lines) > 1:
            del lines[at], changed[at]
            if at < len(changed):
                changed[at] = True  # the line after the gap: what it follows has changed
        else:
            lines[at] = text_mutation(data, lines[at])
            changed[at] = True
    ending = b"\n" if data.draw(st.booleans(), label="final newline") else b""
    content = b"\n".join(lines) + ending
    first_change = min((i for i, flag in enumerate(changed) if flag), default=len(lines))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.jsonl"
        path.write_bytes(content)
        result = translate_transcript(path, client, org_id=ORG, captured_at=T0)  # type: ignore[arg-type]
        physical = content.split(b"\n")
        if physical and physical[-1] == b"":
            physical.pop()
        flags = [flag for line, flag in zip(lines, changed, strict=True) for _ in line.split(b"\n")]
        changed_lines = {number for number, flag in enumerate(flags, start=1) if flag}
        problem_lines = {line for line, _ in result.problems}
        for line, message in result.problems:
            assert 1 <= line <= len(physical) and message and "\n" not in message, (line, message)
            assert line in changed_lines, f"line {line} is intact yet refused: {message}"
            if isinstance(reference(physical[line - 1].rstrip(b"\r")), dict):
                field = message.split(": ", 1)[0]
                assert ": " in message and field and " " not in field.strip("()"), f"no field named: {message}"
        for number, raw in enumerate(physical, start=1):
            if not raw.strip():
                continue
            value = reference(raw.rstrip(b"\r\n"))
            cut = number == len(physical) and not ending
            if value is REFUSED or not isinstance(value, dict):
                assert number in problem_lines or (cut and value is REFUSED), (number, raw[:80])
        store = FactStore(f"sqlite:///{Path(tmp) / 'facts.db'}")
        try:
            report = ingest_transcripts([path], client, store, org_id=ORG, captured_at=T0)  # type: ignore[arg-type]
            assert [(p.path, p.line, p.message) for p in report.problems] == [
                (str(path), line, message) for line, message in result.problems]
            first: dict[tuple[str, str], FactModel] = {}
            for fact in result.facts:
                table, fact_id, _ = table_and_key(fact)
                first.setdefault((table, fact_id), fact)
            stored = {(table, fact_id): fact for table in {t for t, _ in first}
                      for fact_id, fact in stored_facts(store, {table}).items()}
            assert set(stored) == set(first), "a Fact was lost, or one stored that the transcript does not give"
            for key, fact in first.items():
                assert encode_record(stored[key]) == encode_record(fact), f"{key} not stored exactly"
        finally:
            store.close()
        for span, call in _call_spans(client, original, Path(tmp)):
            if span <= first_change:
                assert call in result.facts, "a change after the lines a call needs lost or changed it"


# --- junit: whole reports ----------------------------------------------------------------

ATTEMPT = RunAttempt(org_id=ORG, provider="github_actions", run_id="30433642", run_attempt=1, repo="acme/widget",
                     commit_sha="3484a3fb816e0859fd6e1cea078d76385ff50625")
XML_NOISE = [b"<", b">", b"&", b"&bogus;", b"&amp;", b"<!DOCTYPE x [<!ENTITY a 'b'>]>", b"]]>", b"<![CDATA[",
             b'<testcase name="x"/>', b'<testcase classname="c"/>', b'<testcase name=""/>', b' time="-1"',
             b' time="nan"', b' time="1e400"', b' time="1,5"', b' name="a" name="b"', b"\xff", b"\x00", b"\xc3",
             b"<testsuite>" * 70, b"</testsuite>", b"<?xml version='1.0' encoding='latin-1'?>", b"\n", b'"']


def junit_mutation(data: st.DataObject, text: bytes) -> bytes:
    at = data.draw(st.integers(0, len(text)), label="at")
    kind = data.draw(st.sampled_from(["insert", "delete", "truncate"]), label="xml mutation")
    event(f"xml mutation: {kind}")
    if kind == "truncate":
        return text[:at]
    if kind == "delete":
        return text[:at] + text[at + data.draw(st.integers(1, 40), label="length"):]
    return text[:at] + data.draw(st.sampled_from(XML_NOISE), label="noise") + text[at:]


@FUZZ
@given(data=st.data())
def test_fuzz_ingest_junit(data: st.DataObject) -> None:
    """A report is stored whole or refused as one ``FILE: problem``; the other reports are kept;
    ``sediment ingest junit`` prints exactly those problems and exits 8 when there is one."""
    count = data.draw(st.integers(1, 3), label="reports")
    with tempfile.TemporaryDirectory(prefix="sediment-fuzz-") as work:
        paths, expected_results, expected_problems = [], [], set()
        for index in range(count):
            text = JUNIT_SEEDS[data.draw(st.integers(0, len(JUNIT_SEEDS) - 1), label="seed")].read_bytes()
            for _ in range(data.draw(st.integers(0, 3), label="mutations")):
                text = junit_mutation(data, text)
            path = Path(work) / f"report-{index}.xml"
            path.write_bytes(text)
            paths.append(str(path))
            try:
                expected_results.extend(translate_report(text, ATTEMPT, captured_at=T0))
                event("report: stored")
            except ReportError:
                expected_problems.add(str(path))
                event("report: refused")
        store = FactStore(f"sqlite:///{Path(work) / 'facts.db'}")
        try:
            report = ingest_junit_reports(paths, store, ATTEMPT, captured_at=T0)
            assert {p.path for p in report.problems} == expected_problems
            assert len(report.problems) == len(expected_problems)
            assert all("\n" not in p.message for p in report.problems)
            first: dict[str, FactModel] = {}
            for result in expected_results:
                first.setdefault(result.test_result_id, result)
            stored = {r.test_result_id: r for r in store.test_results_for_commits(ORG, [(ATTEMPT.repo,
                                                                                        ATTEMPT.commit_sha)])}
            assert set(stored) == set(first)
            for result_id, result in first.items():
                assert encode_record(stored[result_id]) == encode_record(result)
        finally:
            store.close()
        code, errors = junit_command(paths, Path(work) / "home")
        assert code == (8 if expected_problems else 0), errors
        assert sorted(errors[:len(report.problems)]) == sorted(f"error: {visible(str(p))}" for p in report.problems)
        assert not any("Traceback" in line for line in errors), errors


def junit_command(paths: list[str], home: Path) -> tuple[int, list[str]]:
    """``sediment ingest junit PATHS`` for ATTEMPT, in this process: its exit code and stderr lines."""
    from sediment.cli import main

    environ = {"SEDIMENT_HOME": str(home), "SEDIMENT_ORG_ID": ORG, "SEDIMENT_CAPTURE_TIME": T0.isoformat()}
    saved = {name: os.environ.get(name) for name in environ}
    argv = sys.argv
    stderr = io.StringIO()
    code = 0
    os.environ.update(environ)
    sys.argv = ["sediment", "ingest", "junit", *paths, "--provider", ATTEMPT.provider, "--run-id", ATTEMPT.run_id,
                "--run-attempt", str(ATTEMPT.run_attempt), "--repo", ATTEMPT.repo, "--commit", ATTEMPT.commit_sha]
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = argv
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return code, stderr.getvalue().splitlines()


# --- otlp: batches of log records, each read on its own ------------------------------------

OTLP_FIXTURES = HERE / "fixtures" / "otlp"


def otlp_seeds() -> list[dict[str, Any]]:
    seeds = [_load(p) for p in sorted(OTLP_FIXTURES.glob("*.json"))]
    for path in sorted(OTLP_FIXTURES.glob("*.jsonl")):  # the collector's file and the real Claude Code captures
        seeds += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return seeds


OTLP_SEEDS = otlp_seeds()
ANY_VALUES: list[Any] = [
    {"stringValue": "accept"}, {"stringValue": ""}, {"stringValue": "  "}, {"stringValue": 7}, {"intValue": "12"},
    {"intValue": 12}, {"intValue": "12x"}, {"intValue": str(2**63)}, {"intValue": True}, {"boolValue": True},
    {"boolValue": "true"}, {"doubleValue": 0.5}, {"doubleValue": "NaN"}, {"doubleValue": "Infinity"},
    {"doubleValue": 1.5}, {"doubleValue": -1}, {"arrayValue": {"values": [{"stringValue": "x"}]}},
    {"kvlistValue": {"values": []}}, {"bytesValue": "AAEC"}, {}, None, {"stringValue": "a", "intValue": "1"},
    {"stringValue": "\x00"}, {"stringValue": "\ud800"}, {"stringValue": "x" * 300_000}, "bare", [],
]
VOCABULARY = ["accept", "reject", "approved", "denied", "abort", "timed_out", "user", "User", "Config", "config",
              "user_reject", "hook", "accepted", "rejected", "saved", "apply_patch", "inline_chat", "exec_command",
              "Edit", "Write", "MultiEdit", "Read", "pi", "cursor", "codex", "gemini-cli", "claude_code.tool_decision",
              "claude_code.tool_result", "codex.tool_result", "copilot_chat.edit.survival", "sediment.retry_linkage"]
TIMES: list[Any] = ["0", 0, "", "-1", -1, 1.5, "1.7e18", "18446744073709551615", "18446744073709551616",
                    "1783454100005000000", 1783454100005000001, True, None, {"v": 1}]
OTLP_KEYS = ["session.id", "user.id", "tool_use_id", "call_id", "decision", "source", "tool_name", "event.name",
             "file_path", "agent", "explicit", "outcome", "accepted", "conversation.id", "request_id",
             "survival_rate_four_gram", "survival_rate_no_revert", "time_delay_ms", "edit_source", "tool_input",
             "arguments", "applied_text", "observed_file_text", "proposed", "rejected_call_id", "accepted_call_id",
             "external_lines_added", "copilot_chat.file.relative_path", "github.copilot.git.commit_sha",
             "authorization", "user.email"]


def log_record_paths(batch: Any, *, readable: bool = False) -> list[Path_]:
    """The path of every log record of a batch; with ``readable``, only of those in containers
    that can be read (no flaw in a resource's own object, a resource object or none, arrays)."""
    found: list[Path_] = []
    resources = batch.get("resourceLogs") if isinstance(batch, dict) else None
    for i, resource in enumerate(resources if isinstance(resources, list) else []):
        if not isinstance(resource, dict) or not isinstance(resource.get("scopeLogs"), list):
            continue
        own = resource.get("resource")
        if readable and (isinstance(resource, FlawedObject) or (own is not None and (
                not isinstance(own, dict) or first_flaw(own) is not None))):
            continue
        for j, scope in enumerate(resource["scopeLogs"]):
            if readable and isinstance(scope, FlawedObject):
                continue
            if isinstance(scope, dict) and isinstance(scope.get("logRecords"), list):
                found.extend(("resourceLogs", i, "scopeLogs", j, "logRecords", k) for k in range(len(scope["logRecords"])))
    return found


def otlp_mutate(data: st.DataObject, batch: Any) -> Any:
    """One change, most often inside one log record: an attribute's value kind, a duplicated or
    dropped attribute, a vocabulary value, an event time, or any generic mutation."""
    records = log_record_paths(batch)
    if not records or data.draw(st.integers(0, 4), label="anywhere") == 0:
        return mutate(data, batch)
    where = data.draw(st.sampled_from(records), label="log record")
    record = get(batch, where)
    kind = data.draw(st.sampled_from(["value", "duplicate", "drop", "vocabulary", "time", "generic"]),
                     label="otlp mutation")
    event(f"otlp mutation: {kind}")
    attributes = record.get("attributes") if isinstance(record, dict) else None
    if kind == "time" and isinstance(record, dict):
        field = data.draw(st.sampled_from(["timeUnixNano", "observedTimeUnixNano"]), label="time field")
        return replaced(batch, where, {**record, field: data.draw(st.sampled_from(TIMES), label="time")})
    if kind in ("value", "duplicate", "drop", "vocabulary") and isinstance(attributes, list) and attributes:
        index = data.draw(st.integers(0, len(attributes) - 1), label="attribute")
        item = attributes[index]
        if kind == "drop":
            changed = attributes[:index] + attributes[index + 1:]
        elif kind == "duplicate":
            again = {"key": item.get("key") if isinstance(item, dict) else "x",
                     "value": data.draw(st.sampled_from(ANY_VALUES), label="value")}
            changed = [*attributes, again]
        else:
            value = (data.draw(st.sampled_from(ANY_VALUES), label="value") if kind == "value" else
                     {"stringValue": data.draw(st.sampled_from(VOCABULARY), label="word")})
            key = item.get("key") if isinstance(item, dict) and data.draw(st.booleans(), label="same key") else \
                data.draw(st.sampled_from(OTLP_KEYS), label="key")
            changed = [*attributes[:index], {"key": key, "value": value}, *attributes[index + 1:]]
        return replaced(batch, (*where, "attributes"), changed)
    return replaced(batch, where, mutate(data, record))


def _flaw_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    seen: set[str] = set()
    duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
    flawed = FlawedObject(result)
    flawed.problem = f"duplicate key {duplicate!r}"
    return flawed


def _flaw_float(text: str) -> float | Flaw:
    value = float(text)
    return Flaw(f"number out of range: {text}") if math.isinf(value) else value


def _flaw_int(text: str) -> int | Flaw:
    try:
        return int(text)
    except ValueError:
        return Flaw("integer has more than 4300 digits")


def otlp_reference(data: bytes) -> Any:
    """The batch in ``data`` read by the standard parser keeping flaws in place, or REFUSED."""
    try:
        value = json.loads(data.decode("utf-8"), object_pairs_hook=_flaw_object, parse_float=_flaw_float,
                           parse_int=_flaw_int)
    except (ValueError, RecursionError):
        return REFUSED
    return REFUSED if depth_of(value) > MAX_DEPTH else value


def _otlp(record: Any) -> Translation:
    return translate_otlp(record, org_id=ORG, captured_at=T0)


RESULT_SKIPS = ("tool_result_joined", "tool_result_unjoined")


def _is_result(record: Any) -> bool:
    if not isinstance(record, dict):
        return False
    body = record.get("body")
    if isinstance(body, dict) and body.get("stringValue") == "claude_code.tool_result":
        return True
    attributes = record.get("attributes")
    return isinstance(attributes, list) and any(
        isinstance(a, dict) and a.get("key") == "event.name" and isinstance(a.get("value"), dict)
        and a["value"].get("stringValue") == "codex.tool_result" for a in attributes)


def _scope_of(resource: dict[str, Any], records: list[Any]) -> dict[str, Any]:
    return {"resourceLogs": [{"resource": resource.get("resource"), "scopeLogs": [{"logRecords": records}]}]}


def one_at_a_time(batch: dict[str, Any], translation: Translation) -> None:
    """The batch's translation is exactly that of its log records translated one at a time:
    each with the batch's tool results (which decisions join), less what those results give on
    their own. One bad record never changes another's Facts, skips or problems."""
    paths = log_record_paths(batch, readable=True)
    results = [get(batch, path) for path in paths if _is_result(get(batch, path))]
    located = {"resourceLogs[{}].scopeLogs[{}].logRecords[{}]".format(*path[1::2]) for path in paths}
    facts: Counter[str] = Counter()
    skips: Counter[str] = Counter()
    problems = [p for p in translation.problems if p.split(": ", 1)[0] not in located]
    own = "resourceLogs[0].scopeLogs[0].logRecords[0]"
    for path in paths:
        record = get(batch, path)
        resource = batch["resourceLogs"][path[1]]
        part = _otlp(_scope_of(resource, [record, *results]))
        alone = _otlp(_scope_of(resource, list(results)))  # what the results give by themselves
        facts.update(encode_record(f) for f in part.facts)
        facts.subtract(encode_record(f) for f in alone.facts)
        skips.update(s for s in part.skips if s not in RESULT_SKIPS)
        skips.subtract(s for s in alone.skips if s not in RESULT_SKIPS)
        locator = "resourceLogs[{}].scopeLogs[{}].logRecords[{}]".format(*path[1::2])
        problems.extend(locator + p[len(own):] for p in part.problems if p.startswith(own + ": "))
    assert Counter(encode_record(f) for f in translation.facts) == +facts, "a record changed another's Facts"
    assert Counter(s for s in translation.skips if s not in RESULT_SKIPS) == +skips
    assert sorted(translation.problems) == sorted(problems), "a record's problem depends on another record"


@FUZZ
@given(data=st.data())
def test_fuzz_ingest_otlp(data: st.DataObject) -> None:
    """Batches of real-shaped log records, mutated mostly inside one log record: each bad log
    record is one problem line naming its locator, the batch's other records are stored exactly,
    and every batch translates as its records one at a time."""
    count = data.draw(st.integers(1, 3), label="batches")
    lines = []
    for index in range(count):
        batch = OTLP_SEEDS[data.draw(st.integers(0, len(OTLP_SEEDS) - 1), label="seed")]
        if index > 0 or data.draw(st.booleans(), label="mutate the first"):
            for _ in range(data.draw(st.integers(1, 3), label="mutations")):
                batch = otlp_mutate(data, batch)
        if index == 0 and not isinstance(batch, dict | Pairs):  # the first line is an object: a JSON Lines file
            batch = OTLP_SEEDS[0]
        text = render(batch).encode("utf-8", "surrogatepass")
        if index > 0 and data.draw(st.integers(0, 5), label="damage") == 0:
            text = text_mutation(data, text)
        lines.append(text)
    content = b"\n".join(lines) + b"\n"
    with tempfile.TemporaryDirectory(prefix="sediment-fuzz-") as work:
        path = Path(work) / "export.jsonl"
        path.write_bytes(content)
        store = FactStore(f"sqlite:///{Path(work) / 'facts.db'}")
        try:
            report = ingest_files([str(path)], _otlp, store, keep_flaws=True)
            wanted_problems: list[tuple[int, str]] = []
            skips: Counter[str] = Counter()
            facts: list[FactModel] = []
            elements = 0
            for number, text in physical_lines(content):
                value = otlp_reference(text)
                if value is REFUSED or not isinstance(value, dict):
                    wanted_problems.append((number, "(the line)"))
                    event("batch: refused while reading")
                    continue
                try:
                    translation = _otlp(value)
                except TranslationError:
                    wanted_problems.append((number, "(the batch)"))
                    event("batch: not an OTLP export")
                    continue
                one_at_a_time(value, translation)
                wanted_problems.extend((number, p) for p in translation.problems)
                skips.update(translation.skips)
                facts.extend(translation.facts)
                elements += translation.elements
                event(f"batch: {len(translation.problems)} problem(s), {len(translation.facts)} Fact(s)")
            found = [(p.line, p.message) for p in report.problems]
            assert len(found) == len(wanted_problems), (found, wanted_problems)
            for (line, message), (wanted_line, wanted) in zip(found, wanted_problems, strict=True):
                assert line == wanted_line and "\n" not in message and message.strip()
                assert wanted.startswith("(") or message == wanted
            assert report.skipped == skips and report.elements == elements
            first: dict[str, FactModel] = {}
            keys: set[tuple[str, str]] = set()
            for fact in facts:
                table, fact_id, key = table_and_key(fact)
                if (table, key) not in keys and fact_id not in first:
                    keys.add((table, key))
                    first[fact_id] = fact
            tables = {"developer_decisions", "edit_observations", "rejected_edits", "retry_linkages"}
            stored = stored_facts(store, tables)
            assert set(stored) == set(first), "a good log record was lost, or a refused one stored"
            for fact_id, fact in first.items():
                assert encode_record(stored[fact_id]) == encode_record(fact), f"{fact_id} not stored exactly"
            for fact in facts:
                raw = fact.raw if isinstance(fact, DeveloperDecision) else None
                for part in (raw or {}).values() if isinstance(raw, dict) and "decision" in raw else ():
                    if isinstance(part, dict):
                        keys_sent = {a.get("key") for a in part.get("attributes", []) if isinstance(a, dict)}
                        assert not keys_sent & ACCOUNT_ATTRIBUTES, "account data kept in raw"
                        assert provenance(part) == part, "a credential was not redacted"
        finally:
            store.close()
