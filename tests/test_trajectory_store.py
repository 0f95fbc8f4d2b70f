"""Sediment's own Rollouts imported straight from the fact store (``--from-store``): the same
records as from a bundle derived from that store in everything but ``source``, deterministic
across repeats and ingest order, and one-line errors with the documented exit codes."""

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

from sediment.bundle.read import open_bundle
from sediment.bundle.write import encode_line
from sediment.demo import run_demo
from sediment.derive.sessions import derive_bundle
from sediment.git.mirror_root import MirrorRoot
from sediment.git.mirror_writer import MirrorWriter
from sediment.importing.run import import_records, import_store_results
from sediment.ingest.git_notes import observe_notes
from sediment.model.facts import ToolCallPart
from sediment.model.policy import DerivationPolicy
from sediment.store import FactStore
from sediment.testing import ORG, T0, call, conversation, message, outcome
from sediment.trajectory import Trajectory, to_json
from sediment.trajectory.sources import ImportRefusal
from sediment.trajectory.store_source import store_source


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "demo"
    run_demo(out)
    return out


def _store(home: Path) -> FactStore:
    return FactStore(f"sqlite:///{home / 'facts.db'}")


def from_store(store: FactStore, org: str, mirrors: MirrorRoot | None) -> list[Trajectory]:
    items = list(import_store_results("sediment-rollouts", store_source(store, org, mirrors)))
    assert not [i for i in items if isinstance(i, ImportRefusal)]
    return [i for i in items if isinstance(i, Trajectory)]


def _without_source(record: Trajectory) -> dict[str, Any]:
    data = json.loads(to_json(record))
    data.pop("source")
    data.pop("trajectory_id")  # content-addressed: it covers the source
    return data


def test_store_import_equals_the_bundle_import_but_for_source(demo: Path) -> None:
    org = open_bundle(demo / "bundle").manifest.org_id
    store = _store(demo / "home")
    records = from_store(store, org, MirrorRoot(demo / "home" / "mirrors"))
    bundled = list(import_records("sediment-rollouts", [demo / "bundle"]))
    assert len(records) == len(bundled) > 0
    assert [_without_source(r) for r in records] == [_without_source(b) for b in bundled]
    revision = f"quarantine-revision:{store.quarantine_revision(org)}"
    for record, bundle_record in zip(records, bundled, strict=True):
        assert record.raw_record == bundle_record.raw_record
        assert record.source.source_id == "sediment/store" and bundle_record.source.source_id == "sediment/bundle"
        assert record.source.revision == bundle_record.source.revision == revision
        assert record.source.file_sha256 is None and record.source.url is None
        meta = record.provenance.source_metadata
        assert record.source.locator == f"store:{org}/{meta['session_id']}#seg{meta['segment']}"
        assert record.trajectory_id != bundle_record.trajectory_id


def test_raw_record_is_the_rollouts_canonical_bundle_line(demo: Path) -> None:
    org = open_bundle(demo / "bundle").manifest.org_id
    source = store_source(_store(demo / "home"), org, MirrorRoot(demo / "home" / "mirrors"))
    lines = (demo / "bundle" / "rollouts.jsonl").read_bytes().splitlines()
    assert [line for _, line in source.rollouts()] == lines
    assert all(encode_line(r).rstrip(b"\n") == line for r, line in source.rollouts())


# --- determinism: repeat, and shuffled ingest into a fresh store ----------------------------

REPO = "owner/repo"


def _at(minutes: float) -> int:
    return int((T0 + timedelta(minutes=minutes)).timestamp())


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    origin = MirrorWriter(tmp_path / "origin.git")
    origin.commit({"a.py": "x = 1\n"}, "base", when=_at(-60))
    c1 = origin.commit({"a.py": "x = 2\n"}, "s1 first", when=_at(5))
    c2 = origin.commit({"b.py": "y = 3\n"}, "s1 second", when=_at(6))
    c3 = origin.commit({"mul.py": "def mul(a, b):\n    return a * b\n"}, "jaccard", when=_at(20))
    origin.add_note(c2, [{"tool": "codex", "session_id": "s1", "stamped_at": "x"}])
    origin.add_note(c1, [{"tool": "codex", "session_id": "s1", "stamped_at": "x"}])
    (tmp_path / "mirrors").mkdir()
    mirrors = MirrorRoot(tmp_path / "mirrors")
    mirrors.add(ORG, REPO, str(tmp_path / "origin.git"))
    mul = call("s3", 0, [message("user", "write mul")], [message("assistant", ToolCallPart(
        id="t", name="write_file", arguments={"path": "mul.py", "content": "def mul(a, b):\n    return a * b\n"}))])
    facts: list[Any] = [*conversation("s1", turns=3), *conversation("s2", turns=2), mul,
                        outcome("o-c2-a", c2, "failed", run_id="11", attempt=1),
                        outcome("o-c2-b", c2, "passed", run_id="11", attempt=2),
                        outcome("o-c1", c1, "passed", run_id="10"), outcome("o-c3", c3, "failed", run_id="12")]
    return {"mirrors": mirrors, "facts": facts, "tmp": tmp_path}


