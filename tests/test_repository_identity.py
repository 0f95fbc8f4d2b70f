"""Repository identity end to end (docs/operate.md, Repository identity): real GitHub-shaped
deliveries into a real store (SQLite and PostgreSQL), real pygit2 mirrors, derive, bundle and
every target.

The org below holds three repositories:

- ``octo-org/octo-repo`` (GitHub id 300029405), renamed to ``octo-org/octo-app`` between its
  two CI runs; its mirror was added under the old name;
- ``acme/app``, two repository *lifetimes* of one name (id 1, deleted; id 2, created again and
  given the same history, so the same commit SHAs): its CI on the shared commit passed in the
  first lifetime and failed in the second;
- ``legacy/lib``, whose webhooks carry no repository id (legacy evidence).

Plus conflicting evidence: a legacy delivery for ``acme/app`` (no id, a name identified
repositories hold) and one run whose two attempts name different repository ids.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sediment.bundle.read import open_bundle
from sediment.bundle.write import write_bundle
from sediment.ci.resolution import resolve_ci
from sediment.derive.sessions import StoreRollouts, derive_bundle
from sediment.errors import SedimentError
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.export.pipeline import export_through_target
from sediment.git.mirror_root import MirrorError, MirrorRoot, mirror_identity
from sediment.git.mirror_writer import MirrorWriter
from sediment.git.repositories import RepositoryContext
from sediment.ingest.ci.github import translate_github
from sediment.ingest.facts_jsonl import fact_id
from sediment.ingest.git_notes import observe_notes
from sediment.model.facts import PullRequestMerge, RepositoryIdentity, RepositoryRename
from sediment.model.policy import DerivationPolicy
from sediment.model.rollout import Rollout
from sediment.store import FactStore
from sediment.testing import ORG, POLICY, T0, conversation, outcome, read_rows, rollout, snapshot

GITHUB = Path(__file__).parent / "fixtures" / "github"
OLD, NEW = "octo-org/octo-repo", "octo-org/octo-app"
X = RepositoryIdentity(provider="github", host="github.com", repository_id="300029405")
APP = "acme/app"
APP1 = RepositoryIdentity(provider="github", host="github.com", repository_id="1")
APP2 = RepositoryIdentity(provider="github", host="github.com", repository_id="2")
LIB = "legacy/lib"
CAPTURED = T0 + timedelta(days=1)
OBSERVED = T0 + timedelta(days=2)


def identity_row(identity: RepositoryIdentity | None) -> dict[str, str] | None:
    return None if identity is None else identity.model_dump()


# --- real-shaped deliveries ---------------------------------------------------------------


def _name(payload_repository: dict[str, Any], repo: str, repository_id: int | None) -> None:
    owner, name = repo.split("/")
    payload_repository.update(name=name, full_name=repo)
    payload_repository["owner"]["login"] = owner
    if repository_id is None:
        payload_repository.pop("id", None)
    else:
        payload_repository["id"] = repository_id


def workflow_run(run_id: int, sha: str, conclusion: str, *, repo: str, repository_id: int | None,
                 attempt: int = 1) -> dict[str, Any]:
    """A ``workflow_run`` ``completed`` delivery as GitHub sends it (the fixture's shape), for
    ``repo`` with GitHub's ``repository.id`` (``None``: a payload without it)."""
    delivery = json.loads((GITHUB / "workflow_run.completed.success.json").read_text(encoding="utf-8"))
    delivery["headers"]["X-GitHub-Delivery"] = f"delivery-{run_id}-{attempt}"
    payload = delivery["payload"]
    run = payload["workflow_run"]
    run.update(id=run_id, head_sha=sha, conclusion=conclusion, run_attempt=attempt, head_branch="main",
               html_url=f"https://github.com/{repo}/actions/runs/{run_id}")
    for where in (payload["repository"], run["repository"], run["head_repository"]):
        where.setdefault("owner", {"login": ""})
        _name(where, repo, repository_id)
    return delivery


def renamed(old: str, new: str, repository_id: int) -> dict[str, Any]:
    """A ``repository`` ``renamed`` delivery (the fixture's shape): ``old`` became ``new``."""
    delivery = json.loads((GITHUB / "repository.renamed.json").read_text(encoding="utf-8"))
    delivery["headers"]["X-GitHub-Delivery"] = f"rename-{repository_id}-{new}"
    payload = delivery["payload"]
    payload["changes"]["repository"]["name"]["from"] = old.split("/")[1]
    _name(payload["repository"], new, repository_id)
    return delivery


def merged(number: int, repo: str, repository_id: int, sha: str, base: str) -> dict[str, Any]:
    """A merged ``pull_request`` delivery (the fixture's shape) of ``repo`` from a branch of its own."""
    delivery = json.loads((GITHUB / "pull_request.closed.merged.json").read_text(encoding="utf-8"))
    delivery["headers"]["X-GitHub-Delivery"] = f"merge-{repository_id}-{number}"
    payload = delivery["payload"]
    pr = payload["pull_request"]
    pr.update(number=number, merge_commit_sha=sha)
    pr["head"]["sha"], pr["base"]["sha"] = sha, base
    _name(payload["repository"], repo, repository_id)
    _name(pr["head"]["repo"], repo, repository_id)
    return delivery


def translate(delivery: dict[str, Any]) -> Any:
    translation = translate_github(copy.deepcopy(delivery), event=None, org_id=ORG, captured_at=CAPTURED)
    assert translation.skipped is None
    return translation.facts[0]


# --- the org ------------------------------------------------------------------------------


def at(minutes: float) -> int:
    return int((T0 + timedelta(minutes=minutes)).timestamp())


def history(writer: MirrorWriter) -> tuple[str, str]:
    """The history both lifetimes of acme/app hold (same files, times, author: same SHAs)."""
    base = writer.commit({"app.py": "VERSION = 1\n"}, "base", when=at(-60))
    d1 = writer.commit({"app.py": "VERSION = 2\n"}, "bump", when=at(5))
    return base, d1


class Org:
    """The origins, the deliveries and the calls of the org; :meth:`load` ingests them into a
    store (in a given order) and adds the mirrors, as an operator would."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        octo = MirrorWriter(tmp / "octo.git")
        self.octo_base = octo.commit({"calc.py": "def add(a, b):\n    return a - b\n"}, "base", when=at(-60))
        self.c1 = octo.commit({"calc.py": "def add(a, b):\n    return a + b\n"}, "fix add", when=at(3))
        self.c2 = octo.commit({"calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"},
                              "add sub", when=at(8))
        octo.add_note(self.c1, [{"tool": "codex", "session_id": "s1", "stamped_at": "t"}])
        octo.add_note(self.c2, [{"tool": "codex", "session_id": "s2", "stamped_at": "t"}])
        first, second = MirrorWriter(tmp / "app1.git"), MirrorWriter(tmp / "app2.git")
        self.app_base, self.d1 = history(first)
        assert history(second) == (self.app_base, self.d1)  # the second lifetime got the same history
        first.add_note(self.d1, [{"tool": "codex", "session_id": "s3", "stamped_at": "t"}])
        self.d2 = second.commit({"app.py": "VERSION = 3\n"}, "bump again", when=at(9))
        second.add_note(self.d2, [{"tool": "codex", "session_id": "s4", "stamped_at": "t"}])
        lib = MirrorWriter(tmp / "lib.git")
        lib.commit({"lib.py": "def f():\n    return 0\n"}, "base", when=at(-60))
        self.e1 = lib.commit({"lib.py": "def f():\n    return 1\n"}, "fix f", when=at(4))
        lib.add_note(self.e1, [{"tool": "codex", "session_id": "s5", "stamped_at": "t"}])
        self.deliveries = [
            workflow_run(101, self.c1, "success", repo=OLD, repository_id=300029405),
            renamed(OLD, NEW, 300029405),
            workflow_run(102, self.c2, "success", repo=NEW, repository_id=300029405),
            workflow_run(201, self.d1, "success", repo=APP, repository_id=1),
            workflow_run(301, self.d1, "failure", repo=APP, repository_id=2),
            workflow_run(302, self.d2, "success", repo=APP, repository_id=2),
            workflow_run(401, self.e1, "success", repo=LIB, repository_id=None),
            # conflicting evidence: a legacy delivery for a name identified repositories hold, and
            # one run whose attempts name two different repositories
            workflow_run(501, self.d1, "success", repo=APP, repository_id=None),
            workflow_run(601, self.d1, "failure", repo=APP, repository_id=1, attempt=1),
            workflow_run(601, self.d1, "success", repo=APP, repository_id=2, attempt=2),
        ]
        self.calls = [c for s in ("s1", "s2", "s3", "s4", "s5") for c in conversation(s)]

    def facts(self) -> list[Any]:
        return [translate(d) for d in self.deliveries] + list(self.calls)

    def load(self, url: str, *, seed: int | None = None, name: str = "mirrors") -> tuple[FactStore, MirrorRoot]:
        store = FactStore(url)
        facts = self.facts()
        if seed is not None:
            random.Random(seed).shuffle(facts)
        for fact in facts:  # one at a time, in that order
            store.append([fact])
        (self.tmp / name).mkdir()
        mirrors = MirrorRoot(self.tmp / name)
        context = RepositoryContext.from_store(store, ORG)
        adds = [(OLD, self.tmp / "octo.git", None), (APP, self.tmp / "app1.git", APP1),
                (APP, self.tmp / "app2.git", APP2), (LIB, self.tmp / "lib.git", None)]
        if seed is not None:
            random.Random(seed).shuffle(adds)
        for repo, source, chosen in adds:
            identity = mirror_identity(context, repo, chosen)
            mirrors.add(ORG, repo, str(source), identity)
            observe_notes(mirrors, store, ORG, repo, OBSERVED, identity)
        return store, mirrors


@pytest.fixture
def org(tmp_path: Path) -> Org:
    return Org(tmp_path)


def export(rollouts: Any, mirrors: MirrorRoot, out: Path, target: str) -> dict[str, Any]:
    return export_through_target(rollouts, mirrors, out, target=target, split_enabled=False,
                                     verifier_commands=VerifierCommands.empty())


def rows_by_session(out: Path, name: str) -> dict[str, dict[str, Any]]:
    rows = read_rows(out / name)
    return {(r.get("metadata") or r)["instance_id"].split("-")[1]: r for r in rows}


# --- the whole path -------------------------------------------------------------------------


def test_identified_outcomes_resolve_renames_keep_identity_and_lifetimes_never_join(
        org: Org, store_url: str) -> None:
    store, mirrors = org.load(store_url)
    rollouts = StoreRollouts(store, ORG, policy=POLICY, mirrors=mirrors)
    by_session = {r.session_id: r for r in rollouts}
    summary = export(rollouts, mirrors, org.tmp / "out", "sediment")
    tasks = rows_by_session(org.tmp / "out", "tasks.jsonl")

    # the renamed repository: one identity, labelled by its smallest name, both runs resolve;
    # its mirror (added under the old name) gives the reference patches of both Sessions
    for session, commit, run in (("s1", org.c1, "101"), ("s2", org.c2, "102")):
        task = tasks[session]
        assert task["repository_identity"] == task["ci_resolution"]["repository_identity"] == identity_row(X)
        assert task["repo"] == task["ci_resolution"]["repo"] == NEW  # "octo-org/octo-app" < "octo-org/octo-repo"
        assert task["ci_resolution"]["commit_sha"] == commit and task["reward_source"] == "resolved_ci_pass"
        assert [r["run_id"] for r in task["verifier_results"]] == [run]
        assert {r["repository_id"] for r in task["verifier_results"]} == {"300029405"}
        assert [c.repository_identity for c in by_session[session].commits] == [X]
    assert tasks["s2"]["base_commit"] == org.c1 and "+def sub(a, b):" in tasks["s2"]["reference_patch"]
    assert tasks["s2"]["verifier_results"][0]["repo"] == NEW and by_session["s2"].session_commit_observations[0].repo == OLD

    # two lifetimes of acme/app: the same SHA, each lifetime's CI on its own commit only
    s3, s4 = tasks["s3"], tasks["s4"]
    assert s3["repository_identity"] == identity_row(APP1) and s3["ci_resolution"]["verdict"] == "passed"
    assert [r["run_id"] for r in s3["verifier_results"]] == ["201"]  # never 301 (lifetime 2, failed)
    assert s4["repository_identity"] == identity_row(APP2) and s4["base_commit"] == org.d1
    assert [r["run_id"] for r in s4["verifier_results"]] == ["302"]

    # legacy evidence stays legacy: no identity anywhere, ids as before identity existed
    s5 = tasks["s5"]
    assert s5["repository_identity"] is None and s5["ci_resolution"]["repository_identity"] is None
    assert {(r["repository_provider"], r["repository_id"]) for r in s5["verifier_results"]} == {(None, None)}
    assert s5["session_commit_observation_ids"] == [fact_id("obs", ORG, LIB, org.e1, "s5")]

    # the conflicting evidence is declined, and counted: per source outcome, per run
    assert rollouts.skipped == {"file_attribution.no_match": 5, "rollout.conflicting_run_identity": 1,
                                "rollout.repository_identity_absent": 1}
    assert summary["task_rows"] == 5 and summary["task_skipped"] == {}


def test_without_a_repository_context_identified_outcomes_are_declined(org: Org, store_url: str) -> None:
    """A low-level caller's export of the same Rollouts without a context (docs/operate.md): only
    the legacy repository's task remains; the others are declined per source outcome."""
    store, mirrors = org.load(store_url)
    rollouts = list(StoreRollouts(store, ORG, policy=POLICY, mirrors=mirrors))
    summary = export(rollouts, mirrors, org.tmp / "out", "sediment")
    assert summary["task_rows"] == 1
    assert summary["task_skipped"] == {"repository_identity_unresolved": 4, "missing_verifier_evidence": 4}
    context = RepositoryContext.from_store(store, ORG)
    with_context = export_through_target(rollouts, mirrors, org.tmp / "out2", target="sediment",
                                             split_enabled=False, verifier_commands=VerifierCommands.empty(),
                                             repositories=context)
    assert with_context["task_rows"] == 5


@pytest.mark.parametrize("target", ["sediment", "swe-bench", "nemo-gym"])
def test_bundle_export_equals_direct_export(org: Org, tmp_path: Path, target: str) -> None:
    """The bundle records the repository population; ``--from`` resolves with it and gives the
    direct export's rows (compared as parsed values) and summary."""
    store, mirrors = org.load(f"sqlite:///{tmp_path / 'facts.db'}")
    path, derived = derive_bundle(store, ORG, tmp_path / "bundle", policy=POLICY, mirrors=mirrors)
    bundle = open_bundle(path)
    assert bundle.repositories.evidence == derived.repositories.evidence
    assert bundle.repositories.renames == derived.repositories.renames
    assert [type(r) for r in bundle.repositories.renames] == [RepositoryRename]
    manifest = json.loads((path / "manifest.json").read_text())
    # nine CI outcomes and five observations, each one repository reference; the rename
    assert manifest["counts"] == {"rollouts": 5, "repository_identities": 14, "repository_renames": 1}
    assert manifest["skipped"] == {"file_attribution.no_match": 5, "rollout.conflicting_run_identity": 1,
                                   "rollout.repository_identity_absent": 1}
    from_bundle = export(bundle, mirrors, tmp_path / "a", target)
    direct = export(StoreRollouts(store, ORG, policy=POLICY, mirrors=mirrors), mirrors, tmp_path / "b", target)
    def comparable(summary: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in summary.items() if k not in ("written", "manifests")}

    assert comparable(from_bundle) == comparable(direct)
    names = sorted(p.name for p in (tmp_path / "a").glob("*.jsonl"))
    assert names and names == sorted(p.name for p in (tmp_path / "b").glob("*.jsonl"))
    for name in names:
        assert read_rows(tmp_path / "a" / name) == read_rows(tmp_path / "b" / name)
    identities = {json.dumps(r.get("repository_identity", r.get("metadata", {}).get("repository_identity")))
                  for name in names for r in read_rows(tmp_path / "a" / name)}
    assert identities == {json.dumps(identity_row(i)) for i in (X, APP1, APP2, None)}


def test_repeated_and_shuffled_ingest_give_byte_identical_bundles_and_exports(org: Org, store_url: str) -> None:
    outputs = []
    for index, seed in enumerate((None, 3, 11)):
        url = store_url if index == 0 else f"sqlite:///{org.tmp / f'facts-{seed}.db'}"
        store, mirrors = org.load(url, seed=seed, name=f"mirrors-{index}")
        assert not store.append(org.facts()).stored  # a redelivery of everything stores nothing
        bundle, _ = derive_bundle(store, ORG, org.tmp / f"bundle-{index}", policy=POLICY, mirrors=mirrors)
        out = org.tmp / f"out-{index}"
        export(open_bundle(bundle), mirrors, out, "sediment")
        outputs.append((snapshot(bundle), snapshot(out)))
    assert outputs[0] == outputs[1] == outputs[2]


# --- mirrors --------------------------------------------------------------------------------


def test_mirrors_are_keyed_by_identity(org: Org, tmp_path: Path) -> None:
    store, mirrors = org.load(f"sqlite:///{tmp_path / 'facts.db'}")
    context = RepositoryContext.from_store(store, ORG)
    located = {(m.repo, m.identity): m.path.relative_to(mirrors.path).as_posix() for m in mirrors.mirrors(ORG)}
    assert located == {
        (OLD, X): f"repositories-v1/{ORG}/github/github.com/300029405",
        (APP, APP1): f"repositories-v1/{ORG}/github/github.com/1",
        (APP, APP2): f"repositories-v1/{ORG}/github/github.com/2",
        (LIB, None): "acme%2Flegacy%2Flib",  # a legacy repository keeps the legacy layout
    }
    # the renamed repository keeps its mirror: found under its new name too
    assert mirrors.named(ORG, NEW, repositories=context).identity == X
    # two lifetimes of one name: refused by name, found by id
    with pytest.raises(MirrorError, match=r"^repository_mirror_identity_unresolved: 2 mirrors serve acme/app "
                                          r"\(github\.com repository 1, github\.com repository 2\)"):
        mirrors.named(ORG, APP, repositories=context)
    assert mirrors.named(ORG, APP, APP2).path.name == "2"
    # a new mirror of a name two repositories held cannot be keyed without choosing one
    with pytest.raises(MirrorError) as refused:
        mirror_identity(context, APP)
    assert str(refused.value) == ("repository_mirror_identity_unresolved: acme/app was held by github.com "
                                  "repository 1 and github.com repository 2; choose one by its repository id")
    # nor by an id the stored Facts know under other names only
    with pytest.raises(MirrorError, match=r"^repository_mirror_identity_unresolved: the stored Facts name "
                                          r"github\.com repository 1 acme/app, never acme/other$"):
        mirror_identity(context, "acme/other", APP1)
    assert mirror_identity(context, "acme/new", RepositoryIdentity(provider="github", host="github.com",
                                                                    repository_id="99")).repository_id == "99"
    assert mirror_identity(context, "acme/never-seen") is None  # no identified evidence: a legacy mirror


def test_a_legacy_mirror_of_an_identified_name_is_not_read_until_keyed(org: Org, tmp_path: Path) -> None:
    """Added before the webhooks named its repository, a mirror is legacy; its commits never
    take an identity from its name (its notes are declined, its commits are no Jaccard
    candidate); `rekey` moves it under the identity the stored Facts give the name."""
    store = FactStore(f"sqlite:///{tmp_path / 'facts.db'}")
    (tmp_path / "mirrors").mkdir()
    mirrors = MirrorRoot(tmp_path / "mirrors")
    mirrors.add(ORG, OLD, str(org.tmp / "octo.git"))
    observe_notes(mirrors, store, ORG, OLD, OBSERVED)
    store.append(org.facts())
    rollouts = StoreRollouts(store, ORG, policy=POLICY, mirrors=mirrors)
    s1 = {r.session_id: r for r in rollouts}["s1"]
    assert s1.commits == () and s1.attribution_source == "git_notes"
    assert rollouts.skipped["attribution.repository_identity_absent"] == 2
    [legacy] = [m for m in mirrors.mirrors(ORG) if m.repo == OLD]
    keyed = mirrors.rekey(ORG, legacy, rollouts.repositories)
    assert keyed is not None and keyed.identity == X and not legacy.path.exists()
    observe_notes(mirrors, store, ORG, OLD, OBSERVED, X)
    again = {r.session_id: r for r in StoreRollouts(store, ORG, policy=POLICY, mirrors=mirrors)}
    assert [(c.repo, c.repository_identity) for c in again["s1"].commits] == [(NEW, X)]


# --- the store ------------------------------------------------------------------------------


def test_facts_of_two_lifetimes_of_one_name_are_two_facts(store_url: str, tmp_path: Path) -> None:
    """Pull request #1 of each lifetime, and the same history's observations: keyed by identity,
    never collapsed into one Fact (a legacy one keeps the name key it always had)."""
    base, head = "a" * 40, "b" * 40
    store = FactStore(store_url)
    first, second = translate(merged(1, APP, 1, head, base)), translate(merged(1, APP, 2, head, base))
    assert isinstance(first, PullRequestMerge) and first.merge_id != second.merge_id
    assert store.append([first, second]).stored == {"pull_request_merges": 2}
    assert not store.append([translate(merged(1, APP, 2, head, base))]).stored  # a redelivery stays one
    (tmp_path / "mirrors").mkdir()
    mirrors = MirrorRoot(tmp_path / "mirrors")
    writer = MirrorWriter(tmp_path / "origin.git")
    sha = writer.commit({"a.py": "x = 1\n"}, "one", when=at(0))
    writer.add_note(sha, [{"tool": "codex", "session_id": "s1", "stamped_at": "t"}])
    for identity in (APP1, APP2, None):
        mirrors.add(ORG, APP, str(tmp_path / "origin.git"), identity)
        assert observe_notes(mirrors, store, ORG, APP, OBSERVED, identity).stored == 1
    ids = sorted(o.observation_id for o in store.observations_for_session(ORG, "s1"))
    assert fact_id("obs", ORG, APP, sha, "s1") in ids and len(ids) == 3


# --- the resolver, reason by reason ---------------------------------------------------------


def test_each_decline_has_its_reason() -> None:
    sha = "c" * 40
    legacy = outcome("legacy", sha, repo=APP, run_id="1")
    first = outcome("first", sha, repo=APP, run_id="2", repository_provider="github", repository_host="github.com",
                    repository_id="1")
    renamed_to = RepositoryRename(rename_id="r", org_id=ORG, repository_host="github.com", repository_id="1",
                                  old_repo=APP, new_repo="acme/app2", renamed_at=T0, captured_at=T0)
    context = RepositoryContext.build(ORG, [legacy, first], [renamed_to])
    assert context.resolve_fact(first).identity == APP1 and context.resolve_fact(first).repo == APP
    assert context.names(APP1) == (APP, "acme/app2")
    # a name an identified repository holds cannot be legacy, nor take that identity
    assert context.resolve_fact(legacy).reason == "repository_identity_absent"
    # an identity under a name the population never gave it
    assert context.resolve_reference("acme/elsewhere", APP1).reason == "repository_identity_unresolved"
    # the Fact is not in the population, or differs from the population's copy of it
    later = first.model_copy(update={"outcome_id": "later", "run_id": "3"})
    assert context.resolve_fact(later).reason == "repository_source_absent"
    forged = first.model_copy(update={"repository_id": "2"})
    assert context.resolve_fact(forged).reason == "repository_identity_conflict"
    # two copies of one rename delivery that disagree: neither applies, the names are unsafe
    a = renamed_to.model_copy(update={"source_event_id": "d", "rename_id": "ra"})
    b = a.model_copy(update={"rename_id": "rb", "repository_id": "2"})
    unsafe = RepositoryContext.build(ORG, [first], [a, b])
    assert unsafe.rename_conflicts == 2 and unsafe.resolve_fact(first).reason == "repository_identity_conflict"
    assert unsafe.mirror_identity(APP).reason == "repository_mirror_identity_unresolved"
    # CI resolution counts each declined outcome once, by its reason
    result = resolve_ci([legacy, first, later, forged.model_copy(update={"outcome_id": "x", "run_id": "4"})],
                        quarantine_revision=0, repositories=context)
    assert result.skipped == {"repository_identity_absent": 1, "repository_source_absent": 2}
    assert [r.repository_identity for r in result.resolutions] == [APP1]


def test_captured_after_the_context_is_not_part_of_it() -> None:
    sha = "c" * 40
    early = outcome("early", sha, run_id="1", repository_provider="github", repository_host="github.com",
                    repository_id="1")
    late = outcome("late", sha, run_id="2", minutes=5, repository_provider="github", repository_host="github.com",
                   repository_id="1")
    context = RepositoryContext.build(ORG, [early, late], as_of=early.captured_at)
    assert context.as_of == early.captured_at and len(context.evidence) == 1
    result = resolve_ci([early, late], quarantine_revision=0, repositories=context)
    assert result.skipped == {} and [r.source_outcome_ids for r in result.resolutions] == [("early",)]


def test_a_bundle_of_rollouts_alone_records_the_evidence_they_carry(tmp_path: Path) -> None:
    """``write_bundle`` without a context records the repository references of the Rollouts'
    own CI outcomes, so their identified outcomes resolve from the bundle as they were derived."""
    sha = "d" * 40
    identified = outcome("o-1", sha, repo=APP, repository_provider="github", repository_host="github.com",
                         repository_id="1")
    rollouts: list[Rollout] = [rollout("s1", commits=[_ref(APP, sha, APP1)], outcomes=[identified]),
                               rollout("s2", commits=[_ref(APP, sha, APP1)], outcomes=[identified])]
    path = write_bundle(rollouts, tmp_path / "bundle", org_id=ORG, policy=DerivationPolicy(), quarantine_revision=0)
    bundle = open_bundle(path)
    assert [e.source_fact_id for e in bundle.repositories.evidence] == ["o-1"]  # each reference once
    summary = export(bundle, MirrorRoot(_empty(tmp_path)), tmp_path / "out", "nemo-gym")
    rows = read_rows(tmp_path / "out" / "rollouts.jsonl")
    assert summary["rollout_skipped"] == {} and {r["reward"] for r in rows} == {1.0}
    assert {json.dumps(r["metadata"]["repository_identity"]) for r in rows} == {json.dumps(identity_row(APP1))}


def _ref(repo: str, sha: str, identity: RepositoryIdentity) -> Any:
    from sediment.model.rollout import CommitRef

    return CommitRef(repo=repo, commit_sha=sha, repository_identity=identity)


def _empty(tmp_path: Path) -> Path:
    (tmp_path / "empty-mirrors").mkdir()
    return tmp_path / "empty-mirrors"


def test_a_bundle_population_that_was_edited_is_refused(org: Org, tmp_path: Path) -> None:
    store, mirrors = org.load(f"sqlite:///{tmp_path / 'facts.db'}")
    path, _ = derive_bundle(store, ORG, tmp_path / "bundle", policy=POLICY, mirrors=mirrors)
    identities = path / "repository_identities.jsonl"
    data = b"".join(reversed(identities.read_bytes().splitlines(keepends=True)))
    identities.write_bytes(data)
    with pytest.raises(SedimentError, match=r"^repository_identities\.jsonl does not match the sha256"):
        open_bundle(path)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["files"]["repository_identities.jsonl"]["sha256"] = hashlib.sha256(data).hexdigest()
    (path / "manifest.json").write_text(json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n")
    with pytest.raises(SedimentError, match=r"^repository_identities\.jsonl line 2: records are not in population"):
        open_bundle(path)


def test_the_test_kit_exports_identified_rollouts_with_their_context(tmp_path: Path) -> None:
    from sediment.testing import run_export

    sha = "f" * 40
    identified = outcome("o-1", sha, repo=APP, repository_provider="github", repository_host="github.com",
                         repository_id="2")
    built = [rollout("s1", commits=[_ref(APP, sha, APP2)], outcomes=[identified])]
    without = run_export(built, tmp_path / "a", target="nemo-gym")
    assert without.summary["rollout_skipped"] == {"repository_identity_unresolved": 1}
    assert all("reward" not in row for row in without.rows["rollouts.jsonl"])
    context = RepositoryContext.build(ORG, [identified])
    exported = run_export(built, tmp_path / "b", target="nemo-gym", repositories=context)
    assert exported.summary["rollout_skipped"] == {}
    assert {row["reward"] for row in exported.rows["rollouts.jsonl"]} == {1.0}
