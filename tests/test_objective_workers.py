"""An objective without targets that declares its Sessions independent (SFT) is exported by
``--workers`` processes, each projecting a run of Sessions, with one process's bytes; one that
does not (DPO, diff-SFT), and any profile export, is projected in one process, which may spread
a per-Session part over the workers (DPO's admission: ``ExportContext.session_runs``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sediment.export.pipeline as pipeline
from sediment.demo import run_demo
from sediment.host.registry import load_registry
from sediment.testing.bundles import demo_evidence


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "demo"
    run_demo(out)
    return out


def files_of(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def export(demo: Path, out: Path, objective: str, workers: int, *, profile: str | None = None,
           shuffle: int | None = None) -> dict[str, Any]:
    evidence, settings = demo_evidence(demo, shuffle=shuffle)
    summary = pipeline.export_objective(evidence, out, objective=objective, profile=profile, settings=settings,
                                        workers=workers)
    summary["written"] = sorted(Path(p).name for p in summary["written"])
    summary.pop("manifests")
    if "compatibility" in summary:
        summary["compatibility"] = Path(summary["compatibility"]).name
    return summary


def worker_counts(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[int]:
    """The worker count each of ``module``'s ``ordered_chunks`` calls is made with, from now on."""
    asked: list[int] = []
    chunked = module.ordered_chunks

    def counting(job: Any, count: int, workers: int, **options: Any) -> Any:
        asked.append(workers)
        return chunked(job, count, workers, **options)

    monkeypatch.setattr(module, "ordered_chunks", counting)
    return asked


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The worker count every export's chunks were run with."""
    return worker_counts(monkeypatch, pipeline)


def test_only_sft_declares_its_sessions_independent() -> None:
    objectives = load_registry().objectives
    assert {name for name, o in objectives.items() if o.info.sessions_independent} == {"sft"}


def test_sft_with_workers_gives_one_process_bytes_repeated_and_shuffled(demo: Path, tmp_path: Path,
                                                                       forked: list[int]) -> None:
    runs = [(workers, shuffle) for workers in (1, 2, 3) for shuffle in (None, 7)]
    results = [(files_of(out), summary) for out, summary in (
        (tmp_path / f"sft-{w}-{s}", export(demo, tmp_path / f"sft-{w}-{s}", "sft", w, shuffle=s)) for w, s in runs)]
    assert forked == [w for w, _ in runs]  # the workers were really used
    first_files, first_summary = results[0]
    assert first_summary["sample_rows"] > 0 and any(name.endswith(".jsonl") for name in first_files)
    for files, summary in results[1:]:
        assert files == first_files
        assert summary == first_summary


@pytest.mark.parametrize(("objective", "profile"), [("dpo", None), ("diff-sft", None), ("sft", "hf-trl-sft-v3")])
def test_the_others_and_profiles_project_in_one_process(demo: Path, tmp_path: Path, forked: list[int],
                                                        monkeypatch: pytest.MonkeyPatch, objective: str,
                                                        profile: str | None) -> None:
    import sediment.evidence.context as context

    spread = worker_counts(monkeypatch, context)
    one = export(demo, tmp_path / "one", objective, 1, profile=profile)
    two = export(demo, tmp_path / "two", objective, 2, profile=profile)
    assert forked == [1, 1]
    assert files_of(tmp_path / "one") == files_of(tmp_path / "two") and one == two
    # DPO admits runs of Sessions in the workers; the others read their Sessions in one process
    assert spread == ([2] if objective == "dpo" else [])


def test_dpo_admits_in_workers_with_one_process_bytes_repeated_and_shuffled(demo: Path, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import sediment.evidence.context as context

    spread = worker_counts(monkeypatch, context)
    runs = [(workers, shuffle) for workers in (1, 2, 3) for shuffle in (None, 7)]
    results = [(files_of(out), summary) for out, summary in (
        (tmp_path / f"dpo-{w}-{s}", export(demo, tmp_path / f"dpo-{w}-{s}", "dpo", w, shuffle=s)) for w, s in runs)]
    assert spread == [w for w, _ in runs if w > 1]
    first_files, first_summary = results[0]
    assert first_summary["pair_rows"] > 0 and any(name.endswith(".jsonl") for name in first_files)
    for files, summary in results[1:]:
        assert files == first_files
        assert summary == first_summary


@pytest.mark.parametrize("objective", ["dpo", "diff-sft"])
def test_their_workers_check_the_bundle_when_opened(demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   objective: str) -> None:
    """``--workers`` of an objective whose Sessions are not independent checks the ``--from``
    bundle in that many processes; the rows, projected in one process, are the same bytes."""
    from typer.testing import CliRunner

    import sediment.bundle.lines as lines
    from sediment.cli import app

    asked = worker_counts(monkeypatch, lines)
    env = {"SEDIMENT_HOME": str(tmp_path / "home"), "SEDIMENT_ORG_ID": "unused"}
    outputs = []
    for workers in (1, 2, 3):
        out = tmp_path / f"{objective}-{workers}"
        result = CliRunner().invoke(app, ["export", objective, "--from", str(demo / "bundle"), "--out", str(out),
                                          "--mirrors", str(demo / "home" / "mirrors"), "--workers", str(workers)],
                                    env=env)
        assert result.exit_code == 0, result.output
        outputs.append(files_of(out))
    assert asked == [1, 2, 3]
    assert outputs[0] and any(name.endswith(".jsonl") for name in outputs[0])
    assert outputs[1] == outputs[0] and outputs[2] == outputs[0]


def test_session_runs_see_every_session_in_export_order_whatever_the_workers(demo: Path) -> None:
    """``ExportContext.session_runs``: chaining the runs' results gives the Sessions of one
    process in export order; ``read`` and progress count every Session once."""
    from sediment.evidence.context import ExportContext
    from sediment.evidence.recipe import Recipe

    evidence, settings = demo_evidence(demo, shuffle=3)

    def sessions_of(workers: int) -> tuple[list[tuple[str, int]], int, list[tuple[int, int]]]:
        ticks: list[tuple[int, int]] = []
        context = ExportContext(evidence, recipe=Recipe("dpo_human", 2), settings=settings,
                                progress=lambda done, total: ticks.append((done, total)), workers=workers)
        runs = list(context.session_runs(lambda part: [(s.session_id, len(s)) for s in part]))
        assert len(runs) == (1 if workers == 1 else min(workers * 8, len(evidence.rollouts)))
        return [seen for run in runs for seen in run], context.read, ticks

    one, read, ticks = sessions_of(1)
    assert len(one) == len(evidence.rollouts) > 1 and read == sum(n for _, n in one) > 0
    assert ticks == [(done, len(one)) for done in range(1, len(one) + 1)]  # one tick a Session
    assert [session for session, _ in one] == sorted(session for session, _ in one)  # export order
    for workers in (2, 3):
        many, many_read, many_ticks = sessions_of(workers)
        assert many == one and many_read == read
        assert many_ticks[-1] == (len(one), len(one))
        assert [done for done, _ in many_ticks] == sorted({done for done, _ in many_ticks})
