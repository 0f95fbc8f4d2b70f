"""A Claude Code session transcript (``~/.claude/projects/<project>/<session>.jsonl``) → one
InferenceCall per model turn, and DeveloperDecisions for the edits it proves decided.

The mapping (``docs/transcripts.md``):

- Every line with a ``uuid`` is a node of the conversation tree (``parentUuid`` is its parent).
  ``assistant`` lines are the blocks of API responses, one block per line: lines sharing a
  ``message.id`` (else a ``requestId``) are one call. Its output is one assistant message of
  their content blocks (``thinking`` → reasoning, ``text`` → text, ``tool_use`` → tool call),
  with the last non-null ``stop_reason`` as its finish reason; the last line's ``usage`` gives
  the tokens (cached input counted in, as for the Anthropic API); ``message.id`` is the
  ``model_call_id``, ``message.model`` the model, the first line's ``timestamp`` the call's time.
- Its input is the path from the conversation's root to the call's first line: ``user`` lines
  (a prompt, or ``tool_result`` blocks keyed by ``tool_use_id``; neighbouring tool-result lines
  are one user message) and earlier ``assistant`` lines (neighbours of one response are one
  message). ``system`` lines are Claude Code's own notes, never sent to the model; a
  ``compact_boundary`` one ends the path, so a call after a compaction sees the summary Claude
  Code continued from, not the history it replaced.
- A call is complete once a later line follows one of its lines, its last line has a
  ``stop_reason``, or its last line is ten minutes (:data:`~.common.SETTLE`) older than the
  capture time; the last response of a transcript still being written waits for the next
  ingest (skipped as ``call_incomplete``), so re-ingesting a grown file stores only the new turns
  and the same Facts as one ingest of the whole file.
- Sidechains (``isSidechain``: a subagent's conversation) are Sessions of their own,
  ``<sessionId>/agent-<agentId>`` (else ``<sessionId>/sidechain-<uuid of its first line>``),
  whose calls name the parent Session in their capture marker.
- ``assistant`` lines of ``<synthetic>`` model (Claude Code's own error notices) are no model call
  and stay out of every input (``synthetic_message``). ``system`` lines are counted as
  ``system:<subtype>``; ``summary`` lines (session titles),
  ``file-history-snapshot`` and ``queue-operation`` lines are skipped by type; a line of any
  other type is skipped as ``unknown_entry:<type>`` and kept in the ``raw`` of the next call.

Decisions: a ``tool_result`` of an edit tool (``Edit``, ``Write``, ``MultiEdit``,
``NotebookEdit``) that is Claude Code's rejection notice (``is_error`` and "The user doesn't want
to proceed with this tool use", or "… to take this action right now" after Esc) is an explicit
reject; one with a structured ``toolUseResult``
(the edit was applied) is an accept, explicit only when ``toolUseResult.userModified`` is true
(the developer changed the proposed edit before accepting it): otherwise the transcript does
not say whether a person approved the edit or a setting did, so the accept is implicit.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from pydantic import ValidationError

from sediment.errors import validation_message
from sediment.ingest import TranslationError
from sediment.ingest.calls.anthropic import usage_tokens
from sediment.ingest.calls.fields import as_object
from sediment.ingest.calls.toolkit import AnyPart, Notes, content_parts, message, parse_timestamp
from sediment.ingest.facts_jsonl import PENDING_ID, with_natural_id
from sediment.ingest.redaction.content import redact_value
from sediment.ingest.redaction.credentials import redact_record
from sediment.ingest.transcripts.common import (
    SETTLE,
    Entry,
    RebuiltCall,
    TranscriptResult,
    build_call,
    capture,
    text_or_none,
)
from sediment.model.facts import CaptureLack, DeveloperDecision, FactModel, InferenceMessage

CLIENT: Final = "claude-code"
SKIPPED_TYPES: Final = frozenset({"summary", "file-history-snapshot", "queue-operation"})
EDIT_TOOLS: Final = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
#: Claude Code's notices in the result of a tool use someone refused at its permission prompt
#: (the second one when they pressed Esc instead of answering).
REJECTION_NOTICES: Final = ("The user doesn't want to proceed with this tool use",
                            "The user doesn't want to take this action right now")
SYNTHETIC_MODEL: Final = "<synthetic>"
#: A Claude Code transcript records neither the system prompt nor the tool definitions.
LACKS: Final[frozenset[CaptureLack]] = frozenset({"system_prompt", "tool_definitions"})


@dataclass
class _Node:
    """One parsed line of the conversation tree."""

    entry: Entry
    kind: str
    uuid: str = ""
    session: str | None = None
    parent: str | None = None
    parts: list[AnyPart] = field(default_factory=list)
    warnings: tuple[str, ...] = ()
    tool_results_only: bool = False
    group: str | None = None  # an assistant line: the response it is a block of
    synthetic: bool = False
    stop_reason: str | None = None
    refused: bool = False

    @property
    def value(self) -> dict[str, Any]:
        return self.entry.value


def _parse(entry: Entry, kind: str, result: TranscriptResult) -> _Node:
    value = entry.value
    node = _Node(entry=entry, kind=kind, uuid=text_or_none(value.get("uuid")) or "",
                 parent=text_or_none(value.get("parentUuid")))
    if kind not in ("user", "assistant"):
        node.session = text_or_none(value.get("sessionId"))
        return node
    try:
        node.session = text_or_none(value.get("sessionId"))
        if node.session is None:
            raise TranslationError("sessionId: missing")
        body = as_object(value.get("message"), "message")
        notes = Notes()
        node.parts = content_parts(body.get("content"), "message.content", notes)
        node.warnings = notes.warnings
        if kind == "assistant":
            node.synthetic = body.get("model") == SYNTHETIC_MODEL or value.get("isApiErrorMessage") is True
            node.group = text_or_none(body.get("id")) or text_or_none(value.get("requestId")) or node.uuid
            stop = body.get("stop_reason")
            if stop is not None and not isinstance(stop, str):
                raise TranslationError("message.stop_reason: expected a string")
            node.stop_reason = stop
        else:
            content = body.get("content")
            node.tool_results_only = isinstance(content, list) and bool(content) and all(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    except TranslationError as exc:
        result.refuse(entry.line, exc)
        node.refused = True
    return node


class _Transcript:
    """One file's conversation tree and the calls and decisions it holds."""

    def __init__(self, entries: list[Entry], result: TranscriptResult) -> None:
        self.result = result
        self.nodes: dict[str, _Node] = {}
        self.order: list[_Node] = []
        self.loose: list[tuple[int, dict[str, Any]]] = []  # unknown lines outside the tree, by position
        self.children: dict[str, list[_Node]] = defaultdict(list)
        for position, entry in enumerate(entries):
            kind = entry.value.get("type")
            if not isinstance(kind, str) or not kind.strip():
                result.problems.append((entry.line, "type: expected a non-empty string"))
                continue
            uuid = text_or_none(entry.value.get("uuid"))
            if kind in SKIPPED_TYPES:
                result.skipped[kind] += 1
                continue
            if kind == "system":
                subtype = entry.value.get("subtype")
                result.skipped[f"system:{subtype if isinstance(subtype, str) else 'none'}"] += 1
            elif kind not in ("user", "assistant"):
                result.skipped[f"unknown_entry:{kind}"] += 1
                if uuid is None:
                    self.loose.append((position, entry.value))
                    continue
            if uuid is None:
                given = entry.value.get("uuid")
                result.problems.append((entry.line, "uuid: missing" if given is None or given == ""
                                        else "uuid: expected a non-blank string"))
                continue
            if uuid in self.nodes:
                result.warnings["duplicate_uuid"] += 1
                continue
            node = _parse(entry, kind, result)
            self.nodes[uuid] = node
            self.order.append(node)
        for node in self.order:
            if node.parent is not None:
                self.children[node.parent].append(node)
        self._sessions: dict[str, tuple[str, str | None]] = {}
        self._messages: dict[tuple[Any, ...], InferenceMessage] = {}

    # --- Sessions --------------------------------------------------------------------

    def session_of(self, node: _Node) -> tuple[str, str | None]:
        """``(Session id, parent Session id)``: a sidechain is a Session of its own."""
        uuid = node.uuid
        if uuid in self._sessions:
            return self._sessions[uuid]
        base = node.session or ""
        if node.value.get("isSidechain") is not True:
            found: tuple[str, str | None] = (base, None)
        else:
            agent = text_or_none(node.value.get("agentId"))
            if agent is not None:
                found = (f"{base}/agent-{agent}", base)
            else:
                root = node
                seen = {uuid}
                while root.parent is not None and root.parent in self.nodes and root.parent not in seen:
                    above = self.nodes[root.parent]
                    if above.value.get("isSidechain") is not True:
                        break
                    seen.add(root.parent)
                    root = above
                found = (f"{base}/sidechain-{root.uuid}", base)
        self._sessions[uuid] = found
        return found

    # --- the path a call saw ----------------------------------------------------------

    def path_to(self, node: _Node) -> list[_Node]:
        """The nodes from the root (or the last compaction) down to ``node``'s parent."""
        path: list[_Node] = []
        seen = {node.uuid}
        parent = node.parent
        while parent is not None:
            above = self.nodes.get(parent)
            if above is None:
                self.result.warnings["parent_absent"] += 1
                break
            if parent in seen:
                self.result.warnings["parent_cycle"] += 1
                break
            if above.kind == "system" and above.value.get("subtype") == "compact_boundary":
                break
            seen.add(parent)
            path.append(above)
            parent = above.parent
        path.reverse()
        return path

    def messages(self, path: list[_Node]) -> list[InferenceMessage]:
        """The model-visible nodes of a path as messages (neighbouring blocks of one response,
        and neighbouring tool-result lines, are one message); each message is built once per
        file, however many later calls replay it."""
        grouped: list[tuple[str, str | None, list[_Node]]] = []  # role, key, nodes
        for node in path:
            if node.refused or node.kind not in ("user", "assistant") or node.synthetic:
                continue
            if node.kind == "assistant":
                if grouped and grouped[-1][0] == "assistant" and grouped[-1][1] == node.group:
                    grouped[-1][2].append(node)
                else:
                    grouped.append(("assistant", node.group, [node]))
            elif node.tool_results_only and grouped and grouped[-1][1] == "tool_results":
                grouped[-1][2].append(node)
            else:
                grouped.append(("user", "tool_results" if node.tool_results_only else None, [node]))
        found = []
        for role, _key, nodes in grouped:
            key = (role, *(id(n) for n in nodes))
            if key not in self._messages:
                finish = next((n.stop_reason for n in reversed(nodes) if n.stop_reason is not None), None)
                self._messages[key] = message(role, [part for n in nodes for part in n.parts], finish)
            found.append(self._messages[key])
        return found

    # --- calls ------------------------------------------------------------------------

    def groups(self) -> list[list[_Node]]:
        """The lines of each response, in file order of its first line."""
        found: dict[tuple[str, str], list[_Node]] = {}
        for node in self.order:
            if node.kind == "assistant" and not node.refused and node.group is not None:
                found.setdefault((self.session_of(node)[0], node.group), []).append(node)
        return list(found.values())

    def complete(self, lines: list[_Node], captured_at: datetime) -> bool:
        """Whether a response is whole: a later line follows one of its lines, its last line
        has a stop reason, or its last line is :data:`SETTLE` older than the capture time."""
        members = {id(n) for n in lines}
        if any(id(child) not in members for n in lines for child in self.children.get(n.uuid, ())):
            return True
        if lines[-1].stop_reason is not None:
            return True
        try:
            return _time(lines[-1]) + SETTLE <= captured_at
        except _LineError:
            return False

    def call(self, lines: list[_Node], unattached: list[dict[str, Any]]) -> RebuiltCall:
        first, last = lines[0], lines[-1]
        session, parent_session = self.session_of(first)
        path = self.path_to(first)
        inputs = self.messages(path)
        outputs = self.messages(lines)
        context: list[dict[str, Any]] = []
        for node in reversed(path):
            if node.kind == "assistant" and not node.synthetic:
                break
            context.append(node.value)
        context.reverse()
        warnings = {w for n in (*path, *lines) for w in n.warnings}
        lacks: set[CaptureLack] = set(LACKS)
        if "opaque_reasoning" in warnings:
            lacks.add("thinking_text")
        observed = _time(first)
        body = as_object(last.value.get("message"), "message")
        try:
            tokens = usage_tokens(body, "message")
        except TranslationError as exc:
            raise _LineError(last.entry.line, exc) from None
        raw: dict[str, Any] = {"entries": [n.value for n in lines], "context": context}
        if unattached:
            raw["unattached"] = unattached
        return RebuiltCall(
            session_id=session, inputs=tuple(inputs), outputs=tuple(outputs), observed_at=observed,
            capture=capture(CLIENT, text_or_none(first.value.get("version")), lacks, parent_session),
            raw=raw, model=text_or_none(body.get("model")), model_provider="anthropic",
            model_call_id=text_or_none(body.get("id")), input_tokens=tokens[0], output_tokens=tokens[1],
        )

    # --- decisions --------------------------------------------------------------------

    def decisions(self, org_id: str, captured_at: datetime) -> list[FactModel]:
        uses: dict[str, dict[str, Any]] = {}
        for node in self.order:
            if node.kind == "assistant" and not node.refused:
                content = node.value["message"].get("content")
                for block in content if isinstance(content, list) else ():
                    if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                        uses.setdefault(block["id"], block)
        facts: list[FactModel] = []
        for node in self.order:
            if node.kind != "user" or node.refused or not node.tool_results_only:
                continue
            for block in node.value["message"]["content"]:
                use = uses.get(block.get("tool_use_id")) if isinstance(block.get("tool_use_id"), str) else None
                if use is None or not isinstance(use.get("name"), str) or use["name"] not in EDIT_TOOLS:
                    continue
                decision = self.decision(node, use, block, org_id, captured_at)
                if decision is not None:
                    facts.append(decision)
        return facts

    def decision(self, node: _Node, use: dict[str, Any], block: dict[str, Any], org_id: str,
                 captured_at: datetime) -> DeveloperDecision | None:
        structured = node.value.get("toolUseResult")
        text = _result_text(block.get("content"))
        if block.get("is_error") is True and any(notice in text for notice in REJECTION_NOTICES):
            accepted, explicit = False, True
        elif block.get("is_error") is not True and isinstance(structured, dict):
            accepted, explicit = True, structured.get("userModified") is True
        else:
            self.result.skipped["edit_not_applied"] += 1
            return None
        given = use.get("input")
        arguments: dict[str, Any] = given if isinstance(given, dict) else {}
        path = arguments.get("notebook_path") if use.get("name") == "NotebookEdit" else arguments.get("file_path")
        raw = {"tool_use": use, "tool_result": block}
        if isinstance(structured, dict) and "userModified" in structured:
            raw["userModified"] = structured["userModified"]
        try:
            fact = DeveloperDecision(
                decision_id=PENDING_ID, org_id=org_id, session_id=self.session_of(node)[0], agent_harness=CLIENT,
                file_path=path if isinstance(path, str) else "", accepted=accepted, explicit=explicit,
                interaction_mode="agent", call_id=use["id"], occurred_at=_time(node), captured_at=captured_at,
                raw=redact_value(redact_record(raw)),
            )
        except _LineError as exc:
            self.result.problems.append((exc.line, str(exc)))
            return None
        except ValidationError as exc:
            self.result.refuse(node.entry.line, TranslationError(f"decision: {validation_message(exc.errors()[0])}"))
            return None
        return with_natural_id(fact, "decision_id")


