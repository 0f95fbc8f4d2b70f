"""Same evidence, same rows: the operator's sequence of commands in any order.

A workflow property test. The scenario is the demo's evidence (Sessions with calls, commits with
``refs/notes/sediment`` notes, GitHub ``workflow_run`` deliveries with retries, flakes and a
red-to-green recovery, JUnit reports, OTLP developer decisions) plus what Hypothesis draws: a
git-ai authorship note binding a Session that has none of ours, a repository rename with later
deliveries under the new name, and a second workflow that agrees or disagrees with the first.

The operations run through the real CLI (``sediment.cli.main``, in process) in an order and
batch split Hypothesis draws: the mirror added before, between or after the ingests; webhooks
one file per command or several at once, shuffled; the call log's lines shuffled and split;
duplicates re-ingested; ``--workers 1`` or ``2``; one pinned capture time (a backfill) or a
later one per command (live capture). Every order must give a byte-identical bundle and
byte-identical exports of every objective, target and profile; under live capture, where the
capture times themselves differ, identical after leaving out those times.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sediment.demo import ORG, REPO, T0, DemoInputs, workflow_run, write_inputs
from sediment.git.mirror_writer import MirrorWriter
from sediment.testing import snapshot

NEW_NAME = "acme/calc-app"
PINNED = "2026-03-03T09:00:00Z"


@dataclass(frozen=True)
class Scenario:
    git_ai_note: bool
    rename: bool
    #: a second workflow on the first pass's commit: None, or its conclusion
    second_workflow: str | None


@dataclass(frozen=True)
class Operations:
    mirror_at: int
    hook_chunks: int
    call_chunks: int
    seed: int
    duplicate: bool
    workers: int
    live: bool


def _git_ai_note(session: str, path: str) -> str:
    key = "s_0123456789abcd"
    metadata = {"schema_version": "authorship/3.0.0", "base_commit_sha": "0" * 40, "prompts": {},
                "sessions": {key: {"agent_id": {"tool": "claude", "id": session, "model": "claude-sonnet-4"}}}}
    return f"{path}\n  {key}::t_0123456789abcd 1-3\n---\n{json.dumps(metadata)}"


def _rename(old: str, new: str) -> dict[str, Any]:
    return {"headers": {"X-GitHub-Event": "repository", "X-GitHub-Delivery": "rename-424242"},
            "payload": {"action": "renamed", "changes": {"repository": {"name": {"from": old.split("/")[1]}}},
                        "repository": {"id": 424242, "name": new.split("/")[1], "full_name": new,
                                       "owner": {"login": new.split("/")[0]}, "private": False},
                        "sender": {"login": "octocat"}}}


def build(directory: Path, scenario: Scenario) -> DemoInputs:
    """The demo's inputs under ``directory``, with the scenario's extra evidence."""
    inputs = write_inputs(directory)
    hooks = directory / "webhooks"
    origin = MirrorWriter(inputs.origin)
    first = json.loads(inputs.webhooks[0].read_text())["payload"]["workflow_run"]
    if scenario.git_ai_note:  # the human-looking "Add operation tests" commit, claimed by a Session
        log = [json.loads(p.read_text())["payload"]["workflow_run"] for p in inputs.webhooks]
        sha = next(r["head_sha"] for r in log if r["id"] == 106)
        origin.add_git_ai_note(sha, _git_ai_note("sess-explore", "tests/test_ops.py"))
    repo = REPO
    if scenario.rename:
        (hooks / "repository-renamed.json").write_text(json.dumps(_rename(REPO, NEW_NAME)))
        repo = NEW_NAME
    if scenario.second_workflow is not None:
        delivery = workflow_run(900, 1, first["head_sha"], scenario.second_workflow,
                                datetime.fromisoformat(first["updated_at"]) + timedelta(minutes=5))
        run = delivery["payload"]["workflow_run"]
        run.update(name="lint", workflow_id=9002, path=".github/workflows/lint.yml")
        delivery["payload"]["workflow"] = {"id": 9002, "name": "lint", "path": ".github/workflows/lint.yml"}
        for where in (run["repository"], delivery["payload"]["repository"]):
            where.update(name=repo.split("/")[1], full_name=repo)
        (hooks / "workflow_run-900-1.json").write_text(json.dumps(delivery))
    webhooks = sorted(hooks.glob("*.json"))
    return DemoInputs(inputs.origin, inputs.calls, webhooks, inputs.junit, inputs.settings, inputs.decisions)


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def sediment(env: dict[str, str], *args: str) -> tuple[int, str]:
    """Run ``sediment ARGS`` in this process, as the console script does: exit code and stderr."""
    from sediment.cli import main

    err, out = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["sediment", *args]
    code: int = 0
    try:
        with _environment(env), contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            main()
    except SystemExit as exc:
        code = int(exc.code or 0) if not isinstance(exc.code, str) else 1
    finally:
        sys.argv = argv
    return code, err.getvalue() + out.getvalue()


class Operator:
    """One operator's home, running commands with a capture time per command (or one pinned)."""

    def __init__(self, home: Path, live: bool, database_url: str | None = None) -> None:
        self.home = home
        self.live = live
        self.clock = 0
        self.base = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
        self.base |= {"SEDIMENT_HOME": str(home), "SEDIMENT_ORG_ID": ORG}
        if database_url is not None:
            self.base["SEDIMENT_DATABASE_URL"] = database_url

    def run(self, *args: str, expect: tuple[int, ...] = (0,)) -> str:
        self.clock += 1
        moment = (T0 + timedelta(days=2, minutes=self.clock)).isoformat() if self.live else PINNED
        code, output = sediment(self.base | {"SEDIMENT_CAPTURE_TIME": moment}, *args)
        assert code in expect, f"sediment {' '.join(args)} exited {code}: {output}"
        return output


