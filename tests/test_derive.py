"""Derivation from a real store and real mirrors: attribution, terminal CI, split, provenance,
bundle equality with direct exports, and order independence."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sediment import export_rlvr_from_bundle, export_rlvr_from_rollouts
from sediment.derive.sessions import StoreRollouts, attach_decisions, derive_bundle
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.git.mirror_root import MirrorRoot
from sediment.git.mirror_writer import MirrorWriter
from sediment.ingest.git_notes import observe_notes
from sediment.model.facts import DeveloperDecision, ToolCallPart
from sediment.model.policy import DerivationPolicy
from sediment.model.rollout import SessionCommits
from sediment.store import FactStore
from sediment.testing import ORG, T0, call, conversation, message, outcome, read_rows, snapshot

REPO = "owner/repo"


def at(minutes: float) -> int:
    return int((T0 + timedelta(minutes=minutes)).timestamp())


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    """An origin repository with notes, its mirror, and the Facts of three Sessions."""
    origin = MirrorWriter(tmp_path / "origin.git")
    base = origin.commit({"a.py": "x = 1\n"}, "base", when=at(-60))
    c1 = origin.commit({"a.py": "x = 2\n"}, "s1 first", when=at(5))
    c2 = origin.commit({"b.py": "y = 3\n"}, "s1 second", when=at(6))
    c3 = origin.commit({"mul.py": "def mul(a, b):\n    return a * b\n"}, "jaccard", when=at(20))
    # notes are written out of trajectory order on purpose
    origin.add_note(c2, [{"tool": "codex", "session_id": "s1", "stamped_at": "x"}])
    origin.add_note(c1, [{"tool": "codex", "session_id": "s1", "stamped_at": "x"}])
    (tmp_path / "mirrors").mkdir()
    mirrors = MirrorRoot(tmp_path / "mirrors")
    mirrors.add(ORG, REPO, str(tmp_path / "origin.git"))
    mul_call = call("s3", 0, [message("user", "write mul")], [message("assistant", ToolCallPart(
        id="t", name="write_file", arguments={"path": "mul.py", "content": "def mul(a, b):\n    return a * b\n"}))])
    facts: list[Any] = [
        *conversation("s1", turns=3),
        *conversation("s2", turns=2),
        mul_call,
        outcome("o-c2-a", c2, "failed", run_id="11", attempt=1),
        outcome("o-c2-b", c2, "passed", run_id="11", attempt=2),
        outcome("o-c1", c1, "passed", run_id="10"),
        outcome("o-c3", c3, "passed", run_id="12"),
        outcome("o-base", base, "failed", run_id="9"),
        # a conflicting run (two branches) on c1 never reaches the Rollout
        outcome("o-bad-1", c1, "passed", run_id="13", branch="main"),
        outcome("o-bad-2", c1, "passed", run_id="13", attempt=2, branch="other"),
    ]
    return {"mirrors": mirrors, "facts": facts, "commits": (base, c1, c2, c3), "tmp": tmp_path}


def load(world: dict[str, Any], url: str, order_seed: int | None = None) -> FactStore:
    store = FactStore(url)
    facts = list(world["facts"])
    if order_seed is not None:
        random.Random(order_seed).shuffle(facts)
    store.append(facts)
    observe_notes(world["mirrors"], store, ORG, REPO, T0 + timedelta(days=1))
    return store


def test_rollouts_trace_to_recorded_ci(world: dict[str, Any], store_url: str) -> None:
    store = load(world, store_url)
    base, c1, c2, c3 = world["commits"]
    rollouts = StoreRollouts(store, ORG, policy=DerivationPolicy(), mirrors=world["mirrors"])
    by_session = {r.session_id: r for r in rollouts}
    s1 = by_session["s1"]
    assert s1.attribution_source == "git_notes"
    assert [c.commit_sha for c in s1.commits] == [c1, c2]
    assert [o.outcome_id for o in s1.terminal_outcomes] == ["o-c1", "o-c2-a", "o-c2-b"]
    assert [o.commit_sha for o in s1.session_commit_observations] == sorted([c1, c2])
    assert s1.provenance.policy_digest == DerivationPolicy().digest and s1.provenance.policy_version == "4"
    s3 = by_session["s3"]
    assert s3.attribution_source == "jaccard" and [c.commit_sha for c in s3.commits] == [c3]
    s2 = by_session["s2"]
    assert s2.commits == () and s2.terminal_outcomes == ()
    assert rollouts.skipped == {"attribution.jaccard_no_match": 1, "file_attribution.no_match": 2,
                                "rollout.conflicting_run_identity": 1}
    # s1's edits share no token with its commits' files; s3's write is mul.py's whole diff
    assert s1.file_attributions == () and s2.file_attributions == ()
    [mul] = s3.file_attributions
    assert (mul.inference_call_id, mul.commit_sha, mul.file_path, mul.similarity_score) == ("s3-c0", c3, "mul.py", 5 / 6)

    out = world["tmp"] / "out"
    export_rlvr_from_rollouts(rollouts, world["mirrors"], out, target="sediment", split_enabled=False,
                              verifier_commands=VerifierCommands.empty())
    tasks = {t["instance_id"].split("-")[1]: t for t in read_rows(out / "tasks.jsonl")}
    task = tasks["s1"]
    assert task["base_commit"] == base and task["ci_resolution"]["commit_sha"] == c2
    recorded = {o.outcome_id: o for o in world["facts"] if hasattr(o, "outcome_id")}
    assert task["verifier_results"] == [json.loads(recorded[i].model_dump_json()) for i in ("o-c2-a", "o-c2-b")]
    assert task["ci_resolution"]["suspected_flake"] is True
    assert tasks["s3"]["attribution_source"] == "jaccard"


def test_reingest_changes_nothing_and_order_does_not_matter(world: dict[str, Any], tmp_path: Path) -> None:
    outputs = []
    for seed in (None, 1, 2):
        store = load(world, f"sqlite:///{tmp_path / f'f{seed}.db'}", order_seed=seed)
        again = store.append(world["facts"])
        assert not again.stored
        bundle, _ = derive_bundle(store, ORG, tmp_path / f"bundle{seed}", policy=DerivationPolicy(),
                                  mirrors=world["mirrors"])
        out = tmp_path / f"out{seed}"
        export_rlvr_from_bundle(bundle, world["mirrors"], out, target="sediment",
                                verifier_commands=VerifierCommands.empty())
        outputs.append((snapshot(out), (bundle / "rollouts.jsonl").read_bytes()))
    assert outputs[0] == outputs[1] == outputs[2]


@pytest.mark.parametrize("target", ["sediment", "swe-bench", "nemo-gym"])
def test_direct_export_equals_bundle_export(world: dict[str, Any], tmp_path: Path, target: str) -> None:
    store = load(world, f"sqlite:///{tmp_path / 'f.db'}")
    bundle, _ = derive_bundle(store, ORG, tmp_path / "bundle", policy=DerivationPolicy(), mirrors=world["mirrors"])
    from_bundle = export_rlvr_from_bundle(bundle, world["mirrors"], tmp_path / "a", target=target,
                                          verifier_commands=VerifierCommands.empty())
    direct = StoreRollouts(store, ORG, policy=DerivationPolicy(), mirrors=world["mirrors"])
    summary = export_rlvr_from_rollouts(direct, world["mirrors"], tmp_path / "b", target=target, split_enabled=True,
                                        verifier_commands=VerifierCommands.empty(), fragmented=direct.fragmented_counter)
    assert summary["fragmented"] == from_bundle["fragmented"]
    names = sorted(p.name for p in (tmp_path / "a").glob("*.jsonl"))
    assert names == sorted(p.name for p in (tmp_path / "b").glob("*.jsonl")) and names
    for name in names:
        assert read_rows(tmp_path / "a" / name) == read_rows(tmp_path / "b" / name)


def test_session_commits_are_what_each_rollout_binds(world: dict[str, Any], tmp_path: Path) -> None:
    """The store's light read of a Session's binding to commits (Recovery's, which reads no message
    history) equals what its fully derived Rollout binds: notes (s1), Jaccard (s3) and none (s2),
    a quarantined call left out, whatever the ingest order."""
    found = []
    for seed in (None, 1, 2):
        store = load(world, f"sqlite:///{tmp_path / f'f{seed}.db'}", order_seed=seed)
        store.quarantine(ORG, "inference_calls", "s1-c1", "poisoned payload")
        rollouts = StoreRollouts(store, ORG, policy=DerivationPolicy(), mirrors=world["mirrors"])
        light = [rollouts.session_commits(i) for i in range(len(rollouts))]
        assert light == [SessionCommits.of(r) for r in rollouts]
        found.append(light)
    assert found[0] == found[1] == found[2]
    by_session = {s.session_id: s for s in found[0]}
    assert by_session["s1"].call_ids == ("s1-c0", "s1-c2") and by_session["s1"].attribution_source == "git_notes"
    assert [c.commit_sha for c in by_session["s3"].commits] == [world["commits"][3]]
    assert by_session["s2"].commits == () and by_session["s2"].attribution_source == "jaccard"


def test_quarantine_flows_into_provenance(world: dict[str, Any], tmp_path: Path) -> None:
    store = load(world, f"sqlite:///{tmp_path / 'f.db'}")
    revision = store.quarantine(ORG, "ci_outcomes", "o-c2-b", "replayed by a broken sender")
    rollouts = {r.session_id: r for r in StoreRollouts(store, ORG, policy=DerivationPolicy(), mirrors=world["mirrors"])}
    s1 = rollouts["s1"]
    assert s1.provenance.quarantine_revision == revision
    assert [o.outcome_id for o in s1.terminal_outcomes] == ["o-c1", "o-c2-a"]


def test_decisions_attach_unique_or_drop() -> None:
    calls = conversation("s1", turns=2)
    when = datetime(2026, 1, 1, tzinfo=UTC)

    def decision(did: str, call_id: str | None) -> DeveloperDecision:
        return DeveloperDecision(decision_id=did, org_id=ORG, session_id="s1", agent_harness="claude-code",
                                 file_path="a.py", accepted=True, explicit=True, interaction_mode="agent",
                                 call_id=call_id, occurred_at=when, captured_at=when)

    attached, losses = attach_decisions(calls, [decision("d1", "s1-t0"), decision("d2", None),
                                                decision("d3", "nope")])
    assert {k: [d.decision_id for d in v] for k, v in attached.items()} == {"s1-c0": ["d1"]}
    assert losses == {"missing_decision_call_id": 1, "unmatched_decision_call_id": 1}
    twin = conversation("s1", turns=2)[1].model_copy(update={"inference_call_id": "twin"})
    _, losses = attach_decisions([*calls, twin], [decision("d4", "s1-t1")])
    assert losses == {"ambiguous_decision_call_id": 1}


def test_direct_export_with_workers_matches_one_worker(world: dict[str, Any], tmp_path: Path) -> None:
    store = load(world, f"sqlite:///{tmp_path / 'f.db'}")
    outputs, fragmented = [], []
    for workers in (1, 2):
        direct = StoreRollouts(store, ORG, policy=DerivationPolicy(), mirrors=world["mirrors"])
        out = tmp_path / f"w{workers}"
        summary = export_rlvr_from_rollouts(direct, world["mirrors"], out, target="sediment", split_enabled=True,
                                            verifier_commands=VerifierCommands.empty(),
                                            fragmented=direct.fragmented_counter, workers=workers)
        outputs.append(snapshot(out))
        fragmented.append(summary["fragmented"])
        assert direct.skipped == {"attribution.jaccard_no_match": 1, "file_attribution.no_match": 2,
                                  "rollout.conflicting_run_identity": 1}
    assert outputs[0] == outputs[1] and fragmented[0] == fragmented[1]


def test_derive_with_workers_writes_the_same_bundle(world: dict[str, Any], tmp_path: Path) -> None:
    store = load(world, f"sqlite:///{tmp_path / 'f.db'}")
    bundles = []
    for workers in (1, 2, 3):
        path, rollouts = derive_bundle(store, ORG, tmp_path / f"b{workers}", policy=DerivationPolicy(),
                                       mirrors=world["mirrors"], workers=workers)
        bundles.append(snapshot(path))
        assert rollouts.skipped == {"attribution.jaccard_no_match": 1, "file_attribution.no_match": 2,
                                    "rollout.conflicting_run_identity": 1}
    assert bundles[0] == bundles[1] == bundles[2]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_jaccard_scores_each_call_against_each_code_file(tmp_path: Path) -> None:
    """Lowercased tokens; one matching (call, code file) pair binds the commit; a README never
    scores; every unbound Session is counted by why."""
    origin = MirrorWriter(tmp_path / "origin.git")
    origin.commit({"base.py": "x = 1\n"}, "base", when=at(-60))
    mixed = origin.commit({"Calc.py": "def Add(A, B):\n    return A + B\n", "NOTES.md": "unrelated words " * 40},
                          "mixed", when=at(5))
    docs = origin.commit({"README.md": "def only(docs): pass\n"}, "docs", when=at(200))
    (tmp_path / "mirrors").mkdir()
    mirrors = MirrorRoot(tmp_path / "mirrors")
    mirrors.add(ORG, REPO, str(tmp_path / "origin.git"))
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")
    noisy = [message("assistant", "let me look around first, reading many unrelated files and notes")]
    edit = [message("assistant", ToolCallPart(id="t1", name="write_file",
                                              arguments={"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}))]
    store.append([
        call("bound", 0, [message("user", "fix add")], noisy),       # scores low against every file
        call("bound", 1, [message("user", "fix add")], edit),        # matches Calc.py, whatever the case
        # (a call's index is its second after T0)
        call("docs-only", 190 * 60, [message("user", "docs")], [message("assistant", "def only(docs): pass")]),
        call("far", 9 * 86400, [message("user", "later")], [message("assistant", "x")]),
        call("mismatch", 0, [message("user", "y")], [message("assistant", "nothing alike here at all")]),
    ])
    rollouts = StoreRollouts(store, ORG, policy=DerivationPolicy(), mirrors=mirrors)
    derived = {r.session_id: r for r in rollouts}
    assert [c.commit_sha for c in derived["bound"].commits] == [mixed]
    assert derived["docs-only"].commits == () and docs not in [c.commit_sha for r in derived.values() for c in r.commits]
    assert rollouts.skipped == {"attribution.jaccard_no_candidate_commit": 1, "attribution.jaccard_no_code_diff": 1,
                                "attribution.jaccard_no_match": 1}


@pytest.mark.parametrize("note_kind", ["git_notes", "git_ai_notes"])
def test_a_noted_commit_is_never_a_similarity_candidate_of_another_session(tmp_path: Path, note_kind: str) -> None:
    """A note is recorded evidence, a similarity an estimate: a commit a note binds to one
    Session is never bound to another by the Jaccard fallback, however alike its calls are and
    although it was made inside that Session's window. An unnoted commit still binds."""
    from sediment.ingest.facts_jsonl import PENDING_ID, with_natural_id
    from sediment.model.facts import SessionCommitObservation

    origin = MirrorWriter(tmp_path / "origin.git")
    origin.commit({"base.py": "x = 1\n"}, "base", when=at(-60))
    noted = origin.commit({"calc.py": "def add(a, b):\n    return a + b\n"}, "noted", when=at(5))
    free = origin.commit({"mul.py": "def mul(a, b):\n    return a * b\n"}, "unnoted", when=at(6))
    (tmp_path / "mirrors").mkdir()
    mirrors = MirrorRoot(tmp_path / "mirrors")
    mirrors.add(ORG, REPO, str(tmp_path / "origin.git"))
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")

    def writes(session: str, index: int, path: str, content: str) -> Any:
        return call(session, index, [message("user", "write it")], [message("assistant", ToolCallPart(
            id=f"t{index}", name="write_file", arguments={"path": path, "content": content}))])

    store.append([
        writes("author", 0, "calc.py", "def add(a, b):\n    return a + b\n"),
        writes("copycat", 1, "calc.py", "def add(a, b):\n    return a + b\n"),  # the same text, no notes
        writes("mul-writer", 2, "mul.py", "def mul(a, b):\n    return a * b\n"),
        with_natural_id(SessionCommitObservation(
            observation_id=PENDING_ID, org_id=ORG, repo=REPO, commit_sha=noted, session_id="author",
            source_push_id=None, captured_at=T0 + timedelta(days=1), attribution_source=note_kind), "observation_id"),
    ])
    rollouts = StoreRollouts(store, ORG, policy=DerivationPolicy(), mirrors=mirrors)
    derived = {r.session_id: r for r in rollouts}
    assert [c.commit_sha for c in derived["author"].commits] == [noted]
    assert derived["author"].attribution_source == note_kind
    assert derived["copycat"].commits == ()  # before the rule: bound to the author's noted commit
    assert [c.commit_sha for c in derived["mul-writer"].commits] == [free]
    assert rollouts.skipped == {"attribution.jaccard_no_match": 1}
    shas = [c.commit_sha for r in derived.values() for c in r.commits]
    assert len(shas) == len(set(shas))  # no commit is bound to two Sessions


