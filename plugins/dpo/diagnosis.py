"""What ``sediment report dataset-diagnostics`` reads of the DPO dataset (``diagnose_evidence``).

The same admission, bucketing, deduplication and labelling as :func:`sediment_dpo.pairing.project_pairs`:
one :class:`~sediment.plugin.PromptBucket` per bucket holding a labelled member (its chosen and
rejected counts and the pair cap), and one :class:`~sediment.plugin.DiagnosedRow` per pair the
export would write (row id ``"<chosen>><rejected>"``; metrics ``label_confidence`` then
``confidence_margin``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sediment.plugin import DiagnosedRow, PromptBucket, SessionCompletions, Stratum

from .pairing import DPOPolicy, Member, _bucket, spooled_buckets

#: The label sources of each recipe's pairs: ``(chosen, rejected)``.
PAIR_SOURCES = {"dpo_human": ("explicit_accept", "explicit_reject"),
                "dpo_outcome": ("resolved_ci_pass", "resolved_ci_fail")}


def _kept(members: list[Member]) -> list[Member]:
    kept: dict[str, Member] = {}
    for member in members:
        current = kept.get(member.call_id)
        if current is None or member.rank() > current.rank():
            kept[member.call_id] = member
    return [kept[c] for c in sorted(kept)]


def diagnose(sessions: Iterable[SessionCompletions], policy: DPOPolicy) -> Iterator[DiagnosedRow | PromptBucket]:
    """The buckets and pairs of ``sessions``, from the same spooled buckets as the export (memory
    stays flat as Sessions grow)."""
    chosen_source, rejected_source = PAIR_SOURCES[policy.recipe_id]
    stratum = Stratum(chosen_label_source=chosen_source, rejected_label_source=rejected_source)
    for item in spooled_buckets(sessions, policy):
        if isinstance(item, str):
            continue
        (org_id, model), members = item
        kept = _kept(members)
        chosen = sum(1 for m in kept if m.label == "chosen")
        rejected = sum(1 for m in kept if m.label == "rejected")
        if chosen + rejected:
            yield PromptBucket(org_id=org_id, model=model, stratum=stratum, chosen=chosen, rejected=rejected,
                               max_pairs=policy.max_pairs_per_bucket)
        for pair in _bucket(members, policy):
            if isinstance(pair, str):
                continue
            metadata = pair["metadata"]
            yield DiagnosedRow(
                row_id=f"{metadata['chosen_completion_id']}>{metadata['rejected_completion_id']}",
                org_id=metadata["org_id"], model=metadata["source_model"], split=metadata["split"],
                prompt=pair["prompt"],
                stratum=Stratum(chosen_label_source=metadata["chosen_label_source"],
                                rejected_label_source=metadata["rejected_label_source"]),
                metrics={"label_confidence": metadata["label_confidence"],
                         "confidence_margin": metadata["confidence_margin"]})
