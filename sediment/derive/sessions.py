"""Derivation: Facts in the store → canonical Rollouts, one Session at a time.

For each Session: its calls (ordered, segmented, version "4"), its decisions attached by
call id (unique-or-drop), its attributed commits (git notes, else Jaccard) and each of their
code files' attributed call, the CI outcomes
of complete, identity-consistent runs on those commits, its observations, split and
provenance, and the Session's whole decision and edit-observation populations (for the
objectives that read them from a bundle). :class:`StoreRollouts` is a lazy sequence: the export pipeline and the bundle
writer read one Session at a time, so memory does not grow with the number of Sessions.
:meth:`StoreRollouts.session_commits` derives only a Session's binding to commits (what
``ExportContext.commit_attributions`` reads), without its message histories.

The org's repository context (:mod:`sediment.git.repositories`) is built once, before the first
Session: every attributed commit is qualified by it, CI resolution runs with it (outcomes are
read under every name of a commit's repository, so a rename loses none, and those of another
repository lifetime resolve elsewhere), and outcomes it declines are counted per source
outcome as ``rollout.<repository reason>``. Exports of these Rollouts resolve with the same
context (:attr:`StoreRollouts.repositories`, or the bundle's population).
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sediment.bundle.write import check_destination, encode_line, write_bundle, write_bundle_lines
from sediment.ci.resolution import commit_key_of, resolve_ci
from sediment.derive.attribution import Attribution, CommitIndex, attribute, attribute_files
from sediment.derive.decision_attachment import ATTACHMENT_SKIP_REASONS, CallTarget
from sediment.derive.decision_attachment import attach_decisions as attach_decisions_to
from sediment.git.mirror_root import MirrorRoot
from sediment.git.repositories import RepositoryContext, superseded_observations, visible_observations
from sediment.model.facts import CIOutcome, DeveloperDecision, InferenceCall, SessionCommitObservation
from sediment.model.policy import ROLLOUT_IMPLEMENTATION_VERSION, DerivationPolicy, Provenance
from sediment.model.rollout import CommitRef, Rollout, SessionCommits, call_order_key, segment_calls, tool_sets
from sediment.parallel import engine_name, ordered_chunks, require_shared_store
from sediment.split import assign_split
from sediment.store import FactStore

DECISION_LOSSES = ATTACHMENT_SKIP_REASONS
#: How much of a worker's part the parent copies into the bundle at a time (then to the next line end).
BLOCK = 1 << 20


def attach_decisions(
    calls: Sequence[InferenceCall], decisions: Sequence[DeveloperDecision]
) -> tuple[dict[str, tuple[DeveloperDecision, ...]], Counter[str]]:
    """Decisions per inference call id, joined unique-or-drop on ``call_id``
    (:mod:`sediment.derive.decision_attachment`), and the drop counts by reason."""
    attachment = attach_decisions_to(map(CallTarget.of_call, calls), decisions)
    return dict(attachment.by_call), attachment.skipped


@dataclass
class SessionDerivation:
    rollout: Rollout | None
    fragmented: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)


def recorded_names(ref: CommitRef, repositories: RepositoryContext) -> tuple[str, ...]:
    """Every name Facts of ``ref``'s repository may be recorded under: all names of an
    identified repository (renames), the one name of a legacy one."""
    if ref.repository_identity is not None:
        return repositories.names(ref.repository_identity) or (ref.repo,)
    return (ref.repo,)


def derive_session(
    store: FactStore,
    org_id: str,
    session_id: str,
    *,
    policy: DerivationPolicy,
    index: CommitIndex,
    quarantine_revision: int,
    repositories: RepositoryContext,
    noted: frozenset[str] = frozenset(),
) -> SessionDerivation:
    """Derive one Session's Rollout from the store (``None`` when it has no visible calls)."""
    calls = sorted(store.calls_for_session(org_id, session_id), key=call_order_key)
    if not calls:
        return SessionDerivation(None)
    decisions = sorted(store.decisions_for_session(org_id, session_id), key=lambda d: (d.occurred_at, d.decision_id))
    decisions_by_call, losses = attach_decisions(calls, decisions)
    segments, fragmented = segment_calls(calls, decisions_by_call)
    observations = session_observations(store, org_id, session_id)
    attribution = attribute(org_id, calls, observations, index, policy.attribution, repositories, noted)
    files = attribute_files(org_id, calls, attribution.commits, attribution.source, index, policy.attribution)
    commit_keys = [commit_key_of(org_id, ref).sort_key for ref in attribution.commits]
    recorded = sorted({(name, ref.commit_sha) for ref in attribution.commits
                       for name in recorded_names(ref, repositories)})
    outcomes = store.ci_outcomes_for_commits(org_id, recorded)
    resolution = resolve_ci(outcomes, quarantine_revision=quarantine_revision, repositories=repositories)
    terminal: list[CIOutcome] = []
    for key in commit_keys:
        terminal.extend(sorted(resolution.outcomes_by_commit.get(key, ()), key=lambda o: o.outcome_id))
    bases = {(name, parent) for ref in attribution.commits
             if (parent := index.first_parent(ref)) is not None for name in recorded_names(ref, repositories)}
    test_results = store.test_results_for_commits(org_id, sorted(set(recorded) | bases))
    kept_observations = attributed_observations(org_id, attribution)
    skipped: Counter[str] = Counter({f"decision.{k}": v for k, v in losses.items()})
    if attribution.unbound is not None:
        skipped[f"attribution.{attribution.unbound}"] += 1
    skipped.update({f"attribution.{k}": v for k, v in attribution.declined.items()})
    skipped.update({f"rollout.{k}": v for k, v in resolution.skipped.items()})
    skipped.update({f"file_attribution.{k}": v for k, v in files.skipped.items()})
    rollout = Rollout(
        org_id=org_id,
        session_id=session_id,
        segments=segments,
        commits=attribution.commits,
        attribution_source=attribution.source,
        terminal_outcomes=tuple(terminal),
        provenance=Provenance(policy_version=ROLLOUT_IMPLEMENTATION_VERSION,
                              quarantine_revision=quarantine_revision, policy_digest=policy.digest),
        split=assign_split(session_id, policy.split.eval_fraction),
        session_commit_observations=tuple(kept_observations),
        tool_sets=tool_sets(calls),
        test_results=tuple(test_results),
        session_decisions=tuple(decisions),
        edit_observations=tuple(store.edit_observations_for_session(org_id, session_id)),
        file_attributions=files.attributions,
    )
    return SessionDerivation(rollout, fragmented, skipped)


