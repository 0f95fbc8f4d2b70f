"""Reference patch resolution (docs/exports.md, Targets): from the parent of the first attributed commit
in the verifier repository to the exact verified commit, read from the mirror."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sediment.ci.resolution import CIResolution, CommitKey, commit_key_of
from sediment.git.read_error import MirrorReadError
from sediment.model.rollout import Rollout

if TYPE_CHECKING:  # the git layer (pygit2) loads when a mirror is read, not for a bundle-only export
    from sediment.git.mirror_root import MirrorRoot

#: The reasons patch resolution can decline with, in vocabulary order.
PATCH_SKIP_REASONS: tuple[str, ...] = (
    "mirror_absent",
    "no_commit_in_verifier_repo",
    "degenerate_commit_range",
    "root_commit_no_base",
    "reference_patch_unavailable",
)


@dataclass(frozen=True)
class ReferencePatch:
    repo: str
    first_commit: str
    base_commit: str
    verified_commit: str
    patch: str


def resolve_reference_patch(
    rollout: Rollout, resolution: CIResolution, mirrors: MirrorRoot
) -> ReferencePatch | str:
    """The reference patch for ``resolution``, or the skip reason that declines it."""
    verified: CommitKey = resolution.commit_key
    mirror = mirrors.open(rollout.org_id, resolution.repo, resolution.repository_identity)
    if mirror is None:
        return "mirror_absent"
    in_repo = [
        ref.commit_sha
        for ref in rollout.commits
        if commit_key_of(rollout.org_id, ref).repository_sort_key == verified.repository_sort_key
        and mirror.has_commit(ref.commit_sha)
    ]
    if not in_repo or verified.commit_sha not in in_repo:
        return "no_commit_in_verifier_repo"
    first, last = in_repo[0], verified.commit_sha
    try:
        if not mirror.is_ancestor_or_equal(first, last):
            return "degenerate_commit_range"
    except MirrorReadError:
        return "reference_patch_unavailable"
    try:
        base = mirror.first_parent(first)
    except MirrorReadError:
        return "reference_patch_unavailable"
    if base is None:
        return "root_commit_no_base"
    try:
        patch = mirror.diff(base, last)
    except MirrorReadError:
        return "reference_patch_unavailable"
    return ReferencePatch(resolution.repo, first, base, last, patch)
