"""What a target may read about one Rollout while projecting it: the target contract.

Targets are a host-level plugin kind: a contract v2 target names no objective, so the value its
hooks receive (:class:`RolloutEvidence`) and the task and turn helpers it builds rows with
(:mod:`sediment.evidence.tasks`, :mod:`sediment.evidence.turns`) belong to the core and reach
plugins through :mod:`sediment.plugin`, the one module a plugin imports. What is one
objective's own (its recipe, its row schemas) lives in that objective's plugin; a target reads
the recipe the export runs from :attr:`RolloutEvidence.recipe`.

:class:`RolloutEvidence` computes CI resolution, the reward resolution, problem statements
and reference patches lazily and once per Rollout, so targets with two populations share the
work. Reading :attr:`RolloutEvidence.ci` marks the CI evidence as consulted, which is how
the pipeline knows to add the resolver's skip counts to the population's tally.

CI resolves with the repository context the Rollouts were derived with (the store's, or a
bundle's population): identified outcomes resolve to their repository's identity and label.
Without one (a low-level caller's own Rollouts), only legacy outcomes resolve (docs/operate.md, Repository identity).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from sediment.ci.resolution import (
    DEFAULT_CI_POLICY,
    CIResolution,
    CIResolutionPolicy,
    CIResolutionResult,
    commit_key_of,
    resolve_ci,
    select_reward_resolution,
)
from sediment.ci.transitions import TestTransitions, TransitionDecline, derive_test_transitions
from sediment.evidence.recipe import Recipe
from sediment.evidence.reference_patch import ReferencePatch, resolve_reference_patch
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.git.repositories import RepositoryContext, repository_sort_key
from sediment.model.facts import CIOutcome, TextPart, ToolDefinition
from sediment.model.repository_evidence import identity_of
from sediment.model.rollout import Rollout, Turn
from sediment.records import plain

if TYPE_CHECKING:  # the git layer (pygit2) loads when a mirror is opened, not for a bundle-only export
    from sediment.git.mirror_root import MirrorRoot

NON_TEXT_MARKER = "[non-text content omitted]"
REWARD_SOURCES = {"passed": "resolved_ci_pass", "failed": "resolved_ci_fail"}


class RolloutEvidence:
    """One Rollout plus the configuration projection reads (mirrors, verifier commands) and the
    recipe the export runs (:attr:`recipe`: the one asked for, else the objective's first); a
    target writes its ``recipe_id``/``recipe_version`` from it."""

    def __init__(
        self,
        rollout: Rollout,
        *,
        mirrors: MirrorRoot | None,
        verifier_commands: VerifierCommands,
        recipe: Recipe,
        ci_policy: CIResolutionPolicy = DEFAULT_CI_POLICY,
        repositories: RepositoryContext | None = None,
    ) -> None:
        self.rollout = rollout
        self.recipe = recipe
        self.mirrors = mirrors
        self.verifier_commands = verifier_commands
        self.repositories = repositories
        self._ci_policy = ci_policy
        self._patches: dict[tuple[str, ...], ReferencePatch | str] = {}
        self.ci_consulted = False

    # --- CI -------------------------------------------------------------------------

    @cached_property
    def _ci(self) -> CIResolutionResult:
        return resolve_ci(
            self.rollout.terminal_outcomes,
            quarantine_revision=self.rollout.provenance.quarantine_revision,
            policy=self._ci_policy,
            repositories=self.repositories,
        )

    @property
    def ci(self) -> CIResolutionResult:
        """CI resolution of the terminal outcomes (reading it counts resolver skips)."""
        self.ci_consulted = True
        return self._ci

    @property
    def reward_resolution(self) -> CIResolution | None:
        """The last attributed commit's resolution that has a verdict, or ``None``."""
        return select_reward_resolution(self.ci.resolutions, self.rollout.org_id, self.rollout.commits)

    def verifier_results(self, resolution: CIResolution | None = None) -> list[dict[str, Any]]:
        """Terminal outcomes sorted by ``outcome_id``; only ``resolution``'s sources if given."""
        outcomes: Iterable[CIOutcome] = self.rollout.terminal_outcomes
        if resolution is not None:
            sources = set(resolution.source_outcome_ids)
            outcomes = (o for o in outcomes if o.outcome_id in sources)
        return [plain(o) for o in sorted(outcomes, key=lambda o: o.outcome_id)]

    def observation_ids(self, resolutions: Iterable[CIResolution]) -> list[str]:
        """Ids of this Session's observations on commits both resolved and attributed."""
        org = self.rollout.org_id
        resolved = {r.commit_key.sort_key for r in resolutions}
        attributed = {commit_key_of(org, ref).sort_key for ref in self.rollout.commits}
        wanted = resolved & attributed
        ids = {
            o.observation_id
            for o in self.rollout.session_commit_observations
            if o.org_id == org
            and o.session_id == self.rollout.session_id
            and (*repository_sort_key(org, o.repo, identity_of(o)), o.commit_sha) in wanted
        }
        return sorted(ids)

    # --- task content ---------------------------------------------------------------

    @cached_property
    def problem_statement(self) -> str:
        """The first user message, text parts verbatim, other parts as a marker, joined by ``\\n``."""
        for segment in self.rollout.segments:
            for turn in segment:
                for message in turn.new_messages:
                    if message.role == "user":
                        return "\n".join(
                            p.content if isinstance(p, TextPart) else NON_TEXT_MARKER
                            for p in message.parts
                        )
        return ""

    def reference_patch(self, resolution: CIResolution) -> ReferencePatch | str:
        """The reference patch for ``resolution`` or its skip reason (``mirror_absent`` without mirrors)."""
        key = resolution.commit_key.sort_key
        if key not in self._patches:
            if self.mirrors is None:
                self._patches[key] = "mirror_absent"
            else:
                self._patches[key] = resolve_reference_patch(self.rollout, resolution, self.mirrors)
        return self._patches[key]

    def verification(self, repo: str | None) -> dict[str, str] | None:
        return self.verifier_commands.verification(repo)

    def instance_prefix(self) -> str:
        return f"{self.rollout.org_id}-{self.rollout.session_id}"

    def test_transitions(self, resolution: CIResolution, base_commit: str) -> TestTransitions | TransitionDecline:
        """FAIL_TO_PASS / PASS_TO_PASS of the task verified by ``resolution`` from
        ``base_commit`` (:mod:`sediment.ci.transitions`), or the reason there are none."""
        sources = set(resolution.source_outcome_ids)
        attempts = {(o.provider, o.run_id, o.run_attempt or 0) for o in self.rollout.terminal_outcomes
                    if o.outcome_id in sources}
        names: tuple[str, ...] = (resolution.repo,)
        if resolution.repository_identity is not None and self.repositories is not None:
            names = self.repositories.names(resolution.repository_identity) or names  # recorded before a rename too
        return derive_test_transitions(self.rollout.test_results, repo=names,
                                       verified_commit=resolution.commit_sha, verified_attempts=attempts,
                                       base_commit=base_commit)

    # --- recorded call context (for consumer profiles) --------------------------------

    @cached_property
    def _tool_sets(self) -> dict[str, tuple[ToolDefinition, ...]]:
        return {s.digest: s.tools for s in self.rollout.tool_sets}

    def tools(self, turn: Turn) -> tuple[ToolDefinition, ...] | None:
        """The tool definitions ``turn``'s request declared, or ``None`` when it declared none."""
        if turn.tools_digest is None:
            return None
        return self._tool_sets[turn.tools_digest]


def reward_source(resolution: CIResolution | None) -> str | None:
    """``resolved_ci_pass`` / ``resolved_ci_fail`` for a verdict, else ``None``."""
    if resolution is None or resolution.verdict is None:
        return None
    return REWARD_SOURCES[resolution.verdict]


def put_optional(row: dict[str, Any], key: str, value: Any) -> None:
    """Set ``row[key]`` unless ``value`` is ``None`` (omit-when-null fields)."""
    if value is not None:
        row[key] = value
