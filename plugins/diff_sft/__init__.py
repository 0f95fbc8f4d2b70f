"""Objective ``diff-sft``: supervised fine-tuning on the patch a completion's commit made.

The unit of evidence is the attributed completion (docs/attributed-completions.md); a row is
one (inference call, qualified commit): the call's mapped prompt, and as completion one
assistant message whose content is the exact text of the commit's patch sections for the files
attributed to that call, read from the repository's mirror; its ``tools`` are the tool
definitions the call's request declared (``[]`` when none were declared or recorded). The
recipes are SFT's:
``sft_curated`` v1 (an explicit accept, or an accepted decision with edit retention >= 0.8) and
``sft_verified`` v1 (a clean, resolved CI pass). Every group of ACs passes the gates in order;
the first failure declines the whole group with one count. See docs/diff-sft.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from pydantic import Field

from sediment.plugin import (
    TRAINER_SKIP_REASONS,
    AttributedCompletion,
    CIResolution,
    Declined,
    ExportContext,
    MirrorReadError,
    ObjectiveInfo,
    PluginSettings,
    PopulationInfo,
    ProjectedRow,
    Recipe,
    SessionCompletions,
    TrainerDecline,
    TrainingProvenance,
    capture_row,
    chat_tools,
    hookimpl,
    map_inference_prompt,
    put_optional,
    resolve_ci,
    schemas_in,
)

from .patch import MALFORMED, UNSUPPORTED, ParsedPatch, parse_patch

SCHEMA_BASE = "https://sediment.so/schemas/training-rows"
SCHEMA_ID = f"{SCHEMA_BASE}/diff-sft-sample/v4.json"
SCHEMA_VERSION = 4
POPULATION = "diff_sft"
STRONG_RETENTION = 0.8

RECIPES = (
    Recipe("sft_curated", 1, "an explicit accept, or an accepted decision whose edit retention is at least 0.8"),
    Recipe("sft_verified", 1, "a clean, resolved CI pass of the commit"),
)

#: SFT's own reasons after the trainer mapper's structural ones (the registry puts the CI
#: resolver's and the representation reasons in front).
SFT_OWN_REASONS: tuple[str, ...] = (
    "abandoned", "explicit_reject", "resolved_ci_failure", "no_eligibility_source", "unreliable_ci_resolution",
    "no_reward_signal", "below_confidence_floor", "inference_call_not_found", "model_absent",
    "duplicate_completion", "conflicting_evidence",
)
DIFF_OWN_REASONS: tuple[str, ...] = (
    UNSUPPORTED, MALFORMED, "repo_mismatch", "split_mismatch", "eligibility_source_mismatch", "mirror_absent",
    "commit_diff_unavailable", "empty_patch", "file_diff_unavailable",
)
#: The objective's declared reasons, in contract order (after the core's).
SKIP_REASONS: tuple[str, ...] = (*TRAINER_SKIP_REASONS[2:], *SFT_OWN_REASONS, *DIFF_OWN_REASONS)

HELP = """\
One row per (inference call, qualified commit): the call's prompt as trainer messages, and as
completion the exact text of the commit's patch for the files attributed to the call, read from
the repository's mirror (SEDIMENT_MIRROR_PATH, required with --from too), and as tools the
tool definitions the call's request declared ([] when none were declared or recorded). Sections a text
patch cannot carry (binary, copies, submodules) or that break git's format are counted, never
repaired. Writes diff_sft.jsonl, or diff_sft.train.jsonl / .eval.jsonl when the bundle's policy
has an eval split. Rows below the Confidence floor (--set diff-sft.min_confidence=X, default
0.6) are declined; the Confidence ladder's knobs come from SEDIMENT_LABEL_CONFIDENCE_* or the
[label-confidence] table of --config; see docs/diff-sft.md.

Examples:

  sediment export diff-sft --from bundle --out exports/diff-sft

  sediment export diff-sft --recipe sft_verified --out exports/diff-sft-verified