def _chunks(items: list[Any], count: int) -> list[list[Any]]:
    count = max(1, min(count, len(items)))
    return [items[i::count] for i in range(count)]


def commands(inputs: DemoInputs, work: Path, ops: Operations) -> list[tuple[str, ...]]:
    """The ingest commands and the mirror add, in the drawn order and batch split."""
    rng = random.Random(ops.seed)
    hooks = [str(p) for p in inputs.webhooks]
    rng.shuffle(hooks)
    found: list[tuple[str, ...]] = [("ingest", "github", *chunk) for chunk in _chunks(hooks, ops.hook_chunks)]
    lines = inputs.calls.read_text().splitlines(keepends=True)
    rng.shuffle(lines)
    for index, chunk in enumerate(_chunks(lines, ops.call_chunks)):
        path = work / f"calls-{index}.jsonl"
        path.write_text("".join(chunk))
        found.append(("ingest", "calls", "--format", "openai-chat", str(path)))
    found.append(("ingest", "otlp", str(inputs.decisions)))
    for upload in inputs.junit:
        found.append(("ingest", "junit", str(upload.path), "--provider", "github_actions", "--run-id",
                      str(upload.run_id), "--run-attempt", str(upload.attempt), "--repo", REPO,
                      "--commit", upload.commit))
    if ops.duplicate:
        found.append(rng.choice(found))
    rng.shuffle(found)
    found.insert(min(ops.mirror_at, len(found)), ("mirror", "add", REPO, str(inputs.origin)))
    return found


def exports(operator: Operator, inputs: DemoInputs, bundle: Path, out: Path, workers: int) -> None:
    """Every installed target, objective and profile, exported through the CLI."""
    from sediment.host.registry import load_registry

    registry = load_registry()
    def export(directory: str, *args: str, from_bundle: bool = True) -> None:
        source = ("--from", str(bundle)) if from_bundle else ()
        parallel = ("--workers", str(workers)) if args[0] == "rlvr" else ()  # the others have no workers
        output = operator.run("export", *args, *source, "--out", str(out / directory), "--config",
                              str(inputs.settings), *parallel, expect=(0, 9))
        (out / f"{directory}.outcome").write_text("published" if (out / directory).exists() else output)

    for name in sorted(registry.targets):
        export(f"rlvr-{name}", "rlvr", "--target", name)
    for name, objective in sorted(registry.objectives.items()):
        if not objective.has_targets:
            export(name, name, from_bundle=objective.info.supports_from)
    for name, profile in sorted(registry.profiles.items()):
        if profile.info.target in registry.targets:
            export(f"profile-{name}", "rlvr", "--target", profile.info.target, "--profile", name)
        else:
            objective = registry.objectives[profile.objective]
            export(f"profile-{name}", profile.objective, "--profile", name, from_bundle=objective.info.supports_from)