def _load(world: dict[str, Any], name: str, seed: int | None) -> FactStore:
    store = FactStore(f"sqlite:///{world['tmp'] / name}")
    facts = list(world["facts"])
    if seed is not None:
        random.Random(seed).shuffle(facts)
    store.append(facts)
    observe_notes(world["mirrors"], store, ORG, REPO, T0 + timedelta(days=1))
    return store


def test_store_import_is_deterministic_across_repeats_and_ingest_order(world: dict[str, Any]) -> None:
    first = _load(world, "a.db", None)
    runs = [[to_json(r) for r in from_store(first, ORG, world["mirrors"])] for _ in range(2)]
    for seed in (1, 2):
        store = _load(world, f"s{seed}.db", seed)
        runs.append([to_json(r) for r in from_store(store, ORG, world["mirrors"])])
    assert runs[0] and all(run == runs[0] for run in runs)
    outcomes = {json.loads(line)["outcome"]["status"] for line in runs[0]}
    assert outcomes == {"passed", "failed", None}  # s1 passed (c2), s3 failed (c3), s2 no commit
    # and a bundle derived from the same store imports to the same records but for source
    bundle = world["tmp"] / "bundle"
    derive_bundle(first, ORG, bundle, policy=DerivationPolicy(), mirrors=world["mirrors"])
    bundled = list(import_records("sediment-rollouts", [bundle]))
    assert [_without_source(r) for r in bundled] == [_without_source(r) for r in from_store(first, ORG,
                                                                                             world["mirrors"])]


# --- the CLI: one-line errors, exit codes -------------------------------------------------


def sediment(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")} | env
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True,
                          env=environ, timeout=300, check=False)


def _error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_cli_imports_from_the_store_into_a_file_and_a_library(demo: Path, tmp_path: Path) -> None:
    home = str(demo / "home")
    org = open_bundle(demo / "bundle").manifest.org_id
    out = tmp_path / "records.jsonl"
    result = sediment("trajectory", "import", "sediment-rollouts", "--from-store", "--out", str(out),
                      SEDIMENT_HOME=home, SEDIMENT_ORG_ID=org)
    assert result.returncode == 0, result.stderr
    expected = [to_json(r) for r in from_store(_store(demo / "home"), org, MirrorRoot(demo / "home" / "mirrors"))]
    assert out.read_text(encoding="ascii").splitlines() == expected
    library = tmp_path / "lib"
    for added in (len(expected), 0):
        result = sediment("library", "import", "sediment-rollouts", "--from-store", "--org", org,
                          "--library", str(library), SEDIMENT_HOME=home)
        assert result.returncode == 0, result.stderr
        assert f"{added} record(s) added" in result.stderr


@pytest.mark.slow
def test_cli_store_errors_are_one_line_with_their_exit_code(demo: Path, tmp_path: Path) -> None:
    home = str(demo / "home")
    out = str(tmp_path / "x.jsonl")
    lib = str(tmp_path / "lib")
    for command in (["trajectory", "import", "sediment-rollouts", "--from-store", "--out", out],
                    ["library", "import", "sediment-rollouts", "--from-store", "--library", lib]):
        unset = sediment(*command, SEDIMENT_HOME=home)
        assert unset.returncode == 1 and "SEDIMENT_ORG_ID is not set" in _error_line(unset)
        unreachable = sediment(*command, "--org", "demo", SEDIMENT_DATABASE_URL="postgresql://u@127.0.0.1:1/x")
        assert unreachable.returncode == 1 and "cannot open fact store" in _error_line(unreachable)
        both = sediment(*command, str(demo / "bundle"), "--org", "demo", SEDIMENT_HOME=home)
        assert both.returncode == 2 and "not both" in both.stderr
        assert not Path(out).exists() and not (Path(lib) / "index.sqlite").exists()
    neither = sediment("trajectory", "import", "sediment-rollouts", "--out", out)
    assert neither.returncode == 2 and "--from-store" in _error_line(neither)
    other = sediment("trajectory", "import", "swe-agent-traj", "--from-store", "--org", "demo", "--out", out,
                     SEDIMENT_HOME=home)
    assert other.returncode == 2 and "does not read the fact store" in _error_line(other)
    canonical = sediment("library", "import", "canonical-jsonl", "--from-store", "--org", "demo", "--library", lib,
                         SEDIMENT_HOME=home)
    assert canonical.returncode == 2 and "drop --from-store" in _error_line(canonical)
