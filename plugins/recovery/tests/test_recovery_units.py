"""The pure parts of Recovery on their own: the changed-line count, the gates on a real mirror,
the projection's counts and split, the policy and the objective's declaration."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from sediment_recovery.rows import attribution_evidence, call_ids, recovery_row
from sediment_recovery.transitions import (
    DERIVATION_SKIP_REASONS,
    RecoveryPolicy,
    RecoverySample,
    changed_lines,
    derive_recovery,
    gate,
    lineages,
)

from sediment.plugin import AttributedCall, CallRecord, Recipe, resolve_ci
from sediment.testing import ORG, GitRepo, MirrorRoot, load_registry, outcome

RECIPE = Recipe("recovery_ci", 1)
CORE_CI = ("conflicting_run_identity", "ambiguous_workflow_verdicts", "repository_identity_absent",
           "repository_identity_conflict", "repository_identity_unresolved", "repository_mirror_identity_unresolved",
           "repository_source_absent")


def test_the_vocabularies_are_the_contracts_in_its_order() -> None:
    recovery = load_registry().objectives["recovery"]
    assert recovery.unit_vocabulary == (*CORE_CI, "unreliable_ci_resolution", "workflow_identity_absent",
                                        "mirror_absent", "same_commit", "ancestry_check_failed", "not_ancestor",
                                        "diff_unavailable", "diff_oversized")
    assert recovery.vocabularies == {"recovery": ("non_finite_number", "unrepresentable_unicode",
                                                  "inference_call_not_found", "attribution_evidence_absent")}
    info = recovery.info
    assert (info.title, info.unit, info.units, info.supports_from, info.direct_needs_mirrors) == (
        "Recovery", "CI transition", "pairs", False, True)
    assert [(r.name, r.version) for r in info.recipes] == [("recovery_ci", 1)]
    assert info.populations["recovery"].schema_id == "https://sediment.so/schemas/training-rows/recovery-row/v3.json"
    described = recovery.as_json()
    assert described["unit_skip_reasons"] == list(recovery.unit_vocabulary)
    assert described["populations"]["recovery"]["files"] == ["recovery.jsonl", "recovery.train.jsonl",
                                                             "recovery.eval.jsonl"]
    assert recovery.unit_vocabulary[len(CORE_CI):] == DERIVATION_SKIP_REASONS


@pytest.mark.parametrize(("diff", "count"), [
    ("", 0),
    ("diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n", 2),
    # content that looks like a header counts inside a hunk; "\ No newline" never does
    ("diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n---- x\n++++ y\n \\ No newline at end of file\n", 2),
    # the next file's headers are not hunk lines
    ("diff --git a/a b/a\n@@ -1 +1 @@\n-x\ndiff --git a/b b/b\nnew file mode 100644\n--- /dev/null\n+++ b/b\n"
     "@@ -0,0 +1 @@\n+z\n", 2),
    ("diff --git a/b.bin b/b.bin\nindex 1..2 100644\nBinary files a/b.bin and b/b.bin differ\n", 0),
])
def test_changed_lines_count_hunk_lines_only(diff: str, count: int) -> None:
    assert changed_lines(diff) == count


def test_the_gates_on_a_real_mirror(mirror_root: MirrorRoot, git_repo: GitRepo) -> None:
    first = git_repo.commit({"a.py": "a = 1\n"})
    second = git_repo.commit({"a.py": "a = 2\n"})
    third = git_repo.commit({"b.py": "b = 1\n"})
    older = git_repo.commit({"a.py": "a = 0\n"}, parents=[], branch="other")
    runs = [outcome("o1", first, "failed", run_id="1"), outcome("o2", second, "passed", run_id="2", minutes=1),
            outcome("o3", third, "failed", run_id="3", minutes=2, branch="other"),
            outcome("o4", older, "passed", run_id="4", minutes=3, branch="other")]
    resolution = resolve_ci(runs, quarantine_revision=0)
    mirror = mirror_root.open(ORG, "owner/repo")
    assert mirror is not None
    counts: Counter[str] = Counter()
    main, other = lineages(runs, resolution, counts).values()
    assert counts == {}
    failed, fixed = main
    # the same run twice is the same commit, whatever else the gates would say
    assert gate(failed, failed, mirror)[0] == "same_commit"
    assert gate(failed, fixed, mirror) == (None, mirror.diff(first, second), 2)
    assert gate(failed, fixed, mirror, RecoveryPolicy(max_recovery_diff_lines=1))[0] == "diff_oversized"
    backwards_failed, backwards_fixed = other[0], other[1]
    assert gate(backwards_failed, backwards_fixed, mirror)[0] == "not_ancestor"  # another root: no common history


def test_derivation_is_the_same_for_any_input_order(mirror_root: MirrorRoot, git_repo: GitRepo) -> None:
    commits = [git_repo.commit({"a.py": f"a = {i}\n"}) for i in range(8)]
    results = ["failed", "failed", "passed", "passed", "failed", "cancelled", "passed", "failed"]
    runs = [outcome(f"o{i}", sha, result, run_id=str(i), minutes=i)
            for i, (sha, result) in enumerate(zip(commits, results, strict=True))]

    def derive(order: list[Any]) -> list[tuple[str, str, str]]:
        derived = derive_recovery(order, resolve_ci(order, quarantine_revision=0),
                                  lambda key: mirror_root.open(key.org_id, key.repo, key.identity))
        return [(s.failed.outcome.outcome_id, s.fixed.outcome.outcome_id, s.recovery_diff) for s in derived.samples]

    expected = derive(runs)
    assert [(a, b) for a, b, _ in expected] == [("o1", "o2"), ("o4", "o6")]
    for seed in range(5):
        shuffled = list(runs)
        random.Random(seed).shuffle(shuffled)
        assert derive(shuffled) == expected


def test_diff_line_counts_of_kept_and_dropped_pairs(mirror_root: MirrorRoot, git_repo: GitRepo) -> None:
    a = git_repo.commit({"a.py": "a = 1\n"})
    b = git_repo.commit({"a.py": "a = 2\n"})
    c = git_repo.commit({"a.py": "a = 3\n"})
    d = git_repo.commit({"a.py": "".join(f"d{i}\n" for i in range(300))})
    runs = [outcome("o1", a, "failed", run_id="1"), outcome("o2", b, "passed", run_id="2", minutes=1),
            outcome("o3", c, "failed", run_id="3", minutes=2), outcome("o4", d, "passed", run_id="4", minutes=3)]
    derived = derive_recovery(runs, resolve_ci(runs, quarantine_revision=0),
                              lambda key: mirror_root.open(key.org_id, key.repo))
    assert (derived.kept_diff_line_counts, derived.dropped_diff_line_counts) == ([2], [301])
    assert derived.skipped == {"diff_oversized": 1}


def test_the_policy_refuses_a_negative_cap_and_digests_what_rows_depend_on() -> None:
    with pytest.raises(ValueError, match="max_recovery_diff_lines must be a non-negative integer"):
        RecoveryPolicy(max_recovery_diff_lines=-1)
    with pytest.raises(ValueError, match="non-negative integer"):
        RecoveryPolicy(max_recovery_diff_lines=True)
    digests = {RecoveryPolicy(max_recovery_diff_lines=n).digest(ci_policy_digest=c, derivation_policy_digest=d)
               for n in (200, 201) for c in ("a" * 64, "b" * 64) for d in ("c" * 64, "d" * 64)}
    assert len(digests) == 8 and all(len(x) == 64 for x in digests)


# --- projection --------------------------------------------------------------------------------------


def sample(mirror_root: MirrorRoot, git_repo: GitRepo) -> RecoverySample:
    a = git_repo.commit({"a.py": "a = 1\n"})
    b = git_repo.commit({"a.py": "a = 2\n"})
    runs = [outcome("o1", a, "failed", run_id="1"), outcome("o2", b, "passed", run_id="2", minutes=1)]
    [found] = derive_recovery(runs, resolve_ci(runs, quarantine_revision=0),
                              lambda key: mirror_root.open(key.org_id, key.repo)).samples
    return found


def test_projection_counts_missing_evidence_and_unknown_calls(mirror_root: MirrorRoot, git_repo: GitRepo) -> None:
    pair = sample(mirror_root, git_repo)
    failed = [AttributedCall("c1", "s1", "git_notes", ("obs-1",))]
    fixed = [AttributedCall("c2", "s2", "jaccard", ()), AttributedCall("c2", "s2", "git_notes", ("obs-2",))]
    lookup = {"c1": CallRecord("s1", "train")}
    row = recovery_row(pair, recipe=RECIPE, provenance={}, failed_call_ids=["c1", "c9"],
                       fixed_call_ids=call_ids(fixed), failed_evidence=attribution_evidence(failed),
                       fixed_evidence=attribution_evidence(fixed), lookup=lookup)
    # c9 has no evidence on its side; c9 and c2 are not in the lookup; the row is kept
    assert row.counted == {"attribution_evidence_absent": 1, "inference_call_not_found": 2}
    assert row.split == "train" and row.body["failed_inference_call_ids"] == ["c1", "c9"]
    assert row.body["fixed_attribution_evidence"] == [
        {"inference_call_id": "c2", "session_id": "s2", "attribution_sources": ["git_notes", "jaccard"],
         "session_commit_observation_ids": ["obs-2"]}]


@pytest.mark.parametrize(("lookup", "split"), [
    ({}, "train"),
    ({"c1": CallRecord("s1", "train"), "c2": CallRecord("s2", "train")}, "train"),
    ({"c1": CallRecord("s1", "train"), "c2": CallRecord("s2", "eval")}, "eval"),
    ({"c2": CallRecord("s2", "eval")}, "eval"),
])
def test_the_split_is_eval_when_any_resolvable_call_is(mirror_root: MirrorRoot, git_repo: GitRepo,
                                                        lookup: dict[str, CallRecord], split: str) -> None:
    row = recovery_row(sample(mirror_root, git_repo), recipe=RECIPE, provenance={}, failed_call_ids=["c1"],
                       fixed_call_ids=["c2"], failed_evidence=[], fixed_evidence=[], lookup=lookup)
    assert (row.split, row.body["split"]) == (split, split)


def test_the_docs_list_the_vocabularies_as_the_registry_composes_them() -> None:
    import re
    from pathlib import Path

    text = " ".join((Path(__file__).parents[3] / "docs" / "recovery.md").read_text(encoding="utf-8").split())
    recovery = load_registry().objectives["recovery"]
    for label, vocabulary in (("Pairs (`pairs_skipped`):", recovery.unit_vocabulary),
                              ("Rows (`recovery_skipped`):", recovery.vocabularies["recovery"])):
        listed = text.split(label, 1)[1].split(".", 1)[0]
        assert tuple(re.findall(r"`([a-z_]+)`", listed)) == vocabulary