def pipeline(work: Path, scenario: Scenario, ops: Operations,
             database_url: str | None = None) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """Inputs, the drawn operations, derive and every export: the bundle's and the exports' bytes."""
    inputs = build(work / "inputs", scenario)
    operator = Operator(work / "home", ops.live, database_url)
    for command in commands(inputs, work, ops):
        operator.run(*command)
    operator.run("derive", "--out", str(work / "bundle"), "--workers", str(ops.workers))
    exports(operator, inputs, work / "bundle", work / "out", ops.workers)
    return snapshot(work / "bundle"), snapshot(work / "out")


#: Capture times (a rename's time is its capture time: GitHub sends none), and the digests and
#: sizes of bytes that hold them.
_CAPTURE_DEPENDENT = frozenset({"captured_at", "renamed_at", "as_of", "bytes"})


def _without_capture_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_capture_times(v) for k, v in value.items()
                if k not in _CAPTURE_DEPENDENT and not k.endswith("sha256")}
    if isinstance(value, list):
        return [_without_capture_times(v) for v in value]
    if isinstance(value, str) and value.startswith("{"):
        try:
            return _without_capture_times(json.loads(value))
        except ValueError:
            return value
    return value


def comparable(files: dict[str, bytes], work: Path) -> dict[str, Any]:
    """Files as parsed values without capture times (live capture stamps each command anew);
    paths inside them relative to the operator's work directory."""
    found: dict[str, Any] = {}
    for name, data in files.items():
        text = data.decode("utf-8", "replace").replace(str(work), "<work>")
        try:
            found[name] = [_without_capture_times(json.loads(line)) for line in text.splitlines() if line.strip()]
        except ValueError:
            found[name] = text
        else:
            if name == "repository_identities.jsonl":  # the population's order is capture order
                found[name].sort(key=lambda row: json.dumps(row, sort_keys=True))
    return found


_RUNS = itertools.count()
_REFERENCES: dict[Scenario, tuple[Path, dict[str, bytes], dict[str, bytes]]] = {}


def reference(root: Path, scenario: Scenario) -> tuple[Path, dict[str, bytes], dict[str, bytes]]:
    """The scenario's rows in the documented order (webhooks first, the mirror last), once per run."""
    if scenario not in _REFERENCES:
        work = root / f"reference-{len(_REFERENCES)}"
        ops = Operations(mirror_at=99, hook_chunks=1, call_chunks=1, seed=0, duplicate=False, workers=1, live=False)
        _REFERENCES[scenario] = (work, *pipeline(work, scenario, ops))
    return _REFERENCES[scenario]


scenarios = st.builds(Scenario, git_ai_note=st.booleans(), rename=st.booleans(),
                      second_workflow=st.sampled_from([None, "failure", "success"]))
operations = st.builds(Operations, mirror_at=st.integers(0, 12), hook_chunks=st.integers(1, 4),
                       call_chunks=st.integers(1, 3), seed=st.integers(0, 2**16), duplicate=st.booleans(),
                       workers=st.sampled_from([1, 2]), live=st.booleans())


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("workflow-order")


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("SEDIMENT_WORKFLOW_EXAMPLES", "6")), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(scenario=scenarios, ops=operations)
def test_every_order_of_operations_gives_the_same_rows(scratch: Path, scenario: Scenario, ops: Operations) -> None:
    ref_work, ref_bundle, ref_out = reference(scratch, scenario)
    work = scratch / f"run-{next(_RUNS)}"
    bundle, out = pipeline(work, scenario, ops)
    assert sorted(out) == sorted(ref_out)
    if ops.live:
        assert comparable(bundle, work) == comparable(ref_bundle, ref_work)
        assert comparable(out, work) == comparable(ref_out, ref_work)
    else:
        assert bundle == ref_bundle
        _same_bytes(work, out, ref_work, ref_out)


