"""``sediment report leakage``: overlaps across the splits of exports, found on the demo's exports
with overlaps planted on purpose, and nothing else (docs/leakage.md)."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sediment.demo import run_demo
from sediment.git.mirror_root import MirrorRoot
from sediment.reports.leakage import leakage_report
from sediment.reports.leakage_git import MirrorRanges
from sediment.reports.leakage_html import EXAMPLES, IDS, PREVIEW_CHARS, TEXT_CHARS, leakage_page
from sediment.reports.leakage_rows import ExportedRow, read_export_dirs
from sediment.testing import ORG, GitRepo


def sediment(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True,
                          env={**environ, **(env or {})}, timeout=300, check=False)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "demo"
    run_demo(out)
    return out


def export_dirs(root: Path) -> list[Path]:
    return sorted(p for p in [*(root / "exports").iterdir(), *(root / "profiles").iterdir()] if p.is_dir())


def copy_demo(demo: Path, to: Path) -> Path:
    shutil.copytree(demo / "exports", to / "exports")
    shutil.copytree(demo / "profiles", to / "profiles")
    return to


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def append(path: Path, row: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")


def findings(report: dict[str, Any], kind: str) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """(key, ((split, row id), ...)) of each finding of ``kind``, row ids deduplicated."""
    return [(f["key"], tuple(sorted({(r["split"], r["row_id"]) for r in f["rows"]})))
            for f in report["findings"] if f["kind"] == kind]


def report_json(*args: str) -> dict[str, Any]:
    result = sediment("report", "leakage", *args, "--json")
    assert result.returncode in (0, 10), result.stderr
    return dict(json.loads(result.stdout))


def plant_exact_prompt(root: Path) -> tuple[str, str]:
    """An SFT eval row asking exactly (but for case and spacing) what a train row asks."""
    train = rows_of(root / "exports/sft/sft.train.jsonl")[0]
    planted = json.loads(json.dumps(train))
    planted["metadata"]["completion_id"] = "call_planted_exact"
    planted["metadata"]["split"] = "eval"
    user = next(m for m in planted["prompt"] if m["role"] == "user")
    user["content"] = "  " + user["content"].upper().replace(" ", "   ") + "\n"
    planted["metadata"]["repository_identity"] = None
    planted["metadata"].pop("repo", None)
    append(root / "exports/sft/sft.eval.jsonl", planted)
    return train["metadata"]["completion_id"], "call_planted_exact"


# --- exact duplicates, repositories and commits ---------------------------------------------------


def test_the_demo_has_no_exact_prompt_across_splits_until_one_is_planted(demo: Path, tmp_path: Path) -> None:
    clean = report_json(*map(str, export_dirs(demo)))
    assert findings(clean, "exact_prompt") == []
    assert findings(clean, "same_task_id") == []
    assert clean["kinds"]["same_repository"]["findings"] == 1  # every demo row is acme/calc: one repository
    root = copy_demo(demo, tmp_path / "planted")
    train_id, planted_id = plant_exact_prompt(root)
    report = report_json(*map(str, export_dirs(root)))
    [(_key, rows)] = findings(report, "exact_prompt")
    # the planted row, and every train row that asks what the copied SFT row asks (its DPO pair,
    # its diff-SFT twin, its profile lines): nothing else
    asked = {r.prompt for r in read_export_dirs([demo / "exports/sft"]).rows if r.row_id == train_id}
    same = {("train", r.row_id) for r in read_export_dirs(export_dirs(demo)).rows if r.prompt in asked}
    assert ("train", train_id) in same and all(split == "train" for split, _ in same)
    assert set(rows) == {("eval", planted_id), *same}
    # everything else is as it was
    for kind in ("same_base_commit", "overlapping_commits"):
        assert findings(report, kind) == findings(clean, kind)


def test_the_same_external_task_id_on_both_sides_is_found(demo: Path, tmp_path: Path) -> None:
    root = copy_demo(demo, tmp_path / "planted")
    train = rows_of(root / "exports/swe-bench/tasks.train.jsonl")
    evals = rows_of(root / "exports/swe-bench/tasks.eval.jsonl")
    train[0]["metadata"]["task_id"] = "pilot-17"
    evals[0]["metadata"]["task_id"] = "pilot-17"
    train[1]["metadata"]["task_id"] = "pilot-18"  # on one side only: nothing
    for path, rows in (("tasks.train.jsonl", train), ("tasks.eval.jsonl", evals)):
        (root / "exports/swe-bench" / path).write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = report_json(str(root / "exports/swe-bench"))
    assert findings(report, "same_task_id") == [
        ("pilot-17", (("eval", evals[0]["instance_id"]), ("train", train[0]["instance_id"])))]


def test_the_commits_rows_name_overlap_only_where_they_are_shared(tmp_path: Path) -> None:
    """A recovery row's fix commit is a task's verified commit: one commit on both sides."""
    exports = tmp_path / "exports"
    exports.mkdir()
    base = {"repo": "acme/calc", "problem_statement": "p"}
    append(exports / "tasks.train.jsonl", {**base, "instance_id": "t1", "base_commit": "a" * 40,
                                           "ci_resolution": {"commit_sha": "b" * 40}, "problem_statement": "one"})
    append(exports / "tasks.eval.jsonl", {**base, "instance_id": "e1", "base_commit": "c" * 40,
                                          "ci_resolution": {"commit_sha": "b" * 40}, "problem_statement": "two"})
    append(exports / "tasks.eval.jsonl", {**base, "instance_id": "e2", "base_commit": "a" * 40,
                                          "ci_resolution": {"commit_sha": "d" * 40}, "problem_statement": "three"})
    append(exports / "tasks.eval.jsonl", {"repo": "other/repo", "instance_id": "e3", "base_commit": "a" * 40,
                                          "ci_resolution": {"commit_sha": "b" * 40}, "problem_statement": "four"})
    report = report_json(str(exports))
    assert findings(report, "same_base_commit") == [(f"acme/calc@{'a' * 40}", (("eval", "e2"), ("train", "t1")))]
    assert findings(report, "overlapping_commits") == [(f"acme/calc@{'b' * 40}", (("eval", "e1"), ("train", "t1")))]
    assert findings(report, "same_repository") == [("acme/calc", (("eval", "e1"), ("eval", "e2"), ("train", "t1")))]


def test_commit_ranges_overlap_through_the_mirror(tmp_path: Path, mirror_root: MirrorRoot) -> None:
    """train: c0..c3 and eval: c1..c2 name no commit in common; the mirror shows c1 (eval's base)
    and c2 (its head) inside train's range. A row on another branch from c0 shares nothing."""
    git = GitRepo(mirror_root, "acme/calc")
    c = [git.commit({"calc.py": f"v{i}\n"}, f"c{i}") for i in range(4)]
    side = git.commit({"other.py": "x\n"}, "side", parents=[c[0]], branch="side")
    exports = tmp_path / "exports"
    exports.mkdir()
    common = {"repo": "acme/calc", "org_id": ORG}
    append(exports / "tasks.train.jsonl", {**common, "instance_id": "t", "base_commit": c[0],
                                           "ci_resolution": {"commit_sha": c[3]}, "problem_statement": "t"})
    append(exports / "tasks.eval.jsonl", {**common, "instance_id": "e", "base_commit": c[1],
                                          "ci_resolution": {"commit_sha": c[2]}, "problem_statement": "e"})
    append(exports / "tasks.eval.jsonl", {**common, "instance_id": "s", "base_commit": c[0],
                                          "ci_resolution": {"commit_sha": side}, "problem_statement": "s"})
    read = read_export_dirs([exports])
    assert [f for f in leakage_report(read.rows, inputs=read.files).findings if f.kind == "overlapping_commits"] == []
    ranges = MirrorRanges(mirror_root.path)
    walked = leakage_report(read.rows, inputs=read.files, walk=ranges.walk)
    found = [(f.key, sorted(r.row_id for r in f.rows)) for f in walked.findings if f.kind == "overlapping_commits"]
    assert found == sorted([(f"acme/calc@{c[1]}", ["e", "t"]), (f"acme/calc@{c[2]}", ["e", "t"])])
    assert not ranges.unchecked
    cli = report_json(str(exports), "--mirrors", str(mirror_root.path))
    assert [k for k, _ in findings(cli, "overlapping_commits")] == [k for k, _ in found]


# --- the tag file, exit codes, hostile input ----------------------------------------------------------


def test_tags_name_the_other_split_and_fail_on_exits_12(demo: Path, tmp_path: Path) -> None:
    root = copy_demo(demo, tmp_path / "planted")
    train_id, planted_id = plant_exact_prompt(root)
    out = tmp_path / "report"
    result = sediment("report", "leakage", str(root / "exports/sft"), "--out", str(out), "--fail-on", "exact_prompt")
    assert result.returncode == 12, result.stderr
    assert "leakage found: exact_prompt" in result.stderr
    tags = {t["row_id"]: t for t in rows_of(out / "eval_sets.jsonl")}
    assert tags[planted_id]["eval_sets"] == ["split:train"] and "exact_prompt" in tags[planted_id]["kinds"]
    assert tags[train_id]["eval_sets"] == ["split:eval"]
    assert set(tags) == {r.row_id for r in read_export_dirs([root / "exports/sft"]).rows}  # every row, tagged or not
    assert sediment("report", "leakage", str(demo / "exports/sft"), "--fail-on", "exact_prompt").returncode == 0
    unknown = sediment("report", "leakage", str(demo / "exports/sft"), "--fail-on", "everything")
    assert unknown.returncode == 2 and "unknown --fail-on kind 'everything'" in unknown.stderr


def test_a_bad_line_is_named_and_every_other_row_is_read(demo: Path, tmp_path: Path) -> None:
    root = copy_demo(demo, tmp_path / "bad")
    path = root / "exports/sft/sft.train.jsonl"
    good = len(rows_of(path))
    with path.open("a", encoding="utf-8") as handle:
        handle.write("{not json\n[1, 2]\n")
    result = sediment("report", "leakage", str(root / "exports/sft"), "--json")
    assert result.returncode == 8
    assert f"{path}:{good + 1}: not JSON" in result.stderr and f"{path}:{good + 2}: not a JSON object" in result.stderr
    assert "Traceback" not in result.stderr
    assert json.loads(result.stdout)["splits"]["train"] == good


# --- determinism ------------------------------------------------------------------------------


def shuffled_copy(root: Path, to: Path, seed: int) -> list[Path]:
    """The exports with every file's lines shuffled (data lines and their evidence lines together)."""
    copy_demo(root, to)
    rng = random.Random(seed)
    for directory in export_dirs(to):
        for data in sorted(directory.glob("*.jsonl")):
            if data.name.startswith("evidence."):
                continue
            lines = data.read_text(encoding="utf-8").splitlines(keepends=True)
            order = list(range(len(lines)))
            rng.shuffle(order)
            data.write_text("".join(lines[i] for i in order), encoding="utf-8")
            sidecar = directory / data.name.replace("data.", "evidence.", 1)
            if data.name.startswith("data.") and sidecar.is_file():
                side = sidecar.read_text(encoding="utf-8").splitlines(keepends=True)
                sidecar.write_text("".join(side[i] for i in order), encoding="utf-8")
    dirs = export_dirs(to)
    rng.shuffle(dirs)
    return dirs


def comparable(report: dict[str, Any]) -> Any:
    """The report without file paths and line numbers (which a shuffle moves)."""
    return (report["rows"], report["splits"], report["kinds"],
            [(f["kind"], f["key"], f.get("similarity"), f.get("eval_set"),
              sorted({(r["split"], r["row_id"]) for r in f["rows"]})) for f in report["findings"]])


def test_the_same_report_whatever_the_order_of_rows_and_directories(demo: Path, tmp_path: Path) -> None:
    root = copy_demo(demo, tmp_path / "planted")
    plant_exact_prompt(root)
    first = sediment("report", "leakage", *map(str, export_dirs(root)), "--json")
    again = sediment("report", "leakage", *map(str, export_dirs(root)), "--json")
    assert first.stdout == again.stdout
    for seed in (1, 2):
        shuffled = shuffled_copy(root, tmp_path / f"shuffled{seed}", seed)
        other = report_json(*map(str, shuffled))
        assert comparable(other) == comparable(json.loads(first.stdout))


# --- near duplicates ------------------------------------------------------------------------------

ISSUE = ("QuerySet.bulk_create() crashes on a model whose primary key is a UUIDField with a default when the "
         "batch mixes objects that already have a primary key and objects that do not. The objects without a "
         "key are inserted first, then the returned ids are assigned in the wrong order, so the second half of "
         "the batch ends up with the keys of the first half. Expected: every object keeps its own key.")
UNRELATED = ("The admin changelist shows the wrong count when a list filter on a related field is combined with "
             "a search term: the count query joins the related table twice and every object in the batch is "
             "counted once per matching row. Expected: the count equals the number of objects listed.")


PATCH = """diff --git a/django/db/models/query.py b/django/db/models/query.py
--- a/django/db/models/query.py
+++ b/django/db/models/query.py
@@ -780,12 +780,14 @@ def bulk_create(self, objs, batch_size=None, ignore_conflicts=False):
         with transaction.atomic(using=self.db, savepoint=False):
             objs_with_pk, objs_without_pk = partition(lambda o: o.pk is None, objs)
             if objs_with_pk:
                 returned_columns = self._batched_insert(
                     objs_with_pk, fields, batch_size, on_conflict=on_conflict,
                 )
-                for obj_with_pk, results in zip(objs_with_pk, returned_columns):
+                for obj_with_pk, results in zip(objs_with_pk, returned_columns, strict=True):
                     for result, field in zip(results, opts.db_returning_fields):
                         if field != opts.pk:
                             setattr(obj_with_pk, field.attname, result)
             if objs_without_pk:
-                fields = [f for f in fields if not isinstance(f, AutoField)]
+                fields = [f for f in fields if not isinstance(f, AutoField) and not f.has_default()]
+                objs_without_pk = sorted(objs_without_pk, key=lambda o: id(o))
"""


def test_the_demo_s_one_cross_split_patch_and_planted_near_duplicates_are_found(demo: Path, tmp_path: Path) -> None:
    """The demo's Recovery eval transition ships the very fix of an RLVR train task (pow: ``a * b`` to
    ``a ** b``): a real overlap the Session split cannot see. A reworded problem statement and a
    patch changed by one line are found too; an unrelated statement sharing common words is not."""
    clean = report_json(*map(str, export_dirs(demo)))
    assert findings(clean, "near_duplicate_prompt") == []
    [(_key, rows)] = findings(clean, "near_duplicate_patch")
    assert {r for _, r in rows} == {"demo-sess-pow-fix-9516adc",
                                    "ci_59efa959004fb326948087bc70ad0024>ci_aee3aecf6ba267a0f7b80a83ade8e1f8"}
    root = copy_demo(demo, tmp_path / "planted")
    exports = root / "exports/swe-bench"
    train, evals = rows_of(exports / "tasks.train.jsonl"), rows_of(exports / "tasks.eval.jsonl")
    evals += [dict(evals[0], instance_id=f"planted-eval-{i}") for i in (1, 2)]
    train[0]["problem_statement"] = ISSUE
    evals[0]["problem_statement"] = ISSUE.replace("wrong order", "reverse order")
    train[1]["problem_statement"] = UNRELATED.replace("admin", "admin site")
    evals[1]["problem_statement"] = UNRELATED + " Seen in 5.0."  # near train[1]: found
    train[2]["problem_statement"] = ISSUE.replace("UUIDField", "CharField").replace("first half", "other half") \
        .replace("own key", "key").replace("crashes", "fails") + " It started in 4.2."  # too far from evals[0]
    evals[2]["problem_statement"] = "Unrelated: " + UNRELATED.split(":")[0]  # shares words, not shingles
    train[3]["patch"] = PATCH
    evals[2]["patch"] = PATCH.replace("objs_without_pk", "objs_lacking_pk", 1)  # one name changed
    for path, rows_ in (("tasks.train.jsonl", train), ("tasks.eval.jsonl", evals)):
        (exports / path).write_text("".join(json.dumps(r) + "\n" for r in rows_))
    report = report_json(str(exports))
    prompts = sorted(r for _, r in findings(report, "near_duplicate_prompt"))
    assert prompts == sorted([(("eval", evals[0]["instance_id"]), ("train", train[0]["instance_id"])),
                              (("eval", "planted-eval-1"), ("train", train[1]["instance_id"]))])
    assert all(0.8 <= f["similarity"] < 1.0 for f in report["findings"] if f["kind"] == "near_duplicate_prompt")
    patches = [r for _, r in findings(report, "near_duplicate_patch")]
    assert patches == [(("eval", "planted-eval-2"), ("train", train[3]["instance_id"]))]
    strict = report_json(str(exports), "--threshold", "0.99")
    assert findings(strict, "near_duplicate_prompt") == []
    assert sediment("report", "leakage", str(exports), "--threshold", "0").returncode == 2


# --- benchmarks ------------------------------------------------------------------------------------


def test_rows_that_meet_swe_bench_shaped_instances_are_flagged_and_no_other(tmp_path: Path,
                                                                           mirror_root: MirrorRoot) -> None:
    """Instances shaped as SWE-bench's (ids ``owner__repo-NUMBER`` of public repositories), whose
    base commits the test builds in a real mirror of django/django."""
    git = GitRepo(mirror_root, "django/django")
    c = [git.commit({"django/db/models/query.py": "".join(f"line {i} {j}\n" for j in range(900))}, f"c{i}")
         for i in range(4)]
    side = git.commit({"docs/index.txt": "x\n"}, "docs", parents=[c[0]], branch="stable")
    bench = tmp_path / "swe-bench-lite.jsonl"
    instances = [
        {"instance_id": "django__django-11099", "repo": "django/django", "base_commit": c[2], "patch": PATCH,
         "problem_statement": ISSUE, "version": "3.0"},
        {"instance_id": "astropy__astropy-12907", "repo": "astropy/astropy", "base_commit": "e" * 40,
         "patch": "diff --git a/astropy/modeling/separable.py b/astropy/modeling/separable.py\n--- a/astropy/modeling/separable.py\n+++ b/astropy/modeling/separable.py\n@@ -242,7 +242,7 @@ def _cstack(left, right):\n-        cright[-right.shape[0]:, -right.shape[1]:] = 1\n+        cright[-right.shape[0]:, -right.shape[1]:] = right\n",
         "problem_statement": "Modeling's separability_matrix does not compute separability correctly for nested CompoundModels."},
    ]
    bench.write_text("".join(json.dumps(i) + "\n" for i in instances))
    exports = tmp_path / "exports"
    exports.mkdir()
    common = {"repo": "django/django", "org_id": ORG}
    append(exports / "tasks.train.jsonl", {**common, "instance_id": "reaches", "base_commit": c[0],
                                           "ci_resolution": {"commit_sha": c[3]}, "problem_statement": "fix ordering"})
    append(exports / "tasks.train.jsonl", {**common, "instance_id": "side", "base_commit": c[0],
                                           "ci_resolution": {"commit_sha": side}, "problem_statement": "docs"})
    append(exports / "tasks.train.jsonl", {**common, "instance_id": "same-hunk", "problem_statement": "refactor",
                                           "reference_patch": PATCH.replace("strict=True", "strict=False")})
    append(exports / "tasks.eval.jsonl", {**common, "instance_id": "asks-it", "problem_statement":
                                          "Customer report follows. " + ISSUE + " Please fix."})
    append(exports / "tasks.train.jsonl", {"repo": "acme/calc", "instance_id": "unrelated", "base_commit": c[2],
                                           "problem_statement": UNRELATED, "reference_patch": PATCH})
    report = report_json(str(exports), "--benchmark", str(bench), "--mirrors", str(mirror_root.path))
    assert report["benchmark"] == {"file": str(bench), "name": "swe-bench-lite", "instances": 2, "ancestry": "mirrors"}
    got = {f["kind"]: (f["key"], sorted(r["row_id"] for r in f["rows"])) for f in report["findings"]
           if f["kind"].startswith("benchmark_")}
    assert got == {
        "benchmark_repository": ("django__django-11099", ["asks-it", "reaches", "same-hunk", "side"]),
        "benchmark_commit": ("django__django-11099", ["reaches"]),
        "benchmark_patch_hunk": ("django__django-11099", ["same-hunk"]),
        "benchmark_problem_statement": ("django__django-11099", ["asks-it"]),
    }
    assert {f["eval_set"] for f in report["findings"] if f["kind"].startswith("benchmark_")} == {"benchmark:swe-bench-lite"}
    out = tmp_path / "tags"
    assert sediment("report", "leakage", str(exports), "--benchmark", str(bench), "--out", str(out),
                    "--mirrors", str(mirror_root.path), "--fail-on", "benchmark_commit").returncode == 12
    tags = {t["row_id"]: t["eval_sets"] for t in rows_of(out / "eval_sets.jsonl")}
    assert tags["unrelated"] == [] and tags["reaches"] == ["benchmark:swe-bench-lite", "split:eval"]  # + same repo as eval
    # without the mirrors only named commits count: c2 is no row's named commit
    named = report_json(str(exports), "--benchmark", str(bench))
    assert not [f for f in named["findings"] if f["kind"] == "benchmark_commit"]
    # a plain list of repositories and commits
    listed = tmp_path / "pilot.txt"
    listed.write_text(f"# pilot tasks\ndjango/django {c[1]}\nastropy/astropy\n")
    plain = report_json(str(exports), "--benchmark", str(listed), "--mirrors", str(mirror_root.path))
    assert [sorted(r["row_id"] for r in f["rows"]) for f in plain["findings"] if f["kind"] == "benchmark_commit"] \
        == [["reaches"]]


def test_a_bad_benchmark_is_one_line_and_parquet_names_its_extra(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    append(exports / "tasks.train.jsonl", {"instance_id": "t", "problem_statement": "p"})
    bad = tmp_path / "bench.jsonl"
    bad.write_text('{"instance_id": "a__b-1", "repo": "a/b"}\n{"instance_id": 3, "repo": "a/b"}\n')
    result = sediment("report", "leakage", str(exports), "--benchmark", str(bad))
    assert result.returncode == 1 and f"{bad}:2: field instance_id: a non-empty string is required" in result.stderr
    assert "Traceback" not in result.stderr
    parquet = tmp_path / "bench.parquet"
    parquet.write_bytes(b"PAR1")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        result = sediment("report", "leakage", str(exports), "--benchmark", str(parquet))
        assert result.returncode == 1 and "parquet extra" in result.stderr and len(result.stderr.splitlines()) == 1


# --- the HTML page --------------------------------------------------------------------------------

#: A prompt that would add text to the page if the page ran it (the text is built at run time,
#: so only running it, not showing it, puts the whole mark on the page).
HOSTILE = "Fix <b>pow</b> <script>document.currentScript.after('EXECUTED' + '-MARK')</script> & \"quotes\" </pre>"


def seen_text(page: Path, tmp_path: Path) -> str:
    """What a person sees (tests/test_library_cli.py's probe), with the page's
    Content-Security-Policy, which would block the probe script, left out of the copy: the hostile
    prompt is then kept inert by escaping alone."""
    sys.path.insert(0, str(Path(__file__).parent))  # the suite's Chromium probe, as test_library_catalog does
    from test_library_cli import seen_text as library_seen_text

    policy = re.search(r'<meta http-equiv="Content-Security-Policy"[^>]*>', page.read_text(encoding="utf-8"))
    assert policy, "the page declares no Content-Security-Policy"
    return library_seen_text(page, tmp_path, without=policy.group(0))


@pytest.mark.browser
def test_the_html_page_shows_leakage_json_s_counts_and_a_hostile_prompt_as_text(demo: Path, tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from test_library_cli import require_chromium

    require_chromium()
    root = copy_demo(demo, tmp_path / "planted")
    train = rows_of(root / "exports/sft/sft.train.jsonl")[0]
    for split, completion in (("train", "call_<i>hostile</i>"), ("eval", "call_hostile_eval")):
        row = json.loads(json.dumps(train))
        row["metadata"].update(completion_id=completion, split=split)
        next(m for m in row["prompt"] if m["role"] == "user")["content"] = HOSTILE
        append(root / f"exports/sft/sft.{split}.jsonl", row)
    out = tmp_path / "report"
    result = sediment("report", "leakage", *map(str, export_dirs(root)), "--out", str(out))
    assert result.returncode == 0, result.stderr
    report = json.loads((out / "leakage.json").read_text(encoding="utf-8"))
    page = (out / "leakage.html").read_text(encoding="utf-8")
    # self-contained: nothing fetched, no script of its own, the row's markup escaped
    assert not re.search(r"<script|\bsrc=|\bhref=|url\(|@import|https?:", page, re.IGNORECASE)
    assert "&lt;script&gt;" in page and "&lt;i&gt;hostile&lt;/i&gt;" in page
    seen = seen_text(out / "leakage.html", tmp_path)
    # the counts per kind and split are leakage.json's (a table row reads: kind, findings, rows per split)
    splits = list(report["splits"])
    assert splits == ["eval", "train"]
    assert f"kind\tfindings\t{chr(9).join(splits)}" in seen
    for kind, counts in report["kinds"].items():
        line = "\t".join([kind, str(counts["findings"]), *(str(counts["rows"].get(s, 0)) for s in splits)])
        assert line in seen.splitlines(), (line, seen[:3000])
    assert report["kinds"]["exact_prompt"]["findings"] == 1
    # the hostile prompt and row id are shown as text and nothing of them ran
    assert "EXECUTED-MARK" not in seen
    assert "<script>document.currentScript.after('EXECUTED' + '-MARK')</script>" in seen
    assert "call_<i>hostile</i>" in seen and "Fix <b>pow</b>" in seen
    # the chart has a bar per kind and split, titled with its count
    for kind, counts in report["kinds"].items():
        for split in splits:
            assert f"<title>{kind}, {split}: {counts['rows'].get(split, 0)} of {report['splits'][split]} rows" \
                   "</title>" in page


def test_the_html_page_is_bounded_and_the_same_for_the_same_rows() -> None:
    """Many findings of many rows and long prompts: the page caps the examples, the ids and the
    text (leakage.json has them all), and it is the same page whatever the order of the rows."""
    rows = []
    for n in range(3 * EXAMPLES):
        prompt = f"task {n:03d} " + "word " * 20_000  # 100 KB each
        for i in range(3 * IDS):
            split = "train" if i % 2 else "eval"
            rows.append(ExportedRow(row_id=f"row-{n}-{i}", split=split, source=f"d/x.{split}.jsonl:{n * 100 + i}",
                                    prompt=prompt, patch="", repo="acme/calc", repo_name="acme/calc", org_id="",
                                    base_commit="", head_commits=(), task_ids=()))
    report = leakage_report(rows, inputs={"d": 2})
    page = leakage_page(report)
    assert len(page) < 200_000, len(page)  # the rows' prompts alone are 180 MB
    assert page.count('<div class="finding">') == EXAMPLES + 1  # exact_prompt capped, and the one repository
    assert f"… {2 * EXAMPLES} more exact_prompt findings in leakage.json" in page
    assert f"… +{3 * IDS // 2 - IDS} more" in page  # a prompt's rows per split
    assert f"… +{3 * EXAMPLES * 3 * IDS // 2 - IDS} more" in page  # the repository's rows per split
    assert page.count(f"{20_000 * 5 + 9 - PREVIEW_CHARS} more characters") == EXAMPLES
    assert "word " * (TEXT_CHARS // 5 + 1) not in page
    shuffled = list(rows)
    random.Random(7).shuffle(shuffled)
    assert leakage_page(leakage_report(shuffled, inputs={"d": 2})) == page
    assert leakage_page(report) == page
