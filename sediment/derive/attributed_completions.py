"""Attributed completions (docs/attributed-completions.md): the unit of evidence of SFT, diff-SFT
and DPO, derived from one Session's Rollout.

An :class:`AttributedCompletion` (AC) is one recorded completion (an inference call) bound to
one code file of one commit it produced, with every piece of evidence about it:

- the **Attribution**: the qualified commit (``repo``, ``commit_sha``, ``repository_identity``),
  the ``file_path`` and ``similarity_score`` of the Rollout's
  :class:`~sediment.model.rollout.FileAttribution`, and the Session's ``attribution_source``
  (``git_notes`` | ``jaccard``);
- the **developer decisions** joined to the call (:mod:`sediment.derive.decision_attachment`, over the
  Session's decision population), each with its edit retention filled where it had none
  (:func:`sediment.derive.edit_retention.fill_edit_retention`, from the Session's EditObservations;
  the fill is computed here and never stored). Decisions are call-scoped: every AC of one call
  carries all of that call's decisions;
- the **CI outcomes** of complete runs on the qualified commit (the Rollout's terminal
  outcomes on that commit, by ``outcome_id``), and, through :meth:`SessionCompletions.resolution`,
  their resolution;
- **Provenance** (``policy_version`` :data:`ATTRIBUTED_COMPLETION_POLICY_VERSION`, the Rollout's
  quarantine revision and derivation-policy digest), the Session's **split**, and the Session's
  git-note **observations** of the commit (:attr:`AttributedCompletion.observation_ids`).

One AC per (call, commit, file) Attribution, emitted with or without decisions and CI. The
second variant, an **abandonment** AC (no commit, file, similarity, identity or CI; at least
one joined explicit accept), is made only when a caller supplies a :class:`SessionAbandonment`:
Sediment's own derivation never concludes that a Session was abandoned (missing observations
do not prove that nothing was committed; docs/attributed-completions.md, "Abandonment").

:func:`derive_attributed_completions` is a pure function of one Rollout (plus the repository
context and CI policy its outcomes resolve with): the same Rollout gives equal ACs, whatever
order its decisions, observations and outcomes were recorded in. Objectives read ACs through
``ExportContext.attributed_completions()``, one Session at a time, from a bundle or directly
from the fact store alike.

The API here is stable: DPO and diff-SFT build on it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, Literal

from pydantic import Field, model_validator

from sediment.ci.resolution import (
    DEFAULT_CI_POLICY,
    CIResolution,
    CIResolutionPolicy,
    CommitKey,
    outcome_commit_key,
    resolve_ci,
)
from sediment.derive.confidence import ConfidenceEvidence, LabelConfidencePolicy
from sediment.derive.decision_attachment import ATTACHMENT_SKIP_REASONS, CallTarget, attach_decisions
from sediment.derive.edit_retention import SCORER_NON_FINITE, Scorer, fill_edit_retention, four_gram_containment
from sediment.git.repositories import RepositoryContext, identity_sort_key, repository_sort_key
from sediment.identifiers import CommitSha, NonEmptyId, NonEmptyRepoSlug, OrgId, UtcDatetime
from sediment.model.facts import (
    CallCapture,
    CIOutcome,
    DeveloperDecision,
    FactModel,
    InferenceMessage,
    RepositoryIdentity,
    SessionCommitObservation,
    ToolDefinition,
)
from sediment.model.policy import Provenance
from sediment.model.repository_evidence import identity_of
from sediment.model.rollout import AttributionSource, FileAttribution, Rollout
from sediment.split import Split

__all__ = [
    "ABANDONMENT_POLICY_VERSION",
    "ABANDONMENT_SKIP_REASONS",
    "ATTACHMENT_SKIP_REASONS",
    "ATTRIBUTED_COMPLETION_POLICY_VERSION",
    "ATTRIBUTED_COMPLETION_SCHEMA_ID",
    "AttributedCompletion",
    "CompletionCall",
    "CompletionResolution",
    "SessionAbandonment",
    "SessionCompletions",
    "derive_attributed_completions",
]

#: The AttributedCompletion derivation's policy version (Provenance ``policy_version``).
ATTRIBUTED_COMPLETION_POLICY_VERSION = "5"
ATTRIBUTED_COMPLETION_SCHEMA_ID = "https://sediment.so/schemas/derived-artifacts/attributed-completion/v4.json"
#: The abandonment rules' version (a supplied :class:`SessionAbandonment` names it).
ABANDONMENT_POLICY_VERSION = "6"
#: What assembling a supplied abandonment counts: an abandoned Session with no explicit accept,
#: and each explicit accept of one that joined no call.
ABANDONMENT_SKIP_REASONS: tuple[str, ...] = ("implicit_only_session", "explicit_accept_unjoined")


class SessionAbandonment(FactModel):
    """A caller's finding that a Session's accepted work never reached a commit.

    ``last_activity_at`` is the Session's last recorded activity, ``horizon_at`` the end of the
    grace horizon after it (``grace_horizon_days``, at least 1) and ``as_of`` the boundary the
    finding was made at (past the horizon).
    """

    org_id: OrgId
    session_id: NonEmptyId
    status: Literal["abandoned"] = "abandoned"
    last_activity_at: UtcDatetime
    grace_horizon_days: int = Field(default=14, ge=1)
    horizon_at: UtcDatetime
    as_of: UtcDatetime
    policy_version: str = ABANDONMENT_POLICY_VERSION

    @model_validator(mode="after")
    def _past_the_horizon(self) -> SessionAbandonment:
        if not self.last_activity_at < self.horizon_at <= self.as_of:
            raise ValueError("an abandonment is found past its grace horizon: last_activity_at < horizon_at <= as_of")
        return self


class AttributedCompletion(FactModel):
    """One recorded completion bound to one attributed file (or, for an abandonment, to none),
    with its decisions, CI outcomes, provenance, split and observations (module docstring).

    Exactly one variant holds: an **Attribution** (``repo``, ``commit_sha``, ``file_path``,
    ``similarity_score``, ``attribution_source`` all set, ``abandonment`` null), or an
    **abandonment** (those five null, no ``repository_identity``, no CI outcomes and no
    observations, ``abandonment`` set, at least one explicit accept among the decisions).
    """

    org_id: OrgId
    session_id: NonEmptyId
    inference_call_id: NonEmptyId
    repo: NonEmptyRepoSlug | None = None
    commit_sha: CommitSha | None = None
    file_path: str | None = Field(default=None, min_length=1)
    similarity_score: float | None = None
    attribution_source: AttributionSource | None = None
    decisions: tuple[DeveloperDecision, ...] = ()
    ci_outcomes: tuple[CIOutcome, ...] = ()
    provenance: Provenance
    split: Split
    abandonment: SessionAbandonment | None = None
    session_commit_observations: tuple[SessionCommitObservation, ...] = ()
    repository_identity: RepositoryIdentity | None = None

    @model_validator(mode="after")
    def _one_variant(self) -> AttributedCompletion:
        attribution = (self.repo, self.commit_sha, self.file_path, self.similarity_score, self.attribution_source)
        if self.abandonment is None:
            if any(value is None for value in attribution):
                raise ValueError("an Attribution AC sets repo, commit_sha, file_path, similarity_score and "
                                 "attribution_source")
        else:
            if any(value is not None for value in attribution) or self.repository_identity is not None:
                raise ValueError("an abandonment AC has no repo, commit_sha, file_path, similarity_score, "
                                 "attribution_source or repository_identity")
            if self.ci_outcomes or self.session_commit_observations:
                raise ValueError("an abandonment AC has no CI outcomes and no observations")
            if not any(d.explicit and d.accepted for d in self.decisions):
                raise ValueError("an abandonment AC carries at least one joined explicit accept")
            if (self.abandonment.org_id, self.abandonment.session_id) != (self.org_id, self.session_id):
                raise ValueError("an abandonment AC's abandonment is its own Session's")
        return self

    @property
    def is_abandonment(self) -> bool:
        return self.abandonment is not None

    @property
    def sort_key(self) -> tuple[Any, ...]:
        """The evidence sort key: ``(0, (provider, host, repository_id) or ("", "", ""), repo,
        commit_sha, file_path, inference_call_id)`` for an Attribution, ``(1, session_id,
        inference_call_id, "", "")`` for an abandonment."""
        if self.abandonment is not None:
            return (1, self.session_id, self.inference_call_id, "", "")
        identity = identity_sort_key(self.repository_identity) if self.repository_identity else ("", "", "")
        return (0, identity, self.repo, self.commit_sha, self.file_path, self.inference_call_id)

    @property
    def commit_key(self) -> CommitKey | None:
        """The qualified commit (``None`` for an abandonment)."""
        if self.repo is None or self.commit_sha is None:
            return None
        return CommitKey(self.org_id, self.repo, self.commit_sha, self.repository_identity)

    @property
    def observation_ids(self) -> tuple[str, ...]:
        """Sorted unique ids of the observations of this AC's Session on its qualified commit
        (``()`` for an abandonment)."""
        key = self.commit_key
        if key is None:
            return ()
        wanted = key.repository_sort_key
        return tuple(sorted({
            o.observation_id for o in self.session_commit_observations
            if (o.org_id, o.session_id, o.commit_sha) == (self.org_id, self.session_id, self.commit_sha)
            and repository_sort_key(o.org_id, o.repo, identity_of(o)) == wanted
        }))


@dataclass(frozen=True)
class CompletionCall:
    """A recorded inference call as its Rollout holds it: the whole input it was sent (its
    segment's messages up to it), its output messages, model and time, its transcript
    capture (``None`` for a call recorded on the wire) and the tool definitions its request
    declared (``None`` when it declared none, or its capture did not record them)."""

    inference_call_id: str
    org_id: str
    session_id: str
    input_messages: tuple[InferenceMessage, ...]
    output_messages: tuple[InferenceMessage, ...]
    model: str | None
    observed_at: datetime | None
    model_call_id: str | None = None
    capture: CallCapture | None = None
    tools: tuple[ToolDefinition, ...] | None = None


@dataclass(frozen=True)
class CompletionResolution:
    """The CI resolution of one AC's commit (``None``: no outcome resolved) and the resolver's
    skip counts for the AC's outcomes."""

    resolution: CIResolution | None
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class SessionCompletions:
    """One Session's attributed completions, the calls they name, and the derivation's counts.

    :attr:`completions` are in ``(inference_call_id, sort_key)`` order; :meth:`by_call` groups
    them per call in ascending call id.
    """

    org_id: str
    session_id: str
    completions: tuple[AttributedCompletion, ...]
    calls: Mapping[str, CompletionCall]
    #: Decisions not attached, by reason (:data:`ATTACHMENT_SKIP_REASONS`).
    attachment_skipped: Counter[str] = field(default_factory=Counter)
    #: Decisions whose edit retention was derived from an EditObservation.
    retention_filled: int = 0
    #: Retention warnings (``edit_retention_scorer_non_finite``).
    retention_warnings: Counter[str] = field(default_factory=Counter)
    #: Counts of assembling a supplied abandonment (:data:`ABANDONMENT_SKIP_REASONS`).
    abandonment_skipped: Counter[str] = field(default_factory=Counter)
    quarantine_revision: int = 0
    ci_policy: CIResolutionPolicy = DEFAULT_CI_POLICY
    repositories: RepositoryContext | None = None
    #: The decisions joined to each call (retention filled), whether or not the call has an AC.
    decisions_by_call: Mapping[str, tuple[DeveloperDecision, ...]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.completions)

    def __iter__(self) -> Iterator[AttributedCompletion]:
        return iter(self.completions)

    def by_call(self) -> list[tuple[str, tuple[AttributedCompletion, ...]]]:
        """``(inference_call_id, its ACs in evidence order)`` per call, in ascending call id."""
        groups: dict[str, list[AttributedCompletion]] = defaultdict(list)
        for completion in self.completions:
            groups[completion.inference_call_id].append(completion)
        return [(call, tuple(sorted(groups[call], key=lambda c: c.sort_key))) for call in sorted(groups)]

    @cached_property
    def _resolved(self) -> dict[tuple[Any, ...], CompletionResolution]:
        return {}

    def resolution(self, completion: AttributedCompletion) -> CompletionResolution:
        """The CI resolution of ``completion``'s qualified commit from its own outcomes, with
        the resolver's skip counts for them (an abandonment has neither). Computed once per
        commit and outcome set."""
        key = completion.commit_key
        if key is None:
            return CompletionResolution(None)
        cache = (*key.sort_key, *(o.outcome_id for o in completion.ci_outcomes))
        found = self._resolved.get(cache)
        if found is None:
            result = resolve_ci(completion.ci_outcomes, quarantine_revision=self.quarantine_revision,
                                policy=self.ci_policy, repositories=self.repositories)
            matching = [r for r in result.resolutions if r.commit_key.same_commit(key)]
            found = CompletionResolution(matching[0] if matching else None, result.skipped)
            self._resolved[cache] = found
        return found

    def confidence_evidence(self, completion: AttributedCompletion) -> ConfidenceEvidence:
        """What the Confidence ladder reads of ``completion`` (:mod:`sediment.derive.confidence`)."""
        return ConfidenceEvidence(
            decisions=completion.decisions,
            abandoned=completion.abandonment is not None,
            has_ci_outcomes=bool(completion.ci_outcomes),
            ci_resolution=self.resolution(completion).resolution,
            attribution_source=completion.attribution_source,
            similarity_score=completion.similarity_score,
        )

    def confidence(self, completion: AttributedCompletion, policy: LabelConfidencePolicy) -> float | None:
        """The ladder's confidence that ``completion`` is good (``None``: no signal)."""
        return policy.confidence(self.confidence_evidence(completion))


def completion_calls(rollout: Rollout) -> dict[str, CompletionCall]:
    """Every call of ``rollout`` by id, each with the whole input it was sent: the
    ``new_messages`` of its segment's Turns up to and including its own (segmentation keeps
    a segment's inputs replaying one another)."""
    calls: dict[str, CompletionCall] = {}
    declared = {s.digest: s.tools for s in rollout.tool_sets}
    for segment in rollout.segments:
        sent: list[InferenceMessage] = []
        for turn in segment:
            sent.extend(turn.new_messages)
            calls[turn.inference_call_id] = CompletionCall(
                inference_call_id=turn.inference_call_id, org_id=rollout.org_id, session_id=rollout.session_id,
                input_messages=tuple(sent), output_messages=turn.output_messages, model=turn.model,
                observed_at=turn.observed_at, model_call_id=turn.model_call_id, capture=turn.capture,
                tools=None if turn.tools_digest is None else declared[turn.tools_digest])
    return calls


def _outcomes_by_commit(rollout: Rollout, repositories: RepositoryContext | None
                        ) -> dict[tuple[Any, ...], list[CIOutcome]]:
    grouped: dict[tuple[Any, ...], list[CIOutcome]] = defaultdict(list)
    for outcome in rollout.terminal_outcomes:
        key = outcome_commit_key(outcome, repositories)
        if key is not None:
            grouped[key.sort_key].append(outcome)
    return grouped


def _attribution_key(org_id: str, attribution: FileAttribution) -> CommitKey:
    return CommitKey(org_id, attribution.repo, attribution.commit_sha, attribution.repository_identity)


def derive_attributed_completions(
    rollout: Rollout,
    *,
    repositories: RepositoryContext | None = None,
    ci_policy: CIResolutionPolicy = DEFAULT_CI_POLICY,
    abandonment: SessionAbandonment | None = None,
    scorer: Scorer = four_gram_containment,
) -> SessionCompletions:
    """The attributed completions of one Session's Rollout (module docstring).

    :param repositories: the repository context the Rollout was qualified with; its terminal
        outcomes are grouped per qualified commit with it (without one, only legacy outcomes
        resolve, as for every CI resolution).
    :param ci_policy: the CI-resolution policy :meth:`SessionCompletions.resolution` uses.
    :param abandonment: a caller's finding that this Session was abandoned: then one
        abandonment AC per call carrying a joined explicit accept (the Session must have no
        file attribution); ``implicit_only_session`` counts a Session without any explicit
        accept, ``explicit_accept_unjoined`` each explicit accept that joined no call.
    :param scorer: the edit-retention scorer (four-gram containment).
    """
    calls = completion_calls(rollout)
    targets = [CallTarget.of(c.inference_call_id, c.org_id, c.session_id, c.model_call_id, c.output_messages)
               for c in calls.values()]
    attachment = attach_decisions(targets, rollout.session_decisions)
    attached = [d for call_id in sorted(attachment.by_call) for d in attachment.by_call[call_id]]
    fill = fill_edit_retention(attached, rollout.edit_observations, scorer=scorer)
    filled_by_id = {d.decision_id: d for d in fill.decisions}
    decisions = {call_id: tuple(filled_by_id[d.decision_id] for d in found)
                 for call_id, found in attachment.by_call.items()}
    provenance = Provenance(policy_version=ATTRIBUTED_COMPLETION_POLICY_VERSION,
                            quarantine_revision=rollout.provenance.quarantine_revision,
                            policy_digest=rollout.provenance.policy_digest)
    completions: list[AttributedCompletion] = []
    abandonment_skipped: Counter[str] = Counter()
    if abandonment is not None:
        if (abandonment.org_id, abandonment.session_id) != (rollout.org_id, rollout.session_id):
            raise ValueError("the abandonment names another Session than the Rollout's")
        if rollout.file_attributions:
            raise ValueError(f"Session {rollout.session_id!r} has attributed commits; it was not abandoned")
        explicit_accepts = [d for d in rollout.session_decisions if d.explicit and d.accepted]
        if not explicit_accepts:
            abandonment_skipped["implicit_only_session"] += 1
        joined = {d.decision_id for found in decisions.values() for d in found}
        unjoined = sum(1 for d in explicit_accepts if d.decision_id not in joined)
        if unjoined:
            abandonment_skipped["explicit_accept_unjoined"] += unjoined
        for call_id in sorted(decisions):
            if any(d.explicit and d.accepted for d in decisions[call_id]):
                completions.append(AttributedCompletion(
                    org_id=rollout.org_id, session_id=rollout.session_id, inference_call_id=call_id,
                    decisions=decisions[call_id], provenance=provenance, split=rollout.split,
                    abandonment=abandonment))
    else:
        outcomes = _outcomes_by_commit(rollout, repositories)
        for attribution in rollout.file_attributions:
            key = _attribution_key(rollout.org_id, attribution)
            observations = tuple(
                o for o in rollout.session_commit_observations
                if (o.org_id, o.session_id, o.commit_sha) == (rollout.org_id, rollout.session_id, key.commit_sha)
                and repository_sort_key(o.org_id, o.repo, identity_of(o)) == key.repository_sort_key)
            completions.append(AttributedCompletion(
                org_id=rollout.org_id, session_id=rollout.session_id,
                inference_call_id=attribution.inference_call_id, repo=attribution.repo,
                commit_sha=attribution.commit_sha, file_path=attribution.file_path,
                similarity_score=attribution.similarity_score, attribution_source=rollout.attribution_source,
                decisions=decisions.get(attribution.inference_call_id, ()),
                ci_outcomes=tuple(sorted(outcomes.get(key.sort_key, ()), key=lambda o: o.outcome_id)),
                provenance=provenance, split=rollout.split, session_commit_observations=observations,
                repository_identity=attribution.repository_identity))
    completions.sort(key=lambda c: (c.inference_call_id, c.sort_key))
    warnings = Counter({SCORER_NON_FINITE: fill.warnings[SCORER_NON_FINITE]}) if fill.warnings else Counter()
    return SessionCompletions(
        org_id=rollout.org_id, session_id=rollout.session_id, completions=tuple(completions), calls=calls,
        attachment_skipped=attachment.skipped, retention_filled=fill.filled, retention_warnings=warnings,
        abandonment_skipped=abandonment_skipped, quarantine_revision=rollout.provenance.quarantine_revision,
        ci_policy=ci_policy, repositories=repositories, decisions_by_call=decisions)