def _same_bytes(work: Path, out: dict[str, bytes], ref_work: Path, ref_out: dict[str, bytes]) -> None:
    assert {k: v.replace(str(work).encode(), b"<work>") for k, v in out.items()} == \
        {k: v.replace(str(ref_work).encode(), b"<work>") for k, v in ref_out.items()}


@pytest.mark.postgres
def test_the_mirror_first_backfill_on_postgresql_gives_the_sqlite_rows(scratch: Path) -> None:
    """The operator's natural order (mirror first), the webhooks in batches, the call log shuffled
    and split, a duplicate batch, two workers: on PostgreSQL, the same bytes as the reference
    order on SQLite."""
    from sediment.testing import postgres_store_url

    url = postgres_store_url()
    scenario = Scenario(git_ai_note=True, rename=True, second_workflow="failure")
    ref_work, ref_bundle, ref_out = reference(scratch, scenario)
    ops = Operations(mirror_at=0, hook_chunks=3, call_chunks=2, seed=11, duplicate=True, workers=2, live=False)
    work = scratch / "postgresql"
    bundle, out = pipeline(work, scenario, ops, database_url=url)
    assert bundle == ref_bundle
    _same_bytes(work, out, ref_work, ref_out)


def test_the_reference_order_exports_rows(scratch: Path) -> None:
    """The comparison is not vacuous: the reference order attributes Sessions and writes rows of
    every kind, and the scenario's extra evidence reaches them."""
    scenario = Scenario(git_ai_note=True, rename=True, second_workflow="failure")
    _, bundle, out = reference(scratch, scenario)
    manifest = json.loads(bundle["manifest.json"])
    assert manifest["counts"]["rollouts"] >= 13 and manifest["counts"]["repository_renames"] == 1
    rollouts = [json.loads(line) for line in bundle["rollouts.jsonl"].splitlines()]
    sources = {json.loads(r["record_json"])["session_id"]: json.loads(r["record_json"])["attribution_source"]
               for r in rollouts}
    assert sources["sess-explore"] == "git_ai_notes" and sources["sess-fix"] == "git_notes"
    published = [name for name in out if name.endswith(".outcome") and out[name] == b"published"]
    assert len(published) >= 10
    assert any(name.startswith("recovery/") and name.endswith(".jsonl") and out[name] for name in out)


def _without_mirrors(tmp_path: Path, named: Path | None) -> tuple[DemoInputs, Operator, tuple[str, ...], str]:
    """A home that holds the demo's calls and no mirror root (``SEDIMENT_MIRROR_PATH`` set to
    ``named``, when given): the inputs, the operator, an export that needs mirrors and its refusal."""
    inputs = build(tmp_path / "inputs", Scenario(git_ai_note=False, rename=False, second_workflow=None))
    operator = Operator(tmp_path / "home", live=False)
    if named is not None:
        operator.base["SEDIMENT_MIRROR_PATH"] = str(named)
    operator.run("ingest", "calls", "--format", "openai-chat", str(inputs.calls))
    export = ("export", "rlvr", "--target", "sediment", "--out", str(tmp_path / "out"))
    return inputs, operator, export, operator.run(*export, expect=(1,))


