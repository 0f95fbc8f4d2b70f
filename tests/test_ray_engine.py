"""``--engine ray`` on a real Ray cluster on loopback: a head node and one worker node process
(``ray start``, one CPU each), started here and always stopped. Derive, every target export
(direct from the PostgreSQL store and from the bundle) and multi-file ingest give the bytes and
Facts of a single process whatever the number of partitions; a failed task publishes nothing
and a re-run publishes. The engine's choice and refusals (no Ray import on the default path,
SQLite refused) are checked without a cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sediment.errors import ConfigurationError, SedimentError
from sediment.parallel import ENGINE_ENV, engine_name, partition_of, require_shared_store


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """A local Ray cluster (head + one worker node process, one CPU each) on loopback; its address."""
    from sediment.testing.ray_cluster import local_ray_cluster, ray_command

    if not ray_command().exists():
        from sediment.testing.ci import unavailable

        unavailable("Ray is not installed: pip install 'sediment[ray]' (.ci/run installs it)")
    with local_ray_cluster(nodes=2) as address:
        yield address


# --- without a cluster ----------------------------------------------------------------------


def test_the_default_path_never_imports_ray(tmp_path: Path) -> None:
    """Importing sediment, its CLI and the parallel module, and a local derive, import no Ray."""
    script = ("import sys, sediment, sediment.cli, sediment.parallel, sediment.export.pipeline, "
              "sediment.derive.sessions, sediment.ingest.reading.files\n"
              "from sediment.parallel import ordered_chunks\n"
              "assert list(ordered_chunks(len, 4, 2)) and 'ray' not in sys.modules, sorted(sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_the_engine_comes_from_the_option_else_the_environment() -> None:
    assert engine_name(None, {}) == "local"
    assert engine_name(None, {ENGINE_ENV: "ray"}) == "ray"
    assert engine_name("local", {ENGINE_ENV: "ray"}) == "local"
    with pytest.raises(ConfigurationError, match=r"^unknown engine 'spark' \(--engine\); choose one of: local, ray$"):
        engine_name("spark", {})


def test_ray_refuses_a_sqlite_store_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as refused:
        require_shared_store(f"sqlite:///{tmp_path / 'facts.db'}")
    message = str(refused.value)
    assert "\n" not in message and "PostgreSQL" in message and "SQLite" in message
    require_shared_store("postgresql://sediment@127.0.0.1:5432/facts")


def test_the_cli_refuses_ray_with_sqlite_before_any_work(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env.update(SEDIMENT_HOME=str(tmp_path / "home"), SEDIMENT_ORG_ID="acme", SEDIMENT_ENGINE="ray")
    done = subprocess.run([sys.executable, "-m", "sediment", "derive", "--out", str(tmp_path / "bundle")],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("error: --engine ray needs PostgreSQL as the shared fact store")
    assert not (tmp_path / "bundle").exists()


def test_partitions_by_key_hash_are_stable() -> None:
    keys = [f"acme/session-{i}" for i in range(200)]
    parts = [partition_of(k, 7) for k in keys]
    assert parts == [partition_of(k, 7) for k in keys] and set(parts) == set(range(7))
    assert partition_of("acme/session-1", 7) == 0  # the same on every machine and Python


# --- on the cluster -------------------------------------------------------------------------


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The demo's inputs ingested into a PostgreSQL store (one process), with its mirrors."""
    from sediment.demo import ingest_inputs, write_inputs
    from sediment.testing import postgres_store_url

    root = tmp_path_factory.mktemp("ray-demo")
    inputs = write_inputs(root / "inputs")
    url = postgres_store_url()
    store, mirrors, _ = ingest_inputs(inputs, root / "home", store_url=url)
    return {"root": root, "inputs": inputs, "url": url, "store": store, "mirrors": mirrors}


@pytest.mark.ray
@pytest.mark.postgres
def test_derive_and_every_target_export_on_ray_are_byte_identical(ray_cluster: str, demo_store: dict[str, Any]
                                                                  ) -> None:
    from sediment.bundle.read import open_bundle
    from sediment.demo import ORG
    from sediment.derive.sessions import derive_bundle
    from sediment.evidence.context import Evidence, store_evidence
    from sediment.export.pipeline import export_objective
    from sediment.host.registry import load_registry
    from sediment.model.policy import DerivationPolicy

    root, store, mirrors = demo_store["root"], demo_store["store"], demo_store["mirrors"]
    bundles = {}
    for name, engine, workers in (("one", "local", 1), ("ray1", "ray", 1), ("ray3", "ray", 3)):
        path, rollouts = derive_bundle(store, ORG, root / f"bundle-{name}", policy=DerivationPolicy(),
                                       mirrors=mirrors, workers=workers, engine=engine)
        bundles[name] = _tree(path)
        assert len(rollouts) >= 2
    assert bundles["ray1"] == bundles["one"] and bundles["ray3"] == bundles["one"]
    bundle = open_bundle(root / "bundle-one")
    registry = load_registry()
    for target_name, target in sorted(registry.targets.items()):
        objective = target.objective
        for source in ("bundle", "store"):
            trees = []
            for engine, workers in (("local", 1), ("ray", 1), ("ray", 2)):
                evidence = (Evidence(bundle, bundle.split_enabled, mirrors, bundle.manifest.fragmented)
                            if source == "bundle" else store_evidence(store, ORG, mirrors))
                out = root / "exports" / f"{target_name}-{source}-{engine}-{workers}"
                summary = export_objective(evidence, out, objective=objective, target=target_name, registry=registry,
                                           workers=workers, engine=engine)
                trees.append((_tree(out), json.dumps(summary).replace(str(out), "OUT")))
            assert trees[1] == trees[0] and trees[2] == trees[0], (target_name, source)
            assert any(trees[0][0].values()), target_name


