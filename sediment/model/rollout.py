"""The canonical Rollout and its Turns, and segmentation (implementation version "4").

A Rollout is everything one Session's inference calls became: contiguous segments of
Turns, the commits attributed to the Session, the terminal CI outcomes of those commits,
the split and the provenance. Segmentation never drops a Turn; it only decides where a
replayed conversation breaks.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import takewhile
from operator import is_, truth
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from sediment.identifiers import CommitSha, NonEmptyId, NonEmptyRepoSlug, OrgId, UtcDatetime
from sediment.model.facts import (
    CallCapture,
    CIOutcome,
    DeveloperDecision,
    EditObservation,
    FactModel,
    InferenceCall,
    InferenceMessage,
    ReasoningPart,
    RepositoryIdentity,
    SessionCommitObservation,
    TestCaseResult,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    ToolDefinition,
)
from sediment.model.policy import Provenance
from sediment.records import canonical_digest
from sediment.split import Split

FragmentReason = Literal["prior_output_absent", "input_history_changed", "prior_output_not_replayed"]
FRAGMENT_REASONS: tuple[FragmentReason, ...] = (
    "prior_output_absent",
    "input_history_changed",
    "prior_output_not_replayed",
)
AttributionSource = Literal["git_notes", "git_ai_notes", "jaccard"]


class CommitRef(FactModel):
    """A commit attributed to a Session, qualified by its repository."""

    repo: NonEmptyRepoSlug
    commit_sha: CommitSha
    repository_identity: RepositoryIdentity | None = None


class Turn(FactModel):
    """What one inference call added to its segment, and the recorded context of that call.

    ``new_messages``, ``completion``, ``decisions``, ``inference_call_id`` and ``tool_calls``
    are what canonical rows carry. The call's own ``output_messages``, ``model``,
    ``observed_at`` and the digest of the tool definitions its request declared (an entry of
    :attr:`Rollout.tool_sets`) are kept for consumer profiles, which hydrate native rows from
    them; no canonical row emits them.
    """

    new_messages: tuple[InferenceMessage, ...]
    completion: str
    decisions: tuple[DeveloperDecision, ...] = ()
    inference_call_id: NonEmptyId
    tool_calls: tuple[ToolCallPart, ...] = ()
    output_messages: tuple[InferenceMessage, ...] = ()
    model: NonEmptyId | None = None
    observed_at: UtcDatetime | None = None
    tools_digest: str | None = None
    #: The call's response id, one of the ids a developer decision may name it by
    #: (:mod:`sediment.derive.decision_attachment`). Bundle version 4.
    model_call_id: NonEmptyId | None = None
    #: How the call was captured when not on the wire (a client transcript): its source and
    #: what it lacks; ``None`` for a call recorded by a gateway or API call log.
    capture: CallCapture | None = None


class FileAttribution(FactModel):
    """One code file an attributed commit changed, bound to the Session's call whose completion
    best matches the text the file's first-parent diff adds (:func:`sediment.derive.attribution.attribute_files`).

    ``similarity_score`` is that Jaccard similarity, in ``(0, 1]``; how the Session was bound to
    the commit is the Rollout's :attr:`Rollout.attribution_source`.
    """

    inference_call_id: NonEmptyId
    repo: NonEmptyRepoSlug
    commit_sha: CommitSha
    repository_identity: RepositoryIdentity | None = None
    file_path: str = Field(min_length=1)
    similarity_score: float

    @field_validator("similarity_score")
    @classmethod
    def _similarity(cls, value: float) -> float:
        if not 0.0 < value <= 1.0:
            raise ValueError(f"similarity_score must be in (0, 1], got {value!r}")
        return value


class ToolSet(FactModel):
    """One distinct list of tool definitions the Session's requests declared, by digest."""

    digest: str
    tools: tuple[ToolDefinition, ...]


#: The digests of the tool lists met last, by their definitions' identities: a Session's calls
#: that declared one list hold the very same definitions (the store reads each distinct list
#: once), and a coding agent's list is tens of KB, so each is encoded once, not once a call.
_DIGESTS: OrderedDict[tuple[int, ...], tuple[tuple[ToolDefinition, ...], str]] = OrderedDict()
_DIGESTS_KEPT = 64
_DIGESTS_LOCK = threading.Lock()  # a library caller may derive on threads


def tools_digest(tools: Sequence[ToolDefinition]) -> str:
    """The content digest of a tool list (its lossless canonical JSON: a recorded schema may hold
    non-finite numbers), as :attr:`Turn.tools_digest` holds it."""
    key = tuple(map(id, tools))
    with _DIGESTS_LOCK:
        hit = _DIGESTS.get(key)
        if hit is not None and all(map(is_, hit[0], tools)):
            _DIGESTS.move_to_end(key)
            return hit[1]
    digest = canonical_digest(list(tools), allow_nan=True)
    with _DIGESTS_LOCK:
        _DIGESTS[key] = (tuple(tools), digest)
        while len(_DIGESTS) > _DIGESTS_KEPT:
            _DIGESTS.popitem(last=False)
    return digest