"""


class DiffSFTSettings(PluginSettings):
    """``--set diff-sft.min_confidence=0.7`` raises the Confidence floor."""

    min_confidence: float = Field(default=0.6, ge=0.0, le=1.0,
                                  description="rows below this Confidence (strictly) are declined")


#: What would change the main reasons (the summary's hint when every completion is skipped).
REMEDIES: dict[str, str] = {
    "no_eligibility_source": "sft_curated reads developers' accepts (ingest Claude Code transcripts or decision "
                             "events), sft_verified a clean CI pass of the commit (ingest CI webhooks): try "
                             "`--recipe sft_verified` or `--recipe sft_curated`",
    "unreliable_ci_resolution": "the commit's CI run flipped between attempts (a suspected flake); a clean "
                                "re-run, once ingested, settles it",
    "below_confidence_floor": "the Confidence is below the floor: `--set diff-sft.min_confidence=X` (default 0.6)",
    "mirror_absent": "no mirror of the repository: `sediment mirror add OWNER/REPO SOURCE`, and pass --mirrors",
    "commit_diff_unavailable": "the mirror does not hold the commit: `sediment mirror fetch OWNER/REPO`",
    "model_absent": "the recorded calls name no model: capture them where the request is recorded (a gateway, OTLP)",
}


@hookimpl
def describe_objective() -> ObjectiveInfo:
    return ObjectiveInfo(
        title="diff-SFT",
        unit="attributed completion",
        units="attributed_completions",
        recipes=RECIPES,
        populations={POPULATION: PopulationInfo(SCHEMA_ID, SKIP_REASONS, label="sample", fields_under="metadata")},
        direct_needs_mirrors=True,
        from_needs_mirrors=True,
        supports_from=True,
        description="Project attributed completions into diff-SFT rows: a call's prompt, its commit's patch.",
        remedies=REMEDIES,
        help=HELP,
    )


@hookimpl
def plugin_settings() -> type[PluginSettings]:
    return DiffSFTSettings


@hookimpl
def register_schemas() -> Sequence[dict[str, Any]]:
    return schemas_in(__name__)


# --- eligibility (docs/diff-sft.md, Grouping and gates) ------------------------------------

def _workflow_failed(resolution: CIResolution | None) -> bool:
    return resolution is not None and any(w.verdict == "failed" for w in resolution.workflow_resolutions)


def eligibility(completion: AttributedCompletion, resolution: CIResolution | None, recipe: str) -> tuple[bool, str]:
    """``(True, source)`` or ``(False, reason)``: SFT's eligibility of one AC, first match."""
    if completion.is_abandonment:
        return False, "abandoned"
    if any(d.explicit and not d.accepted for d in completion.decisions):
        return False, "explicit_reject"
    if _workflow_failed(resolution):
        return False, "resolved_ci_failure"
    if recipe == "sft_verified":
        if resolution is None or resolution.verdict != "passed":
            return False, "no_eligibility_source"
        if resolution.suspected_flake:
            return False, "unreliable_ci_resolution"
        return True, "resolved_ci_pass"
    if any(d.explicit and d.accepted for d in completion.decisions):
        return True, "explicit_accept"
    if any(d.accepted and d.edit_retention_score is not None and d.edit_retention_score >= STRONG_RETENTION
           for d in completion.decisions):
        return True, "edit_retention"
    return False, "no_eligibility_source"


# --- projection ----------------------------------------------------------------------------

def _group_key(completion: AttributedCompletion) -> tuple[Any, ...]:
    key = completion.commit_key
    assert key is not None
    return (key.repository_sort_key, key.commit_sha)


class _Patches:
    """The current commit's parsed patch (one commit cached), and which commits' parser
    counts were already added (once per commit)."""

    def __init__(self) -> None:
        self._current: tuple[Any, ParsedPatch | str] | None = None
        self.counted: set[tuple[Any, ...]] = set()

    def get(self, key: tuple[Any, ...], read: Any) -> ParsedPatch | str:
        if self._current is None or self._current[0] != key:
            try:
                text = read()
            except MirrorReadError:
                self._current = (key, "commit_diff_unavailable")
            else:
                self._current = (key, "empty_patch" if not text.strip() else parse_patch(text))
        return self._current[1]


def _decline(reason: str) -> Declined:
    return Declined(reason, population=POPULATION)


