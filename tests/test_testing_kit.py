"""The test kit is enough for a plugin author: a bundle or a store scenario built through
``sediment.testing`` exports through any objective, target or profile with every row validated,
and the kit's environment isolation is on only for a suite that opts in (checked with
``pytester`` on real pytest runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sediment.testing import (
    ORG,
    POLICY,
    GitRepo,
    MirrorRoot,
    bundle_evidence,
    conversation,
    derive_bundle,
    export_evidence,
    fact_store,
    outcome,
    read_bundle,
    rollout,
    run_export,
    snapshot,
    store_evidence,
    store_notes,
    write_bundle,
)

pytest_plugins = ["pytester"]


def test_a_bundle_written_from_rollouts_reads_back_and_exports_as_the_rollouts_do(tmp_path: Path, git_repo: GitRepo,
                                                                                  mirror_root: MirrorRoot) -> None:
    sha = git_repo.commit({"a.py": "x = 1\n"})
    rollouts = [rollout("s1", commits=[sha], outcomes=[outcome("o1", sha)]), rollout("s2")]
    path = write_bundle(rollouts, tmp_path / "bundle")
    assert [r.session_id for r in read_bundle(path)] == ["s1", "s2"]
    # the kit's policy splits, so the bundle export writes .train/.eval files
    direct = run_export(rollouts, tmp_path / "direct", target="sediment", mirrors=mirror_root, split_enabled=True)
    from_bundle = export_evidence(bundle_evidence(path, mirror_root), tmp_path / "from-bundle", objective="rlvr",
                                  target="sediment")
    assert from_bundle.rows == direct.rows
    rows = direct.rows["rollouts.train.jsonl"]
    assert [(r["session_id"], (r.get("ci_resolution") or {}).get("commit_sha")) for r in rows] == [("s1", sha), ("s2", None)]
    assert snapshot(tmp_path / "from-bundle") == snapshot(tmp_path / "direct")


def test_a_store_scenario_exports_directly_and_through_its_bundle_alike(tmp_path: Path, git_repo: GitRepo,
                                                                        mirror_root: MirrorRoot) -> None:
    sha = git_repo.commit({"a.py": "x = 1\n"})
    git_repo.note(sha, "s1")
    store = fact_store(f"sqlite:///{tmp_path / 'facts.db'}", [*conversation("s1"), *conversation("s2"),
                                                               outcome("o1", sha)])
    assert store_notes(store, mirror_root) == 1
    direct = export_evidence(store_evidence(store, ORG, mirror_root), tmp_path / "direct", objective="rlvr",
                             target="sediment")
    rows = [row for name, rows in sorted(direct.rows.items()) for row in rows]
    assert [(r["session_id"], (r.get("ci_resolution") or {}).get("commit_sha")) for r in rows] == [("s1", sha), ("s2", None)]
    path, _ = derive_bundle(store, ORG, tmp_path / "bundle", policy=POLICY, mirrors=mirror_root)
    through = export_evidence(bundle_evidence(path, mirror_root), tmp_path / "through", objective="rlvr",
                              target="sediment")
    assert through.rows == direct.rows


ENVIRONMENT_TEST = """
import json
from pathlib import Path
import os


def test_environment():
    print("SEEN", json.dumps(sorted(n for n in os.environ if n.startswith("SEDIMENT_"))))
"""


def _seen(pytester: pytest.Pytester) -> list[str]:
    pytester.makepyfile(test_environment=ENVIRONMENT_TEST)
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    [seen] = [line.split("SEEN ", 1)[1] for line in result.outlines if "SEEN " in line]
    return list(json.loads(seen))


def test_a_suite_without_the_isolation_option_keeps_its_sediment_variables(pytester: pytest.Pytester,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEDIMENT_STORE_URL", "sqlite:///app.db")
    monkeypatch.setenv("SEDIMENT_LOAD_PLUGINS", "my-target")
    pytester.makeini("[pytest]\n")
    assert _seen(pytester) == ["SEDIMENT_LOAD_PLUGINS", "SEDIMENT_STORE_URL"]


def test_a_suite_with_the_isolation_option_sees_no_operator_variable(pytester: pytest.Pytester,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEDIMENT_STORE_URL", "sqlite:///app.db")
    monkeypatch.setenv("SEDIMENT_LOAD_PLUGINS", "my-target")
    pytester.makeini("[pytest]\nsediment_isolate_environment = true\n")
    assert _seen(pytester) == ["SEDIMENT_LOAD_PLUGINS"]  # set to the built-ins by the kit, nothing else
    pytester.makepyfile(test_loads="""
import os


def test_only_the_builtins():
    from sediment.host.discovery import BUILTIN_PLUGINS

    assert os.environ["SEDIMENT_LOAD_PLUGINS"] == ",".join(BUILTIN_PLUGINS)
""")
    pytester.runpytest_subprocess("test_loads.py", "-p", "no:cacheprovider").assert_outcomes(passed=1)
