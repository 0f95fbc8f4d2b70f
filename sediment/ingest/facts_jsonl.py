"""Canonical Fact JSONL (``sediment ingest facts``): one Fact per line, ``fact_type`` naming it.

The other keys of a line are the named model's fields. ``org_id`` may be omitted (the acting
org is used; a different org is refused). Id fields may be omitted too: they are derived from
the Fact's natural key *after* validation, so two spellings of one Fact (``refs/heads/main``
and ``main``, upper- and lower-case SHAs, ``Z`` and ``+00:00``) get one id and ingesting the
same file twice stores nothing new.

This module also owns the natural-key id derivations and the validation-error wording that
the GitHub and vendor-neutral CI translators share, so every source derives the same id for
the same Fact.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, TypeVar

from pydantic import TypeAdapter, ValidationError

from sediment.errors import validation_message
from sediment.identifiers import OrgId, render_datetime
from sediment.ingest import Translation, TranslationError
from sediment.ingest.redaction.content import redact_value
from sediment.ingest.redaction.credentials import redact_record
from sediment.model.ci_keys import job_id, rerun_time
from sediment.model.facts import (
    CIOutcome,
    DeveloperDecision,
    EditObservation,
    FactModel,
    InferenceCall,
    PullRequestMerge,
    Push,
    RejectedEdit,
    RepositoryRename,
    RetryLinkage,
    SessionCommitObservation,
    TestCaseResult,
)
from sediment.records import canonical_digest
from sediment.store.ids import fact_id, inference_call_id

FACT_TYPES: Final[Mapping[str, tuple[type[FactModel], str]]] = MappingProxyType({
    "inference_call": (InferenceCall, "inference_call_id"),
    "ci_outcome": (CIOutcome, "outcome_id"),
    "session_commit_observation": (SessionCommitObservation, "observation_id"),
    "developer_decision": (DeveloperDecision, "decision_id"),
    "pull_request_merge": (PullRequestMerge, "merge_id"),
    "repository_rename": (RepositoryRename, "rename_id"),
    "push": (Push, "push_id"),
    "test_case_result": (TestCaseResult, "test_result_id"),
    "edit_observation": (EditObservation, "observation_id"),
    "rejected_edit": (RejectedEdit, "rejection_id"),
    "retry_linkage": (RetryLinkage, "retry_linkage_id"),
})
"""``fact_type`` → (model, id field), in the documented order."""

FACT_TYPE_NAMES: Final[tuple[str, ...]] = tuple(FACT_TYPES)

PENDING_ID: Final = "pending"
"""Placeholder id while a Fact is validated; replaced by the derived id before it leaves."""

_ORG_ID: Final = TypeAdapter(OrgId)
_F = TypeVar("_F", bound=FactModel)


# --- shared helpers ---------------------------------------------------------------------


def json_copy(value: Any) -> Any:
    """A deep copy of a parsed JSON value, made without recursion (so a payload as deep as the
    reader allows is copied whatever the interpreter's recursion limit); values that JSON does
    not produce are deep-copied as they are."""
    if not isinstance(value, dict | list):
        return value if isinstance(value, str | int | float | None) else copy.deepcopy(value)
    root: dict[Any, Any] | list[Any] = {} if isinstance(value, dict) else []
    stack: list[tuple[dict[Any, Any] | list[Any], dict[Any, Any] | list[Any]]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            child: Any
            if isinstance(item, dict | list):
                child = {} if isinstance(item, dict) else []
                stack.append((item, child))
            else:
                child = item if isinstance(item, str | int | float | None) else copy.deepcopy(item)
            if isinstance(target, dict):
                target[key] = child
            else:
                target.append(child)
    return root


def stored_raw(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A vendor payload as a Fact's ``raw`` keeps it: a deep copy (:func:`json_copy`) with its
    credentials redacted (:func:`sediment.ingest.redaction.credentials.redact_record`: credential-named
    members at any depth, none skipped as content, URL userinfo secrets and credential query
    parameters become markers), then the secrets inside any of its strings
    (:func:`sediment.ingest.redaction.content.redact_value`: a token in a commit message, a
    Buildkite ``env`` line). The stored record is this redacted one; ids are read from the
    payload as received."""
    copied: dict[str, Any] = json_copy(dict(payload))
    named = redact_record(copied, content=frozenset())  # a CI payload holds no conversation
    redacted: dict[str, Any] = redact_value(named)
    return redacted


def content_hash(value: Any) -> str:
    """The canonical digest of a JSON value (NaN / Infinity kept as their tokens)."""
    return canonical_digest(value, allow_nan=True)


def render_loc(loc: tuple[int | str, ...], paths: Mapping[str, str] | None = None) -> str:
    """``("input_messages", 0, "role")`` → ``input_messages[0].role``; the head may be renamed."""
    text = ""
    for index, part in enumerate(loc):
        if isinstance(part, int):
            text += f"[{part}]"
            continue
        name = paths.get(part, part) if paths is not None and index == 0 else part
        text += f".{name}" if text else name
    return text


def describe_validation_error(exc: ValidationError, paths: Mapping[str, str] | None = None) -> str:
    """Every error as ``<field path>: <message>``; ``paths`` maps Fact fields to input paths."""
    parts = []
    for error in exc.errors(include_url=False):
        where = render_loc(tuple(error["loc"]), paths)
        parts.append(f"{where}: {validation_message(error)}" if where else validation_message(error))
    return "; ".join(parts)


def build_fact(model: type[_F], fields: Mapping[str, Any], paths: Mapping[str, str] | None = None) -> _F:
    """Validate ``fields`` as ``model``; a failure is a TranslationError naming the field path."""
    try:
        return model.model_validate(dict(fields))
    except ValidationError as exc:
        raise TranslationError(describe_validation_error(exc, paths)) from exc


def acting_org(org_id: str) -> str:
    """Normalize the acting org (the tenant the command runs for)."""
    try:
        return _ORG_ID.validate_python(org_id)
    except ValidationError as exc:
        raise TranslationError(f"org_id: the acting org {org_id!r} is not a valid org id") from exc


def resolve_org(value: Any, acting: str, *, path: str = "org_id") -> str:
    """The record's org, which must be the acting one; absent or null means the acting org."""
    if value is None:
        return acting
    if not isinstance(value, str):
        raise TranslationError(f"{path}: expected a string, got {type(value).__name__}")
    try:
        declared = _ORG_ID.validate_python(value)
    except ValidationError as exc:
        raise TranslationError(f"{path}: {describe_validation_error(exc)}") from exc
    if declared != acting:
        raise TranslationError(f"{path}: {declared!r} is not the acting org {acting!r}")
    return declared


# --- natural-key ids --------------------------------------------------------------------


def ci_outcome_id(org_id: str, provider: str, run_id: str, run_attempt: int | None, job: str | None = None,
                  at: str | None = None) -> str:
    """The id of a run attempt's outcome; a job of the run (sediment.ci.jobs) adds its own id, and
    a final event of a run re-run under its id without an attempt number adds the provider's time
    of it (``at``, sediment.model.ci_keys.rerun_time)."""
    key: tuple[str | int, ...] = (org_id, provider, run_id, run_attempt or 0)
    if job is not None:
        key += ("job", job)
    if at is not None:
        key += ("at", at)
    return fact_id("ci", *key)


def push_id(org_id: str, repo: str, ref: str, before_sha: str | None, after_sha: str) -> str:
    return fact_id("push", org_id, repo, ref, before_sha, after_sha)


def merge_id(org_id: str, provider: str, repo: str, pr_number: int) -> str:
    return fact_id("merge", org_id, provider, repo, pr_number)


def rename_id(org_id: str, provider: str, repository_host: str | None, event_or_hash: str) -> str:
    return fact_id("rename", org_id, provider, repository_host, event_or_hash)


def test_case_result_id(org_id: str, provider: str, repo: str, run_id: str, run_attempt: int, report_sha256: str,
                        locator: str) -> str:
    """The id of one element of one JUnit report of one run attempt (``sediment ingest junit`` uses it too)."""
    return fact_id("test", org_id, provider, repo, run_id, run_attempt, report_sha256, locator)


test_case_result_id.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def decision_id(fact: DeveloperDecision) -> str:
    """The id of a developer decision, derived from every part of its natural key (and its path).

    ``(org, harness, session, call_id or "", file_path, observation_delay_ms or -1, accepted,
    explicit, occurred_at)``, and ``"inline"`` after them for an inline decision only: the
    interaction mode joined the key in store schema 6, and leaving it out of an agent decision's
    id keeps every id derived before then.
    """
    delay = fact.observation_delay_ms if fact.observation_delay_ms is not None else -1
    parts: list[str | int | None] = [fact.org_id, fact.agent_harness, fact.session_id, fact.call_id or "",
                                     fact.file_path, delay, fact.accepted, fact.explicit,
                                     render_datetime(fact.occurred_at)]
    if fact.interaction_mode == "inline":
        parts.append("inline")
    return fact_id("decision", *parts)


def fact_content_hash(fact: FactModel, id_field: str) -> str:
    """Hash of a Fact's canonical JSON without its id and org (the org is keyed separately).

    An unset ``tools`` or ``capture`` (fields InferenceCall gained later) is left out, so a call
    without them keeps the id it always had."""
    exclude = {id_field, "org_id"} | ({"tools"} if getattr(fact, "tools", ()) is None else set())
    exclude |= {"capture"} if isinstance(fact, InferenceCall) and fact.capture is None else set()
    return content_hash(fact.model_dump(mode="json", exclude=exclude))


def natural_id(fact: FactModel, *, event_hash: str | None = None) -> str:
    """The deterministic id of ``fact`` from its (validated, normalized) natural key.

    ``event_hash`` stands in for a rename's missing ``source_event_id`` (GitHub passes the
    hash of the delivery payload); without it the Fact's own content hash is used.
    """
    if isinstance(fact, InferenceCall):
        return inference_call_id(fact.org_id, fact.session_id, fact.gateway_provider, fact.model_call_id,
                                 lambda: fact_content_hash(fact, "inference_call_id"))
    if isinstance(fact, CIOutcome):
        return ci_outcome_id(fact.org_id, fact.provider, fact.run_id, fact.run_attempt, job_id(fact), rerun_time(fact))
    if isinstance(fact, SessionCommitObservation):
        if fact.is_identified:  # one repository lifetime: keyed by its identity, not by a name it had
            return fact_id("obs", fact.org_id, *fact.forge_key, fact.commit_sha, fact.session_id)
        return fact_id("obs", fact.org_id, fact.repo, fact.commit_sha, fact.session_id)
    if isinstance(fact, DeveloperDecision):
        return decision_id(fact)
    if isinstance(fact, EditObservation):
        return fact_id("edit", fact.org_id, fact.agent_harness, fact.session_id, fact.call_id)
    if isinstance(fact, RejectedEdit):
        return fact_id("rejection", fact.org_id, fact.agent_harness, fact.session_id, fact.call_id)
    if isinstance(fact, RetryLinkage):
        return fact_id("retry", fact.org_id, fact.agent_harness, fact.session_id, fact.tool_name, fact.file_path,
                       fact.rejected_call_id, fact.accepted_call_id)
    if isinstance(fact, PullRequestMerge):
        if fact.is_identified:
            return fact_id("merge", fact.org_id, *fact.forge_key, fact.pr_number)
        return merge_id(fact.org_id, fact.provider, fact.repo, fact.pr_number)
    if isinstance(fact, RepositoryRename):
        key = fact.source_event_id or event_hash or fact_content_hash(fact, "rename_id")
        return rename_id(fact.org_id, fact.provider, fact.repository_host, key)
    if isinstance(fact, Push):
        if fact.is_identified:
            return fact_id("push", fact.org_id, *fact.forge_key, fact.ref, fact.before_sha, fact.after_sha)
        return push_id(fact.org_id, fact.repo, fact.ref, fact.before_sha, fact.after_sha)
    if isinstance(fact, TestCaseResult):
        return test_case_result_id(fact.org_id, fact.provider, fact.repo, fact.run_id, fact.run_attempt,
                                   fact.report_sha256, fact.locator)
    raise TypeError(f"no natural key for {type(fact).__name__}")


def with_natural_id(fact: _F, id_field: str, *, event_hash: str | None = None) -> _F:
    """``fact`` with its id field replaced by :func:`natural_id`."""
    return fact.model_copy(update={id_field: natural_id(fact, event_hash=event_hash)})


# --- the translator ---------------------------------------------------------------------


def translate_fact(record: dict[str, Any], *, org_id: str) -> Translation:
    """One canonical Fact JSONL line (already parsed) → its Fact."""
    if not isinstance(record, dict):
        raise TranslationError(f"record: expected a JSON object, got {type(record).__name__}")
    fact_type = record.get("fact_type")
    if not isinstance(fact_type, str) or fact_type not in FACT_TYPES:
        shown = "missing" if fact_type is None else repr(fact_type)
        raise TranslationError(f"fact_type: {shown} is not one of {', '.join(FACT_TYPE_NAMES)}")
    model, id_field = FACT_TYPES[fact_type]
    fields = {key: value for key, value in record.items() if key != "fact_type"}
    fields["org_id"] = resolve_org(fields.get("org_id"), acting_org(org_id))
    derive = fields.get(id_field) is None
    if derive:
        fields[id_field] = PENDING_ID
    fact = build_fact(model, fields)
    if derive:
        fact = with_natural_id(fact, id_field)
    return Translation(facts=(fact,))
