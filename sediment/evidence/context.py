"""What an export reads, and what the core offers an objective while it projects.

:class:`Evidence` is where an export's evidence comes from: a derived bundle (``--from``) or
the fact store directly (Rollouts derived one Session at a time), with the split it follows,
the mirrors and the derivation's counts. The CLI builds it without knowing the objective.

:class:`ExportContext` is the objective's view of it (``project_evidence``): the recipe asked
for, the split, the mirrors, and the evidence itself, pulled lazily and streamed one unit at a
time (reading the next unit reports progress on the one before). Objectives pull only what
they need, so one whose unit is not a Rollout plugs in through a new accessor here, not
through a change to the pipeline, the writer, the registry or the CLI: an attributed
completion (:meth:`ExportContext.attributed_completions`, SFT, diff-SFT and DPO) is one.

An objective that derives its own units (Recovery: CI transitions) reads what a direct export's
:class:`FactSource` offers: the org's CI outcomes, the core's CI resolution of them, the
repository mirrors and the calls attributed to commits. Repository keys are the core's
(:class:`~sediment.ci.resolution.CommitKey`, qualified by the repository context): a mirror is
looked up by the qualified key, an identified repository's by its identity.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sediment.ci.resolution import DEFAULT_CI_POLICY, CIResolutionPolicy, CIResolutionResult, CommitKey, resolve_ci
from sediment.derive.attributed_completions import SessionCompletions, derive_attributed_completions
from sediment.derive.confidence import LabelConfidencePolicy
from sediment.errors import ConfigurationError
from sediment.evidence.attributed_calls import CommitAttributions, commit_attributions
from sediment.evidence.recipe import Recipe
from sediment.evidence.rollout import RolloutEvidence
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.git.repositories import RepositoryContext
from sediment.model.facts import CIOutcome
from sediment.model.rollout import Rollout, SessionCommits
from sediment.parallel import ordered_chunks

if TYPE_CHECKING:  # the git layer (pygit2) loads when a mirror is opened, not for a bundle-only export
    from sediment.git.mirror import Mirror
    from sediment.git.mirror_root import MirrorRoot
    from sediment.model.policy import DerivationPolicy
    from sediment.settings import SettingsSources
    from sediment.store import FactStore

ProgressCallback = Callable[[int, int], None]
_Unit = TypeVar("_Unit")
_Result = TypeVar("_Result")


class OrderedRollouts(Protocol):
    """A lazily indexable Rollout sequence that knows its order keys without parsing rows."""

    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Rollout: ...
    def order_keys(self) -> Sequence[tuple[str, str]]: ...


RolloutSource = Sequence[Rollout] | OrderedRollouts


def export_order(rollouts: RolloutSource) -> list[int]:
    """Input indexes in export order: ``(org_id, session_id, input index)``, so shuffled input
    gives identical bytes."""
    order_keys = getattr(rollouts, "order_keys", None)
    if callable(order_keys):
        keys: Sequence[tuple[str, str]] = order_keys()
    else:
        keys = [(rollouts[i].org_id, rollouts[i].session_id) for i in range(len(rollouts))]
    return sorted(range(len(keys)), key=lambda i: (keys[i][0], keys[i][1], i))


@dataclass(frozen=True)
class FactSource:
    """The fact store a direct export reads, for objectives that read Facts beyond Rollouts.

    :param store: the fact store.
    :param org_id: the org the export acts for.
    :param policy: the derivation policy its Rollouts are derived under (attribution, split).
    :param quarantine_revision: the org's quarantine-log high-water mark when the export began.
    """

    store: FactStore
    org_id: str
    policy: DerivationPolicy
    quarantine_revision: int


@dataclass
class Evidence:
    """Where an export's evidence comes from.

    :param rollouts: the canonical Rollouts (a bundle, or the store's lazily derived ones).
    :param split_enabled: write ``.train``/``.eval`` files (the bundle policy's ``eval_fraction`` > 0).
    :param mirrors: the mirror root, or ``None`` when the export reads no mirror.
    :param fragmented: segmentation counts of the derivation, reported in the summary (read
        after projection: a store's counts are complete once every Session was derived).
    :param repositories: the repository context CI resolves with (default: the Rollout
        source's own ``repositories``, if it has one).
    :param facts: the fact store of a direct export (``None`` for a bundle).
    """

    rollouts: RolloutSource
    split_enabled: bool
    mirrors: MirrorRoot | None = None
    fragmented: Mapping[str, int] = field(default_factory=dict)
    repositories: RepositoryContext | None = None
    facts: FactSource | None = None


def store_evidence(store: FactStore, org_id: str, mirrors: MirrorRoot | None,
                   policy: DerivationPolicy | None = None) -> Evidence:
    """A direct export's evidence: the org's Rollouts derived one Session at a time under
    ``policy`` (default: the default DerivationPolicy), and the fact store itself."""
    from sediment.derive.sessions import StoreRollouts
    from sediment.model.policy import DerivationPolicy

    policy = policy or DerivationPolicy()
    derived = StoreRollouts(store, org_id, policy=policy, mirrors=mirrors)
    return Evidence(derived, policy.split.eval_fraction > 0, mirrors, derived.fragmented_counter,
                    facts=FactSource(store, org_id, policy, derived.quarantine_revision))


class ExportContext:
    """The export as an objective sees it (``project_evidence``): its recipe, split, mirrors and
    evidence, pulled lazily.

    :attr:`recipe` is the recipe asked for (``--recipe``, else the objective's default);
    :attr:`split_enabled` whether rows go to ``.train``/``.eval`` files (each row names its
    side); :attr:`mirrors` the mirror root or ``None``; :attr:`read` how many units of
    evidence were pulled so far (the summary reports it under the objective's ``units`` key).

    A direct export (from the fact store) also offers :meth:`ci_outcomes`,
    :meth:`resolve_ci`, :meth:`mirror`, :meth:`commit_attributions` and the policy it runs
    under, for an objective that derives its own units; it hands them out through
    :meth:`derived`, which counts and reports them as :meth:`rollouts` does Rollouts.
    """

    def __init__(self, evidence: Evidence, *, recipe: Recipe, verifier_commands: VerifierCommands | None = None,
                 ci_policy: CIResolutionPolicy = DEFAULT_CI_POLICY, progress: ProgressCallback | None = None,
                 repositories: RepositoryContext | None = None, settings: SettingsSources | None = None,
                 order: Sequence[int] | None = None, workers: int = 1) -> None:
        self._evidence = evidence
        #: How many worker processes :meth:`session_runs` may fork (1: it runs in this process).
        self._workers = max(1, workers)
        #: The input indexes of the Rollouts read, in export order (default: all of them); a run of
        #: them is one worker's share of a Sessions-independent objective's export.
        self._order = order
        #: The repository context CI resolves with (``None``: only legacy outcomes resolve).
        self.repositories = repositories
        self.recipe = recipe
        self.split_enabled = evidence.split_enabled
        self.mirrors = evidence.mirrors
        self._verifier_commands = verifier_commands or VerifierCommands.empty()
        self._ci_policy = ci_policy
        self._progress = progress
        self._settings = settings
        self._mirrors: dict[tuple[str, ...], Mirror | None] = {}
        self.read = 0

    @property
    def rollout_count(self) -> int:
        """How many Rollouts :meth:`rollouts` yields."""
        return len(self._evidence.rollouts) if self._order is None else len(self._order)

    def _reading_order(self) -> Sequence[int]:
        """The input indexes of the Rollouts this context reads, in export order."""
        return export_order(self._evidence.rollouts) if self._order is None else self._order

    def rollouts(self) -> Iterator[RolloutEvidence]:
        """Every Rollout of the export, in export order (``(org_id, session_id)``, then input
        order), each as a :class:`~sediment.plugin.RolloutEvidence` (CI resolution, mirrors,
        the calls' recorded context, computed lazily). One Rollout is resident at a time; asking
        for the next one reports the previous one done."""
        source = self._evidence.rollouts
        order = self._reading_order()
        for position, index in enumerate(order):
            self.read += 1
            yield RolloutEvidence(source[index], mirrors=self.mirrors, verifier_commands=self._verifier_commands,
                                  ci_policy=self._ci_policy, recipe=self.recipe, repositories=self.repositories)
            if self._progress is not None:
                self._progress(position + 1, len(order))

    @cached_property
    def label_confidence(self) -> LabelConfidencePolicy:
        """The Confidence ladder's policy of this export: ``SEDIMENT_LABEL_CONFIDENCE_*`` over the
        ``[label-confidence]`` table of ``--config`` over the defaults (docs/confidence.md); read
        when first asked for, so an export that never asks is never stopped by it."""
        from sediment.derive.confidence import label_confidence_policy
        from sediment.settings import SettingsSources

        return label_confidence_policy(self._settings or SettingsSources.empty())

    def attributed_completions(self) -> Iterator[SessionCompletions]:
        """Every Session's attributed completions (:mod:`sediment.derive.attributed_completions`), in
        export order, each a :class:`~sediment.derive.attributed_completions.SessionCompletions` derived
        from its Rollout with this export's repository context; CI resolves with the ladder's
        CI-resolution policy (:attr:`label_confidence`, whose reliabilities the Confidence
        reads). One Session is
        resident at a time; :attr:`read` counts the completions, and asking for the next Session
        reports the previous one done. A bundle whose Rollouts carry no file attributions
        (version 3, or the upstream layout) is refused with one line."""
        from sediment.errors import BundleError

        source = self._evidence.rollouts
        if not getattr(source, "carries_file_attributions", True):
            raise BundleError("this bundle's Rollouts carry no file attributions (bundle version 3, or the "
                              "upstream layout), which attributed completions come from: derive the bundle again")
        ci_policy = self.label_confidence.ci_resolution
        order = self._reading_order()
        for position, index in enumerate(order):
            completions = derive_attributed_completions(source[index], repositories=self.repositories,
                                                        ci_policy=ci_policy)
            self.read += len(completions)
            yield completions
            if self._progress is not None:
                self._progress(position + 1, len(order))

    def session_runs(self, job: Callable[[Iterator[SessionCompletions]], _Result]) -> Iterator[_Result]:
        """``job`` over contiguous runs of the Sessions' attributed completions, each run's
        result yielded in export order: the per-Session part of an objective whose rows need
        every Session (DPO's buckets), spread over the export's workers.

        With one worker ``job`` runs once here over :meth:`attributed_completions`. With more,
        the Sessions are cut into contiguous runs that forked worker processes take (``job`` and
        what it closes over are inherited, not pickled; only its result travels back, so it
        should be small: spill large results to files the parent reads). Chaining the results
        in the order yielded sees the Sessions in export order, as one process would;
        :attr:`read` and progress count each run once its result is back."""
        order = self._reading_order()
        if self._workers <= 1 or len(order) < 2:
            yield job(self.attributed_completions())
            return
        source = self._evidence.rollouts

        def run(chunk: range) -> tuple[_Result, int, Any, int]:
            part = ExportContext(self._evidence, recipe=self.recipe, verifier_commands=self._verifier_commands,
                                 ci_policy=self._ci_policy, repositories=self.repositories,
                                 settings=self._settings, order=order[chunk.start:chunk.stop])
            result = job(part.attributed_completions())
            take_stats = getattr(source, "take_stats", None)
            return result, part.read, take_stats() if callable(take_stats) else None, len(chunk)

        after_fork = getattr(source, "after_fork", None)
        merge_stats = getattr(source, "merge_stats", None)
        self.label_confidence  # noqa: B018 (a settings error stops the export here, not in a worker)
        done = 0
        for result, read, stats, positions in ordered_chunks(
                run, len(order), self._workers, on_fork=after_fork if callable(after_fork) else None):
            self.read += read
            if stats is not None and callable(merge_stats):
                merge_stats(stats)
            done += positions
            if self._progress is not None:
                self._progress(done, len(order))
            yield result

    # --- what a direct export offers an objective that derives its own units ----------------

    def _facts(self, what: str) -> FactSource:
        if self._evidence.facts is None:
            raise ConfigurationError(f"{what} are read from the fact store, which an export from a bundle does "
                                     "not read; export directly (without --from)")
        return self._evidence.facts

    @property
    def quarantine_revision(self) -> int:
        """The org's quarantine-log high-water mark when the export began."""
        return self._facts("CI outcomes").quarantine_revision

    @property
    def derivation_policy_digest(self) -> str:
        """The digest of the derivation policy (attribution, split) the evidence is derived under."""
        return self._facts("CI outcomes").policy.digest

    @property
    def ci_policy_digest(self) -> str:
        """The digest of the CI resolution policy :meth:`resolve_ci` applies."""
        return self._ci_policy.digest

    def ci_outcomes(self) -> tuple[CIOutcome, ...]:
        """Every visible CI outcome of the org (quarantined ones left out), read from the fact
        store once, in ``outcome_id`` order. Only a direct export has them."""
        facts = self._facts("CI outcomes")
        outcomes = [o for o in facts.store.facts("ci_outcomes", facts.org_id) if isinstance(o, CIOutcome)]
        return tuple(sorted(outcomes, key=lambda o: o.outcome_id))

    def resolve_ci(self, outcomes: Iterable[CIOutcome]) -> CIResolutionResult:
        """The core's CI resolution of ``outcomes`` (attempts grouped into runs, run and commit
        verdicts, the resolver's skip counts), under the export's CI policy, quarantine revision
        and repository context (which qualifies each outcome's repository and leaves out outcomes
        captured after its ``as_of``)."""
        return resolve_ci(outcomes, quarantine_revision=self.quarantine_revision, policy=self._ci_policy,
                          repositories=self.repositories)

    def mirror(self, commit: CommitKey) -> Mirror | None:
        """The mirror of ``commit``'s repository, or ``None`` when the export has no mirror root
        or the repository has no mirror. Reads (ancestry, diffs) raise ``MirrorReadError``."""
        key = commit.repository_sort_key
        if key not in self._mirrors:
            root = self.mirrors
            self._mirrors[key] = None if root is None else root.open(commit.org_id, commit.repo, commit.identity)
        return self._mirrors[key]

    def commit_attributions(self, commits: Iterable[CommitKey]) -> CommitAttributions:
        """The inference calls attributed to each of ``commits`` (every call of a Session whose
        Rollout lists the commit, with its attribution source and observations), and a lookup of
        every visible call's Session and split side; read from the export's Rollouts in one pass
        (they do not count as units read). A source that derives a Session's binding to commits
        alone (``session_commits(index)``: the store's Rollouts) is asked for that, not the Rollout."""
        source = self._evidence.rollouts
        light = getattr(source, "session_commits", None)
        read: Callable[[int], Rollout | SessionCommits] = light if callable(light) else source.__getitem__
        return commit_attributions((read(i) for i in export_order(source)), commits)

    def derived(self, units: Sequence[_Unit]) -> Iterator[_Unit]:
        """Hand out the units an objective derived itself, in its order: each counts as read
        (the summary's ``units`` count) and reports progress as the next is asked for."""
        for position, unit in enumerate(units):
            self.read += 1
            yield unit
            if self._progress is not None:
                self._progress(position + 1, len(units))
