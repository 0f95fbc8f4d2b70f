"""Decision attachment (docs/attributed-completions.md, Decision attachment): which recorded inference call a developer
decision is about.

A DeveloperDecision names the call it judged by ``call_id``: the call's response id
(``model_call_id``) or the id of a tool call the response made. Attachment is unique-or-drop:

1. Codex rows subsumed by a sibling are dropped first (not counted): a Codex decision with an
   empty ``file_path`` and a ``call_id`` when another Codex decision with a path shares its
   ``(org_id, session_id, accepted, explicit, interaction_mode, occurred_at, call_id)`` (Codex
   reports one decision per patched file, and a path-less one beside them repeats them).
2. Every call is reachable under each distinct id of ``{model_call_id}`` ∪ {ids of its
   response's tool calls}.
3. Per decision, the first matching reason of :data:`ATTACHMENT_SKIP_REASONS` drops it
   (``missing_decision_call_id``: no ``call_id``; ``unmatched_decision_call_id``: no call has
   it; ``ambiguous_decision_call_id``: more than one call has it; ``decision_org_mismatch`` /
   ``decision_session_mismatch``: the one call belongs to another org or Session); otherwise it
   is attached to that call. Each call's decisions are in ``(occurred_at, decision_id)`` order.

Decisions are call-scoped, not file-scoped: every file an attributed call changed carries all
of that call's decisions.

Scope: the population is whatever the caller hands over. Derivation and the export objectives
hand over one Session's calls and that Session's decisions (the store and the bundle are read
one Session at a time), so a decision naming a call of another Session counts
``unmatched_decision_call_id`` and the two mismatch reasons arise only for callers that pass
calls of several Sessions (docs/attributed-completions.md says why).

Pure: the same calls and decisions, in any order, give the same attachment.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sediment.model.facts import DeveloperDecision, InferenceCall, InferenceMessage, ToolCallPart

__all__ = [
    "ATTACHMENT_SKIP_REASONS",
    "Attachment",
    "CallTarget",
    "attach_decisions",
    "subsumed_codex_decisions",
]

#: Why a decision is not attached, in precedence order.
ATTACHMENT_SKIP_REASONS: tuple[str, ...] = (
    "missing_decision_call_id",
    "unmatched_decision_call_id",
    "ambiguous_decision_call_id",
    "decision_org_mismatch",
    "decision_session_mismatch",
)

_CODEX = "codex"


@dataclass(frozen=True)
class CallTarget:
    """A call as attachment sees it: its id, org, Session and the ids it is reachable by."""

    inference_call_id: str
    org_id: str
    session_id: str
    reachable_ids: tuple[str, ...]

    @classmethod
    def of(cls, inference_call_id: str, org_id: str, session_id: str, model_call_id: str | None,
           output_messages: Iterable[InferenceMessage]) -> CallTarget:
        """The target of a call from its parts: ``model_call_id`` and every tool call id of its output."""
        ids: list[str] = [model_call_id] if model_call_id else []
        ids.extend(p.id for m in output_messages for p in m.parts if isinstance(p, ToolCallPart) and p.id)
        return cls(inference_call_id, org_id, session_id, tuple(dict.fromkeys(ids)))

    @classmethod
    def of_call(cls, call: InferenceCall) -> CallTarget:
        return cls.of(call.inference_call_id, call.org_id, call.session_id, call.model_call_id, call.output_messages)


@dataclass(frozen=True)
class Attachment:
    """The decisions attached to each call (by ``inference_call_id``) and the drop counts."""

    by_call: Mapping[str, tuple[DeveloperDecision, ...]] = field(default_factory=dict)
    #: Dropped decisions by reason (:data:`ATTACHMENT_SKIP_REASONS`).
    skipped: Counter[str] = field(default_factory=Counter)

    def decisions(self, inference_call_id: str) -> tuple[DeveloperDecision, ...]:
        """The decisions attached to one call (``()`` for none)."""
        return self.by_call.get(inference_call_id, ())


def _sibling_key(decision: DeveloperDecision) -> tuple[object, ...]:
    return (decision.org_id, decision.session_id, decision.accepted, decision.explicit, decision.interaction_mode,
            decision.occurred_at, decision.call_id)


def subsumed_codex_decisions(decisions: Iterable[DeveloperDecision]) -> frozenset[str]:
    """Ids of the Codex decisions step 1 drops (path-less rows repeated by per-file siblings)."""
    population = list(decisions)
    keyed = {_sibling_key(d) for d in population if d.agent_harness == _CODEX and d.file_path}
    return frozenset(d.decision_id for d in population
                     if d.agent_harness == _CODEX and not d.file_path and d.call_id is not None
                     and _sibling_key(d) in keyed)


def attach_decisions(calls: Iterable[CallTarget], decisions: Iterable[DeveloperDecision]) -> Attachment:
    """Attach ``decisions`` to ``calls`` unique-or-drop (rules in the module docstring)."""
    targets: dict[str, dict[str, CallTarget]] = defaultdict(dict)
    for call in calls:
        for reachable in call.reachable_ids:
            targets[reachable][call.inference_call_id] = call
    population = sorted(decisions, key=lambda d: (d.occurred_at, d.decision_id))
    dropped = subsumed_codex_decisions(population)
    skipped: Counter[str] = Counter()
    attached: dict[str, list[DeveloperDecision]] = defaultdict(list)
    for decision in population:
        if decision.decision_id in dropped:
            continue
        if decision.call_id is None:
            skipped["missing_decision_call_id"] += 1
            continue
        matches = targets.get(decision.call_id, {})
        if not matches:
            skipped["unmatched_decision_call_id"] += 1
            continue
        if len(matches) > 1:
            skipped["ambiguous_decision_call_id"] += 1
            continue
        call = next(iter(matches.values()))
        if call.org_id != decision.org_id:
            skipped["decision_org_mismatch"] += 1
        elif call.session_id != decision.session_id:
            skipped["decision_session_mismatch"] += 1
        else:
            attached[call.inference_call_id].append(decision)
    return Attachment({k: tuple(v) for k, v in sorted(attached.items())}, skipped)