def session_observations(store: FactStore, org_id: str, session_id: str) -> list[SessionCommitObservation]:
    """The Session's visible commit observations, less those restated under the identity of a
    re-keyed mirror."""
    found = store.observations_for_session(org_id, session_id)
    superseded = superseded_observations(found)
    return [o for o in found if o.observation_id not in superseded]


def attributed_observations(org_id: str, attribution: Attribution) -> tuple[SessionCommitObservation, ...]:
    """The observations of the commits the Session is attributed to, in Rollout order."""
    attributed = {commit_key_of(org_id, ref).sort_key for ref in attribution.commits}
    return tuple(sorted(
        (o for o, ref in attribution.observed if commit_key_of(org_id, ref).sort_key in attributed),
        key=lambda o: (o.repo, o.commit_sha, o.session_id, o.captured_at, o.observation_id),
    ))


def derive_session_commits(
    store: FactStore,
    org_id: str,
    session_id: str,
    *,
    policy: DerivationPolicy,
    index: CommitIndex,
    repositories: RepositoryContext,
    noted: frozenset[str] = frozenset(),
) -> SessionCommits | None:
    """Only what binds the Session to commits, as :func:`derive_session`'s Rollout holds it
    (``None`` when it has no visible calls). A Session with commit observations is attributed by
    them alone, so only its call ids are read; one without reads its calls for the Jaccard
    fallback, which scores their completions."""
    observations = session_observations(store, org_id, session_id)
    calls: list[InferenceCall] = []
    if observations:
        call_ids = store.call_ids_for_session(org_id, session_id)
    else:
        calls = sorted(store.calls_for_session(org_id, session_id), key=call_order_key)
        call_ids = [call.inference_call_id for call in calls]
    if not call_ids:
        return None
    attribution = attribute(org_id, calls, observations, index, policy.attribution, repositories, noted)
    return SessionCommits(org_id, session_id, assign_split(session_id, policy.split.eval_fraction),
                          attribution.source, attribution.commits, attributed_observations(org_id, attribution),
                          tuple(call_ids))


