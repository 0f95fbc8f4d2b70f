"""What makes an attributed completion worth imitating (docs/sft.md).

Recipes ``sft_curated`` v1 (the default) and ``sft_verified`` v1. The first failing test declines
the evidence:

1. an abandonment → ``abandoned``;
2. any explicit reject among the call's decisions → ``explicit_reject``;
3. a resolution of the commit with any workflow verdict ``failed`` (even when the commit's
   aggregate is ambiguous) → ``resolved_ci_failure``;
4. ``sft_verified``: no resolution, or an aggregate verdict other than ``passed`` →
   ``no_eligibility_source``; a suspected flake → ``unreliable_ci_resolution``; else the source
   is ``resolved_ci_pass``;
5. ``sft_curated``: any explicit accept → ``explicit_accept``; else any accepted decision
   (explicit or implicit) whose edit retention is at least :data:`STRONG_RETENTION` →
   ``edit_retention``; else ``no_eligibility_source``. A CI pass never makes curated evidence
   eligible, and curated does not test flakes (a flaky pass drives the Confidence to 0, and the
   floor removes it).

Then the Confidence ladder's value must exist (``no_reward_signal``) and reach
:data:`MIN_CONFIDENCE` (strictly below: ``below_confidence_floor``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sediment.plugin import AttributedCompletion, CIResolution

#: An accepted edit retained at least this much (inclusive) is curated evidence.
STRONG_RETENTION = 0.8
#: The Confidence floor of both recipes (part of the recipe: another floor is another version).
MIN_CONFIDENCE = 0.6

CURATED = "sft_curated"
VERIFIED = "sft_verified"

EligibilitySource = Literal["explicit_accept", "edit_retention", "resolved_ci_pass"]


@dataclass(frozen=True)
class Eligible:
    source: EligibilitySource


def eligibility(completion: AttributedCompletion, resolution: CIResolution | None, recipe: str) -> Eligible | str:
    """Steps 1–5 of the module docstring: the eligibility source, or the reason there is none."""
    if completion.is_abandonment:
        return "abandoned"
    decisions = completion.decisions
    if any(d.explicit and not d.accepted for d in decisions):
        return "explicit_reject"
    if resolution is not None and any(w.verdict == "failed" for w in resolution.workflow_resolutions):
        return "resolved_ci_failure"
    if recipe == VERIFIED:
        if resolution is None or resolution.verdict != "passed":
            return "no_eligibility_source"
        if resolution.suspected_flake:
            return "unreliable_ci_resolution"
        return Eligible("resolved_ci_pass")
    if recipe != CURATED:
        raise ValueError(f"unsupported SFT recipe {recipe!r}")
    if any(d.explicit and d.accepted for d in decisions):
        return Eligible("explicit_accept")
    if any(d.accepted and d.edit_retention_score is not None and d.edit_retention_score >= STRONG_RETENTION
           for d in decisions):
        return Eligible("edit_retention")
    return "no_eligibility_source"
