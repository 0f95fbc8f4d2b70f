"""What each ingest warning code means, and what an operator can do about it.

A warning is a record that was stored, but with something of it left out or guessed (a tool
call's arguments that were not JSON, a reasoning block with no readable text). The report
counts warnings by code; this table gives each code one line of meaning for the human report
and docs/operate.md ("Ingest warnings") lists the same codes with what to do. A code with a
``:DETAIL`` tail (``claude_code_unknown_source:NAME``) is explained by its head.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class WarningCode:
    meaning: str  #: what happened to the record, in one line
    action: str  #: what the operator can do (or that nothing needs doing)


WARNINGS: Final[dict[str, WarningCode]] = {
    # model calls (ingest calls, transcripts)
    "malformed_tool_arguments": WarningCode(
        "a tool call's arguments were not a JSON object (not JSON, or another JSON type); "
        "stored as {} with the call's id and name kept",
        "nothing, if the agent's tools send such arguments; else check the gateway logs the "
        "arguments whole (a truncated log line cuts them)"),
    "tool_call_without_id": WarningCode(
        "a tool call had no id, so no result could be joined to it; the tool call was left out",
        "make the gateway or client record tool-call ids"),
    "tool_result_without_id": WarningCode(
        "a tool result had no id, so it could not be joined to its call; the result was left out",
        "make the gateway or client record tool-result ids"),
    "non_text_part_dropped": WarningCode(
        "a content block with no text (an image, audio, a file, a server tool, an unknown type) "
        "was left out of the message",
        "nothing: training rows hold text, tool calls and reasoning only"),
    "opaque_reasoning": WarningCode(
        "a reasoning block held no readable text (a signature, ciphertext or redacted thinking); "
        "it was left out",
        "nothing: providers send such reasoning encrypted"),
    "unsupported_item_dropped": WarningCode(
        "an output or tool-call item of a type Sediment does not read was left out",
        "nothing, unless rows miss content you expected: then report the item type"),
    "extra_choices_dropped": WarningCode(
        "a response held several choices (n > 1); only the first was kept",
        "nothing, unless you sample several choices per call: Sediment keeps the first"),
    # Claude Code transcripts
    "duplicate_uuid": WarningCode(
        "a transcript line repeated an earlier line's uuid; the first was kept, the repeat ignored",
        "nothing, unless a transcript was concatenated with a copy of itself"),
    "parent_absent": WarningCode(
        "a transcript line's parent uuid is not in the file; the call's history starts at that line",
        "ingest the whole transcript (a copied or cut file loses the lines before)"),
    "parent_cycle": WarningCode(
        "a transcript's parent links loop; the call's history stops where the loop starts",
        "nothing; the file is damaged, every line of it is still read"),
    # OTLP logs (Claude Code tool decisions)
    "claude_code_tool_input_absent": WarningCode(
        "a Claude Code tool decision carried no tool_input; stored with file_path \"\"",
        "set OTEL_LOG_TOOL_DETAILS=1 on the client so decisions name their file"),
    "claude_code_tool_input_unreadable": WarningCode(
        "a Claude Code tool decision's tool_input was not a JSON object with a file path; stored "
        "with file_path \"\"",
        "nothing, unless every decision warns: then report the client version"),
    "claude_code_source_absent": WarningCode(
        "a Claude Code tool decision carried no source; it is stored as not explicit",
        "nothing; without a source a decision cannot be told explicit"),
    "claude_code_unknown_source": WarningCode(
        "a Claude Code tool decision's source (after the colon) is not one Sediment knows; it is "
        "stored as not explicit",
        "nothing, unless it is common: then report the client version"),
    # CI deliveries
    "workflow_run_status_not_completed": WarningCode(
        "a completed workflow_run delivery's status said otherwise; stored with result unknown",
        "nothing: the delivery contradicts itself, so its result is not guessed"),
    "head_repository_deleted": WarningCode(
        "a pull request's head repository was deleted (a removed fork); stored with head_repo \"\"",
        "nothing"),
    "pull_request_of_other_repository": WarningCode(
        "a run listed a pull request of another repository sharing its commit; that one was passed over",
        "nothing: the run is tied to this repository's pull request, if it lists one"),
}


def explain(code: str) -> WarningCode | None:
    """The explanation of a warning code (a ``:DETAIL`` tail is explained by its head)."""
    return WARNINGS.get(code) or WARNINGS.get(code.partition(":")[0])