@pytest.mark.parametrize("named", [False, True], ids=["default-root", "SEDIMENT_MIRROR_PATH"])
def test_a_derive_before_the_mirrors_are_set_up_changes_no_later_command(tmp_path: Path, named: bool) -> None:
    """``derive`` before any mirror root exists (the default one, or the one
    ``SEDIMENT_MIRROR_PATH`` names) derives without one, says so in one line, and makes none: an
    export run after it refuses for want of mirrors exactly as one run before it (it found the
    empty root that derive had made and wrote rows), and the bundle is the one an empty mirror
    root gives."""
    root = tmp_path / "shared" / "mirrors" if named else tmp_path / "home" / "mirrors"
    _, operator, export, refused = _without_mirrors(tmp_path, root if named else None)
    assert refused == (f"error: mirror root does not exist or is not a directory: {root}\n" if named else
                       "error: SEDIMENT_MIRROR_PATH is not set; the export needs mirrors (or pass --mirrors)\n")
    where = f"SEDIMENT_MIRROR_PATH names no directory: {root}" if named else \
        "SEDIMENT_MIRROR_PATH is not set and $SEDIMENT_HOME/mirrors does not exist"
    warning = f"warning: no mirrors ({where}): no Session can be bound to a commit; add them with: " \
              "sediment mirror add OWNER/REPO URL\n"
    derived = operator.run("derive", "--out", str(tmp_path / "bundle"))
    assert derived.startswith(warning) and derived.count("warning:") == 1, derived
    assert not root.exists()
    assert operator.run(*export, expect=(1,)) == refused
    assert not (tmp_path / "out").exists()
    imported = ("trajectory", "import", "sediment-rollouts", "--from-store", "--out")
    assert warning in operator.run(*imported, str(tmp_path / "records.jsonl"))  # as derive does
    assert not root.exists()
    root.mkdir(parents=True)  # set up, still empty: the same Sessions, no commit to bind
    assert "no mirrors" not in operator.run("derive", "--out", str(tmp_path / "bundle-empty-root"))
    assert snapshot(tmp_path / "bundle") == snapshot(tmp_path / "bundle-empty-root")
    assert "no mirrors" not in operator.run(*imported, str(tmp_path / "records-empty-root.jsonl"))
    records = (tmp_path / "records.jsonl").read_bytes()
    assert records.count(b"\n") == 14 and records == (tmp_path / "records-empty-root.jsonl").read_bytes()


@pytest.mark.parametrize("named", [False, True], ids=["default-root", "SEDIMENT_MIRROR_PATH"])
def test_a_failed_first_mirror_add_leaves_no_mirror_root(tmp_path: Path, named: bool) -> None:
    """The first ``mirror add`` creates the mirror root (and, for ``SEDIMENT_MIRROR_PATH``, its
    missing parents); when it fails, they go with it, so an export after it still refuses for
    want of mirrors (it found the empty root and wrote rows). With no root, ``mirror list`` and
    ``mirror fetch`` find no mirror and ``mirror remove`` refuses in one line."""
    made = tmp_path / "shared"
    root = made / "team" / "mirrors" if named else tmp_path / "home" / "mirrors"
    inputs, operator, export, refused = _without_mirrors(tmp_path, root if named else None)
    failed = operator.run("mirror", "add", REPO, str(tmp_path / "no-such-repository"), expect=(1,))
    assert failed.startswith("error: ") and failed.count("\n") == 1, failed
    assert not root.exists() and not made.exists()
    assert operator.run(*export, expect=(1,)) == refused
    assert json.loads(operator.run("mirror", "list", "--json")) == {"mirrors": []}
    assert json.loads(operator.run("mirror", "fetch", "--json")) == {"mirrors": []}
    assert operator.run("mirror", "fetch", REPO, expect=(1,)) == \
        f"error: no mirror of {REPO}; add it first with `sediment mirror add`\n"
    removed = operator.run("mirror", "remove", REPO, expect=(1,))
    assert removed.startswith(f"error: no mirror of {REPO} to remove") and removed.count("\n") == 1
    assert not root.exists()
    operator.run("mirror", "add", REPO, str(inputs.origin))  # a mirror added after all: the export runs
    assert "wrote " in operator.run(*export)


def test_a_mirror_root_that_cannot_be_read_is_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A root under a directory that cannot be entered (EACCES, which pathlib does not turn into
    "not there") is refused in one line naming it, not a traceback, by every command that looks."""
    from pathlib import PosixPath

    root = tmp_path / "locked" / "mirrors"
    real = PosixPath.is_dir

    def is_dir(self: Path) -> bool:
        if self == root:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(PosixPath, "is_dir", is_dir)
    operator = Operator(tmp_path / "home", live=False)
    operator.base["SEDIMENT_MIRROR_PATH"] = str(root)
    for command in (("derive", "--out", str(tmp_path / "bundle")), ("mirror", "list"), ("mirror", "fetch")):
        refused = operator.run(*command, expect=(1,))
        assert refused == f"error: cannot read the mirror root {root}: Permission denied\n", (command, refused)
    assert not (tmp_path / "bundle").exists()