def tool_sets(calls: Iterable[InferenceCall]) -> tuple[ToolSet, ...]:
    """Every distinct tool list the calls declared, sorted by digest (each stored once)."""
    found = {tools_digest(c.tools): c.tools for c in calls if c.tools is not None}
    return tuple(ToolSet(digest=d, tools=found[d]) for d in sorted(found))


class Rollout(FactModel):
    """One Session's canonical derived artifact (implementation version "4")."""

    org_id: OrgId
    session_id: NonEmptyId
    segments: tuple[tuple[Turn, ...], ...]
    commits: tuple[CommitRef, ...] = ()
    attribution_source: AttributionSource = "jaccard"
    terminal_outcomes: tuple[CIOutcome, ...] = ()
    provenance: Provenance
    split: Split = "train"
    session_commit_observations: tuple[SessionCommitObservation, ...] = ()
    tool_sets: tuple[ToolSet, ...] = ()
    #: Per-test results recorded on the attributed commits and on each one's first parent
    #: (the base a task's reference patch starts from), for FAIL_TO_PASS / PASS_TO_PASS.
    test_results: tuple[TestCaseResult, ...] = ()
    #: Every visible developer decision of the Session, joined to a call or not, by
    #: ``(occurred_at, decision_id)``: what SFT and DPO read from a bundle (a Turn holds those
    #: joined to its call). Bundle version 3; a version 2 bundle carries none.
    session_decisions: tuple[DeveloperDecision, ...] = ()
    #: Every visible EditObservation of the Session, by ``(agent_harness, call_id, occurred_at,
    #: observation_id)``: the evidence a decision's edit retention is filled from
    #: (:func:`sediment.derive.edit_retention.fill_edit_retention`). Bundle version 3.
    edit_observations: tuple[EditObservation, ...] = ()
    #: Each changed code file of the attributed commits with the call it is attributed to, by
    #: (commit, file): the attributed completions SFT and DPO read. Bundle version 4; a version 3
    #: bundle carries none.
    file_attributions: tuple[FileAttribution, ...] = ()

    @field_validator("segments")
    @classmethod
    def _segments_hold_turns(cls, segments: tuple[tuple[Turn, ...], ...]) -> tuple[tuple[Turn, ...], ...]:
        if any(not segment for segment in segments):
            raise ValueError("a segment holds at least one Turn")
        return segments

    @model_validator(mode="after")
    def _file_attributions_name_turns(self) -> Rollout:
        if not self.file_attributions:
            return self
        calls = {turn.inference_call_id for segment in self.segments for turn in segment}
        seen: set[tuple[object, ...]] = set()
        for index, attribution in enumerate(self.file_attributions):
            if attribution.inference_call_id not in calls:
                raise ValueError(f"file_attributions[{index}] names call {attribution.inference_call_id!r}, "
                                 "which no Turn of the Rollout holds")
            key = (attribution.repo, attribution.repository_identity, attribution.commit_sha, attribution.file_path)
            if key in seen:
                raise ValueError(f"file_attributions[{index}] attributes a file twice")
            seen.add(key)
        return self


# --- turn construction ---------------------------------------------------------------


def string_leaves(value: Any) -> Iterable[str]:
    """Every string inside ``value`` (dict values in key order, lists in order)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key in sorted(value):
            yield from string_leaves(value[key])
    elif isinstance(value, list | tuple):
        for item in value:
            yield from string_leaves(item)


def scoring_text(messages: Iterable[InferenceMessage]) -> str:
    """The completion text of output messages: text parts and string leaves of tool arguments.

    Reasoning and tool results are excluded; empty pieces are dropped; pieces join with ``\\n``.
    """
    pieces: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                pieces.append(part.content)
            elif isinstance(part, ToolCallPart):
                pieces.extend(string_leaves(part.arguments))
    return "\n".join(piece for piece in pieces if piece)


def output_tool_calls(messages: Iterable[InferenceMessage]) -> tuple[ToolCallPart, ...]:
    """Every tool call part of the output messages, in order."""
    return tuple(p for m in messages for p in m.parts if isinstance(p, ToolCallPart))


def make_turn(
    call: InferenceCall,
    new_messages: Sequence[InferenceMessage],
    decisions: Sequence[DeveloperDecision] = (),
) -> Turn:
    """Build the Turn one call contributes, given the messages it added to its segment."""
    return Turn(
        new_messages=tuple(new_messages),
        completion=scoring_text(call.output_messages),
        decisions=tuple(decisions),
        inference_call_id=call.inference_call_id,
        tool_calls=output_tool_calls(call.output_messages),
        output_messages=call.output_messages,
        model=call.model,
        observed_at=call.observed_at,
        tools_digest=None if call.tools is None else tools_digest(call.tools),
        model_call_id=call.model_call_id,
        capture=call.capture,
    )


# --- segmentation --------------------------------------------------------------------


def _semantic(value: Any) -> Any:
    """A hashable form in which dict key order is immaterial and ``true`` differs from ``1``."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    if isinstance(value, int | float):
        return ("num", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, list | tuple):
        return ("list", tuple(_semantic(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), _semantic(v)) for k, v in value.items())))
    raise TypeError(f"unsupported value in message content: {type(value).__name__}")