def test_superseded_legacy_note_edges_are_neither_evidence_nor_skips(tmp_path: Path) -> None:
    """A mirror added before the webhooks gives legacy note edges; once it is keyed by the
    repository's identity (``mirror fetch``, or the ingest that names the id), its edges are
    observed again under it. The legacy copies are superseded: derive counts no
    ``attribution.repository_identity_absent`` for them, and the population (the bundle's
    ``repository_identities.jsonl``) leaves them out. A legacy edge no identified one restates
    (here: s2's, as if its note was gone when the mirror was keyed) is still declined and counted."""
    from sediment.git.mirror_root import MirrorLocation
    from sediment.git.repositories import RepositoryContext
    from sediment.ingest.facts_jsonl import PENDING_ID, with_natural_id
    from sediment.model.facts import RepositoryIdentity, SessionCommitObservation

    identity = RepositoryIdentity(provider="github", host="github.com", repository_id="424242")
    origin = MirrorWriter(tmp_path / "origin.git")
    origin.commit({"a.py": "x = 1\n"}, "base", when=at(-60))
    c1 = origin.commit({"a.py": "x = 2\n"}, "s1", when=at(5))
    c2 = origin.commit({"b.py": "y = 2\n"}, "s2", when=at(6))
    origin.add_note(c1, [{"tool": "codex", "session_id": "s1", "stamped_at": "x"}])
    origin.add_note(c2, [{"tool": "codex", "session_id": "s2", "stamped_at": "x"}])
    (tmp_path / "mirrors").mkdir()
    mirrors = MirrorRoot(tmp_path / "mirrors")
    mirrors.add(ORG, REPO, str(tmp_path / "origin.git"))  # before any Fact names the id: legacy
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")
    store.append([*conversation("s1"), *conversation("s2")])
    assert observe_notes(mirrors, store, ORG, REPO, T0 + timedelta(days=1)).stored == 2
    store.append([outcome("o1", c1, "passed", run_id="10", repository_provider="github",
                          repository_host="github.com", repository_id="424242")])
    location = MirrorLocation(REPO, None, mirrors.mirror_path(ORG, REPO))
    assert mirrors.rekey(ORG, location, RepositoryContext.from_store(store, ORG)) is not None
    store.append([with_natural_id(SessionCommitObservation(
        observation_id=PENDING_ID, org_id=ORG, repo=REPO, commit_sha=c1, session_id="s1", source_push_id=None,
        captured_at=T0 + timedelta(days=2), attribution_source="git_notes", repository_provider="github",
        repository_host="github.com", repository_id="424242"), "observation_id")])

    rollouts = StoreRollouts(store, ORG, policy=DerivationPolicy(), mirrors=mirrors)
    derived = {r.session_id: r for r in rollouts}
    assert [(c.commit_sha, c.repository_identity) for c in derived["s1"].commits] == [(c1, identity)]
    assert [o.repository_id for o in derived["s1"].session_commit_observations] == ["424242"]
    assert derived["s2"].commits == ()
    # before: 2 (s1's superseded legacy edge was counted although s1 is attributed)
    assert rollouts.skipped.get("attribution.repository_identity_absent") == 1
    edges = [e for e in rollouts.repositories.evidence if e.source_table == "session_commit_observations"]
    assert sorted(e.repository_id or "" for e in edges) == ["", "424242"]  # s2's legacy edge, s1's identified one
