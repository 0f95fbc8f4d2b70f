"""Which table a Fact lives in, and its natural (dedup) key."""

from __future__ import annotations

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
from sediment.records import canonical_json, sortable_time


def _key(*parts: str | int | None) -> str:
    return canonical_json(list(parts))



def call_key(fact: InferenceCall) -> str:
    """An inference call's natural key (schema version 5).

    A provider's response id is unique only within a Session: test servers and local models
    reuse ``chatcmpl-1`` in every Session. A call with a ``model_call_id`` is therefore the same
    call as another only in the same org, gateway *and Session*; a call without one is keyed by
    its id (which the translators derive from the Session and the recorded content).
    """
    if fact.model_call_id:
        return _key("call", fact.org_id, fact.gateway_provider, fact.session_id, fact.model_call_id)
    return _key("id", fact.inference_call_id)


def decision_key(fact: DeveloperDecision) -> str:
    """A developer decision's natural key (store schema 6, the two identities of docs/evidence.md, Natural keys).

    A Claude Code decision with a ``call_id`` is one tool call's verdict: keyed by
    ``(org, harness, session, accepted, explicit, interaction_mode, occurred_at, call_id)``,
    without its path (a reject carries none, and a redelivery joined to its tool result in
    another batch may). Every other decision is keyed by ``(org, harness, session, file_path,
    accepted, explicit, interaction_mode, occurred_at, call_id or "", observation_delay_ms or
    -1)``: a Codex patch yields one decision per file, and Copilot reports one edit's survival
    at several delays.
    """
    occurred = sortable_time(fact.occurred_at)
    if fact.agent_harness == "claude-code" and fact.call_id is not None:
        return _key("keyed", fact.org_id, fact.agent_harness, fact.session_id, fact.accepted, fact.explicit,
                    fact.interaction_mode, occurred, fact.call_id)
    delay = fact.observation_delay_ms if fact.observation_delay_ms is not None else -1
    return _key("natural", fact.org_id, fact.agent_harness, fact.session_id, fact.file_path, fact.accepted,
                fact.explicit, fact.interaction_mode, occurred, fact.call_id or "", delay)


def edit_key(fact: EditObservation | RejectedEdit) -> str:
    """An edit observation's or rejected edit's natural key: one per tool call,
    ``(org, harness, session, call_id)`` (the first write wins)."""
    return _key(fact.org_id, fact.agent_harness, fact.session_id, fact.call_id)


def ci_outcome_key(fact: CIOutcome) -> str:
    """A CI outcome's natural key (store schema 7): ``(org, provider, forge provider and host or
    "", "", run_id, run_attempt or 0)``, then ``"job", <job id>`` for a job of the run
    (sediment.ci.jobs), then ``"at", <provider time>`` for a final event of a run re-run under its
    id without an attempt number (sediment.ci.reruns): each such event is its own Fact."""
    forge = (fact.repository_provider, fact.repository_host) if fact.is_identified else ("", "")
    job = job_id(fact)
    at = rerun_time(fact)
    return _key(fact.org_id, fact.provider, *forge, fact.run_id, fact.run_attempt or 0,
                *(() if job is None else ("job", job)), *(() if at is None else ("at", at)))


def table_and_key(fact: FactModel) -> tuple[str, str, str]:
    """``(table name, fact id, natural key)`` of a Fact."""
    if isinstance(fact, InferenceCall):
        return "inference_calls", fact.inference_call_id, call_key(fact)
    if isinstance(fact, CIOutcome):
        return "ci_outcomes", fact.outcome_id, ci_outcome_key(fact)
    if isinstance(fact, SessionCommitObservation):
        repository = fact.forge_key if fact.is_identified else (fact.repo,)
        return ("session_commit_observations", fact.observation_id,
                _key(fact.org_id, *repository, fact.commit_sha, fact.session_id))
    if isinstance(fact, DeveloperDecision):
        return "developer_decisions", fact.decision_id, decision_key(fact)
    if isinstance(fact, EditObservation):
        return "edit_observations", fact.observation_id, edit_key(fact)
    if isinstance(fact, RejectedEdit):
        return "rejected_edits", fact.rejection_id, edit_key(fact)
    if isinstance(fact, RetryLinkage):
        return "retry_linkages", fact.retry_linkage_id, _key(
            fact.org_id, fact.agent_harness, fact.session_id, fact.tool_name, fact.file_path, fact.rejected_call_id,
            fact.accepted_call_id)
    if isinstance(fact, Push):
        repository = fact.forge_key if fact.is_identified else (fact.repo,)
        return "pushes", fact.push_id, _key(fact.org_id, *repository, fact.ref, fact.before_sha, fact.after_sha)
    if isinstance(fact, PullRequestMerge):
        repository = fact.forge_key if fact.is_identified else (fact.provider, fact.repo)
        return "pull_request_merges", fact.merge_id, _key(fact.org_id, *repository, fact.pr_number)
    if isinstance(fact, RepositoryRename):
        key = (_key(fact.org_id, fact.provider, fact.repository_host, fact.source_event_id)
               if fact.source_event_id else _key("id", fact.rename_id))
        return "repository_renames", fact.rename_id, key
    if isinstance(fact, TestCaseResult):
        return "test_case_results", fact.test_result_id, _key(
            fact.org_id, fact.provider, fact.repo, fact.run_id, fact.run_attempt, fact.report_sha256, fact.locator)
    raise TypeError(f"not a storable Fact: {type(fact).__name__}")


def fact_org(fact: FactModel) -> str:
    org_id = getattr(fact, "org_id", None)
    if not isinstance(org_id, str):
        raise TypeError(f"{type(fact).__name__} carries no org_id")
    return org_id


MODELS: dict[str, type[FactModel]] = {
    "inference_calls": InferenceCall,
    "ci_outcomes": CIOutcome,
    "session_commit_observations": SessionCommitObservation,
    "developer_decisions": DeveloperDecision,
    "pushes": Push,
    "pull_request_merges": PullRequestMerge,
    "repository_renames": RepositoryRename,
    "test_case_results": TestCaseResult,
    "edit_observations": EditObservation,
    "rejected_edits": RejectedEdit,
    "retry_linkages": RetryLinkage,
}
