"""Rollout evidence shared by rollout-producing targets: turn rows and segment identity."""

from __future__ import annotations

from typing import Any

from sediment.model.facts import CallCapture, DeveloperDecision, InferenceMessage
from sediment.model.rollout import Turn
from sediment.records import plain

#: A rollout population's own reasons (docs/exports.md, Skip reasons; the registry adds the core's in front).
ROLLOUT_SKIP_REASONS: tuple[str, ...] = ("no_segments",)


def message_row(message: InferenceMessage) -> dict[str, Any]:
    """``{role, parts, finish_reason?}`` with full typed parts; ``finish_reason`` omitted when null."""
    row: dict[str, Any] = {"role": message.role, "parts": [plain(p) for p in message.parts]}
    if message.finish_reason is not None:
        row["finish_reason"] = message.finish_reason
    return row


def decision_row(decision: DeveloperDecision) -> dict[str, Any]:
    """The five decision fields a training row keeps."""
    return {
        "accepted": decision.accepted,
        "explicit": decision.explicit,
        "agent_harness": decision.agent_harness,
        "interaction_mode": decision.interaction_mode,
        "file_path": decision.file_path,
    }


def turn_row(turn: Turn) -> dict[str, Any]:
    """One canonical turn; ``capture`` only for a call rebuilt from a client transcript (a
    wire-recorded call's turn has no such key, exactly as before the field existed)."""
    row: dict[str, Any] = {
        "inference_call_id": turn.inference_call_id,
        "new_messages": [message_row(m) for m in turn.new_messages],
        "completion": turn.completion,
        "tool_calls": [plain(c) for c in turn.tool_calls],
        "decisions": [decision_row(d) for d in turn.decisions],
    }
    if turn.capture is not None:
        row["capture"] = capture_row(turn.capture)
    return row


def capture_row(capture: CallCapture) -> dict[str, Any]:
    """A transcript capture as rows carry it: source, what the call lacks, and the parent
    Session of a subagent's Session when there is one."""
    row: dict[str, Any] = {"source": capture.source, "lacks": list(capture.lacks)}
    if capture.parent_session_id is not None:
        row["parent_session_id"] = capture.parent_session_id
    return row


def segment_instance_id(org_id: str, session_id: str, index: int) -> str:
    return f"{org_id}-{session_id}-seg{index}"
