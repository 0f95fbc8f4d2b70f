"""The order of a lineage's runs (plugins/recovery/run_order.py) on a real mirror: commit ancestry
first, then the provider's time of the verdict attempt, then capture time, then the outcome id;
the same order for any input order, repeated."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from sediment_recovery.run_order import commit_ancestry, order_runs, run_key
from sediment_recovery.transitions import ResolvedRun, lineages

from sediment.plugin import Mirror, resolve_ci
from sediment.testing import ORG, GitRepo, MirrorRoot, outcome

MISSING = "e" * 40


def run(n: int, sha: str, result: str, *, finished: int | None = None, minutes: int = 0) -> Any:
    """Run ``n`` on ``sha``: a GitHub ``workflow_run`` the provider says finished at minute
    ``finished`` of 2026-01-05 10:00 (``None``: no time), captured at minute ``minutes``."""
    raw = {} if finished is None else {"updated_at": f"2026-01-05T{10 + finished // 60:02d}:{finished % 60:02d}:00Z"}
    return outcome(f"o{n:02d}", sha, result, run_id=str(n), minutes=minutes, raw=raw,
                   source_event_type="github.workflow_run.completed")


def resolved(outcomes: list[Any]) -> list[ResolvedRun]:
    counts: Counter[str] = Counter()
    [runs] = lineages(outcomes, resolve_ci(outcomes, quarantine_revision=0), counts).values()
    assert counts == {}
    return runs


def ids(runs: list[ResolvedRun]) -> list[str]:
    return [r.outcome.outcome_id for r in runs]


def mirror_of(root: MirrorRoot) -> Mirror:
    mirror = root.open(ORG, "owner/repo")
    assert mirror is not None
    return mirror


def graph(git: GitRepo) -> dict[str, str]:
    """c0 - c1 - c2 - m (m merges t2), t1 - t2 branching off c1, and an unrelated root u."""
    c0 = git.commit({"a.py": "0\n"})
    c1 = git.commit({"a.py": "1\n"})
    c2 = git.commit({"a.py": "2\n"})
    t1 = git.commit({"b.py": "1\n"}, parents=[c1], branch="topic")
    t2 = git.commit({"b.py": "2\n"}, branch="topic")
    m = git.commit({"b.py": "2\n"}, "merge", parents=[c2, t2])
    u = git.commit({"c.py": "u\n"}, "unrelated", parents=[], branch="other")
    return {"c0": c0, "c1": c1, "c2": c2, "t1": t1, "t2": t2, "m": m, "u": u}


def test_nearest_ancestors_are_the_edges_of_the_ancestry_among_the_commits(mirror_root: MirrorRoot,
                                                                           git_repo: GitRepo) -> None:
    c = graph(git_repo)
    mirror = mirror_of(mirror_root)
    found = mirror.nearest_ancestors([*c.values(), MISSING])
    assert {k: set(v) for k, v in found.items()} == {
        c["c0"]: set(), c["c1"]: {c["c0"]}, c["c2"]: {c["c1"]}, c["t1"]: {c["c1"]}, c["t2"]: {c["t1"]},
        c["m"]: {c["c2"], c["t2"]}, c["u"]: set()}  # a commit the mirror lacks is left out
    # without c2 and t1 the merge reaches c1 on one side and t2 on the other
    assert set(mirror.nearest_ancestors([c["c0"], c["c1"], c["t2"], c["m"]])[c["m"]]) == {c["c1"], c["t2"]}
    # the closure of the edges is git's ancestry
    closure: dict[str, set[str]] = {}
    for sha in found:
        stack, seen = list(found[sha]), set()
        while stack:
            if (top := stack.pop()) not in seen:
                seen.add(top)
                stack.extend(found[top])
        closure[sha] = seen
    for a in found:
        for b in found:
            assert (a in closure[b]) == (a != b and mirror.is_ancestor_or_equal(a, b))


def test_ancestry_orders_runs_before_any_clock(mirror_root: MirrorRoot, git_repo: GitRepo) -> None:
    c = graph(git_repo)
    runs = resolved([run(1, c["c2"], "passed", finished=1, minutes=1), run(2, c["c1"], "failed", finished=9, minutes=9)])
    assert ids(runs) == ["o01", "o02"]  # by time alone
    assert ids(order_runs(runs, commit_ancestry(runs, mirror_of(mirror_root)))) == ["o02", "o01"]


def test_the_providers_time_orders_what_ancestry_leaves_free(mirror_root: MirrorRoot, git_repo: GitRepo) -> None:
    c = graph(git_repo)
    # unrelated commits, one capture time (a backfill): the provider's time decides, not o01 < o02
    runs = resolved([run(1, c["u"], "passed", finished=30, minutes=5), run(2, c["c2"], "failed", finished=10, minutes=5)])
    assert ids(order_runs(runs, commit_ancestry(runs, mirror_of(mirror_root)))) == ["o02", "o01"]
    # two runs on one commit: the same
    runs = resolved([run(1, c["c2"], "failed", finished=30), run(2, c["c2"], "failed", finished=10)])
    assert ids(order_runs(runs, commit_ancestry(runs, mirror_of(mirror_root)))) == ["o02", "o01"]


def test_capture_time_stands_in_for_a_missing_time_then_the_outcome_id(mirror_root: MirrorRoot,
                                                                       git_repo: GitRepo) -> None:
    c = graph(git_repo)
    mirror = mirror_of(mirror_root)
    runs = resolved([run(1, c["u"], "passed", minutes=30), run(2, c["c2"], "failed", minutes=10)])
    assert ids(order_runs(runs, commit_ancestry(runs, mirror))) == ["o02", "o01"]
    runs = resolved([run(2, c["u"], "passed", minutes=10), run(1, c["c2"], "failed", minutes=10)])
    assert ids(order_runs(runs, commit_ancestry(runs, mirror))) == ["o01", "o02"]
    # a provider time and a capture time compare as instants: run 2 has no provider time and was
    # captured at 12:10, after run 1 finished (10:20) though run 1 was captured later still (20:20)
    runs = resolved([run(1, c["u"], "passed", finished=20, minutes=500), run(2, c["c2"], "failed", minutes=10)])
    assert {r.outcome.outcome_id: run_key(r)[0] for r in runs} == {
        "o01": "2026-01-05T10:20:00.000000Z", "o02": "2026-01-05T12:10:00.000000Z"}
    assert ids(order_runs(runs, commit_ancestry(runs, mirror))) == ["o01", "o02"]


def test_no_mirror_or_a_cyclic_map_still_orders_every_run(git_repo: GitRepo) -> None:
    c = graph(git_repo)
    runs = resolved([run(1, c["c1"], "failed", finished=2), run(2, c["c2"], "passed", finished=1)])
    assert ids(order_runs(runs, commit_ancestry(runs, None))) == ["o02", "o01"]  # time alone
    assert ids(order_runs(runs, {c["c1"]: [c["c2"]], c["c2"]: [c["c1"]]})) == ["o02", "o01"]


def test_the_order_is_the_same_for_any_input_order_and_respects_ancestry(mirror_root: MirrorRoot,
                                                                         git_repo: GitRepo) -> None:
    c = graph(git_repo)
    mirror = mirror_of(mirror_root)
    shas = [*c.values(), MISSING]
    picker = random.Random(7)
    outcomes = []
    for n in range(40):
        sha = shas[n % len(shas)]
        result = "failed" if shas.index(sha) % 2 else "passed"  # one verdict per commit
        finished = picker.choice([None, picker.randrange(0, 120)])
        outcomes.append(run(n, sha, result, finished=finished, minutes=picker.randrange(0, 3)))

    def order(given: list[Any]) -> list[str]:
        runs = resolved(given)
        picker.shuffle(runs)
        return ids(order_runs(runs, commit_ancestry(list(reversed(runs)), mirror)))

    expected = order(outcomes)
    for _ in range(6):
        shuffled = list(outcomes)
        picker.shuffle(shuffled)
        assert order(shuffled) == expected
        assert order(outcomes) == expected
    by_id = {o.outcome_id: o.commit_sha for o in outcomes}
    placed = [by_id[i] for i in expected]
    for i, earlier in enumerate(placed):
        for later in placed[i + 1:]:
            if MISSING not in (earlier, later) and earlier != later:
                assert not mirror.is_ancestor_or_equal(later, earlier), "a run came before one on its ancestor"
