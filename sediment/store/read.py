"""Reading Facts: the visible (not quarantined) Facts of each kind, inference calls with their
messages, tools and replayed lists rehydrated exactly as appended.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import func, select

from sediment.model.facts import (
    CIOutcome,
    DeveloperDecision,
    EditObservation,
    FactModel,
    InferenceCall,
    InferenceMessage,
    RepositoryRename,
    SessionCommitObservation,
    TestCaseResult,
    ToolDefinition,
)
from sediment.model.repository_evidence import EVIDENCE_TABLES, RepositoryEvidence, evidence_of_all
from sediment.records import decode_record
from sediment.store import schema
from sediment.store.blob_codec import unpack
from sediment.store.driver import fetch_blobs
from sediment.store.engine import StoreError
from sediment.store.interning import expand, references
from sediment.store.keys import MODELS
from sediment.store.quarantine import QuarantineLog


class FactReader(QuarantineLog):
    """The visible Facts, per kind, and what the store holds."""

    def _visible(self, conn: Any, table_name: str, org_id: str, *conditions: Any,
                 order: Sequence[Any] = ()) -> Iterator[Any]:
        table = schema.FACT_TABLES[table_name]
        hidden = self._quarantined(conn, org_id, table_name)
        query = select(table).where(table.c.org_id == org_id, *conditions)
        query = query.order_by(*order, table.c.fact_id)
        for row in conn.execute(query):
            if row.fact_id not in hidden:
                yield row

    def _model(self, table_name: str, record: str) -> Any:
        return MODELS[table_name].model_validate(decode_record(record))

    def session_ids(self, org_id: str) -> list[str]:
        """Every Session with at least one visible inference call, sorted."""
        with self._reading() as conn:
            sessions = {row.session_id for row in self._visible(conn, "inference_calls", org_id)}
        return sorted(sessions)

    def calls_for_session(self, org_id: str, session_id: str) -> list[InferenceCall]:
        """The Session's visible calls by observation time; each distinct message is built once."""
        table = schema.inference_calls
        with self._reading() as conn:
            hidden = self._quarantined(conn, org_id, "inference_calls")
            every = list(conn.execute(select(table).where(table.c.org_id == org_id, table.c.session_id == session_id)
                                      .order_by(table.c.observed_at, table.c.fact_id)))
            rows = [row for row in every if row.fact_id not in hidden]
            visible = [row.fact_id for row in rows]  # only what is read is resolved: a hidden call may be broken

            def resolve(deltas: dict[str, Any], wanted: list[str]) -> dict[str, list[str]]:
                return _resolve_deltas(deltas, wanted, f"of Session {session_id!r} (org {org_id!r})")

            inputs = resolve({row.fact_id: json.loads(row.input_hashes) for row in every}, visible)
            decoded = self._read_blobs(conn, {row.fact_id: row.record for row in every}.values())
            taken: set[str] = set()
            bodies = {row.fact_id: _own(decoded, row.record, taken) for row in every}
            raw_lists: dict[str, dict[str, list[str]]] = {}
            for path in {tuple(p) for row in every for p in json.loads(row.raw_refs)}:
                deltas = {}
                for row in every:
                    if list(path) in json.loads(row.raw_refs):
                        deltas[row.fact_id] = _at(bodies[row.fact_id]["raw"], path)
                raw_lists["/".join(path)] = resolve(deltas, [fact_id for fact_id in visible if fact_id in deltas])
            parsed = [(row, bodies[row.fact_id], json.loads(row.raw_refs)) for row in rows]
            wanted: set[str] = set()
            for row, _body, refs in parsed:
                wanted.update(inputs[row.fact_id], json.loads(row.output_hashes))
                if row.tools_hash is not None:
                    wanted.add(row.tools_hash)
                for path in refs:
                    wanted.update(raw_lists["/".join(path)][row.fact_id])
            blobs = self._read_blobs(conn, wanted)
        messages: dict[str, InferenceMessage] = {}
        tool_lists: dict[str, tuple[ToolDefinition, ...]] = {}

        def message(digest: str) -> InferenceMessage:
            if digest not in messages:
                messages[digest] = InferenceMessage.model_validate(blobs[digest])
            return messages[digest]

        def tools(digest: str) -> tuple[ToolDefinition, ...]:
            if digest not in tool_lists:
                tool_lists[digest] = tuple(ToolDefinition.model_validate(t) for t in blobs[digest])
            return tool_lists[digest]

        calls = []
        for row, body, refs in parsed:
            for path in refs:
                holder = body["raw"]
                for key in path[:-1]:
                    holder = holder[key]
                holder[path[-1]] = [blobs[d] for d in raw_lists["/".join(path)][row.fact_id]]
            body["input_messages"] = tuple(message(d) for d in inputs[row.fact_id])
            body["output_messages"] = tuple(message(d) for d in json.loads(row.output_hashes))
            if row.tools_hash is not None:  # else the body holds the call's tools (None, or inline in v2)
                body["tools"] = tools(row.tools_hash)
            calls.append(InferenceCall.model_validate(body))
        return calls

    def call_ids_for_session(self, org_id: str, session_id: str) -> list[str]:
        """The ``inference_call_id`` of each of the Session's visible calls, in the order of
        :meth:`calls_for_session`, from the calls' bodies alone: no message is read."""
        table = schema.inference_calls
        with self._reading() as conn:
            hidden = self._quarantined(conn, org_id, "inference_calls")
            query = (select(table.c.fact_id, table.c.record)
                     .where(table.c.org_id == org_id, table.c.session_id == session_id)
                     .order_by(table.c.observed_at, table.c.fact_id))
            rows = [row for row in conn.execute(query) if row.fact_id not in hidden]
            # the bodies alone, their interned long strings unread: an id (at most FACT_ID_MAX_LENGTH
            # characters) is shorter than any interned string
            bodies = self._fetch(conn, {row.record for row in rows})
        found = []
        for row in rows:
            body = bodies[row.record]
            call_id = body.get("inference_call_id") if isinstance(body, dict) else None
            if not isinstance(call_id, str):
                raise StoreError(f"inference call {row.fact_id} of Session {session_id!r} (org {org_id!r}) cannot be "
                                 "read: its body names no inference_call_id")
            found.append(call_id)
        return found

    @classmethod
    def _read_blobs(cls, conn: Any, wanted: Iterable[str]) -> dict[str, Any]:
        """Decoded blobs by hash, with their interned long strings expanded."""
        found = cls._fetch(conn, set(wanted))
        strings = cls._fetch(conn, set().union(*(references(v, set()) for v in found.values())))
        return {digest: expand(value, strings) for digest, value in found.items()}

    @staticmethod
    def _fetch(conn: Any, wanted: set[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        hashes = sorted(wanted)
        for digest, content in fetch_blobs(conn, hashes):
            found[digest] = decode_record(unpack(content).decode("ascii"))
        missing = wanted - set(found)
        if missing:
            raise StoreError(f"fact store is missing {len(missing)} content blob(s), e.g. {min(missing)}")
        return found

    def decisions_for_session(self, org_id: str, session_id: str) -> list[DeveloperDecision]:
        table = schema.developer_decisions
        with self._reading() as conn:
            return [self._model("developer_decisions", r.record)
                    for r in self._visible(conn, "developer_decisions", org_id, table.c.session_id == session_id)]

    def session_facts(self, table_name: str, org_id: str, session_id: str) -> list[FactModel]:
        """The visible Facts of one Session-scoped table (decisions, edit observations, rejected
        edits, retry linkages, commit observations) in fact-id order."""
        table = schema.FACT_TABLES[table_name]
        if table_name == "inference_calls" or "session_id" not in table.c:
            raise StoreError(f"{table_name} is not a table of Session-scoped Facts read this way")
        with self._reading() as conn:
            return [self._model(table_name, r.record)
                    for r in self._visible(conn, table_name, org_id, table.c.session_id == session_id)]

    def edit_observations_for_session(self, org_id: str, session_id: str) -> list[EditObservation]:
        """The Session's visible edit observations, by ``(agent_harness, call_id, occurred_at,
        observation_id)`` (compared in Python, so both backends give one order)."""
        found = [fact for fact in self.session_facts("edit_observations", org_id, session_id)
                 if isinstance(fact, EditObservation)]
        return sorted(found, key=lambda o: (o.agent_harness, o.call_id, o.occurred_at, o.observation_id))

    def observations_for_session(self, org_id: str, session_id: str) -> list[SessionCommitObservation]:
        table = schema.session_commit_observations
        with self._reading() as conn:
            return [self._model("session_commit_observations", r.record)
                    for r in self._visible(conn, "session_commit_observations", org_id,
                                           table.c.session_id == session_id)]

    def ci_outcomes_for_commits(self, org_id: str, commits: Iterable[tuple[str, str]]) -> list[CIOutcome]:
        """Visible CI outcomes of the given ``(repo, commit_sha)`` pairs."""
        table = schema.ci_outcomes
        outcomes: list[CIOutcome] = []
        with self._reading() as conn:
            for repo, sha in sorted(set(commits)):
                outcomes.extend(self._model("ci_outcomes", r.record) for r in self._visible(
                    conn, "ci_outcomes", org_id, table.c.repo == repo, table.c.commit_sha == sha))
        return outcomes

    def test_results_for_commits(self, org_id: str, commits: Iterable[tuple[str, str]]) -> list[TestCaseResult]:
        """Visible per-test results recorded on the given ``(repo, commit_sha)`` pairs.

        Sorted by ``(repo, commit_sha, provider, run_id, run_attempt, test_id, report_sha256,
        locator)``, compared in Python (code point order), so both backends, whatever their
        collation, return the same list.
        """
        table = schema.test_case_results
        results: list[TestCaseResult] = []
        with self._reading() as conn:
            for repo, sha in sorted(set(commits)):
                results.extend(self._model("test_case_results", r.record) for r in self._visible(
                    conn, "test_case_results", org_id, table.c.repo == repo, table.c.commit_sha == sha))
        results.sort(key=lambda r: (r.repo, r.commit_sha, r.provider, r.run_id, r.run_attempt, r.test_id,
                                    r.report_sha256, r.locator))
        return results

    def repository_evidence(self, org_id: str) -> Iterator[RepositoryEvidence]:
        """The repository references of every visible identity-capable Fact of the org (CI
        outcomes, pushes, merges with their head repository, session-commit observations), in
        table then fact id order, read a batch at a time (what a repository context is built from)."""
        for table_name in EVIDENCE_TABLES:
            table = schema.FACT_TABLES[table_name]
            with self._reading() as conn:
                hidden = self._quarantined(conn, org_id, table_name)
                query = (select(table.c.fact_id, table.c.record).where(table.c.org_id == org_id)
                         .order_by(table.c.fact_id).execution_options(yield_per=500))
                for row in conn.execute(query):
                    if row.fact_id not in hidden:
                        yield from evidence_of_all((self._model(table_name, row.record),))

    def repository_renames(self, org_id: str) -> list[RepositoryRename]:
        """Every visible RepositoryRename of the org, by fact id."""
        with self._reading() as conn:
            return [self._model("repository_renames", r.record)
                    for r in self._visible(conn, "repository_renames", org_id)]

    def recorded(self, table_name: str, org_id: str, fact_ids: Iterable[str]) -> dict[str, tuple[dict[str, Any], bool]]:
        """The stored record of each of ``fact_ids`` that one table holds, quarantined or not,
        with whether it is quarantined now (an inference call without its messages). An id the
        table does not hold is absent from the result."""
        table = schema.FACT_TABLES[table_name]
        wanted = sorted(set(fact_ids))
        found: dict[str, tuple[dict[str, Any], bool]] = {}
        with self._reading() as conn:
            hidden = self._quarantined(conn, org_id, table_name)
            for start in range(0, len(wanted), 500):
                query = select(table.c.fact_id, table.c.record).where(
                    table.c.org_id == org_id, table.c.fact_id.in_(wanted[start:start + 500]))
                rows = list(conn.execute(query))
                bodies = (self._read_blobs(conn, {record for _, record in rows}) if table_name == "inference_calls"
                          else {})  # a call's record is its body's blob hash
                for fact_id, record in rows:
                    found[fact_id] = (bodies[record] if bodies else decode_record(record), fact_id in hidden)
        return found

    def facts(self, table_name: str, org_id: str) -> Iterator[FactModel]:
        """Every visible Fact of one table (inference calls without their messages rehydrated)."""
        if table_name == "inference_calls":
            for session in self.session_ids(org_id):
                yield from self.calls_for_session(org_id, session)
            return
        with self._reading() as conn:
            rows = list(self._visible(conn, table_name, org_id))
        for row in rows:
            yield self._model(table_name, row.record)

    def counts(self, org_id: str | None = None) -> dict[str, dict[str, int]]:
        """Per table: stored Facts and how many of them are quarantined now."""
        result: dict[str, dict[str, int]] = {}
        with self._reading() as conn:
            orgs = ([org_id] if org_id is not None else
                    [r[0] for r in conn.execute(select(schema.quarantine_log.c.org_id).distinct())])
            for name, table in schema.FACT_TABLES.items():
                query = select(func.count()).select_from(table)
                if org_id is not None:
                    query = query.where(table.c.org_id == org_id)
                hidden = sum(len(self._quarantined(conn, org, name)) for org in orgs)
                result[name] = {"stored": int(conn.execute(query).scalar_one()), "quarantined": hidden}
        return result

    def stored_bytes(self) -> dict[str, int]:
        """Bytes the store holds for Facts: content blobs, call bodies, every other Fact."""
        with self._reading() as conn:
            blobs = conn.execute(select(func.coalesce(func.sum(func.length(schema.blobs.c.content)), 0))).scalar()
            table = schema.inference_calls
            calls = conn.execute(select(func.coalesce(func.sum(
                func.length(table.c.record) + func.length(table.c.input_hashes) + func.length(table.c.output_hashes)
                + func.coalesce(func.length(table.c.tools_hash), 0)), 0))).scalar()
            others = 0
            for name, table in schema.FACT_TABLES.items():
                if name != "inference_calls":
                    others += int(conn.execute(select(func.coalesce(func.sum(func.length(table.c.record)), 0)))
                                  .scalar() or 0)
        sizes = {"blobs": int(blobs or 0), "calls": int(calls or 0), "other_facts": others}
        sizes["total"] = sum(sizes.values())
        return sizes


def _resolve_deltas(deltas: dict[str, Any], wanted: Iterable[str], scope: str = "") -> dict[str, list[str]]:
    """Expand the delta-encoded hash lists of ``wanted`` calls (a base call's first n hashes,
    then additions); bases are looked up among ``deltas`` only (the calls of one Session)."""
    resolved: dict[str, list[str]] = {}

    def resolve(fact_id: str) -> list[str]:
        if fact_id in resolved:
            return resolved[fact_id]
        chain = [fact_id]
        seen = {fact_id}
        while True:  # walk to a resolved or full list iteratively (chains are as long as a Session)
            delta = deltas[chain[-1]]
            base = delta["base"]
            if base is None or base in resolved:
                break
            if base not in deltas or base in seen:
                problem = ("is circular" if base in seen else
                           f"refers to call {base}, which the store does not hold there")
                raise StoreError(f"inference call {fact_id} {scope} cannot be read: its replay history {problem}; "
                                 f"quarantine it (sediment quarantine inference_calls {fact_id} --reason …)")
            chain.append(base)
            seen.add(base)
        for current in reversed(chain):
            delta = deltas[current]
            prefix = resolved[delta["base"]][: delta["keep"]] if delta["base"] is not None else []
            resolved[current] = prefix + list(delta["add"])
        return resolved[fact_id]

    for fact_id in wanted:
        resolve(fact_id)
    return resolved


def _own(decoded: dict[str, Any], digest: str, taken: set[str]) -> Any:
    """A row's own copy of a decoded blob (filled in afterwards): the decoded value itself for
    its first row, a deep copy for any later row with the same blob."""
    if digest in taken:
        return copy.deepcopy(decoded[digest])
    taken.add(digest)
    return decoded[digest]


def _at(raw: Any, path: Sequence[str]) -> Any:
    for key in path:
        raw = raw[key]
    return raw
