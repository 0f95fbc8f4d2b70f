"""`sediment report merge-retention` (docs/reports.md): membership, scoring, rows, CLI."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sediment.derive.attributed_completions import AttributedCompletion
from sediment.derive.edit_retention import four_gram_containment
from sediment.git.mirror_root import MirrorRoot
from sediment.git.repositories import RepositoryContext
from sediment.model.facts import DeveloperDecision, PullRequestMerge, SessionCommitObservation
from sediment.model.policy import Provenance
from sediment.reports.merge_retention import (
    MERGE_RETENTION_SCHEMA_ID,
    ROW_FIELDS,
    SCORING_SKIP_REASONS,
    MergeRetentionPolicy,
    merge_retention,
)
from sediment.reports.statistics import distribution, percentile, summary, thresholds
from sediment.testing import ORG, REPO, T0, GitRepo

PROVENANCE = Provenance(policy_version="5", quarantine_revision=0, policy_digest=None)

ADD_V1 = "def add(a, b):\n    return a - b\n"
ADD_V2 = "def add(a, b):\n    return a + b\n"
SUB = "\n\ndef sub(a, b):\n    return a - b\n"
UTIL = "def helper(x):\n    return x * 2 + 1\n"


def observation(session: str, sha: str) -> SessionCommitObservation:
    return SessionCommitObservation(observation_id=f"obs-{session}-{sha[:7]}", org_id=ORG, repo=REPO,
                                    commit_sha=sha, session_id=session,
                                    captured_at=T0)


def completion(session: str, sha: str, path: str, *, call: str | None = None, observed: bool = True,
               accepted_explicitly: bool = False) -> AttributedCompletion:
    call_id = call or f"{session}-c0"
    decisions = ()
    if accepted_explicitly:
        decisions = (DeveloperDecision(decision_id=f"d-{call_id}", org_id=ORG, session_id=session,
                                       agent_harness="codex", file_path=path, accepted=True, explicit=True,
                                       interaction_mode="agent", call_id=call_id, occurred_at=T0, captured_at=T0),)
    return AttributedCompletion(
        org_id=ORG, session_id=session, inference_call_id=call_id, repo=REPO, commit_sha=sha, file_path=path,
        similarity_score=1.0, attribution_source="git_notes", decisions=decisions, provenance=PROVENANCE,
        split="train", session_commit_observations=(observation(session, sha),) if observed else ())


def merge(pr: int, head: str, base: str, merge_commit: str) -> PullRequestMerge:
    return PullRequestMerge(merge_id=f"merge-{pr}", org_id=ORG, repo=REPO, pr_number=pr, head_ref=f"pr-{pr}",
                            head_sha=head, base_ref="main", base_sha=base, merge_commit_sha=merge_commit,
                            merged_at=T0 + timedelta(hours=pr), captured_at=T0 + timedelta(hours=pr))


@pytest.fixture
def history(tmp_path: Path) -> dict[str, Any]:
    """main: root → M1 (merges PR 1: c1 fixes add(), c2 adds sub() and renames nothing) → M2
    (merges PR 2: c3 adds util.py, c4 renames it to helpers.py). `stray` sits on a branch no pull
    request merged; `both` is in the heads of PRs 3 and 4 (a shared ancestor, ambiguous)."""
    (tmp_path / "mirrors").mkdir()
    root = MirrorRoot(tmp_path / "mirrors")
    repo = GitRepo(root)
    base = repo.commit({"calc.py": ADD_V1})
    c1 = repo.commit({"calc.py": ADD_V2}, branch="pr-1", parents=[base])
    c2 = repo.commit({"calc.py": ADD_V2 + SUB}, branch="pr-1")
    # the merge rewrites the fixed line: only part of c1's added text survives at the merge
    m1 = repo.commit({"calc.py": "def add(a, b):\n    return b + a\n" + SUB}, parents=[base, c2])
    c3 = repo.commit({"util.py": UTIL}, branch="pr-2", parents=[m1])
    c4 = repo.commit({"util.py": None, "helpers.py": UTIL}, branch="pr-2")
    m2 = repo.commit({"helpers.py": UTIL}, parents=[m1, c4])
    stray = repo.commit({"stray.py": "print('never merged')\n"}, branch="stray", parents=[m2])
    both = repo.commit({"both.py": "print('in two heads')\n"}, branch="shared", parents=[m2])
    h3 = repo.commit({"three.py": "print(3)\n"}, branch="pr-3", parents=[both])
    h4 = repo.commit({"four.py": "print(4)\n"}, branch="pr-4", parents=[both])
    merges = [merge(1, c2, base, m1), merge(2, c4, m1, m2), merge(3, h3, m2, h3), merge(4, h4, m2, h4)]
    return {"root": root, "base": base, "c1": c1, "c2": c2, "m1": m1, "c3": c3, "c4": c4, "m2": m2,
            "stray": stray, "both": both, "merges": merges}


def evidence(h: dict[str, Any]) -> list[AttributedCompletion]:
    return [
        completion("s1", h["c1"], "calc.py", accepted_explicitly=True),   # joined PR 1, scored
        completion("s1", h["c1"], "nothere.py"),                          # joined, no section for the file
        completion("s2", h["c3"], "util.py"),                             # joined PR 2, followed through the rename
        completion("s3", h["c1"], "calc.py", observed=False),             # no git note: not a candidate
        completion("s4", h["stray"], "stray.py"),                         # no pull request
        completion("s5", h["both"], "both.py"),                           # two pull requests
        completion("s6", "f" * 40, "gone.py"),                            # the mirror lacks the commit
    ]


def run(h: dict[str, Any], completions: list[AttributedCompletion], merges: list[PullRequestMerge] | None = None,
        **kwargs: Any) -> Any:
    merges = h["merges"] if merges is None else merges
    return merge_retention(completions, merges, org_id=ORG,
                           repositories=RepositoryContext.build(ORG, merges), mirrors=h["root"], quarantine_revision=3,
                           policy_digest=None, **kwargs)


def test_membership_reasons_and_scoring_skips(history: dict[str, Any]) -> None:
    report = run(history, evidence(history)).report
    assert report.attributed_file_candidates == 6
    assert report.attribution_skips == {"session_commit_unobserved": 1}
    assert report.membership == {"joined": 3, "attribution_without_merge": 1, "ambiguous_pr_membership": 1,
                                 "ancestry_check_failed": 1}
    assert report.candidates_joined_to_merge == 3
    assert report.joined_pull_requests == 2
    assert list(report.scoring_skips) == list(SCORING_SKIP_REASONS)
    assert {k: v for k, v in report.scoring_skips.items() if v} == {"source_file_diff_absent": 1}
    assert (report.scored_rows, report.scored_pull_requests) == (2, 2)


def test_scores_follow_the_file_to_head_and_merge(history: dict[str, Any]) -> None:
    rows = run(history, evidence(history)).rows
    assert [list(r) for r in rows] == [list(ROW_FIELDS)] * 2
    fixed, moved = rows
    assert (fixed["pr_number"], fixed["source_file_path"], fixed["head_file_path"], fixed["merge_file_path"]) == \
        (1, "calc.py", "calc.py", "calc.py")
    assert fixed["head_retention_score"] == 1.0
    # "    return a + b\n" against "    return b + a\n" + sub(): 10 of its 14 four-grams survive
    # ("rn a", "n a " from sub()'s "return a - b"; " a +", "a + ", " + b", "+ b\n" are gone)
    assert fixed["merge_retention_score"] == 10 / 14
    assert fixed["merge_retention_score"] == four_gram_containment("    return a + b\n",
                                                                   "def add(a, b):\n    return b + a\n" + SUB)
    assert (moved["pr_number"], moved["head_file_path"], moved["merge_file_path"]) == (2, "helpers.py", "helpers.py")
    assert (moved["head_retention_score"], moved["merge_retention_score"]) == (1.0, 1.0)
    assert fixed["provenance"] == {"policy_version": "3", "quarantine_revision": 3, "policy_digest": None}
    assert fixed["session_commit_observation_ids"] == [f"obs-s1-{history['c1'][:7]}"]


def test_rows_validate_against_the_merge_retention_schema(history: dict[str, Any]) -> None:
    from sediment.validation import SchemaSet, core_schemas

    schemas = SchemaSet(core_schemas())
    rows = run(history, evidence(history)).rows
    assert rows
    for row in rows:
        assert schemas.errors(row, MERGE_RETENTION_SCHEMA_ID) == []
    broken = {**rows[0], "head_retention_score": 1.5}
    assert schemas.errors(broken, MERGE_RETENTION_SCHEMA_ID)
    assert schemas.errors({k: v for k, v in rows[0].items() if k != "merge_id"}, MERGE_RETENTION_SCHEMA_ID)


def test_distributions_thresholds_and_explicit_accepts(history: dict[str, Any]) -> None:
    report = run(history, evidence(history)).report
    assert report.head.distribution.count == 2 and report.head.distribution.mean == 1.0
    assert report.merge.distribution.median == pytest.approx((1.0 + 10 / 14) / 2)
    assert report.merge.distribution.p10 == pytest.approx(10 / 14 + 0.1 * (1.0 - 10 / 14))
    assert [(t.threshold, t.below, t.total, t.rate) for t in report.merge.thresholds] == \
        [(0.8, 1, 2, 0.5), (0.9, 1, 2, 0.5), (1.0, 1, 2, 0.5)]
    assert [(t.below, t.total) for t in report.head.thresholds] == [(0, 2), (0, 2), (0, 2)]
    assert report.explicit_accept_rows == 1
    assert [(t.below, t.total) for t in report.explicit_accept_merge_thresholds] == [(1, 1)] * 3


def test_a_pr_number_on_the_commits_ci_joins_without_ancestry(history: dict[str, Any], tmp_path: Path) -> None:
    from sediment.testing import outcome

    stray = completion("s4", history["stray"], "stray.py")
    stray = stray.model_copy(update={"ci_outcomes": (outcome("o1", history["stray"], pr_number=9),)})
    pr9 = merge(9, history["c2"], history["base"], history["m1"])
    found = run(history, [stray], merges=[pr9]).report
    assert found.membership["joined"] == 1
    # joined by number, but PR 9's head does not hold stray.py
    assert found.scoring_skips["head_file_absent"] == 1
    without_mirrors = merge_retention([completion("s1", history["c1"], "calc.py")], history["merges"], org_id=ORG,
                                      repositories=RepositoryContext.build(ORG, history["merges"]), mirrors=None,
                                      quarantine_revision=0, policy_digest=None).report
    assert without_mirrors.membership["ancestry_check_failed"] == 1


def test_each_scoring_skip_names_the_first_problem(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    root = MirrorRoot(tmp_path / "m")
    repo = GitRepo(root)
    base = repo.commit({"keep.py": "one\ntwo\nthree\n", "gone.py": "print('soon gone')\n"})
    trimmed = repo.commit({"keep.py": "one\n"}, branch="pr-1", parents=[base])           # deletes lines only
    binary = repo.commit({"blob.bin": "\x00\x01 not text \x00"}, branch="pr-1")
    big = repo.commit({"big.py": "x = 1\n" * 40}, branch="pr-1")
    edited = repo.commit({"gone.py": "print('edited, then deleted')\n"}, branch="pr-1")
    merged = repo.commit({"gone.py": None, "big.py": "x = 1\n" * 40, "blob.bin": "\x00\x01 not text \x00",
                          "keep.py": "one\n"}, parents=[base, edited])
    merges = [merge(1, edited, base, merged)]
    found = merge_retention(
        [completion("s1", trimmed, "keep.py"), completion("s2", binary, "blob.bin"),
         completion("s3", big, "big.py"), completion("s4", edited, "gone.py")],
        merges, org_id=ORG, repositories=RepositoryContext.build(ORG, merges), mirrors=root, quarantine_revision=0,
        policy_digest=None, policy=MergeRetentionPolicy(max_file_bytes=100))
    assert found.report.membership["joined"] == 4
    assert {k: v for k, v in found.report.scoring_skips.items() if v} == {
        "source_text_empty": 1, "binary_file": 1, "file_oversized": 1, "merge_file_absent": 1}
    assert found.rows == ()
    assert found.report.attribution_skips == {"session_commit_unobserved": 0}
    with pytest.raises(ValueError, match=r"MergeRetentionPolicy.max_file_bytes must be >= 1 \(got 0\)"):
        MergeRetentionPolicy(max_file_bytes=0)


def test_the_boundary_leaves_later_merges_out(history: dict[str, Any]) -> None:
    report = run(history, evidence(history), as_of=T0 + timedelta(hours=1, minutes=30)).report
    # only PR 1 was captured by then: util.py's commit has no merge yet, both.py's only one is gone
    assert report.membership == {"joined": 2, "attribution_without_merge": 3, "ambiguous_pr_membership": 0,
                                 "ancestry_check_failed": 1}


def test_shuffled_evidence_gives_an_equal_report_and_rows(history: dict[str, Any]) -> None:
    first = run(history, evidence(history))
    shuffled = evidence(history)
    random.Random(7).shuffle(shuffled)
    merges = list(history["merges"])
    random.Random(3).shuffle(merges)
    again = run(history, shuffled, merges=merges)
    assert json.dumps(first.report.as_json()) == json.dumps(again.report.as_json())
    assert first.rows == again.rows


def test_statistics_interpolate_linearly() -> None:
    values = [1.0, 0.3, 0.1, 0.4, 0.2]
    assert percentile(sorted(values), 0.1) == pytest.approx(0.14)
    assert percentile(sorted(values), 0.9) == pytest.approx(0.76)
    d = distribution(values)
    assert (d.count, d.mean, d.median) == (5, pytest.approx(0.4), 0.3)
    assert distribution([]).mean is None
    s = summary([0.5])
    assert (s.count, s.stdev, s.min, s.max) == (1, 0.0, 0.5, 0.5)
    assert summary([0.0, 1.0]).stdev == pytest.approx(0.7071067811865476)
    assert [(t.below, t.rate) for t in thresholds([0.8, 0.85, 1.0])] == [(0, 0.0), (2, 2 / 3), (2, 2 / 3)]
    assert [t.rate for t in thresholds([])] == [None, None, None]


# --- the command --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's store and mirror, plus one recorded merge of the demo's first agent commits."""
    from sediment.demo import ORG as DEMO_ORG
    from sediment.demo import run_demo
    from sediment.store import FactStore

    out = tmp_path_factory.mktemp("demo")
    run_demo(out)
    home = out / "home"
    store = FactStore(f"sqlite:///{home / 'facts.db'}")
    rows = [r for r in store.facts("session_commit_observations", DEMO_ORG)]
    mirror = MirrorRoot(home / "mirrors")
    located = mirror.mirrors(DEMO_ORG)[0]
    opened = mirror.open(DEMO_ORG, located.repo, located.identity)
    assert opened is not None
    shas = sorted({r.commit_sha for r in rows if isinstance(r, SessionCommitObservation)})
    # a PR whose head is the last observed commit of the first branch and whose base is the root
    tip = max(shas, key=opened.committer_time)
    first = min((c.sha for c in opened.commits()), key=opened.committer_time)
    identity = located.identity
    store.append([PullRequestMerge(
        merge_id="merge-demo-1", org_id=DEMO_ORG, repo=located.repo, pr_number=1, head_ref="feature",
        head_sha=tip, base_ref="main", base_sha=first, merge_commit_sha=tip, merged_at=T0, captured_at=T0,
        repository_provider=None if identity is None else identity.provider,
        repository_host=None if identity is None else identity.host,
        repository_id=None if identity is None else identity.repository_id)])
    return home