def noted_commits(observations: Iterable[SessionCommitObservation]) -> frozenset[str]:
    """The SHAs of every commit a visible note (``git_notes`` or ``git_ai_notes``) binds to a
    Session of the org, whichever repository it was read in and whether or not its repository
    qualifies: a commit a note gives one Session is that Session's work."""
    return frozenset(o.commit_sha for o in observations)


class StoreRollouts(Sequence[Rollout]):
    """The org's Rollouts, derived lazily in Session order (one Session resident at a time)."""

    def __init__(self, store: FactStore, org_id: str, *, policy: DerivationPolicy,
                 mirrors: MirrorRoot | None) -> None:
        self.store = store
        self.org_id = org_id
        self.policy = policy
        self.policy_mirrors = mirrors
        self.quarantine_revision = store.quarantine_revision(org_id)
        self._sessions = store.session_ids(org_id)
        #: the org's repository context, read once: every Session is qualified by it
        observations = visible_observations(store, org_id)  # read once, for both
        self.repositories = RepositoryContext.from_store(store, org_id, observations)
        #: every commit a note binds to a Session: never a Jaccard candidate of another Session
        self._noted = noted_commits(observations)
        self._index = CommitIndex(mirrors, org_id, self.repositories)
        self._fragmented: dict[int, Counter[str]] = {}
        self._skipped: dict[int, Counter[str]] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def __getitem__(self, index: int) -> Rollout:  # type: ignore[override]
        derived = derive_session(self.store, self.org_id, self._sessions[index], policy=self.policy,
                                 index=self._index, quarantine_revision=self.quarantine_revision,
                                 repositories=self.repositories, noted=self._noted)
        self._fragmented[index] = derived.fragmented
        self._skipped[index] = derived.skipped
        if derived.rollout is None:
            raise LookupError(f"session {self._sessions[index]!r} has no visible inference calls")
        return derived.rollout

    def __iter__(self) -> Iterator[Rollout]:
        for i in range(len(self)):
            yield self[i]

    def session_commits(self, index: int) -> SessionCommits:
        """Session ``index``'s binding to commits, as its Rollout would hold it, derived alone
        (:func:`derive_session_commits`; no derivation counts are gathered)."""
        found = derive_session_commits(self.store, self.org_id, self._sessions[index], policy=self.policy,
                                       index=self._index, repositories=self.repositories, noted=self._noted)
        if found is None:
            raise LookupError(f"session {self._sessions[index]!r} has no visible inference calls")
        return found

    def order_keys(self) -> list[tuple[str, str]]:
        return [(self.org_id, s) for s in self._sessions]

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (for a Ray worker) without the mirrors it opened nor the counts gathered so far;
        its store pickles as its URL."""
        state = dict(self.__dict__)
        state["_index"] = None
        state["_fragmented"], state["_skipped"] = {}, {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._index = CommitIndex(self.policy_mirrors, self.org_id, self.repositories)

    def session_keys(self) -> list[str]:
        """Each Session's partition key (``org_id/session_id``), in Session order."""
        return [f"{self.org_id}/{s}" for s in self._sessions]

    def after_fork(self) -> None:
        """In a forked worker: never share the parent's database connections."""
        self.store.engine.dispose(close=False)

    def take_stats(self) -> tuple[dict[int, Counter[str]], dict[int, Counter[str]]]:
        """Per-Session derivation counts gathered since the last call (a worker sends them back)."""
        taken = self._fragmented, self._skipped
        self._fragmented, self._skipped = {}, {}
        return taken

    def merge_stats(self, stats: tuple[dict[int, Counter[str]], dict[int, Counter[str]]]) -> None:
        self._fragmented.update(stats[0])
        self._skipped.update(stats[1])

    @property
    def fragmented_counter(self) -> Mapping[str, int]:
        """A live view of the fragmented counts (complete once every Session was read)."""
        return _LiveCounts(lambda: self.fragmented)

    @property
    def fragmented(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for counts in self._fragmented.values():
            total.update(counts)
        return {reason: total[reason] for reason in ("prior_output_absent", "input_history_changed",
                                                     "prior_output_not_replayed")}

    @property
    def skipped(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for counts in self._skipped.values():
            total.update(counts)
        if self.repositories.rename_conflicts:  # renames contradicting another copy: not applied
            total["repository_renames.repository_identity_conflict"] = self.repositories.rename_conflicts
        return dict(sorted(total.items()))


class _LiveCounts(Mapping[str, int]):
    def __init__(self, read: Callable[[], dict[str, int]]) -> None:
        self._read = read

    def __getitem__(self, key: str) -> int:
        return self._read()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


def derive_bundle(store: FactStore, org_id: str, out: Path, *, policy: DerivationPolicy,
                  mirrors: MirrorRoot | None, workers: int = 1,
                  progress: Callable[[int, int], None] | None = None, engine: str = "local"
                  ) -> tuple[Path, StoreRollouts]:
    """Derive every Session of ``org_id`` and write the bundle ``out`` atomically.

    With ``workers`` > 1, contiguous chunks of Sessions are derived in parallel processes and
    their encoded lines concatenated in order (each chunk as soon as it and those before it are
    done, while later chunks are still derived): the bundle is byte-identical either way.
    ``progress(done, total)`` is called as Sessions are derived (after each one, or each chunk).
    With ``engine="ray"`` the Sessions are derived by tasks on a Ray cluster instead, partitioned by
    Session hash (:mod:`sediment.parallel.cluster`; the store must be PostgreSQL, which each task
    reads itself), and their lines merged in Session order: the same bytes again.
    """
    engine = engine_name(engine)
    if engine == "ray":
        require_shared_store(store.url)
    rollouts = StoreRollouts(store, org_id, policy=policy, mirrors=mirrors)
    total = len(rollouts)
    if engine == "ray" and total:
        return _derive_on_ray(rollouts, out, org_id=org_id, policy=policy, workers=workers), rollouts
    if workers <= 1 or total < 2:
        def counted() -> Iterator[Rollout]:  # StoreRollouts yields one item per Session, in order
            for done, rollout in enumerate(rollouts, 1):
                yield rollout
                if progress is not None:
                    progress(done, total)

        path = write_bundle(counted(), out, org_id=org_id, policy=policy,
                            quarantine_revision=rollouts.quarantine_revision,
                            fragmented=lambda: rollouts.fragmented, skipped=lambda: rollouts.skipped, ordered=True,
                            repositories=rollouts.repositories)
        return path, rollouts
    out = check_destination(out)  # before the workers start, not after they finished
    parts = Path(tempfile.mkdtemp(prefix=f".{out.name}.parts-", dir=out.parent))
    try:
        def derive_chunk(chunk: range) -> tuple[Path, Any, int]:
            path = parts / f"part-{chunk.start:09d}.jsonl"
            with path.open("wb") as handle:
                for index in chunk:
                    handle.write(encode_line(rollouts[index]))
            return path, rollouts.take_stats(), chunk.stop

        def lines() -> Iterator[bytes]:  # each chunk's lines as soon as it and those before it are done
            for path, stats, done in ordered_chunks(derive_chunk, total, workers, on_fork=rollouts.after_fork):
                rollouts.merge_stats(stats)
                if progress is not None:
                    progress(done, total)
                with path.open("rb") as handle:  # whole lines, in blocks of about a mebibyte
                    while block := handle.read(BLOCK) + handle.readline():
                        yield block
                path.unlink()

        written = write_bundle_lines(lines(), out, org_id=org_id, policy=policy,
                                     quarantine_revision=rollouts.quarantine_revision,
                                     repositories=rollouts.repositories,
                                     fragmented=lambda: rollouts.fragmented, skipped=lambda: rollouts.skipped)
    finally:
        shutil.rmtree(parts, ignore_errors=True)
    return written, rollouts


def _derive_session_lines(rollouts: StoreRollouts, positions: Sequence[int]) -> list[tuple[bytes, Any]]:
    """A Ray task's share of a derivation: each Session's encoded line and its counts."""
    lines = []
    for index in positions:
        line = encode_line(rollouts[index])
        lines.append((line, rollouts.take_stats()))
    return lines


def _derive_on_ray(rollouts: StoreRollouts, out: Path, *, org_id: str, policy: DerivationPolicy,
                   workers: int) -> Path:
    from functools import partial

    from sediment.parallel.cluster import ordered_partitions

    out = check_destination(out)

    def lines() -> Iterator[bytes]:
        for line, stats in ordered_partitions(partial(_derive_session_lines, rollouts), rollouts.session_keys(),
                                              workers):
            rollouts.merge_stats(stats)
            yield line

    return write_bundle_lines(lines(), out, org_id=org_id, policy=policy,
                              quarantine_revision=rollouts.quarantine_revision, repositories=rollouts.repositories,
                              fragmented=lambda: rollouts.fragmented, skipped=lambda: rollouts.skipped)