def _project_group(found: SessionCompletions, call_id: str, members: list[AttributedCompletion],
                   context: ExportContext, settings: DiffSFTSettings,
                   patches: _Patches) -> Iterator[ProjectedRow | Declined]:
    first = members[0]
    key = first.commit_key
    assert key is not None
    repositories = context.repositories
    # gate 2: every member resolves to the group's commit
    if repositories is not None:
        for member in members:
            resolved = repositories.resolve_reference(member.repo or "", member.repository_identity)
            if resolved.reason is not None or resolved.identity != key.identity:
                yield _decline("repository_identity_unresolved")
                return
    repo = (repositories.label(key.identity) if repositories is not None and key.identity is not None
            else None) or min(m.repo or "" for m in members)
    # gate 4: one split
    if len({m.split for m in members}) > 1:
        yield _decline("split_mismatch")
        return
    # gate 5: an explicit reject anywhere
    if any(d.explicit and not d.accepted for m in members for d in m.decisions):
        yield _decline("explicit_reject")
        return
    # gate 6: CI over the union of the members' outcomes, resolved once
    outcomes = {o.outcome_id: o for m in members for o in m.ci_outcomes}
    policy = context.label_confidence
    resolution: CIResolution | None = None
    reliabilities: list[float] = []
    if outcomes:
        result = resolve_ci([outcomes[i] for i in sorted(outcomes)], quarantine_revision=found.quarantine_revision,
                            policy=policy.ci_resolution, repositories=repositories)
        for reason, count in sorted(result.skipped.items()):
            if count > 0:
                yield Declined(reason, count, population=POPULATION)
        matching = [r for r in result.resolutions if r.commit_key.same_commit(key)]
        resolution = matching[0] if matching else None
        reliabilities = [r.reliability for r in matching if r.reliability is not None]
    # gate 7: eligibility of every member, one source
    sources: set[str] = set()
    for member in members:
        ok, value = eligibility(member, resolution, context.recipe.name)
        if not ok:
            yield _decline(value)
            return
        sources.add(value)
    if len(sources) > 1:
        yield _decline("eligibility_source_mismatch")
        return
    # gate 8: Confidence, the minimum over members
    confidences = []
    for member in members:
        evidence = replace(found.confidence_evidence(member), ci_resolution=resolution,
                           has_ci_outcomes=bool(outcomes))
        confidences.append(policy.confidence(evidence))
    if any(c is None for c in confidences):
        yield _decline("no_reward_signal")
        return
    confidence = min(c for c in confidences if c is not None)
    if confidence < settings.min_confidence:
        yield _decline("below_confidence_floor")
        return
    # gate 9: the call and its prompt
    call = found.calls.get(call_id)
    if call is None:
        yield _decline("inference_call_not_found")
        return
    if call.model is None:
        yield _decline("model_absent")
        return
    prompt = map_inference_prompt(call)  # type: ignore[arg-type]  # reads only input_messages
    if isinstance(prompt, TrainerDecline):
        yield _decline(prompt.reason)
        return
    # gate 10: the mirror
    mirror = context.mirrors.open(key.org_id, key.repo, key.identity) if context.mirrors is not None else None
    if mirror is None:
        yield _decline("mirror_absent")
        return
    # gate 11: the commit's patch, parser counts once per commit
    commit_id = (key.org_id, *_group_key(first))
    parsed = patches.get(commit_id, lambda: mirror.commit_patch(key.commit_sha))
    if isinstance(parsed, str):
        yield _decline(parsed)
        return
    if commit_id not in patches.counted:
        patches.counted.add(commit_id)
        for reason in (UNSUPPORTED, MALFORMED):
            if parsed.skipped[reason]:
                yield Declined(reason, parsed.skipped[reason], population=POPULATION)
    # gate 12: every member's file has a valid section
    paths = frozenset(m.file_path for m in members if m.file_path is not None)
    if not paths <= parsed.paths:
        yield _decline("file_diff_unavailable")
        return
    row: dict[str, Any] = {
        "prompt": prompt,
        "completion": [{"role": "assistant", "content": parsed.for_paths(paths)}],
        "tools": chat_tools(call.tools),
        "metadata": {
            "org_id": first.org_id,
            "session_id": first.session_id,
            "repo": repo,
            "commit_sha": key.commit_sha,
            "source_model": call.model,
            "completion_id": call_id,
            "recipe_id": context.recipe.name,
            "recipe_version": context.recipe.version,
            "eligibility_source": sources.pop(),
            "label_confidence": confidence,
            "ci_reliability": min(reliabilities) if reliabilities else None,
            "provenance": TrainingProvenance.of(first.provenance, policy).model_dump(mode="json"),
            "split": first.split,
            "source_ids": {
                "inference_call_id": call_id,
                "decision_ids": sorted({d.decision_id for m in members for d in m.decisions}),
                "ci_outcome_ids": sorted(outcomes),
                "session_commit_observation_ids": sorted({i for m in members for i in m.observation_ids}),
            },
            "repository_identity": (first.repository_identity.model_dump(mode="json")
                                    if first.repository_identity is not None else None),
            "attribution_sources": sorted({m.attribution_source for m in members if m.attribution_source}),
            "schema_id": SCHEMA_ID,
            "schema_version": SCHEMA_VERSION,
        },
    }
    put_optional(row["metadata"], "capture", None if call.capture is None else capture_row(call.capture))
    yield ProjectedRow(first.split, row, population=POPULATION)


def project_session(found: SessionCompletions, context: ExportContext, settings: DiffSFTSettings,
                    patches: _Patches) -> Iterator[ProjectedRow | Declined]:
    """One Session's rows and declines: abandonment ACs counted, the others grouped per
    (call, qualified commit) and gated; groups in (commit, call) order, rows yielded in
    (completion_id, commit_sha) order."""
    groups: dict[tuple[Any, ...], list[AttributedCompletion]] = {}
    for completion in found.completions:
        if completion.is_abandonment:
            yield _decline("abandoned")
            continue
        groups.setdefault((_group_key(completion), completion.inference_call_id), []).append(completion)
    rows: list[tuple[tuple[str, str], ProjectedRow]] = []
    for commit, call_id in sorted(groups):
        members = sorted(groups[(commit, call_id)], key=lambda c: c.file_path or "")
        for item in _project_group(found, call_id, members, context, settings, patches):
            if isinstance(item, ProjectedRow):
                rows.append(((call_id, members[0].commit_sha or ""), item))
            else:
                yield item
    for _, row in sorted(rows, key=lambda pair: pair[0]):
        yield row


@hookimpl
def project_evidence(context: ExportContext, settings: DiffSFTSettings) -> Iterator[ProjectedRow | Declined]:
    if context.mirrors is None:
        raise ValueError("diff-SFT requires mirrors")
    patches = _Patches()
    for found in context.attributed_completions():
        yield from project_session(found, context, settings, patches)
