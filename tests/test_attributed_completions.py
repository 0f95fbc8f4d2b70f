"""Attributed completions (docs/attributed-completions.md) and decision attachment, on
hand-built Rollouts: every rule, the variant checks, and determinism under shuffled evidence.
The store-to-row path is tested in plugins/sft/tests."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from sediment.derive.attributed_completions import (
    ATTRIBUTED_COMPLETION_POLICY_VERSION,
    AttributedCompletion,
    SessionAbandonment,
    completion_calls,
    derive_attributed_completions,
)
from sediment.derive.confidence import LabelConfidencePolicy
from sediment.derive.decision_attachment import ATTACHMENT_SKIP_REASONS, CallTarget, attach_decisions
from sediment.git.repositories import RepositoryContext
from sediment.model.facts import (
    DeveloperDecision,
    EditObservation,
    RepositoryIdentity,
    SessionCommitObservation,
    ToolCallPart,
)
from sediment.model.policy import Provenance
from sediment.model.rollout import CommitRef, FileAttribution, Rollout
from sediment.records import encode_record
from sediment.testing import ORG, PROVENANCE, REPO, T0, call, message, outcome, rollout

SHA1, SHA2 = "a" * 40, "b" * 40
IDENTITY = RepositoryIdentity(provider="github", host="github.com", repository_id="424242")


def decision(decision_id: str, call_id: str | None, *, session: str = "s1", accepted: bool = True,
             explicit: bool = True, harness: str = "claude-code", seconds: int = 0, path: str = "a.py",
             **fields: Any) -> DeveloperDecision:
    return DeveloperDecision(decision_id=decision_id, org_id=fields.pop("org_id", ORG), session_id=session,
                             agent_harness=harness, file_path=path, accepted=accepted, explicit=explicit,
                             interaction_mode=fields.pop("mode", "agent"), call_id=call_id,
                             occurred_at=T0 + timedelta(seconds=seconds), captured_at=T0 + timedelta(days=1),
                             **fields)


def edit(call_id: str, applied: str, observed: str, *, session: str = "s1", harness: str = "claude-code",
         observation_id: str | None = None) -> EditObservation:
    return EditObservation(observation_id=observation_id or f"e-{call_id}", org_id=ORG, session_id=session,
                           agent_harness=harness, file_path="a.py", call_id=call_id, applied_text=applied,
                           observed_file_text=observed, occurred_at=T0, captured_at=T0)


def calls(session: str = "s1", count: int = 3) -> list[Any]:
    """A replaying loop: call i answers with tool call ``<session>-t<i>``; the first has a model call id."""
    history = [message("user", "fix the bug")]
    found = []
    for index in range(count):
        output = message("assistant", ToolCallPart(id=f"{session}-t{index}", name="edit",
                                                   arguments={"path": "a.py", "text": f"step {index}"}))
        found.append(call(session, index, history, [output], model="gpt-x",
                          model_call_id=f"resp-{session}-{index}"))
        history = [*history, output, message("user", f"next {index}")]
    return found


def attribution(call_index: int, sha: str = SHA1, path: str = "a.py", score: float = 0.8,
                identity: RepositoryIdentity | None = None, session: str = "s1") -> FileAttribution:
    return FileAttribution(inference_call_id=f"{session}-c{call_index}", repo=REPO, commit_sha=sha,
                           repository_identity=identity, file_path=path, similarity_score=score)


def session(**fields: Any) -> Rollout:
    fields.setdefault("calls", calls())
    fields.setdefault("commits", [SHA1])
    return rollout("s1", **fields)


# --- decision attachment -------------------------------------------------------------------


def test_attachment_reasons_in_precedence_order() -> None:
    targets = [CallTarget.of_call(c) for c in calls()]
    other = CallTarget("s2-c0", ORG, "s2", ("shared", "s2-t0"))
    foreign = CallTarget("x-c0", "other-org", "s1", ("foreign",))
    twin = CallTarget("s1-c9", ORG, "s1", ("shared",))
    found = attach_decisions([*targets, other, foreign, twin], [
        decision("d-none", None),
        decision("d-unmatched", "nobody"),
        decision("d-ambiguous", "shared"),
        decision("d-org", "foreign"),
        decision("d-session", "s2-t0"),
        decision("d-by-tool-call", "s1-t1", seconds=5),
        decision("d-by-response", "resp-s1-1", seconds=1),
    ])
    assert found.skipped == {reason: 1 for reason in ATTACHMENT_SKIP_REASONS}
    assert [d.decision_id for d in found.decisions("s1-c1")] == ["d-by-response", "d-by-tool-call"]
    assert dict(found.by_call).keys() == {"s1-c1"}


def test_a_call_reachable_twice_under_one_id_is_not_ambiguous() -> None:
    target = CallTarget.of("c0", ORG, "s1", "t0", [message("assistant", ToolCallPart(id="t0", name="e", arguments={}))])
    assert target.reachable_ids == ("t0",)
    assert attach_decisions([target], [decision("d", "t0")]).decisions("c0")[0].decision_id == "d"


def test_codex_path_less_rows_repeated_by_per_file_siblings_are_dropped_uncounted() -> None:
    target = CallTarget.of_call(calls()[0])
    population = [decision("d-a", "s1-t0", harness="codex", path="a.py"),
                  decision("d-b", "s1-t0", harness="codex", path="b.py"),
                  decision("d-bare", "s1-t0", harness="codex", path=""),
                  # not subsumed: another time, another harness, another mode
                  decision("d-later", "s1-t0", harness="codex", path="", seconds=9),
                  decision("d-claude", "s1-t0", path="")]
    found = attach_decisions([target], population)
    assert [d.decision_id for d in found.decisions("s1-c0")] == ["d-a", "d-b", "d-claude", "d-later"]
    assert not found.skipped


# --- one AC per file attribution -----------------------------------------------------------


def test_one_ac_per_attributed_file_with_call_scoped_decisions() -> None:
    r = session(commits=[SHA1, SHA2],
                file_attributions=(attribution(1, path="b.py"), attribution(1, path="a.py"), attribution(2, sha=SHA2)),
                session_decisions=(decision("d1", "s1-t1"), decision("d2", "resp-s1-2", accepted=False),
                                   decision("lost", "nobody")))
    found = derive_attributed_completions(r)
    assert [(c.inference_call_id, c.file_path) for c in found] == [("s1-c1", "a.py"), ("s1-c1", "b.py"),
                                                                    ("s1-c2", "a.py")]
    first, second, third = found.completions
    assert [d.decision_id for d in first.decisions] == [d.decision_id for d in second.decisions] == ["d1"]
    assert [d.decision_id for d in third.decisions] == ["d2"]
    assert found.attachment_skipped == {"unmatched_decision_call_id": 1}
    assert first.provenance == Provenance(policy_version=ATTRIBUTED_COMPLETION_POLICY_VERSION,
                                          quarantine_revision=0, policy_digest=PROVENANCE.policy_digest)
    assert (first.split, first.attribution_source, first.similarity_score) == ("train", "git_notes", 0.8)
    assert [cid for cid, _ in found.by_call()] == ["s1-c1", "s1-c2"]


def test_a_call_without_an_attributed_file_has_no_ac_and_an_ac_needs_no_decision_or_ci() -> None:
    found = derive_attributed_completions(session(file_attributions=(attribution(0),)))
    (only,) = found.completions
    assert (only.inference_call_id, only.decisions, only.ci_outcomes) == ("s1-c0", (), ())
    assert found.confidence(only, LabelConfidencePolicy()) is None  # no decision, no CI: no signal


def test_the_whole_input_of_each_call_comes_from_its_segment() -> None:
    recorded = calls()
    found = completion_calls(session(calls=recorded))
    for c in recorded:
        assert found[c.inference_call_id].input_messages == c.input_messages
        assert found[c.inference_call_id].output_messages == c.output_messages
        assert (found[c.inference_call_id].model, found[c.inference_call_id].model_call_id) == (c.model,
                                                                                                 c.model_call_id)


def test_ci_outcomes_are_those_of_the_qualified_commit_by_outcome_id() -> None:
    outcomes = [outcome("o2", SHA1, "failed", run_id="2"), outcome("o1", SHA1, run_id="1"),
                outcome("o3", SHA2, run_id="3")]
    r = session(commits=[SHA1, SHA2], outcomes=outcomes,
                file_attributions=(attribution(0), attribution(0, sha=SHA2)))
    found = derive_attributed_completions(r)
    by_sha = {c.commit_sha: c for c in found}
    assert [o.outcome_id for o in by_sha[SHA1].ci_outcomes] == ["o1", "o2"]
    assert [o.outcome_id for o in by_sha[SHA2].ci_outcomes] == ["o3"]
    # two workflows' verdicts disagree on SHA1: no verdict, the resolver counts it for that AC
    ambiguous = found.resolution(by_sha[SHA1])
    assert ambiguous.resolution is not None and ambiguous.resolution.verdict is None
    assert ambiguous.skipped == {"ambiguous_workflow_verdicts": 1}
    passed = found.resolution(by_sha[SHA2])
    assert (passed.resolution.verdict, passed.skipped) == ("passed", {})  # type: ignore[union-attr]
    assert found.confidence(by_sha[SHA2], LabelConfidencePolicy()) == pytest.approx(0.66)


def test_identified_outcomes_join_the_identified_attribution_only_with_their_context() -> None:
    ref = CommitRef(repo=REPO, commit_sha=SHA1, repository_identity=IDENTITY)
    identified = outcome("o1", SHA1, repository_provider="github", repository_host="github.com",
                         repository_id="424242")
    r = session(commits=[ref], outcomes=[identified], file_attributions=(attribution(0, identity=IDENTITY),))
    context = RepositoryContext.build(ORG, [identified])
    (with_context,) = derive_attributed_completions(r, repositories=context).completions
    assert [o.outcome_id for o in with_context.ci_outcomes] == ["o1"]
    assert with_context.repository_identity == IDENTITY
    (without,) = derive_attributed_completions(r).completions  # only legacy outcomes qualify
    assert without.ci_outcomes == ()


def test_observation_ids_are_the_sessions_on_the_qualified_commit() -> None:
    def seen(observation_id: str, sha: str = SHA1, session_id: str = "s1", repo: str = REPO) -> SessionCommitObservation:
        return SessionCommitObservation(observation_id=observation_id, org_id=ORG, repo=repo, commit_sha=sha,
                                        session_id=session_id, captured_at=T0)

    r = session(commits=[SHA1, SHA2], file_attributions=(attribution(0), attribution(1, sha=SHA2)),
                session_commit_observations=(seen("n2"), seen("n1"), seen("n3", sha=SHA2), seen("n2"),
                                             seen("other-repo", repo="someone/else")))
    by_sha = {c.commit_sha: c for c in derive_attributed_completions(r)}
    assert by_sha[SHA1].observation_ids == ("n1", "n2")
    assert by_sha[SHA2].observation_ids == ("n3",)


def test_edit_retention_is_filled_on_the_ac_never_on_the_rollout() -> None:
    vendor = decision("d-vendor", "s1-t1", explicit=False, harness="copilot", edit_retention_score=0.25)
    derived = decision("d-derived", "s1-t0", explicit=False)
    r = session(file_attributions=(attribution(0), attribution(1, path="b.py")), session_decisions=(vendor, derived),
                edit_observations=(edit("s1-t0", "abcde", "abcdxx"), edit("s1-t1", "abcd", "", harness="copilot")))
    found = derive_attributed_completions(r)
    scores = {d.decision_id: d.edit_retention_score for c in found for d in c.decisions}
    assert scores == {"d-derived": 0.5, "d-vendor": 0.25}  # the vendor's grade is never overwritten
    assert found.retention_filled == 1
    assert r.session_decisions[1].edit_retention_score is None


def test_evidence_sort_key_and_variant_rules() -> None:
    (ac,) = derive_attributed_completions(session(file_attributions=(attribution(0, identity=IDENTITY),))).completions
    assert ac.sort_key == (0, ("github", "github.com", "424242"), REPO, SHA1, "a.py", "s1-c0")
    with pytest.raises(ValidationError, match="sets repo, commit_sha"):
        ac.model_validate({**ac.model_dump(), "file_path": None})
    abandonment = SessionAbandonment(org_id=ORG, session_id="s1", last_activity_at=T0,
                                     horizon_at=T0 + timedelta(days=14), as_of=T0 + timedelta(days=20))
    with pytest.raises(ValidationError, match="no repo, commit_sha"):
        ac.model_validate({**ac.model_dump(), "abandonment": abandonment})


# --- abandonment: only when a caller supplies it --------------------------------------


def test_a_supplied_abandonment_gives_one_ac_per_call_with_a_joined_explicit_accept() -> None:
    abandonment = SessionAbandonment(org_id=ORG, session_id="s1", last_activity_at=T0,
                                     horizon_at=T0 + timedelta(days=14), as_of=T0 + timedelta(days=20))
    r = session(commits=[], session_decisions=(
        decision("d-accept", "s1-t0"), decision("d-implicit", "s1-t1", explicit=False),
        decision("d-reject", "s1-t2", accepted=False), decision("d-unjoined", "nobody")))
    found = derive_attributed_completions(r, abandonment=abandonment)
    (only,) = found.completions
    assert (only.inference_call_id, only.is_abandonment, only.commit_key, only.observation_ids) == (
        "s1-c0", True, None, ())
    assert only.sort_key == (1, "s1", "s1-c0", "", "")
    assert found.abandonment_skipped == {"explicit_accept_unjoined": 1}
    assert LabelConfidencePolicy().confidence(found.confidence_evidence(only)) == 0.0
    implicit = session(commits=[], session_decisions=(decision("d-implicit", "s1-t1", explicit=False),))
    found = derive_attributed_completions(implicit, abandonment=abandonment)
    assert (found.completions, found.abandonment_skipped) == ((), {"implicit_only_session": 1})
    with pytest.raises(ValueError, match="has attributed commits"):
        derive_attributed_completions(session(file_attributions=(attribution(0),)), abandonment=abandonment)


def test_derivation_never_finds_an_abandonment_itself() -> None:
    """Dormant by decision (docs/attributed-completions.md): a Session that reached no commit has
    no AC at all, however its decisions read."""
    r = session(commits=[], session_decisions=(decision("d-accept", "s1-t0"),))
    assert derive_attributed_completions(r).completions == ()


# --- the Rollout's file attributions are checked ---------------------------------------------


def test_file_attributions_name_calls_of_the_rollout_once_per_file() -> None:
    with pytest.raises(ValidationError, match="which no Turn of the Rollout holds"):
        session(file_attributions=(attribution(7),))
    with pytest.raises(ValidationError, match="attributes a file twice"):
        session(file_attributions=(attribution(0), attribution(1)))
    with pytest.raises(ValidationError, match=r"similarity_score must be in \(0, 1\]"):
        attribution(0, score=0.0)


# --- determinism ------------------------------------------------------------------------------


def test_shuffled_evidence_gives_equal_completions() -> None:
    decisions = [decision(f"d{i}", f"s1-t{i % 3}", accepted=i % 2 == 0, explicit=i % 3 == 0, seconds=i % 4)
                 for i in range(12)]
    edits = [edit(f"s1-t{i}", "abcdef" * i, "abcdef" * (i - 1), observation_id=f"e{i}") for i in range(3)]
    outcomes = [outcome(f"o{i}", SHA1 if i % 2 else SHA2, "passed" if i % 3 else "failed", run_id=str(i))
                for i in range(6)]
    files = [attribution(i % 3, sha=SHA1 if i % 2 else SHA2, path=f"f{i}.py") for i in range(6)]

    def derived(seed: int) -> list[str]:
        rng = random.Random(seed)
        shuffled = [list(x) for x in (decisions, edits, outcomes, files)]
        for population in shuffled:
            rng.shuffle(population)
        r = session(commits=[SHA1, SHA2], outcomes=shuffled[2], session_decisions=tuple(shuffled[0]),
                    edit_observations=tuple(shuffled[1]), file_attributions=tuple(shuffled[3]))
        found = derive_attributed_completions(r)
        policy = LabelConfidencePolicy()
        return [encode_record(c) + repr(found.confidence(c, policy)) for c in found]

    expected = derived(0)
    assert len(expected) == 6
    for seed in range(1, 6):
        assert derived(seed) == expected
    assert isinstance(AttributedCompletion.model_validate_json(
        AttributedCompletion.model_validate(derive_attributed_completions(session(
            file_attributions=(attribution(0),))).completions[0]).model_dump_json()), AttributedCompletion)
