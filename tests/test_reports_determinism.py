"""Both reports are functions of the stored Facts: the demo's Facts ingested again, in their
order and shuffled, into fresh stores give byte-identical JSON and rows."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sediment.demo import ORG, run_demo
from sediment.git.mirror_root import MirrorRoot
from sediment.host.registry import load_registry
from sediment.model.facts import FactModel, PullRequestMerge, SessionCommitObservation
from sediment.reports.dataset_diagnostics import store_dataset_diagnostics
from sediment.reports.merge_retention import store_merge_retention
from sediment.settings import SettingsSources
from sediment.store import FactStore

AS_OF = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[FactModel], MirrorRoot, Path]:
    out = tmp_path_factory.mktemp("demo")
    run_demo(out)
    store = FactStore(f"sqlite:///{out / 'home' / 'facts.db'}")
    facts = [f for table in store.counts(ORG) for f in store.facts(table, ORG)]
    mirrors = MirrorRoot(out / "home" / "mirrors")
    location = mirrors.mirrors(ORG)[0]
    mirror = mirrors.open(ORG, location.repo, location.identity)
    assert mirror is not None
    observed = sorted({f.commit_sha for f in facts if isinstance(f, SessionCommitObservation)},
                      key=mirror.committer_time)
    root = min((c.sha for c in mirror.commits()), key=mirror.committer_time)
    identity = location.identity
    assert identity is not None
    facts.append(PullRequestMerge(
        merge_id="merge-1", org_id=ORG, repo=location.repo, pr_number=1, head_ref="feature", head_sha=observed[-1],
        base_ref="main", base_sha=root, merge_commit_sha=observed[-1], merged_at=AS_OF, captured_at=AS_OF,
        repository_provider=identity.provider, repository_host=identity.host, repository_id=identity.repository_id))
    return facts, mirrors, out


def reports(facts: list[FactModel], mirrors: MirrorRoot, path: Path | str) -> tuple[str, str, Any]:
    store = FactStore(path if isinstance(path, str) else f"sqlite:///{path}")
    for fact in facts:  # one at a time: the order of arrival is the order given
        store.append([fact])
    diagnostics = store_dataset_diagnostics(store, ORG, mirrors, registry=load_registry(),
                                            sources=SettingsSources.empty())
    retention = store_merge_retention(store, ORG, mirrors, as_of=AS_OF)
    return json.dumps(diagnostics.as_json()), json.dumps(retention.report.as_json()), retention.rows


def test_repeated_and_shuffled_ingest_give_identical_reports(demo: tuple[list[FactModel], MirrorRoot, Path],
                                                              tmp_path: Path) -> None:
    facts, mirrors, _ = demo
    first = reports(facts, mirrors, tmp_path / "a.db")
    shuffled = list(facts)
    random.Random(5).shuffle(shuffled)
    assert reports(shuffled, mirrors, tmp_path / "b.db") == first
    assert reports(list(reversed(facts)), mirrors, tmp_path / "c.db") == first
    diagnostics, retention, rows = first
    assert json.loads(retention)["scored_rows"] == len(rows) > 0
    assert json.loads(diagnostics)["model_balance"]


def test_both_backends_give_the_same_reports(demo: tuple[list[FactModel], MirrorRoot, Path], store_url: str,
                                             tmp_path: Path) -> None:
    facts, mirrors, _ = demo
    shuffled = list(facts)
    random.Random(9).shuffle(shuffled)
    assert reports(shuffled, mirrors, store_url) == reports(facts, mirrors, tmp_path / "sqlite.db")