def invoke(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_") or k == "SEDIMENT_LOAD_PLUGINS"}
    environ.update({"SEDIMENT_HOME": str(home), "SEDIMENT_ORG_ID": "demo"})
    return subprocess.run([sys.executable, "-m", "sediment", "report", *args], capture_output=True, text=True,
                          env=environ, timeout=300, check=False)


def test_the_demo_store_report_joins_and_scores(demo_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    result = invoke(demo_home, "merge-retention", "--json", "--rows-out", str(out))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert list(report)[:8] == ["org_id", "attributed_file_candidates", "candidates_joined_to_merge", "scored_rows",
                                "joined_pull_requests", "scored_pull_requests", "membership", "scoring_skips"]
    assert report["attributed_file_candidates"] >= 5
    assert report["candidates_joined_to_merge"] >= 1 and report["scored_rows"] >= 1
    lines = out.read_text().splitlines()
    assert len(lines) == report["scored_rows"]
    assert list(json.loads(lines[0])) == list(ROW_FIELDS)
    assert f"wrote {len(lines)} merge-retention rows to {out}" in result.stderr
    text = invoke(demo_home, "merge-retention")
    assert text.returncode == 0
    assert "merge retention · org demo" in text.stdout and "█" in text.stdout


def test_a_write_failure_is_one_line(demo_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "missing" / "rows.jsonl"
    result = invoke(demo_home, "merge-retention", "--rows-out", str(out))
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: couldn't write merge-retention rows: ")
    assert not out.parent.exists()


def test_a_bad_boundary_is_a_usage_error(demo_home: Path) -> None:
    result = invoke(demo_home, "merge-retention", "--as-of", "yesterday")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: --as-of is not an RFC 3339 time: 'yesterday'"


def test_no_rows_leaves_the_file_unchanged(demo_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    out.write_text("old\n")
    result = invoke(demo_home, "merge-retention", "--rows-out", str(out), "--as-of", "2000-01-01T00:00:00Z")
    assert result.returncode == 0
    assert out.read_text() == "old\n"
    assert f"wrote 0 merge-retention rows; left {out} unchanged" in result.stderr