@pytest.mark.ray
@pytest.mark.postgres
def test_multi_file_ingest_on_ray_stores_the_same_facts(ray_cluster: str, demo_store: dict[str, Any]) -> None:
    from sediment.demo import ORG
    from sediment.ingest.calls import ReplayMemo, translate_call
    from sediment.ingest.reading.files import ingest_files
    from sediment.store import FactStore
    from sediment.testing import postgres_store_url

    root = demo_store["root"]
    lines = demo_store["inputs"].calls.read_text().splitlines(keepends=True)
    parts = []
    for index in range(4):
        part = root / f"calls-{index}.jsonl"
        part.write_text("".join(lines[index::4]))
        parts.append(str(part))
    parts.append(parts[0])  # a redelivered file: every record a duplicate
    dumps = []
    for engine, workers in (("local", 1), ("ray", 1), ("ray", 2)):
        store = FactStore(postgres_store_url())
        memo = ReplayMemo()
        report = ingest_files(parts, lambda r, memo=memo: translate_call(  # type: ignore[misc]
            r, format="openai-chat", org_id=ORG, captured_at=datetime(2026, 3, 3, tzinfo=UTC), memo=memo),
            store, workers=workers, engine=engine)
        dumps.append((report.as_json(), {s: store.calls_for_session(ORG, s) for s in store.session_ids(ORG)}))
        store.close()
    assert dumps[0][0]["duplicates"] == {"inference_calls": len(lines[0::4])}
    assert dumps[1] == dumps[0] and dumps[2] == dumps[0]


class _FailOnce:
    """A target wrapper whose projection raises once, on the Ray worker, while a marker file exists."""

    def __init__(self, target: Any, marker: Path) -> None:
        self._target, self._marker = target, marker

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_target", "_marker"):
            raise AttributeError(name)
        return getattr(self._target, name)

    def project_row(self, population: Any, evidence: Any, settings: Any) -> Any:
        if self._marker.exists():
            self._marker.unlink()
            raise RuntimeError("worker lost mid-export (simulated)")
        return self._target.project_row(population, evidence, settings)


@pytest.mark.ray
@pytest.mark.postgres
def test_a_failed_task_publishes_nothing_and_a_rerun_publishes(ray_cluster: str, demo_store: dict[str, Any],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from ray import cloudpickle

    from sediment.demo import ORG
    from sediment.evidence.context import store_evidence
    from sediment.export.pipeline import export_objective
    from sediment.host.registry import load_registry

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the wrapper travels with the job
    root, store, mirrors = demo_store["root"], demo_store["store"], demo_store["mirrors"]
    registry = load_registry()
    name = "sediment"
    objective = registry.targets[name].objective
    expected = root / "exports" / "fail-expected"
    export_objective(store_evidence(store, ORG, mirrors), expected, objective=objective, target=name,
                     registry=registry)
    marker = root / "fail-once"
    marker.touch()
    monkeypatch.setitem(registry.targets, name, _FailOnce(registry.targets[name], marker))
    out = root / "exports" / "fail"
    with pytest.raises(SedimentError) as failed:
        export_objective(store_evidence(store, ORG, mirrors), out, objective=objective, target=name,
                         registry=registry, workers=2, engine="ray")
    assert "\n" not in str(failed.value) and "nothing was published" in str(failed.value)
    assert "worker lost mid-export (simulated)" in str(failed.value)
    assert not [p for p in out.iterdir() if p.suffix == ".jsonl" or p.name.endswith(".json")]
    assert not marker.exists()  # the task on the worker raised
    export_objective(store_evidence(store, ORG, mirrors), out, objective=objective, target=name, registry=registry,
                     workers=2, engine="ray")
    assert _tree(out) == _tree(expected)


@pytest.mark.ray
@pytest.mark.postgres
@pytest.mark.slow
def test_the_bench_on_ray_matches_one_process_and_local_workers(ray_cluster: str, tmp_path: Path) -> None:
    """bench/run.py --engine ray on the smoke profile: every output and the stores identical."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import engines
    from run import run_stage
    from synth import PROFILES

    from sediment.testing import postgres_base_url

    result = engines.run_engines(PROFILES["smoke"], tmp_path, 2, postgres_base_url(), run_stage, address=ray_cluster)
    assert result["identical"] and result["same_store"]
    report = engines.render(result)
    assert "| derive |" in report and "ray, 2 workers s" in report