def _canonical_part(part: Any) -> tuple[Any, ...]:
    if isinstance(part, TextPart | ReasoningPart):
        return (part.type, part.content)
    if isinstance(part, ToolCallPart):
        return (part.type, part.id, part.name, _semantic(part.arguments))
    if isinstance(part, ToolCallResponsePart):
        return (part.type, part.id, _semantic(part.result))
    raise TypeError(f"unknown part {part!r}")


def canonical_messages(messages: Iterable[InferenceMessage]) -> list[tuple[Any, ...]]:
    """Messages as ``(role, parts)``; ``finish_reason`` is excluded, and so are empty text parts:
    a client replaying an answer may leave out an empty text block (Anthropic's API refuses
    them), and that is still the same conversation."""
    return [(m.role, tuple(_canonical_part(p) for p in m.parts if not (isinstance(p, TextPart) and not p.content)))
            for m in messages]


def _is_substantive(part: Any) -> bool:
    if isinstance(part, ToolCallPart | ToolCallResponsePart):
        return True
    return bool(part.content)


def _break_reason(prev: InferenceCall, prev_input: list[tuple[Any, ...]],
                  current_input: list[tuple[Any, ...]]) -> FragmentReason | None:
    """Why ``current`` (whose input's canonical messages are ``current_input``) does not continue
    ``prev`` (``prev_input``), or None when it does."""
    if not any(_is_substantive(p) for m in prev.output_messages for p in m.parts):
        return "prior_output_absent"
    if current_input[: len(prev_input)] != prev_input:
        return "input_history_changed"
    prev_output = canonical_messages(prev.output_messages)
    if current_input[: len(prev_input) + len(prev_output)] != prev_input + prev_output:
        return "prior_output_not_replayed"
    return None


def _canonical_input(call: InferenceCall, prev: InferenceCall | None,
                     prev_input: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """:func:`canonical_messages` of ``call``'s input: the leading messages that are the very
    objects of ``prev``'s input (a replayed history read from the store shares them) take
    ``prev_input``'s forms, the rest are computed."""
    messages = call.input_messages
    kept = 0 if prev is None else len(list(takewhile(truth, map(is_, messages, prev.input_messages))))
    return prev_input[:kept] + canonical_messages(messages[kept:])


def call_order_key(call: InferenceCall) -> tuple[Any, str]:
    """Calls of a Session are ordered by ``(observed_at UTC, inference_call_id)``."""
    return (call.observed_at, call.inference_call_id)


def segment_calls(
    calls: Iterable[InferenceCall],
    decisions_by_call: dict[str, tuple[DeveloperDecision, ...]] | None = None,
) -> tuple[tuple[tuple[Turn, ...], ...], Counter[str]]:
    """Split one Session's calls into contiguous segments of Turns.

    Returns the segments and the ``fragmented`` counter (the three closed reasons).
    """
    decisions_by_call = decisions_by_call or {}
    ordered = sorted(calls, key=call_order_key)
    segments: list[list[Turn]] = []
    fragmented: Counter[str] = Counter()
    prev: InferenceCall | None = None
    prev_input: list[tuple[Any, ...]] = []
    for call in ordered:
        decisions = decisions_by_call.get(call.inference_call_id, ())
        current_input = _canonical_input(call, prev, prev_input)
        reason = None if prev is None else _break_reason(prev, prev_input, current_input)
        prev_input = current_input
        if prev is None or reason is not None:
            if reason is not None:
                fragmented[reason] += 1
            segments.append([make_turn(call, call.input_messages, decisions)])
        else:
            suffix = call.input_messages[len(prev.input_messages) :]
            segments[-1].append(make_turn(call, suffix, decisions))
        prev = call
    return tuple(tuple(s) for s in segments), fragmented


@dataclass(frozen=True)
class SessionCommits:
    """What binds one Session's calls to commits: the part of its Rollout that Recovery's
    commit attributions read (:mod:`sediment.evidence.attributed_calls`)."""

    org_id: str
    session_id: str
    split: Split
    attribution_source: AttributionSource
    commits: tuple[CommitRef, ...]
    session_commit_observations: tuple[SessionCommitObservation, ...]
    #: every visible call of the Session (the Rollout's Turns), in call order
    call_ids: tuple[str, ...]

    @classmethod
    def of(cls, rollout: Rollout) -> SessionCommits:
        """The binding a derived Rollout holds."""
        return cls(rollout.org_id, rollout.session_id, rollout.split, rollout.attribution_source, rollout.commits,
                   rollout.session_commit_observations,
                   tuple(turn.inference_call_id for segment in rollout.segments for turn in segment))
