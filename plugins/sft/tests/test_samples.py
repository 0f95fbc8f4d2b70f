"""The SFT projection's rules that a store cannot produce (a supplied abandonment, conflicting
evidence, a missing call) and its per-call units, on hand-built attributed completions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from sediment_sft.eligibility import STRONG_RETENTION, Eligible, eligibility
from sediment_sft.samples import SKIP_REASONS, project_session

from sediment.plugin import Declined, LabelConfidencePolicy, ProjectedRow, Recipe, SessionAbandonment, ToolCallPart
from sediment.testing import (
    ORG,
    REPO,
    T0,
    DeveloperDecision,
    FileAttribution,
    call,
    derive_attributed_completions,
    load_registry,
    message,
    outcome,
    rollout,
)

SHA = "a" * 40
CURATED = Recipe("sft_curated", 1)
POLICY = LabelConfidencePolicy()


def decision(call_id: str, *, accepted: bool = True, explicit: bool = True, score: float | None = None,
             name: str = "d") -> DeveloperDecision:
    return DeveloperDecision(decision_id=f"{name}-{call_id}", org_id=ORG, session_id="s1", agent_harness="claude-code",
                             accepted=accepted, explicit=explicit, interaction_mode="agent", call_id=call_id,
                             edit_retention_score=score, occurred_at=T0, captured_at=T0)


def session(decisions: Iterable[DeveloperDecision] = (), files: Iterable[tuple[int, str, float]] = ((0, "a.py", 0.9),),
            outcomes: Iterable[Any] = (), commits: Iterable[str] = (SHA,)) -> Any:
    calls = [call("s1", i, [message("user", "go")], [message("assistant", ToolCallPart(id=f"t{i}", name="w",
                                                                                         arguments={"i": i}))],
                  model="m") for i in range(2)]
    attributions = tuple(FileAttribution(inference_call_id=f"s1-c{i}", repo=REPO, commit_sha=SHA, file_path=path,
                                         similarity_score=score) for i, path, score in files)
    return rollout("s1", calls=calls, commits=list(commits), outcomes=list(outcomes),
                   session_decisions=tuple(decisions), file_attributions=attributions)


def project(found: Any, recipe: Recipe = CURATED) -> tuple[list[dict[str, Any]], dict[str, int]]:
    rows, skipped = [], {}
    for item in project_session(found, recipe, POLICY):
        if isinstance(item, ProjectedRow):
            rows.append(item.body)
        else:
            assert isinstance(item, Declined)
            skipped[item.reason] = skipped.get(item.reason, 0) + item.count
    assert set(skipped) <= set(SKIP_REASONS) | {"ambiguous_workflow_verdicts"}
    return rows, skipped


def test_the_vocabulary_is_the_contracts_in_order() -> None:
    vocabulary = load_registry().objectives["sft"].vocabularies["sft"]
    assert vocabulary == (
        "conflicting_run_identity", "ambiguous_workflow_verdicts", "repository_identity_absent",
        "repository_identity_conflict", "repository_identity_unresolved", "repository_mirror_identity_unresolved",
        "repository_source_absent", "non_finite_number", "unrepresentable_unicode", "completionless",
        "duplicate_tool_call_id", "empty_message", "non_string_tool_result", "unrepresentable_part_order",
        "unresolved_tool_call", "unsupported_completion_role", "unsupported_message_role", "unsupported_role_part",
        "abandoned", "explicit_reject", "resolved_ci_failure", "no_eligibility_source", "unreliable_ci_resolution",
        "no_reward_signal", "below_confidence_floor", "inference_call_not_found", "model_absent",
        "duplicate_completion", "conflicting_evidence")


def test_an_abandonment_is_declined_once_per_call() -> None:
    abandonment = SessionAbandonment(org_id=ORG, session_id="s1", last_activity_at=T0,
                                     horizon_at=T0 + timedelta(days=14), as_of=T0 + timedelta(days=15))
    found = derive_attributed_completions(session([decision("t0"), decision("t1")], files=(), commits=()),
                                          abandonment=abandonment)
    assert len(found) == 2
    assert project(found) == ([], {"abandoned": 2})


def test_conflicting_evidence_declines_the_call_once() -> None:
    found = derive_attributed_completions(session([decision("t0")]))
    (ac,) = found.completions
    twin = ac.model_copy(update={"similarity_score": 0.5})  # one identity, another payload
    same = ac.model_copy()
    assert project(replace(found, completions=(ac, twin, same))) == ([], {"conflicting_evidence": 1})
    rows, skipped = project(replace(found, completions=(ac, same)))  # identical twins are duplicates
    assert (len(rows), skipped) == (1, {"duplicate_completion": 1})


def test_a_call_the_session_does_not_hold_is_not_found() -> None:
    found = derive_attributed_completions(session([decision("t0")]))
    assert project(replace(found, calls={})) == ([], {"inference_call_not_found": 1})


def test_a_call_without_a_row_counts_the_stage_its_best_evidence_reached() -> None:
    """Two files of one call on two commits: one failed CI, one below the floor (a Jaccard 0.5
    discount): the call counts the later stage, once."""
    other = "b" * 40
    r = session([decision("t0")], files=(), commits=(SHA, other),
                outcomes=[outcome("o1", SHA, "failed", run_id="1")])
    attributions = (FileAttribution(inference_call_id="s1-c0", repo=REPO, commit_sha=SHA, file_path="a.py",
                                    similarity_score=0.9),
                    FileAttribution(inference_call_id="s1-c0", repo=REPO, commit_sha=other, file_path="b.py",
                                    similarity_score=0.5))
    r = r.model_copy(update={"file_attributions": attributions, "attribution_source": "jaccard"})
    found = derive_attributed_completions(r)
    assert project(found) == ([], {"below_confidence_floor": 1})


def test_equal_confidence_keeps_the_first_in_evidence_order() -> None:
    found = derive_attributed_completions(session([decision("t0")], files=((0, "b.py", 0.9), (0, "a.py", 0.9))))
    (row,), skipped = project(found)
    assert skipped == {"duplicate_completion": 1}
    # both give 1.0; the kept one is a.py's (the rows do not name the file, their evidence is the same)
    kept = min(found.completions, key=lambda c: c.sort_key)
    assert kept.file_path == "a.py"
    assert row["metadata"]["label_confidence"] == 1.0


def test_strong_retention_is_inclusive_and_needs_an_accept() -> None:
    found = derive_attributed_completions(session([decision("t0", explicit=False, score=STRONG_RETENTION)]))
    (ac,) = found.completions
    assert eligibility(ac, None, "sft_curated") == Eligible("edit_retention")
    found = derive_attributed_completions(session([decision("t0", explicit=False, score=0.79)]))
    assert eligibility(found.completions[0], None, "sft_curated") == "no_eligibility_source"
    found = derive_attributed_completions(session([decision("t0", accepted=False, explicit=False, score=1.0)]))
    assert eligibility(found.completions[0], None, "sft_curated") == "no_eligibility_source"


def test_rows_of_a_session_are_in_call_order_and_shuffling_changes_nothing() -> None:
    decisions = [decision("t1", name="x"), decision("t0", name="y")]
    first = project(derive_attributed_completions(session(decisions, files=((1, "b.py", 0.9), (0, "a.py", 0.9)))))
    second = project(derive_attributed_completions(session(decisions[::-1], files=((0, "a.py", 0.9),
                                                                                    (1, "b.py", 0.9)))))
    assert first == second
    assert [r["metadata"]["completion_id"] for r in first[0]] == ["s1-c0", "s1-c1"]