class _LineError(Exception):
    def __init__(self, line: int, exc: Exception) -> None:
        super().__init__(str(exc))
        self.line = line


def _time(node: _Node) -> datetime:
    try:
        moment = parse_timestamp(node.value.get("timestamp"), "timestamp")
    except TranslationError as exc:
        raise _LineError(node.entry.line, exc) from None
    if moment is None:
        raise _LineError(node.entry.line, TranslationError("timestamp: missing"))
    return moment


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def translate(entries: list[Entry], result: TranscriptResult, *, org_id: str, captured_at: datetime) -> None:
    """Add the file's calls and decisions to ``result``."""
    transcript = _Transcript(entries, result)
    entry_position = {id(e): i for i, e in enumerate(entries)}
    loose = list(transcript.loose)
    for lines in transcript.groups():
        if any(n.synthetic for n in lines):
            result.skipped["synthetic_message"] += 1
            continue
        if not transcript.complete(lines, captured_at):
            result.skipped["call_incomplete"] += 1
            continue
        end = entry_position[id(lines[-1].entry)]
        unattached = [value for at, value in loose if at < end]
        loose = [(at, value) for at, value in loose if at >= end]
        try:
            rebuilt = transcript.call(lines, unattached)
            result.facts.append(build_call(rebuilt, org_id))
        except _LineError as exc:
            result.problems.append((exc.line, str(exc)))
        except TranslationError as exc:
            result.problems.append((lines[0].entry.line, str(exc)))
    result.facts.extend(transcript.decisions(org_id, captured_at))
    result.warnings.update(w for node in transcript.order for w in node.warnings)
