"""Every rule of the Recovery derivation (docs/recovery.md) on hand-built evidence: CI outcomes in a
real fact store, history in a real bare mirror, exported as `sediment export recovery` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sediment.testing import ORG, REPO, load_registry, outcome

SCHEMA_ID = "https://sediment.so/schemas/training-rows/recovery-row/v3.json"


def ci(n: int, sha: str, result: str, *, minutes: int | None = None, attempt: int | None = 1, run: int | None = None,
       **fields: Any) -> Any:
    """Attempt ``attempt`` of run ``run`` (default ``n``), captured at minute ``minutes`` (default ``n``)."""
    return outcome(f"o{n}", sha, result, run_id=str(run if run is not None else n), attempt=attempt,
                   minutes=n if minutes is None else minutes, **fields)


def history(world: Any, count: int) -> list[str]:
    """``count`` commits, each adding one line to calc.py."""
    return [world.git.commit({"calc.py": "".join(f"x{j} = {j}\n" for j in range(i + 1))}, f"c{i}")
            for i in range(count)]


# --- a pair and its row -------------------------------------------------------------------------


def test_a_clean_failure_then_a_clean_pass_on_a_descendant_is_one_row(any_world: Any) -> None:
    world = any_world
    c = history(world, 3)
    failed_calls = world.session("s1", c[1])
    fixed_calls = world.session("s2", c[2])
    world.facts(ci(1, c[0], "passed"), ci(2, c[1], "failed"), ci(3, c[2], "passed"))
    exported = world.export()
    assert exported.summary["pairs"] == 1 and exported.summary["pairs_skipped"] == {}
    assert exported.summary["recovery_rows"] == 1 and exported.summary["recovery_skipped"] == {}
    [row] = exported.rows
    observations = {o.session_id: o.observation_id for o in world.store.facts("session_commit_observations", ORG)}
    digest = row["provenance"]["policy_digest"]
    assert row == {
        "org_id": ORG, "recipe_id": "recovery_ci", "recipe_version": 1, "repo": REPO, "branch": "main",
        "workflow_name": "tests", "workflow_path": ".github/workflows/ci.yml",
        "failed_commit_sha": c[1], "fixed_commit_sha": c[2], "failed_outcome_id": "o2", "fixed_outcome_id": "o3",
        "recovery_diff": world.upstream_diff(c[1], c[2]),
        "failed_inference_call_ids": sorted(failed_calls), "fixed_inference_call_ids": sorted(fixed_calls),
        "provenance": {"policy_version": "5", "quarantine_revision": 0, "policy_digest": digest},
        "split": "train", "repository_identity": None,
        "failed_attribution_evidence": [
            {"inference_call_id": i, "session_id": "s1", "attribution_sources": ["git_notes"],
             "session_commit_observation_ids": [observations["s1"]]} for i in sorted(failed_calls)],
        "fixed_attribution_evidence": [
            {"inference_call_id": i, "session_id": "s2", "attribution_sources": ["git_notes"],
             "session_commit_observation_ids": [observations["s2"]]} for i in sorted(fixed_calls)],
        "schema_id": SCHEMA_ID, "schema_version": 3,
    }
    assert list(row) == list(row.keys()) and list(row)[:4] == ["org_id", "recipe_id", "recipe_version", "repo"]
    assert len(digest) == 64 and exported.files.keys() == {"recovery.train.jsonl"}


def test_row_keys_are_in_the_contracts_order(world: Any) -> None:
    c = history(world, 2)
    world.facts(ci(1, c[0], "failed"), ci(2, c[1], "passed"))
    [line] = (world.export().out / "recovery.train.jsonl").read_text(encoding="ascii").splitlines()
    assert line.startswith('{"org_id": "acme", "recipe_id": "recovery_ci", "recipe_version": 1, "repo": "owner/repo", '
                           '"branch": "main", "workflow_name": "tests", "workflow_path": ".github/workflows/ci.yml", '
                           f'"failed_commit_sha": "{c[0]}", "fixed_commit_sha": "{c[1]}", "failed_outcome_id": "o1", '
                           '"fixed_outcome_id": "o2", "recovery_diff": ')
    assert line.endswith('"split": "train", "repository_identity": null, "failed_attribution_evidence": [], '
                         '"fixed_attribution_evidence": [], "schema_id": '
                         '"https://sediment.so/schemas/training-rows/recovery-row/v3.json", "schema_version": 3}')


# --- the walk --------------------------------------------------------------------------------------


def test_consecutive_failures_collapse_to_the_last(world: Any) -> None:
    c = history(world, 4)
    world.facts(ci(1, c[0], "failed"), ci(2, c[1], "failed"), ci(3, c[2], "failed"), ci(4, c[3], "passed"))
    assert world.export().pairs == [(c[2], c[3])]


def test_a_pass_spends_the_red_and_later_passes_are_not_searched(world: Any) -> None:
    c = history(world, 3)
    side = world.git.commit({"other.py": "y = 1\n"}, "elsewhere", parents=[c[0]], branch="topic")
    world.facts(ci(1, c[1], "failed"), ci(2, side, "passed"), ci(3, c[2], "passed"))
    exported = world.export()
    # the pass on a commit that does not contain the failure spends it: c[2] is never tried
    assert exported.pairs == [] and exported.skipped == {"not_ancestor": 1}


def test_each_red_pairs_with_the_next_green_only(world: Any) -> None:
    c = history(world, 6)
    world.facts(ci(1, c[0], "failed"), ci(2, c[1], "passed"), ci(3, c[2], "passed"), ci(4, c[3], "failed"),
                ci(5, c[4], "passed"), ci(6, c[5], "passed"))
    assert world.export().pairs == [(c[0], c[1]), (c[3], c[4])]


def test_runs_are_ordered_by_capture_time_not_by_commit_run_id_or_ingest(world: Any) -> None:
    c = history(world, 3)
    # run 9 on c[0] failed first (minute 1); run 1 on c[2] passed last (minute 30); ingested passes first
    world.facts(ci(1, c[2], "passed", minutes=30), ci(9, c[0], "failed", minutes=1), ci(5, c[1], "passed", minutes=20))
    assert world.export().pairs == [(c[0], c[1])]


def test_equal_capture_times_are_ordered_by_commit_ancestry_not_the_outcome_id(world: Any) -> None:
    c = history(world, 2)
    world.facts(ci(2, c[1], "passed", minutes=5), ci(1, c[0], "failed", minutes=5))
    assert world.export().pairs == [(c[0], c[1])]
    world.store.quarantine(ORG, "ci_outcomes", "o1", "test")
    world.facts(ci(3, c[0], "failed", minutes=5))  # o3 sorts after o2, but c[0] is below c[1]: a backfill's case
    assert world.export(world.tmp / "again").pairs == [(c[0], c[1])]


def test_ancestry_orders_runs_before_any_clock(world: Any) -> None:
    c = history(world, 2)
    # the red on c[0] captured an hour after the green on its descendant c[1] (a late redelivery)
    world.facts(ci(2, c[1], "passed", minutes=5), ci(1, c[0], "failed", minutes=65))
    assert world.export().pairs == [(c[0], c[1])]


def test_runs_nothing_else_orders_fall_back_to_the_outcome_id(world: Any) -> None:
    red = world.git.commit({"a.py": "a = 1\n"})
    green = world.git.commit({"a.py": "a = 2\n"}, "unrelated", parents=[])  # no common history: no ancestry
    world.facts(ci(2, green, "passed", minutes=5), ci(1, red, "failed", minutes=5))
    exported = world.export()
    assert exported.pairs == [] and exported.skipped == {"not_ancestor": 1}  # o1 before o2: a candidate
    world.store.quarantine(ORG, "ci_outcomes", "o1", "test")
    world.facts(ci(3, red, "failed", minutes=5))  # o3 sorts after o2: the red comes too late to be one
    exported = world.export(world.tmp / "again")
    assert exported.pairs == [] and exported.skipped == {}


# --- lineages: the same workflow definition on the same branch ------------------------------------


def test_only_the_same_workflow_definition_pairs(world: Any) -> None:
    c = history(world, 2)
    lint = {"workflow_id": "78", "workflow_name": "lint", "workflow_path": ".github/workflows/lint.yml"}
    world.facts(ci(1, c[0], "failed"), ci(2, c[1], "passed", **lint))
    assert world.export().pairs == []


def test_a_workflow_is_its_id_else_its_path_never_its_name(world: Any) -> None:
    c = history(world, 6)
    world.facts(
        # by id: a renamed and moved workflow is still one definition
        ci(1, c[0], "failed", workflow_name="tests", workflow_path="ci.yml"),
        ci(2, c[1], "passed", workflow_name="unit tests", workflow_path="moved.yml"),
        # by path, without an id
        ci(3, c[2], "failed", workflow_id=None, workflow_path="jenkins/Jenkinsfile", workflow_name="a"),
        ci(4, c[3], "passed", workflow_id=None, workflow_path="jenkins/Jenkinsfile", workflow_name="b"),
        # a name alone identifies nothing
        ci(5, c[4], "failed", workflow_id=None, workflow_path=None, workflow_name="build"),
        ci(6, c[5], "passed", workflow_id=None, workflow_path=None, workflow_name="build"),
    )
    exported = world.export()
    assert exported.pairs == [(c[0], c[1]), (c[2], c[3])]  # lineages in key order: ("id", …) before ("path", …)
    assert exported.skipped == {"workflow_identity_absent": 2}


def test_a_different_branch_or_provider_is_another_lineage(world: Any) -> None:
    c = history(world, 4)
    world.facts(ci(1, c[0], "failed"), ci(2, c[1], "passed", branch="feature"),
                ci(3, c[2], "failed", provider="gitlab_ci"), ci(4, c[3], "passed"))
    # main/github_actions: o1 failed, o4 passed (c[0] → c[3]); the others stand alone
    assert world.export().pairs == [(c[0], c[3])]


def test_workflow_fields_come_from_the_failed_run(world: Any) -> None:
    c = history(world, 2)
    world.facts(ci(1, c[0], "failed", attempt=1, workflow_path=None, workflow_name="old name"),
                ci(11, c[0], "failed", attempt=2, run=1, minutes=2, workflow_path="ci.yml", workflow_name=""),
                ci(2, c[1], "passed", minutes=3, workflow_path="other.yml", workflow_name="new name"))
    [row] = world.export().rows
    # the failed run's verdict attempt (attempt 2) has no name; attempt 1 had no path: the run has both
    assert (row["workflow_name"], row["workflow_path"], row["failed_outcome_id"]) == ("old name", "ci.yml", "o11")


# --- what never pairs ------------------------------------------------------------------------------


def test_a_flaky_run_is_unreliable_and_never_in_a_lineage(world: Any) -> None:
    c = history(world, 3)
    world.facts(ci(1, c[0], "failed"),
                ci(2, c[1], "failed", run=2, attempt=1), ci(3, c[1], "passed", run=2, attempt=2),
                ci(4, c[2], "passed"))
    exported = world.export()
    # the flake on c[1] neither fixes c[0] nor spends its red: c[2] does
    assert exported.pairs == [(c[0], c[2])] and exported.skipped == {"unreliable_ci_resolution": 1}


def test_a_red_green_flip_inside_one_run_is_not_a_recovery(world: Any) -> None:
    c = history(world, 1)
    world.facts(ci(1, c[0], "failed", run=1, attempt=1), ci(2, c[0], "passed", run=1, attempt=2))
    exported = world.export()
    assert exported.pairs == [] and exported.skipped == {"unreliable_ci_resolution": 1}


def test_non_verdict_runs_are_transparent(world: Any) -> None:
    c = history(world, 4)
    world.facts(ci(1, c[0], "failed"), ci(2, c[1], "cancelled"), ci(3, c[2], "error"),
                ci(4, c[3], "passed"))
    assert world.export().pairs == [(c[0], c[3])]


def test_a_commit_whose_workflows_disagree_drops_out(world: Any) -> None:
    c = history(world, 3)
    lint = {"workflow_id": "78", "workflow_name": "lint", "workflow_path": ".github/workflows/lint.yml"}
    world.facts(ci(1, c[0], "failed"), ci(2, c[1], "passed"), ci(3, c[1], "failed", **lint),
                ci(4, c[2], "passed"))
    exported = world.export()
    # c[1] is ambiguous, so neither of its runs is in a lineage: c[0] is fixed by c[2]
    assert exported.pairs == [(c[0], c[2])] and exported.skipped == {"ambiguous_workflow_verdicts": 1}


def test_incomplete_and_conflicting_runs_are_the_resolvers_counts(world: Any) -> None:
    c = history(world, 3)
    identified = {"repository_provider": "github", "repository_host": "github.com", "repository_id": "42"}
    world.facts(ci(1, c[0], "failed"),
                ci(2, c[1], "passed", repo="owner/other", **identified),  # resolves: another repository
                # a name an identified repository holds, without the identity: declined, its run incomplete
                ci(6, c[1], "passed", repo="owner/other"),
                ci(3, c[1], "passed", run=3, attempt=1), ci(4, c[1], "passed", run=3, attempt=2, branch="other"),
                ci(5, c[2], "passed"))
    exported = world.export()
    assert exported.pairs == [(c[0], c[2])]
    assert exported.skipped == {"conflicting_run_identity": 1, "repository_identity_absent": 1}


def test_quarantined_outcomes_are_not_read(world: Any) -> None:
    c = history(world, 3)
    world.facts(ci(1, c[0], "failed"), ci(2, c[1], "passed"), ci(3, c[2], "passed"))
    revision = world.store.quarantine(ORG, "ci_outcomes", "o2", "a re-run of a deleted workflow")
    [row] = world.export().rows
    assert (row["fixed_commit_sha"], row["provenance"]["quarantine_revision"]) == (c[2], revision)


# --- the gates ---------------------------------------------------------------------------------------


def test_the_passing_commit_must_contain_the_failing_one(world: Any) -> None:
    base = world.git.commit({"a.py": "a = 1\n"})
    broken = world.git.commit({"a.py": "a = 2\n"})
    rewritten = world.git.commit({"a.py": "a = 3\n"}, "force-pushed", parents=[base])  # main no longer holds it
    world.facts(ci(1, broken, "failed"), ci(2, rewritten, "passed"))
    exported = world.export()
    assert world.git_cli("merge-base", "--is-ancestor", base, rewritten) == ""  # git agrees: base is, broken is not
    assert exported.pairs == [] and exported.skipped == {"not_ancestor": 1}


def test_a_commit_missing_from_the_mirror_fails_the_ancestry_check(world: Any) -> None:
    c = history(world, 1)
    world.facts(ci(1, "e" * 40, "failed"), ci(2, c[0], "passed"))
    exported = world.export()
    assert exported.pairs == [] and exported.skipped == {"ancestry_check_failed": 1}


def test_an_unreadable_diff_is_diff_unavailable(world: Any) -> None:
    c0 = world.git.commit({"a.py": "a = 1\n"})
    c1 = world.git.commit({"a.py": "a = 2\n"})
    world.facts(ci(1, c0, "failed"), ci(2, c1, "passed"))
    blob = world.git_cli("rev-parse", f"{c1}:a.py").strip()
    (world.git.path / "objects" / blob[:2] / blob[2:]).unlink()  # a damaged mirror: the commits remain
    exported = world.export()
    assert exported.pairs == [] and exported.skipped == {"diff_unavailable": 1}


@pytest.mark.parametrize(("extra", "kept"), [(0, True), (1, False)])
def test_the_diff_cap_is_200_changed_lines(world: Any, extra: int, kept: bool) -> None:
    before = world.git.commit({"table.py": "".join(f"a{i} = {i}\n" for i in range(100))})
    after = world.git.commit({"table.py": "".join(f"b{i} = {i}\n" for i in range(100 + extra))})
    world.facts(ci(1, before, "failed"), ci(2, after, "passed"))
    exported = world.export()
    assert world.numstat(before, after) == 200 + extra
    if kept:
        assert exported.pairs == [(before, after)] and exported.skipped == {}
    else:
        assert exported.pairs == [] and exported.skipped == {"diff_oversized": 1}


def test_changed_lines_are_hunk_lines_across_files_renames_and_dashes(world: Any) -> None:
    start = world.git.commit({"a.py": "x = 1\n" * 5, "old.txt": "same line\n" * 40, "gone.py": "g = 1\n" * 3})
    end = world.git.commit({"a.py": "--- not a header\n" + "x = 1\n" * 4, "old.txt": None,
                            "new.txt": "same line\n" * 40, "gone.py": None})
    world.facts(ci(1, start, "failed"), ci(2, end, "passed"))
    [row] = world.export().rows
    # a.py: one line removed, one added ("--- not a header" is content); the rename adds none; gone.py: 3
    assert row["recovery_diff"] == world.upstream_diff(start, end)
    assert "rename from old.txt" in row["recovery_diff"]
    assert world.numstat(start, end) == 5


def test_a_repository_without_a_mirror_counts_each_candidate(world: Any) -> None:
    elsewhere = {"repo": "owner/elsewhere"}
    world.facts(ci(1, "1" * 40, "failed", **elsewhere), ci(2, "2" * 40, "passed", **elsewhere),
                ci(3, "3" * 40, "failed", **elsewhere), ci(4, "4" * 40, "passed", **elsewhere),
                ci(5, "5" * 40, "passed", **elsewhere))
    exported = world.export()
    assert exported.pairs == [] and exported.skipped == {"mirror_absent": 2}


def test_an_export_without_a_mirror_root_counts_every_candidate(world: Any) -> None:
    c = history(world, 2)
    world.facts(ci(1, c[0], "failed"), ci(2, c[1], "passed"))
    assert world.export(mirrors=False).skipped == {"mirror_absent": 1}


# --- the rows' evidence and split ----------------------------------------------------------------------


def test_the_calls_of_each_side_with_their_evidence(world: Any) -> None:
    c = history(world, 3)
    both = world.session("s1", c[0], c[2])  # this Session made the failing and the fixing commit
    only_fixed = world.session("s2", c[2], turns=1)
    world.session("s3", c[1])  # its commit is in between: not on either side
    world.facts(ci(1, c[0], "failed"), ci(2, c[2], "passed"))
    [row] = world.export().rows
    assert row["failed_inference_call_ids"] == sorted(both)
    assert row["fixed_inference_call_ids"] == sorted([*both, *only_fixed])
    observed = {(o.session_id, o.commit_sha): o.observation_id
                for o in world.store.facts("session_commit_observations", ORG)}
    assert [(e["session_id"], e["session_commit_observation_ids"]) for e in row["fixed_attribution_evidence"]] == \
        [("s1", [observed["s1", c[2]]])] * 2 + [("s2", [observed["s2", c[2]]])]
    assert [e["session_commit_observation_ids"] for e in row["failed_attribution_evidence"]] == \
        [[observed["s1", c[0]]]] * 2


@pytest.mark.parametrize(("failed_session", "fixed_session", "split"), [
    ("s1", "s2", "train"), ("s7", "s2", "eval"), ("s1", "s7", "eval"), (None, None, "train")])
def test_a_pair_is_eval_when_any_attributed_session_is(world: Any, failed_session: str | None,
                                                         fixed_session: str | None, split: str) -> None:
    c = history(world, 2)
    for session, sha in ((failed_session, c[0]), (fixed_session, c[1])):
        if session is not None:
            world.session(session, sha)
    world.facts(ci(1, c[0], "failed"), ci(2, c[1], "passed"))
    exported = world.export()
    assert [r["split"] for r in exported.rows] == [split]
    assert list(exported.files) == [f"recovery.{split}.jsonl"]


def test_an_unrepresentable_row_is_declined_once(world: Any) -> None:
    c = history(world, 4)
    world.facts(ci(1, c[0], "failed", workflow_name="tests \ud800"), ci(2, c[1], "passed", workflow_name="tests"),
                ci(3, c[2], "failed"), ci(4, c[3], "passed"))
    exported = world.export()
    assert exported.summary["pairs"] == 2 and exported.pairs == [(c[2], c[3])]
    assert exported.summary["recovery_skipped"] == {"unrepresentable_unicode": 1}


def test_every_row_validates_against_its_schema(world: Any) -> None:
    c = history(world, 6)
    world.session("s7", c[0])
    world.session("s1", c[1], c[3])
    world.facts(*(ci(i + 1, sha, "failed" if i % 2 == 0 else "passed") for i, sha in enumerate(c)))
    exported = world.export()
    assert len(exported.rows) == 3  # read_rows validated each one against the registered schemas
    checker = load_registry().schemas
    for row in exported.rows:  # and the schema is closed, every key required
        assert checker.errors(row) == []
        assert checker.errors({**row, "extra": 1})
        assert checker.errors({k: v for k, v in row.items() if k != "fixed_attribution_evidence"})


def test_nothing_to_pair_writes_nothing(world: Any, tmp_path: Path) -> None:
    c = history(world, 2)
    world.facts(ci(1, c[0], "passed"), ci(2, c[1], "failed"))
    exported = world.export()
    assert exported.summary["pairs"] == 0 and exported.summary["written"] == {}
    assert sorted(p.name for p in exported.out.iterdir()) == [".sediment-recovery-target"]


# --- identified repositories -----------------------------------------------------------------------

IDENTIFIED = {"repository_provider": "github", "repository_host": "github.com", "repository_id": "424242"}


def test_an_identified_repository_pairs_through_the_mirror_of_its_identity(identified_world: Any) -> None:
    world = identified_world
    c = history(world, 2)
    calls = world.session("s1", c[1])
    world.facts(ci(1, c[0], "failed", **IDENTIFIED), ci(2, c[1], "passed", **IDENTIFIED))
    [row] = world.export().rows
    assert row["repository_identity"] == {"provider": "github", "host": "github.com", "repository_id": "424242"}
    assert (row["repo"], row["failed_commit_sha"], row["fixed_commit_sha"]) == (REPO, c[0], c[1])
    assert row["recovery_diff"] == world.upstream_diff(c[0], c[1])
    [observation] = world.store.facts("session_commit_observations", ORG)
    assert observation.repository_id == "424242"  # the refresh of an identified mirror qualifies its edges
    assert row["fixed_attribution_evidence"] == [
        {"inference_call_id": i, "session_id": "s1", "attribution_sources": ["git_notes"],
         "session_commit_observation_ids": [observation.observation_id]} for i in sorted(calls)]


def test_a_mirror_under_the_name_is_not_the_identified_repositorys(world: Any) -> None:
    c = history(world, 2)  # a mirror keyed by the name only
    world.facts(ci(1, c[0], "failed", **IDENTIFIED), ci(2, c[1], "passed", **IDENTIFIED))
    exported = world.export()
    assert exported.pairs == [] and exported.skipped == {"mirror_absent": 1}
