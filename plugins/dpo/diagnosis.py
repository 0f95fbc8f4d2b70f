"""What ``sediment report dataset-diagnostics`` reads of the DPO dataset (``diagnose_evidence``).

The same admission, bucketing, deduplication and labelling as :func:`sediment_dpo.pairing.project_pairs`:
one :class:`~sediment.plugin.PromptBucket` per bucket holding a labelled member (its chosen and
rejected counts and the pair cap), and one :class:`~sediment.plugin.DiagnosedRow` per pair the
export would write (row id ``"<chosen>><rejected>"``; metrics ``label_confidence`` then
``confidence_margin``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator

from sediment.plugin import DiagnosedRow, PromptBucket, SessionCompletions, Stratum

from .pairing import DPOPolicy, Member, _admit, _bucket

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
    chosen_source, rejected_source = PAIR_SOURCES[policy.recipe_id]
    stratum = Stratum(chosen_label_source=chosen_source, rejected_label_source=rejected_source)
    buckets: dict[tuple[str, str, str], list[Member]] = defaultdict(list)
    for completions in sessions:
        for completion in completions:
            admitted = _admit(completions, completion, policy)
            if not isinstance(admitted, str):
                key, member = admitted
                buckets[key].append(member)
    for key in sorted(buckets):
        members = sorted(buckets[key], key=lambda m: (m.call_id, m.completion.sort_key))
        kept = _kept(members)
        chosen = sum(1 for m in kept if m.label == "chosen")
        rejected = sum(1 for m in kept if m.label == "rejected")
        if chosen + rejected:
            yield PromptBucket(org_id=key[0], model=key[1], stratum=stratum, chosen=chosen, rejected=rejected,
                               max_pairs=policy.max_pairs_per_bucket)
        for item in _bucket(members, policy):
            if isinstance(item, str):
                continue
            metadata = item["metadata"]
            yield DiagnosedRow(
                row_id=f"{metadata['chosen_completion_id']}>{metadata['rejected_completion_id']}",
                org_id=metadata["org_id"], model=metadata["source_model"], split=metadata["split"],
                prompt=item["prompt"],
                stratum=Stratum(chosen_label_source=metadata["chosen_label_source"],
                                rejected_label_source=metadata["rejected_label_source"]),
                metrics={"label_confidence": metadata["label_confidence"],
                         "confidence_margin": metadata["confidence_margin"]})
