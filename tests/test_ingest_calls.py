"""Recorded model calls → InferenceCall (sediment.ingest.calls and its four format modules).

The cassette tests run every VCR cassette of the shared fixtures beside the repository,
``<root>/../shared/fixtures/inputs/llm_calls`` (pydantic-ai, recorded against the real APIs;
``SEDIMENT_INPUT_FIXTURES`` names another ``inputs`` directory). Without them the cassette
tests skip, saying why, except under CI (``CI=true``), where they fail: CI must run them.
Each interaction whose URI is a model-call API becomes the request/response envelope with
``session_id`` ``s-<cassette stem>``. Streamed (SSE) responses are passed as their raw SSE
text: the translator assembles the stream into the response object (Chat chunks concatenated
per choice and tool-call index, the Responses ``response.completed`` event, Anthropic
``message_start`` + block deltas + ``message_delta``), so streamed calls are asserted on
content like the others.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import json
import math
import os
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml

from sediment.ingest import Translation, TranslationError
from sediment.ingest.calls import CALL_FORMATS, CALL_SKIP_REASONS, CALL_WARNINGS, ReplayMemo, toolkit, translate_call
from sediment.ingest.redaction.credentials import marker
from sediment.model.facts import (
    InferenceCall,
    InferenceMessage,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    ToolDefinition,
)
from sediment.model.rollout import canonical_messages, segment_calls
from sediment.store.ids import fact_id
from sediment.testing import require_path

REPOSITORY_ROOT = Path(__file__).resolve().parents[1]


def fixtures_dir(environ: Mapping[str, str]) -> Path:
    """The cassette directory: ``$SEDIMENT_INPUT_FIXTURES/llm_calls``, else the shared fixtures
    beside the repository (``<root>/../shared/fixtures/inputs/llm_calls``)."""
    inputs = environ.get("SEDIMENT_INPUT_FIXTURES") or REPOSITORY_ROOT.parent / "shared" / "fixtures" / "inputs"
    return Path(inputs) / "llm_calls"


def require_fixtures(directory: Path, environ: Mapping[str, str]) -> None:
    """Skip (with the reason) when the cassettes are absent, or fail under CI."""
    require_path(directory, "the shared cassettes", hint="set SEDIMENT_INPUT_FIXTURES to their inputs directory",
                 environ=environ)


FIXTURES = fixtures_dir(os.environ)  # read at import: the test kit clears SEDIMENT_* for each test
CAPTURED = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
ORG = "acme"


# --- helpers -------------------------------------------------------------------------


def translate(record: dict[str, Any], call_format: str = "openai-chat") -> Translation:
    return translate_call(record, format=call_format, org_id=ORG, captured_at=CAPTURED)


def the_call(translation: Translation) -> InferenceCall:
    assert translation.skipped is None
    (call,) = translation.facts
    assert isinstance(call, InferenceCall)
    return call


def parts_of(message: InferenceMessage) -> list[tuple[Any, ...]]:
    """A message's parts as plain tuples, for readable equality assertions."""
    out: list[tuple[Any, ...]] = []
    for part in message.parts:
        if isinstance(part, TextPart | ReasoningPart):
            out.append((part.type, part.content))
        elif isinstance(part, ToolCallPart):
            out.append((part.type, part.id, part.name, part.arguments))
        else:
            out.append((part.type, part.id, part.result))
    return out


def shape(messages: tuple[InferenceMessage, ...]) -> list[tuple[str, list[str]]]:
    return [(m.role, [p.type for p in m.parts]) for m in messages]


def call_format(uri: str) -> str | None:
    """The format of a model-call URI; None for anything else (Gemini-native, conversations)."""
    path = urlparse(uri).path
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path.endswith("/chat/completions"):
        return "openai-chat"
    if path.endswith("/responses"):
        return "openai-responses"
    return None


def body(record: dict[str, Any]) -> Any:
    """A cassette body: ``parsed_body``, else ``body`` (or ``body.string``) parsed as JSON when
    it is JSON; an SSE stream stays text and is assembled by the translator."""
    if "parsed_body" in record:
        return record["parsed_body"]
    raw = record.get("body")
    if isinstance(raw, dict):
        raw = raw.get("string")
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def envelopes(stem: str) -> list[tuple[int, str, dict[str, Any]]]:
    """``(interaction index, format, envelope)`` for each model call of a cassette."""
    cassette = yaml.safe_load((FIXTURES / f"{stem}.yaml").read_text(encoding="utf-8"))
    found = []
    for index, interaction in enumerate(cassette["interactions"]):
        fmt = call_format(interaction["request"]["uri"])
        if fmt is None:
            continue
        envelope = {
            "request": body(interaction["request"]),
            "response": body(interaction["response"]),
            "session_id": f"s-{stem}",
            "observed_at": (CAPTURED + timedelta(seconds=index)).isoformat().replace("+00:00", "Z"),
        }
        found.append((index, fmt, envelope))
    return found


def cassette_calls(stem: str) -> list[InferenceCall]:
    calls = []
    for index, fmt, envelope in envelopes(stem):
        call = the_call(translate(envelope, fmt))
        # What every cassette call shares: envelope identity, ids and the lossless raw.
        assert call.session_id == f"s-{stem}"
        assert call.gateway_provider == "unknown"
        assert call.model_provider is None
        assert call.org_id == ORG
        assert call.observed_at == CAPTURED + timedelta(seconds=index)
        assert call.model_call_id is not None
        assert call.inference_call_id == fact_id("call", ORG, "unknown", call.session_id, call.model_call_id)
        assert call.raw == envelope
        calls.append(call)
    return calls


def fragmented(calls: list[InferenceCall]) -> Counter[str]:
    """Where the agent-loop replay rule breaks between consecutive calls (segmentation)."""
    return segment_calls(calls)[1]


def tool_calls(message: InferenceMessage) -> list[tuple[str, str, dict[str, Any]]]:
    return [(p.id, p.name, p.arguments) for p in message.parts if isinstance(p, ToolCallPart)]


def tool_results(message: InferenceMessage) -> list[tuple[str, Any]]:
    return [(p.id, p.result) for p in message.parts if isinstance(p, ToolCallResponsePart)]


# --- cassettes: Anthropic Messages -----------------------------------------------------


def check_anthropic_mixed_strict_tool_run(calls: list[InferenceCall]) -> None:
    assert len(calls) == 3
    assert [c.model_call_id for c in calls] == [
        "msg_01CTV3rhAAYCrzRGTEoJbJt7",
        "msg_01KgnnRwGgZEK3kvEGM5nbW8",
        "msg_0111CmwjQHh6LerTTnrW2GPi",
    ]
    assert {c.model for c in calls} == {"claude-sonnet-4-5-20250929"}
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [(628, 50), (691, 53), (757, 6)]
    first, second, last = calls
    # The top-level ``system`` is the leading system message of every call.
    assert parts_of(first.input_messages[0]) == [
        (
            "text",
            "Always call `country_source` first, then call `capital_lookup` with that result before replying.",
        )
    ]
    assert shape(first.input_messages) == [("system", ["text"]), ("user", ["text"])]
    (out,) = first.output_messages
    assert out.finish_reason == "tool_use"
    assert parts_of(out) == [
        ("text", "I'll help you find the capital city using the available tools."),
        ("tool_call", "toolu_01Ttepb9joVoQFHP568v7UAL", "country_source", {}),
    ]
    # tool_result blocks sit in a user message and link back by tool_use_id.
    assert shape(second.input_messages)[-1] == ("user", ["tool_call_response"])
    assert tool_results(second.input_messages[-1]) == [("toolu_01Ttepb9joVoQFHP568v7UAL", "Japan")]
    assert tool_calls(second.output_messages[0]) == [
        ("toolu_011j5uC2Tg3TZJo3nmLtJ8Mm", "capital_lookup", {"country": "Japan"})
    ]
    assert tool_results(last.input_messages[-1]) == [("toolu_011j5uC2Tg3TZJo3nmLtJ8Mm", "Tokyo")]
    assert parts_of(last.output_messages[0]) == [("text", "Capital: Tokyo")]
    assert last.output_messages[0].finish_reason == "end_turn"
    assert fragmented(calls) == Counter()  # each call replays the previous input + output


def check_anthropic_model_thinking_part_redacted_stream(calls: list[InferenceCall]) -> None:
    (call,) = calls
    assert call.model_call_id == "msg_018XZkwvj9asBiffg3fXt88s"
    assert call.model == "claude-sonnet-4-5-20250929"
    # message_start says 92 in / 88 out; message_delta's final usage wins for output.
    assert (call.input_tokens, call.output_tokens) == (92, 189)
    (out,) = call.output_messages
    assert out.role == "assistant"
    assert out.finish_reason == "end_turn"
    # Both redacted_thinking blocks are opaque: no reasoning part, only raw keeps them.
    (text,) = out.parts
    assert isinstance(text, TextPart)
    assert text.content.startswith("I notice that you've sent what appears to be some kind of test string")
    assert text.content.endswith("How can I assist you today with a legitimate task or question?")
    assert '"type":"redacted_thinking"' in call.raw["response"]


def check_anthropic_tool_with_thinking(calls: list[InferenceCall]) -> None:
    first, second = calls
    assert [c.model_call_id for c in calls] == ["msg_01WvueFjZVbHcj4H4zUzeGv2", "msg_01SZ8KP8HhB1TxP6Ybbv6iKz"]
    assert {c.model for c in calls} == {"claude-sonnet-4-20250514"}
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [(398, 155), (566, 126)]
    (out,) = first.output_messages
    assert [p.type for p in out.parts] == ["reasoning", "text", "tool_call"]
    reasoning = out.parts[0]
    assert isinstance(reasoning, ReasoningPart)
    assert reasoning.content.startswith('The user is asking about the largest city in "the user country".')
    assert reasoning.content.endswith("Let me call the get_user_country function first.")
    assert "EqEECkYICxgCKkAo3UA4" not in json.dumps(out.model_dump())  # the signature stays in raw only
    assert tool_calls(out) == [("toolu_01YGzqpRE16Vricda3Aqcejo", "get_user_country", {})]
    # The thinking block is replayed unchanged, so call 2's history holds call 1's output.
    assert canonical_messages(second.input_messages[1:2]) == canonical_messages(first.output_messages)
    assert tool_results(second.input_messages[2]) == [("toolu_01YGzqpRE16Vricda3Aqcejo", "Mexico")]
    assert second.output_messages[0].finish_reason == "end_turn"
    assert "**Mexico City** (Ciudad de México)" in parts_of(second.output_messages[0])[0][1]
    assert fragmented(calls) == Counter()


def check_multiple_parallel_tool_calls(calls: list[InferenceCall]) -> None:
    first, second = calls
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [(423, 202), (771, 77)]
    assert first.model == "claude-haiku-4-5-20251001"
    assert first.input_messages[0].role == "system"
    assert parts_of(first.input_messages[0])[0][1].startswith("\n    Use the `retrieve_entity_info` tool")
    (out,) = first.output_messages
    calls_made = tool_calls(out)
    assert calls_made == [
        ("toolu_0167cfEnoQaPviGdVXA95zcu", "retrieve_entity_info", {"name": "Alice"}),
        ("toolu_01EEe2V5HD1Ac4rKiUR4HD2T", "retrieve_entity_info", {"name": "Bob"}),
        ("toolu_01XFyAjstT3966qvRynZyVPo", "retrieve_entity_info", {"name": "Charlie"}),
        ("toolu_013mnQZbgtK2oe3Mo3XKJsx3", "retrieve_entity_info", {"name": "Daisy"}),
    ]
    # Four tool_result blocks answer them in one user turn, in the same order.
    answers = second.input_messages[-1]
    assert answers.role == "user"
    assert tool_results(answers) == [
        ("toolu_0167cfEnoQaPviGdVXA95zcu", "alice is bob's wife"),
        ("toolu_01EEe2V5HD1Ac4rKiUR4HD2T", "bob is alice's husband"),
        ("toolu_01XFyAjstT3966qvRynZyVPo", "charlie is alice's son"),
        ("toolu_013mnQZbgtK2oe3Mo3XKJsx3", "daisy is bob's daughter and charlie's younger sister"),
    ]
    assert "Daisy is the youngest in the family" in parts_of(second.output_messages[0])[0][1]
    assert fragmented(calls) == Counter()


# --- cassettes: OpenAI Chat Completions ---------------------------------------------------


def check_compatible_api_with_tool_calls_without_id(calls: list[InferenceCall]) -> None:
    first, second = calls
    assert [c.model_call_id for c in calls] == ["3SE-aKjdCcCEz7IPxpqjCA", "3iE-aNK3EIGJz7IPt_mYoAs"]
    assert {c.model for c in calls} == {"gemini-2.5-pro-preview-05-06"}
    # prompt + completion; the reported total (109) also counts Gemini's hidden thinking.
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [(35, 12), (66, 6)]
    # Gemini's endpoint sent the tool call with id "": it can join nothing, so it is dropped.
    (out,) = first.output_messages
    assert (out.role, out.parts, out.finish_reason) == ("assistant", (), "tool_calls")
    # The client made up a pyd_ai_ id for its replay; call and result link by it.
    replayed = "pyd_ai_cee885c699414386a7e14b7ec43cadbc"
    assert tool_calls(second.input_messages[1]) == [(replayed, "get_current_time", {})]
    assert tool_results(second.input_messages[2]) == [(replayed, "Noon")]
    assert parts_of(second.output_messages[0]) == [("text", "The current time is Noon.")]
    assert fragmented(calls) == Counter({"prior_output_absent": 1})


def check_multiple_agent_tool_calls(calls: list[InferenceCall]) -> None:
    # Interactions 0 and 1 are Gemini-native generateContent calls: not one of the formats.
    first, second = calls
    assert [c.model_call_id for c in calls] == [
        "chatcmpl-BEhL3fZWgTz2Z57jXexYbQPsOBUm3",
        "chatcmpl-BEhL4jHN01U9VPVVYzgKrwORTJ0Pw",
    ]
    assert {c.model for c in calls} == {"gpt-4o-mini-2024-07-18"}
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [(104, 16), (129, 9)]
    # The Gemini turns are replayed to OpenAI in Chat form, with the client's pyd_ai_ ids.
    assert shape(first.input_messages) == [
        ("user", ["text"]),
        ("assistant", ["tool_call"]),
        ("tool", ["tool_call_response"]),
        ("assistant", ["text"]),
        ("user", ["text"]),
    ]
    assert tool_calls(first.input_messages[1]) == [
        ("pyd_ai_504f8147f83f44f3a5f14d87bfd01bda", "get_capital", {"country": "France"})
    ]
    assert tool_results(first.input_messages[2]) == [("pyd_ai_504f8147f83f44f3a5f14d87bfd01bda", "Paris")]
    assert parts_of(first.input_messages[3]) == [("text", "The capital of France is Paris.\n")]
    assert tool_calls(first.output_messages[0]) == [
        ("call_SkEQ3ZGSJC8m6AvaIGNuuKdm", "get_capital", {"country": "England"})
    ]
    assert tool_results(second.input_messages[-1]) == [("call_SkEQ3ZGSJC8m6AvaIGNuuKdm", "London")]
    assert parts_of(second.output_messages[0]) == [("text", "The capital of England is London.")]
    assert fragmented(calls) == Counter()


def check_openai_instructions_with_tool_calls_keep_instructions(calls: list[InferenceCall]) -> None:
    first, second = calls
    assert [c.model_call_id for c in calls] == [
        "chatcmpl-BMxEwRA0p0gJ52oKS7806KAlfMhqq",
        "chatcmpl-BMxEx6B8JEj6oDC45MOWKp0phg8UP",
    ]
    assert first.model == "gpt-4.1-mini-2025-04-14"  # the response's dated model, not the request's
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [(50, 15), (75, 15)]
    assert parts_of(first.input_messages[0]) == [("text", "You are a helpful assistant.")]
    assert first.input_messages[0].role == "system"
    (out,) = first.output_messages
    assert out.finish_reason == "tool_calls"
    assert parts_of(out) == [("tool_call", "call_bhZkmIKKItNGJ41whHUHB7p9", "get_temperature", {"city": "Tokyo"})]
    assert shape(second.input_messages) == [
        ("system", ["text"]),
        ("user", ["text"]),
        ("assistant", ["tool_call"]),
        ("tool", ["tool_call_response"]),
    ]
    assert tool_results(second.input_messages[3]) == [("call_bhZkmIKKItNGJ41whHUHB7p9", "20.0")]
    assert second.output_messages[0].finish_reason == "stop"
    assert parts_of(second.output_messages[0]) == [
        ("text", "The temperature in Tokyo is currently 20.0 degrees Celsius.")
    ]
    assert fragmented(calls) == Counter()


def check_run_stream_sync_streams_real_model(calls: list[InferenceCall]) -> None:
    # Both responses are SSE chunk streams, assembled by the translator.
    first, second = calls
    assert [c.model_call_id for c in calls] == [
        "chatcmpl-Dx0XpqH8w09uBXwq1zFGYdETjtnEl",
        "chatcmpl-Dx0Xq5Xx9rHB2ehcHZCRDsnuymUXc",
    ]
    assert {c.model for c in calls} == {"gpt-4o-mini-2024-07-18"}
    # usage arrives only in the last chunk (stream_options.include_usage).
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [(53, 15), (78, 9)]
    (out,) = first.output_messages
    assert out.finish_reason == "tool_calls"
    # The id and name came in the first delta, the arguments in five fragments.
    assert parts_of(out) == [("tool_call", "call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", {"country": "UK"})]
    assert tool_results(second.input_messages[-1]) == [("call_ZR5UUuTt3pf61kjwAJIYdVMj", "London")]
    assert parts_of(second.output_messages[0]) == [("text", "The capital of the UK is London.")]
    assert second.output_messages[0].finish_reason == "stop"
    assert fragmented(calls) == Counter()


# --- cassettes: OpenAI Responses ------------------------------------------------------


def check_openai_conversation_id_tool_call_continuation(calls: list[InferenceCall]) -> None:
    # Interactions 0 and 3 create and delete the conversation: not model calls.
    first, second = calls
    assert [c.model_call_id for c in calls] == [
        "resp_01000000000000000000000000000000000000000000000000",
        "resp_02000000000000000000000000000000000000000000000000",
    ]
    assert {c.model for c in calls} == {"gpt-4.1-2025-04-14"}
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [(57, 13), (88, 10)]
    instructions = ("text", "Use the provided tool when the user asks for the conversation code.")
    assert shape(first.input_messages) == [("system", ["text"]), ("user", ["text"])]
    assert parts_of(first.input_messages[0]) == [instructions]
    (out,) = first.output_messages
    assert out.finish_reason == "completed"
    assert parts_of(out) == [("tool_call", "call_010000000000000000000000", "get_conversation_code", {})]
    # Server-side conversation state: the second input is only the new function_call_output.
    assert shape(second.input_messages) == [("system", ["text"]), ("tool", ["tool_call_response"])]
    assert tool_results(second.input_messages[1]) == [("call_010000000000000000000000", "TOOL-PAI-5222")]
    assert parts_of(second.output_messages[0]) == [("text", "TOOL-PAI-5222")]
    assert fragmented(calls) == Counter({"input_history_changed": 1})


def check_openai_responses_model_simple_response_with_tool_call(calls: list[InferenceCall]) -> None:
    first, second = calls
    assert [c.model_call_id for c in calls] == [
        "resp_04907f5d3de791830068fbaa19bb908195a91378279dba0f14",
        "resp_0e9950da9eac6a780068fbaa1bc030819da585a6f85ddad1e6",
    ]
    assert {c.model for c in calls} == {"gpt-4o-2024-08-06"}
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [(40, 18), (67, 11)]
    assert shape(first.input_messages) == [("user", ["text"])]
    assert tool_calls(first.output_messages[0]) == [
        ("call_YfwRsW8sUxDKipwyhWTzOXCA", "get_capital", {"country": "PotatoLand"})
    ]
    # The replayed function_call (status null instead of completed) is the same tool call.
    assert shape(second.input_messages) == [
        ("user", ["text"]),
        ("assistant", ["tool_call"]),
        ("tool", ["tool_call_response"]),
    ]
    assert tool_results(second.input_messages[2]) == [("call_YfwRsW8sUxDKipwyhWTzOXCA", "Potato City")]
    assert parts_of(second.output_messages[0]) == [("text", "The capital of PotatoLand is Potato City.")]
    assert fragmented(calls) == Counter()


def check_openai_responses_stream(calls: list[InferenceCall]) -> None:
    # Both responses are SSE event streams; the response.completed event is the record.
    first, second = calls
    assert [c.model_call_id for c in calls] == [
        "resp_67e554a155508191900ee113293c4c830794405d35281ae2",
        "resp_67e554a21aa88191b65876ac5e5bbe0406c52f0e511c76ed",
    ]
    assert [(c.input_tokens, c.output_tokens) for c in calls] == [(255, 16), (278, 9)]
    assert shape(first.input_messages) == [("user", ["text"])]  # instructions "" gives no message
    assert tool_calls(first.output_messages[0]) == [
        ("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", {"country": "France"})
    ]
    # This pydantic-ai version replayed the item id (fc_…) as the call_id, so the replayed
    # call differs from the one the model made: the replay rule breaks here.
    replayed = "fc_67e554a1de488191af0831d35cbe082e0794405d35281ae2"
    assert tool_calls(second.input_messages[1]) == [(replayed, "get_capital", {"country": "France"})]
    assert tool_results(second.input_messages[2]) == [(replayed, "Paris")]
    assert parts_of(second.output_messages[0]) == [("text", "The capital of France is Paris.")]
    assert fragmented(calls) == Counter({"prior_output_not_replayed": 1})


CASSETTE_CHECKS: dict[str, Callable[[list[InferenceCall]], None]] = {
    "pydantic-ai.test_anthropic.test_anthropic_mixed_strict_tool_run": check_anthropic_mixed_strict_tool_run,
    "pydantic-ai.test_anthropic.test_anthropic_model_thinking_part_redacted_stream": (
        check_anthropic_model_thinking_part_redacted_stream
    ),
    "pydantic-ai.test_anthropic.test_anthropic_tool_with_thinking": check_anthropic_tool_with_thinking,
    "pydantic-ai.test_anthropic.test_multiple_parallel_tool_calls": check_multiple_parallel_tool_calls,
    "pydantic-ai.test_openai.test_compatible_api_with_tool_calls_without_id": (
        check_compatible_api_with_tool_calls_without_id
    ),
    "pydantic-ai.test_openai.test_multiple_agent_tool_calls": check_multiple_agent_tool_calls,
    "pydantic-ai.test_openai.test_openai_instructions_with_tool_calls_keep_instructions": (
        check_openai_instructions_with_tool_calls_keep_instructions
    ),
    "pydantic-ai.test_openai.test_run_stream_sync_streams_real_model": check_run_stream_sync_streams_real_model,
    "pydantic-ai.test_openai_responses.test_openai_conversation_id_tool_call_continuation": (
        check_openai_conversation_id_tool_call_continuation
    ),
    "pydantic-ai.test_openai_responses.test_openai_responses_model_simple_response_with_tool_call": (
        check_openai_responses_model_simple_response_with_tool_call
    ),
    "pydantic-ai.test_openai_responses.test_openai_responses_stream": check_openai_responses_stream,
}

# The warnings each cassette's calls raise (a tuple per translated call).
CASSETTE_WARNINGS: dict[str, list[tuple[str, ...]]] = {
    "pydantic-ai.test_anthropic.test_anthropic_model_thinking_part_redacted_stream": [("opaque_reasoning",)],
    "pydantic-ai.test_openai.test_compatible_api_with_tool_calls_without_id": [("tool_call_without_id",), ()],
}



def function(name: str, parameters: dict[str, Any], description: str | None = "",
             strict: bool | None = None) -> ToolDefinition:
    return ToolDefinition(name=name, description=description, parameters=parameters, strict=strict)


NO_ARGUMENTS = {"additionalProperties": False, "properties": {}, "type": "object"}
COUNTRY = {
    "additionalProperties": False,
    "properties": {"country": {"type": "string"}},
    "required": ["country"],
    "type": "object",
}
DESCRIBED_COUNTRY = {
    "additionalProperties": False,
    "properties": {"country": {"description": "The country name.", "type": "string"}},
    "required": ["country"],
    "type": "object",
}

# The tool list every call of a cassette declared (the request resends it with each call).
CASSETTE_TOOLS: dict[str, tuple[ToolDefinition, ...] | None] = {
    "pydantic-ai.test_anthropic.test_anthropic_mixed_strict_tool_run": (
        function("country_source", NO_ARGUMENTS, strict=True),  # Anthropic's optional strict, as sent
        function("capital_lookup", COUNTRY),
    ),
    "pydantic-ai.test_anthropic.test_anthropic_model_thinking_part_redacted_stream": None,  # no tools sent
    "pydantic-ai.test_anthropic.test_anthropic_tool_with_thinking": (function("get_user_country", NO_ARGUMENTS),),
    "pydantic-ai.test_anthropic.test_multiple_parallel_tool_calls": (
        function(
            "retrieve_entity_info",
            {
                "additionalProperties": False,
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
                "type": "object",
            },
            "Get the knowledge about the given entity.",
        ),
    ),
    "pydantic-ai.test_openai.test_compatible_api_with_tool_calls_without_id": (
        function("get_current_time", NO_ARGUMENTS, "Get the current time."),
    ),
    # The Gemini-native calls (declared as function_declarations) are not translated.
    "pydantic-ai.test_openai.test_multiple_agent_tool_calls": (
        function("get_capital", DESCRIBED_COUNTRY, "Get the capital of a country."),
    ),
    "pydantic-ai.test_openai.test_openai_instructions_with_tool_calls_keep_instructions": (
        function(
            "get_temperature",
            {
                "additionalProperties": False,
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "type": "object",
            },
            strict=True,
        ),
    ),
    "pydantic-ai.test_openai.test_run_stream_sync_streams_real_model": (
        function("get_capital", COUNTRY, strict=True),
    ),
    # Responses tools are flat; pydantic-ai sends a null description, kept as absent.
    "pydantic-ai.test_openai_responses.test_openai_conversation_id_tool_call_continuation": (
        function("get_conversation_code", NO_ARGUMENTS, None, strict=False),
    ),
    "pydantic-ai.test_openai_responses.test_openai_responses_model_simple_response_with_tool_call": (
        function("get_capital", COUNTRY, None, strict=True),
    ),
    "pydantic-ai.test_openai_responses.test_openai_responses_stream": (
        function("get_capital", COUNTRY, strict=True),
    ),
}

@pytest.fixture
def cassettes() -> Path:
    """The cassette directory; a test using it skips without it (fails under CI)."""
    require_fixtures(FIXTURES, os.environ)
    return FIXTURES


needs_fixtures = pytest.mark.usefixtures("cassettes")


def test_fixtures_resolve_beside_the_repository_not_on_this_machine() -> None:
    assert fixtures_dir({}) == REPOSITORY_ROOT.parent / "shared" / "fixtures" / "inputs" / "llm_calls"
    assert (REPOSITORY_ROOT / "pyproject.toml").is_file()  # the root is the checkout this file is in
    assert fixtures_dir({"SEDIMENT_INPUT_FIXTURES": "/elsewhere/inputs"}) == Path("/elsewhere/inputs/llm_calls")


def test_absent_fixtures_skip_with_the_reason_and_fail_under_ci(tmp_path: Path) -> None:
    absent = tmp_path / "llm_calls"
    with pytest.raises(pytest.skip.Exception, match="the shared cassettes not found at .*llm_calls"):
        require_fixtures(absent, {})
    with pytest.raises(pytest.skip.Exception):
        require_fixtures(absent, {"CI": "false"})
    for value in ("true", "TRUE", "1"):
        with pytest.raises(pytest.fail.Exception, match=r"under CI \(CI=true\) it must be present"):
            require_fixtures(absent, {"CI": value})
    absent.mkdir()
    require_fixtures(absent, {"CI": "true"})  # present: neither skips nor fails


@needs_fixtures
def test_every_cassette_has_content_assertions() -> None:
    assert sorted(p.stem for p in FIXTURES.glob("*.yaml")) == sorted(CASSETTE_CHECKS)


@needs_fixtures
@pytest.mark.parametrize("stem", sorted(CASSETTE_CHECKS))
def test_cassette(stem: str) -> None:
    CASSETTE_CHECKS[stem](cassette_calls(stem))
    warnings = [translate(envelope, fmt).warnings for _, fmt, envelope in envelopes(stem)]
    assert warnings == CASSETTE_WARNINGS.get(stem, [() for _ in warnings])


@needs_fixtures
@pytest.mark.parametrize("stem", sorted(CASSETTE_CHECKS))
def test_cassette_tool_definitions(stem: str) -> None:
    assert sorted(CASSETTE_TOOLS) == sorted(CASSETTE_CHECKS)
    calls = cassette_calls(stem)
    assert [c.tools for c in calls] == [CASSETTE_TOOLS[stem]] * len(calls)
    for call, (_, fmt, envelope) in zip(calls, envelopes(stem), strict=True):
        # The JSON Schema is the very object the request sent, not a normalized copy.
        schema_key = "input_schema" if fmt == "anthropic" else "parameters"
        sent = [t.get("function", t)[schema_key] for t in envelope["request"].get("tools") or []]
        assert [t.parameters for t in call.tools or ()] == sent


@needs_fixtures
def test_cassette_interactions_outside_the_formats_are_not_model_calls() -> None:
    stems = {
        "pydantic-ai.test_openai.test_multiple_agent_tool_calls": [2, 3],
        "pydantic-ai.test_openai_responses.test_openai_conversation_id_tool_call_continuation": [1, 2],
    }
    for stem, indexes in stems.items():
        assert [index for index, _, _ in envelopes(stem)] == indexes


# --- envelope, sessions and skips -------------------------------------------------------


def chat_record(**extra: Any) -> dict[str, Any]:
    """A small Chat call: a user question answered by one tool call."""
    record: dict[str, Any] = {
        "request": {"model": "gpt-4.1", "messages": [{"role": "user", "content": "list the files"}]},
        "response": {
            "id": "chatcmpl-1",
            "model": "gpt-4.1-2025-04-14",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "ls", "arguments": '{"path":"."}'},
                            }
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
        },
        "session_id": "sess-1",
    }
    record.update(extra)
    return record


def without_session(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "session_id"}


def test_envelope_fields_are_carried() -> None:
    record = chat_record(observed_at="2025-03-04T05:06:07+02:00", duration_ms=1234, user_id=" dev-7 ")
    call = the_call(translate(record))
    assert call.observed_at == datetime(2025, 3, 4, 3, 6, 7, tzinfo=UTC)
    assert call.duration_ms == 1234
    assert call.user_id == "dev-7"
    assert (call.input_tokens, call.output_tokens) == (12, 7)
    assert call.model == "gpt-4.1-2025-04-14"
    assert parts_of(call.output_messages[0]) == [("tool_call", "call_1", "ls", {"path": "."})]


def test_observed_at_defaults_to_capture_time() -> None:
    call = the_call(translate(chat_record()))
    assert call.observed_at == CAPTURED
    assert call.duration_ms is None
    assert call.user_id is None


def test_model_falls_back_to_the_request() -> None:
    record = chat_record()
    del record["response"]["model"]
    assert the_call(translate(record)).model == "gpt-4.1"


def test_missing_session_is_skipped_not_invented() -> None:
    translation = translate(without_session(chat_record(headers={"x-request-id": "req-1"})))
    assert translation == Translation.skip("no_session")
    assert translation.facts == ()


@pytest.mark.parametrize("name", ["x-sediment-session", "X-Sediment-Session", "X-SEDIMENT-SESSION"])
def test_session_from_the_sediment_header_any_case(name: str) -> None:
    record = without_session(chat_record(headers={name: "pi-0b5e"}))
    assert the_call(translate(record)).session_id == "pi-0b5e"


def test_session_header_in_recorder_list_form() -> None:
    record = without_session(chat_record(headers={"x-sediment-session": ["pi-1", "pi-2"]}))
    assert the_call(translate(record)).session_id == "pi-1"


def test_explicit_session_wins_over_headers() -> None:
    record = chat_record(headers={"x-sediment-session": "from-header"})
    assert the_call(translate(record)).session_id == "sess-1"


CODEX_TURN_METADATA = json.dumps(
    {
        "installation_id": "00000000-0000-4000-8000-000000000000",
        "session_id": "019f6f4c-810d-7ab1-afad-7d40838a62cd",
        "thread_id": "019f6f4c-810d-7ab1-afad-7d40838a62cd",
        "turn_id": "019f6f4c-8174-7382-9481-49015b1eb651",
        "request_kind": "turn",
    }
)


def responses_record(**extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "request": {"model": "gpt-5-codex", "instructions": "You are Codex.", "input": "fix the bug"},
        "response": {
            "id": "resp_1",
            "model": "gpt-5-codex",
            "status": "completed",
            "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}],
            "usage": {"input_tokens": 30, "output_tokens": 2},
        },
    }
    record.update(extra)
    return record


def test_session_from_codex_turn_metadata() -> None:
    record = responses_record(headers={"X-Codex-Turn-Metadata": CODEX_TURN_METADATA})
    call = the_call(translate(record, "openai-responses"))
    assert call.session_id == "019f6f4c-810d-7ab1-afad-7d40838a62cd"
    assert shape(call.input_messages) == [("system", ["text"]), ("user", ["text"])]
    assert parts_of(call.output_messages[0]) == [("text", "Done.")]
    assert call.output_messages[0].finish_reason == "completed"


@pytest.mark.parametrize("value", ["not json", "[1, 2]", json.dumps({"turn_id": "t-1"}), json.dumps({"session_id": 7})])
def test_codex_header_without_a_session_gives_none(value: str) -> None:
    record = responses_record(headers={"x-codex-turn-metadata": value})
    assert translate(record, "openai-responses") == Translation.skip("no_session")


def anthropic_record(**extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "request": {
            "model": "claude-sonnet-4-5",
            "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "hello"}],
        },
        "response": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "Hi."}],
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": 10,
                "cache_creation_input_tokens": 200,
                "cache_read_input_tokens": 3000,
                "output_tokens": 4,
            },
        },
    }
    record.update(extra)
    return record


CLAUDE_SESSION = "4d6297b8-9b0f-403f-8196-c564a24d1982"


@pytest.mark.parametrize(
    "user_id",
    [
        f"user_{'ab' * 32}_account_0a1b2c3d-0000-4000-8000-000000000001_session_{CLAUDE_SESSION}",
        json.dumps({"device_id": "d" * 64, "account_uuid": "", "session_id": CLAUDE_SESSION}),
    ],
)
def test_session_from_claude_code_metadata_user_id(user_id: str) -> None:
    record = anthropic_record()
    record["request"]["metadata"] = {"user_id": user_id}
    call = the_call(translate(record, "anthropic"))
    assert call.session_id == CLAUDE_SESSION
    assert call.user_id is None  # the identity string is not the envelope's user_id


def test_claude_code_identity_without_a_uuid_session_gives_none() -> None:
    record = anthropic_record()
    record["request"]["metadata"] = {"user_id": "user_abc_account_x_session_not-a-uuid"}
    assert translate(record, "anthropic") == Translation.skip("no_session")


def test_anthropic_system_blocks_and_cached_prompt_tokens() -> None:
    call = the_call(translate(anthropic_record(session_id="s"), "anthropic"))
    assert [(m.role, parts_of(m)) for m in call.input_messages] == [
        ("system", [("text", "You are Claude Code.")]),
        ("user", [("text", "hello")]),
    ]
    # input_tokens excludes cached tokens in Anthropic usage; the Fact counts the whole prompt.
    assert (call.input_tokens, call.output_tokens) == (3210, 4)


@pytest.mark.parametrize(
    ("call_format", "response"),
    [
        ("openai-chat", {"error": {"message": "Rate limit", "type": "rate_limit_error"}}),
        ("anthropic", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ("openai-responses", {"id": "resp_9", "status": "failed", "error": {"code": "server_error"}, "output": []}),
    ],
)
def test_error_responses_are_skipped(call_format: str, response: dict[str, Any]) -> None:
    record = {"request": {"model": "m", "messages": [], "input": "x"}, "response": response, "session_id": "s"}
    assert translate(record, call_format) == Translation.skip("error_response")


def test_unknown_format_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="unknown call format 'gemini'"):
        translate(chat_record(), "gemini")
    assert CALL_FORMATS == ("litellm", "openai-chat", "openai-responses", "anthropic")
    assert set(CALL_SKIP_REASONS) == {"no_session", "error_response", "not_a_model_call"}


# --- parts: tool arguments, ids, non-text content, reasoning ----------------------------


def chat_with_tool_calls(*calls: dict[str, Any]) -> dict[str, Any]:
    record = chat_record()
    record["response"]["choices"][0]["message"]["tool_calls"] = list(calls)
    return record


def function_call(call_id: Any, arguments: Any, name: str = "edit") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.mark.parametrize("arguments", ['{"path": "a.py"', "[1, 2]", '"text"', "", None, 42])
def test_malformed_tool_arguments_keep_the_id(arguments: Any) -> None:
    translation = translate(chat_with_tool_calls(function_call("call_bad", arguments), function_call("call_ok", "{}")))
    call = the_call(translation)
    assert parts_of(call.output_messages[0]) == [
        ("tool_call", "call_bad", "edit", {}),
        ("tool_call", "call_ok", "edit", {}),
    ]
    assert translation.warnings == ("malformed_tool_arguments",)


@pytest.mark.parametrize("call_id", [None, "", "   "])
def test_tool_calls_without_an_id_are_dropped(call_id: Any) -> None:
    translation = translate(chat_with_tool_calls(function_call(call_id, "{}"), function_call("call_2", '{"x": 1}')))
    assert parts_of(the_call(translation).output_messages[0]) == [("tool_call", "call_2", "edit", {"x": 1})]
    assert translation.warnings == ("tool_call_without_id",)


def test_tool_results_without_an_id_are_dropped() -> None:
    record = chat_record()
    record["request"]["messages"].append({"role": "tool", "content": "orphan"})
    translation = translate(record)
    assert the_call(translation).input_messages[-1] == InferenceMessage(role="tool", parts=())
    assert translation.warnings == ("tool_result_without_id",)


def test_arguments_keep_nan_and_nested_values() -> None:
    translation = translate(chat_with_tool_calls(function_call("c", '{"n": NaN, "deep": {"list": [1, "two"]}}')))
    (part,) = the_call(translation).output_messages[0].parts
    assert isinstance(part, ToolCallPart)
    assert math.isnan(part.arguments["n"])
    assert part.arguments["deep"] == {"list": [1, "two"]}


def test_content_lists_split_into_text_parts_and_drop_images() -> None:
    record = chat_record()
    record["request"]["messages"] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "text", "text": "this picture?"},
                {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
            ],
        }
    ]
    translation = translate(record)
    assert parts_of(the_call(translation).input_messages[0]) == [("text", "What is in"), ("text", "this picture?")]
    assert translation.warnings == ("non_text_part_dropped",)


def test_chat_reasoning_prefers_thinking_blocks_over_flattened_text() -> None:
    record = chat_record()
    record["response"]["choices"][0]["message"].update(
        {
            "content": "Listing.",
            "reasoning_content": "I should list. (flattened)",
            "thinking_blocks": [
                {"type": "thinking", "thinking": "I should list.", "signature": "sig=="},
                {"type": "redacted_thinking", "data": "cipher=="},
            ],
        }
    )
    translation = translate(record)
    assert parts_of(the_call(translation).output_messages[0]) == [
        ("reasoning", "I should list."),
        ("text", "Listing."),
        ("tool_call", "call_1", "ls", {"path": "."}),
    ]
    assert translation.warnings == ("opaque_reasoning",)


def test_chat_reasoning_content_alone_is_a_reasoning_part() -> None:
    record = chat_record()
    record["response"]["choices"][0]["message"]["reasoning_content"] = "Think first."
    assert parts_of(the_call(translate(record)).output_messages[0])[0] == ("reasoning", "Think first.")


def test_responses_items_group_into_turns() -> None:
    record = responses_record(session_id="s")
    record["request"]["input"] = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
        {"role": "user", "content": "fix it"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA=="},
        {"type": "function_call", "call_id": "call_a", "name": "shell", "arguments": '{"cmd":"ls"}', "id": "fc_a"},
        {"type": "custom_tool_call", "call_id": "call_b", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "function_call_output", "call_id": "call_a", "output": "a.py"},
        {"type": "custom_tool_call_output", "call_id": "call_b", "output": "Done!"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    ]
    record["response"]["output"] = [
        {
            "type": "reasoning",
            "id": "rs_2",
            "summary": [
                {"type": "summary_text", "text": "**Checking tests**"},
                {"type": "summary_text", "text": "Run pytest next."},
            ],
            "encrypted_content": "gAAAA==",
        },
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Running tests."}]},
        {"type": "function_call", "call_id": "call_c", "name": "shell", "arguments": '{"cmd":"pytest"}'},
    ]
    record["response"]["status"] = "incomplete"
    record["response"]["incomplete_details"] = {"reason": "max_output_tokens"}
    translation = translate(record, "openai-responses")
    call = the_call(translation)
    assert [(m.role, parts_of(m)) for m in call.input_messages] == [
        ("system", [("text", "You are Codex.")]),
        ("developer", [("text", "rules")]),
        ("user", [("text", "fix it")]),
        (
            "assistant",
            [
                ("tool_call", "call_a", "shell", {"cmd": "ls"}),
                ("tool_call", "call_b", "apply_patch", {"input": "*** Begin Patch"}),
            ],
        ),
        ("tool", [("tool_call_response", "call_a", "a.py")]),
        ("tool", [("tool_call_response", "call_b", "Done!")]),
    ]
    (out,) = call.output_messages
    assert parts_of(out) == [
        ("reasoning", "**Checking tests**"),
        ("reasoning", "Run pytest next."),
        ("text", "Running tests."),
        ("tool_call", "call_c", "shell", {"cmd": "pytest"}),
    ]
    assert out.finish_reason == "max_output_tokens"
    assert translation.warnings == ("opaque_reasoning", "unsupported_item_dropped")


def test_responses_reasoning_text_content_is_preferred_to_the_summary() -> None:
    record = responses_record(session_id="s")
    record["response"]["output"] = [
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "short"}],
            "content": [{"type": "reasoning_text", "text": "the full chain"}],
        }
    ]
    translation = translate(record, "openai-responses")
    assert parts_of(the_call(translation).output_messages[0]) == [("reasoning", "the full chain")]
    assert translation.warnings == ()


def test_anthropic_blocks() -> None:
    record = anthropic_record(session_id="s")
    record["request"]["messages"] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "", "signature": "omitted-thinking-sig"},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "x = 1"}]},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "boom", "is_error": True},
            ],
        },
    ]
    translation = translate(record, "anthropic")
    call = the_call(translation)
    assert [(m.role, parts_of(m)) for m in call.input_messages[1:]] == [
        ("user", [("text", "Look:")]),
        ("assistant", [("tool_call", "toolu_1", "Read", {"file_path": "a.py"})]),
        (
            "user",
            [
                ("tool_call_response", "toolu_1", [{"type": "text", "text": "x = 1"}]),
                ("tool_call_response", "toolu_2", "boom"),
            ],
        ),
    ]
    assert translation.warnings == ("non_text_part_dropped", "opaque_reasoning")


# --- streams -----------------------------------------------------------------------------


def sse(*events: tuple[str | None, dict[str, Any] | str]) -> str:
    lines = []
    for name, data in events:
        if name is not None:
            lines.append(f"event: {name}")
        lines.append(f"data: {data if isinstance(data, str) else json.dumps(data)}")
        lines.append("")
    return "\n".join(lines) + "\n"


def test_anthropic_stream_assembles_thinking_and_tool_input() -> None:
    stream = sse(
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_s",
                    "role": "assistant",
                    "model": "claude",
                    "content": [],
                    "usage": {"input_tokens": 5, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Need "}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "a file."}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "s=="}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_s", "name": "Read", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"file_'},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": 'path": "a.py"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}},
        ),
        ("message_stop", {"type": "message_stop"}),
    )
    record = {
        "request": {"model": "claude", "messages": [{"role": "user", "content": "go"}]},
        "response": stream,
        "session_id": "s",
    }
    call = the_call(translate(record, "anthropic"))
    (out,) = call.output_messages
    assert out.finish_reason == "tool_use"
    assert parts_of(out) == [("reasoning", "Need a file."), ("tool_call", "toolu_s", "Read", {"file_path": "a.py"})]
    assert (call.model_call_id, call.input_tokens, call.output_tokens) == ("msg_s", 5, 42)
    assert call.raw["response"] == stream


def test_anthropic_stream_with_truncated_tool_input_keeps_the_call() -> None:
    stream = sse(
        ("message_start", {"type": "message_start", "message": {"id": "msg_t", "role": "assistant", "content": []}}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_t", "name": "Bash", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"comm'},
            },
        ),
    )
    record = {"request": {"messages": []}, "response": stream, "session_id": "s"}
    translation = translate(record, "anthropic")
    assert parts_of(the_call(translation).output_messages[0]) == [("tool_call", "toolu_t", "Bash", {})]
    assert translation.warnings == ("malformed_tool_arguments",)


def test_chat_stream_error_chunk_is_a_failed_call() -> None:
    stream = sse((None, {"error": {"message": "overloaded"}}), (None, "[DONE]"))
    record = {"request": {"messages": []}, "response": stream, "session_id": "s"}
    assert translate(record) == Translation.skip("error_response")


@pytest.mark.parametrize(
    ("call_format", "stream", "message"),
    [
        (
            "openai-responses",
            sse(("response.created", {"type": "response.created", "response": {"id": "r"}})),
            "response: SSE stream has no response.completed event",
        ),
        ("anthropic", sse(("ping", {"type": "ping"})), "response: SSE stream has no message_start event"),
        ("openai-chat", "data: {not json}\n\n", "response(event 0): invalid JSON in SSE data"),
        ("openai-chat", "data: [DONE]\n\n", "response: empty SSE stream"),
    ],
)
def test_broken_streams_raise(call_format: str, stream: str, message: str) -> None:
    record = {"request": {"messages": []}, "response": stream, "session_id": "s"}
    with pytest.raises(TranslationError) as excinfo:
        translate(record, call_format)
    assert str(excinfo.value) == message


# --- malformed records ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("call_format", "change", "message"),
    [
        ("openai-chat", lambda r: r.pop("request"), "request: missing"),
        ("openai-chat", lambda r: r.pop("response"), "response: missing"),
        ("openai-chat", lambda r: r.update(response=["not", "an", "object"]), "response: expected an object"),
        ("openai-chat", lambda r: r.update(response="plain text"), "response: expected an object"),
        ("openai-chat", lambda r: r.update(request="{broken json"), "request: invalid JSON"),
        ("openai-chat", lambda r: r.update(request=[{"messages": []}]), "request: expected an object"),
        ("openai-chat", lambda r: r["request"].update(messages={"role": "user"}), "request.messages: expected a list"),
        ("openai-chat", lambda r: r["request"].pop("messages"), "request.messages: missing"),
        ("openai-chat", lambda r: r["request"]["messages"].append("hi"), "request.messages[1]: expected an object"),
        ("openai-chat", lambda r: r["request"]["messages"][0].pop("role"), "request.messages[0].role: missing"),
        ("openai-chat", lambda r: r["response"].pop("choices"), "response.choices: missing"),
        (
            "openai-chat",
            lambda r: r["response"]["choices"][0]["message"].update(tool_calls=[7]),
            "response.choices[0].message.tool_calls[0]: expected an object",
        ),
        (
            "openai-chat",
            lambda r: r["response"]["choices"][0]["message"]["tool_calls"][0].update(id=17),
            "response.choices[0].message.tool_calls[0].id: expected a string",
        ),
        (
            "openai-chat",
            lambda r: r["response"]["usage"].update(prompt_tokens=-1),
            "response.usage.prompt_tokens: expected a non-negative integer",
        ),
        ("openai-chat", lambda r: r.update(session_id=5), "session_id: expected a string"),
        ("openai-chat", lambda r: r.update(observed_at="yesterday"), "observed_at: expected an RFC 3339 timestamp"),
        (
            "openai-chat",
            lambda r: r.update(observed_at="2025-01-01T00:00:00"),
            "observed_at: timestamp must carry a UTC offset",
        ),
        ("openai-chat", lambda r: r.update(duration_ms=-5), "duration_ms: expected a non-negative integer"),
        ("openai-chat", lambda r: r.update(headers=["x-sediment-session: s"]), "headers: expected an object"),
        (
            "openai-chat",
            lambda r: r["response"].update(model="gpt\x00"),
            "model: identifier must not contain NUL",
        ),
    ],
)
def test_malformed_chat_records_name_the_field(
    call_format: str, change: Callable[[dict[str, Any]], Any], message: str
) -> None:
    record = chat_record()
    change(record)
    with pytest.raises(TranslationError) as excinfo:
        translate(record, call_format)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    ("call_format", "record", "message"),
    [
        (
            "anthropic",
            {**anthropic_record(), "response": {"id": "m", "content": "Hi"}},
            "response.content: expected a list",
        ),
        (
            "anthropic",
            {**anthropic_record(), "request": {"messages": [{"role": "user", "content": [{"text": "no type"}]}]}},
            "request.messages[0].content[0].type: expected a string",
        ),
        (
            "openai-responses",
            {**responses_record(), "request": {"input": {"role": "user"}}},
            "request.input: expected a string or a list of items",
        ),
        (
            "openai-responses",
            {**responses_record(), "response": {"id": "r", "status": "completed"}},
            "response.output: missing",
        ),
        (
            "openai-responses",
            {**responses_record(), "request": {"input": [{"type": "message", "content": "x"}]}},
            "request.input[0].role: missing",
        ),
        ("litellm", {"messages": {"role": "user"}}, "messages: expected a list or a string"),
        ("litellm", {"messages": [], "response": 3}, "response: expected an object or a string"),
        ("litellm", {"messages": [], "metadata": "session"}, "metadata: expected an object"),
        ("litellm", {"messages": [], "response_time": -1.0}, "response_time: expected a non-negative number"),
        ("litellm", "not a record", "record: expected an object"),
    ],
)
def test_malformed_records_name_the_field(call_format: str, record: Any, message: str) -> None:
    with pytest.raises(TranslationError) as excinfo:
        translate(record, call_format)
    assert str(excinfo.value) == message


# --- tool definitions -------------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def with_tools(record: dict[str, Any], tools: Any) -> dict[str, Any]:
    record["request"]["tools"] = tools
    return record


def test_chat_tools() -> None:
    record = with_tools(chat_record(), [
        {"type": "function", "function": {"name": "ls", "description": "List.", "parameters": SCHEMA, "strict": True}},
        {"type": "function", "function": {"name": "pwd"}},
        {"function": {"name": "untyped", "description": ""}},
        {"type": "custom", "custom": {"name": "apply_patch", "description": "Patch.",
                                      "format": {"type": "grammar", "grammar": {"syntax": "lark"}}}},
    ])
    assert the_call(translate(record)).tools == (
        ToolDefinition(name="ls", description="List.", parameters=SCHEMA, strict=True),
        ToolDefinition(name="pwd"),
        ToolDefinition(name="untyped", description=""),
        ToolDefinition(type="custom", name="apply_patch", description="Patch."),
    )


def test_responses_tools_keep_built_in_types() -> None:
    record = with_tools(responses_record(session_id="s"), [
        {"type": "function", "name": "shell", "description": "Run.", "parameters": SCHEMA, "strict": False},
        {"type": "custom", "name": "apply_patch", "format": {"type": "text"}},
        {"type": "web_search_preview", "search_context_size": "low"},
        {"type": "mcp", "server_label": "docs", "server_url": "https://example.com/mcp"},
        {"type": "local_shell", "name": "local"},
    ])
    assert the_call(translate(record, "openai-responses")).tools == (
        ToolDefinition(name="shell", description="Run.", parameters=SCHEMA, strict=False),
        ToolDefinition(type="custom", name="apply_patch"),
        ToolDefinition(type="web_search_preview", name="web_search_preview"),
        ToolDefinition(type="mcp", name="mcp"),
        ToolDefinition(type="local_shell", name="local"),
    )


def test_anthropic_tools_and_server_tools() -> None:
    record = with_tools(anthropic_record(session_id="s"), [
        {"name": "Read", "description": "Read a file.", "input_schema": SCHEMA, "cache_control": {"type": "ephemeral"}},
        {"type": "custom", "name": "Grep", "input_schema": SCHEMA, "strict": True},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
        {"type": "text_editor_20250124"},
    ])
    assert the_call(translate(record, "anthropic")).tools == (
        ToolDefinition(name="Read", description="Read a file.", parameters=SCHEMA),
        ToolDefinition(name="Grep", parameters=SCHEMA, strict=True),
        ToolDefinition(type="web_search_20250305", name="web_search"),
        ToolDefinition(type="text_editor_20250124", name="text_editor_20250124"),
    )


@pytest.mark.parametrize(
    ("call_format", "make"),
    [("openai-chat", chat_record), ("openai-responses", responses_record), ("anthropic", anthropic_record)],
)
def test_no_tool_list_is_none_and_an_empty_one_is_empty(call_format: str, make: Callable[..., dict[str, Any]]) -> None:
    assert the_call(translate(make(session_id="s"), call_format)).tools is None
    assert the_call(translate(with_tools(make(session_id="s"), None), call_format)).tools is None
    assert the_call(translate(with_tools(make(session_id="s"), []), call_format)).tools == ()


def test_litellm_tools_in_the_shape_they_were_sent() -> None:
    assert the_call(translate(litellm_payload(), "litellm")).tools == (ToolDefinition(name="Bash"),)
    payload = litellm_payload(model_parameters={"tools": [
        {"type": "function", "function": {"name": "Bash", "parameters": SCHEMA}},
        {"name": "Read", "description": "Read a file.", "input_schema": SCHEMA},
        {"type": "web_search_20250305", "name": "web_search"},
        {"type": "function", "name": "shell", "parameters": SCHEMA, "strict": True},
        {"type": "web_search_preview"},
    ]})
    assert the_call(translate(payload, "litellm")).tools == (
        ToolDefinition(name="Bash", parameters=SCHEMA),
        ToolDefinition(name="Read", description="Read a file.", parameters=SCHEMA),
        ToolDefinition(type="web_search_20250305", name="web_search"),
        ToolDefinition(name="shell", parameters=SCHEMA, strict=True),
        ToolDefinition(type="web_search_preview", name="web_search_preview"),
    )
    assert the_call(translate(litellm_payload(model_parameters={"stream": False}), "litellm")).tools is None


def test_a_resent_tool_list_is_read_once_per_session() -> None:
    memo = ReplayMemo()
    tools = [{"type": "function", "function": {"name": "ls", "parameters": SCHEMA}}]
    first, second, changed = (
        the_call(translate_call(with_tools(chat_record(), json.loads(json.dumps(listed))), format="openai-chat",
                                org_id=ORG, captured_at=CAPTURED, memo=memo))
        for listed in (tools, tools, [*tools, {"type": "function", "function": {"name": "cat"}}])
    )
    assert first.tools is not None and second.tools is not None and changed.tools is not None
    assert first.tools[0] is second.tools[0]  # an equal list: the same definitions, not read again
    assert changed.tools == (*first.tools, ToolDefinition(name="cat"))
    assert changed.tools[0] is not first.tools[0]


SERVER_TOOL = {"type": "web_search_20250305", "name": "web_search"}


@pytest.mark.parametrize(
    ("call_format", "tools", "message"),
    [
        ("openai-chat", {"type": "function"}, "request.tools: expected a list"),
        ("openai-chat", "ls", "request.tools: expected a list"),
        ("openai-chat", ["ls"], "request.tools[0]: expected an object"),
        ("openai-chat", [{"type": "function"}], "request.tools[0].function: missing"),
        ("openai-chat", [{"type": "function", "function": "ls"}], "request.tools[0].function: expected an object"),
        (
            "openai-chat",
            [{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "b"}},
             {"type": "function", "function": {"name": 3}}],
            "request.tools[2].function.name: expected a string",
        ),
        ("openai-chat", [{"type": "function", "function": {}}], "request.tools[0].function.name: missing"),
        ("openai-chat", [{"type": "function", "function": {"name": " "}}],
         "request.tools[0].function.name: expected a non-empty string"),
        ("openai-chat", [{"type": "function", "function": {"name": "ls", "description": ["List."]}}],
         "request.tools[0].function.description: expected a string"),
        # A schema sent as JSON text is not parsed into one.
        ("openai-chat", [{"type": "function", "function": {"name": "ls", "parameters": json.dumps(SCHEMA)}}],
         "request.tools[0].function.parameters: expected an object"),
        ("openai-chat", [{"type": "function", "function": {"name": "ls", "parameters": [SCHEMA]}}],
         "request.tools[0].function.parameters: expected an object"),
        ("openai-chat", [{"type": "function", "function": {"name": "ls", "strict": "true"}}],
         "request.tools[0].function.strict: expected a boolean"),
        ("openai-chat", [{"type": "function", "function": {"name": "ls", "strict": 1}}],
         "request.tools[0].function.strict: expected a boolean"),
        ("openai-chat", [{"type": 1, "function": {"name": "ls"}}], "request.tools[0].type: expected a string"),
        ("openai-chat", [{"type": "", "function": {"name": "ls"}}], "request.tools[0].type: expected a non-empty string"),
        ("openai-chat", [{"type": "custom", "name": "apply_patch"}], "request.tools[0].custom: missing"),
        ("openai-responses", [{"name": "shell"}], "request.tools[0].type: missing"),
        ("openai-responses", [{"type": "function", "parameters": SCHEMA}], "request.tools[0].name: missing"),
        ("openai-responses", [{"type": "function", "name": "shell", "parameters": "object"}],
         "request.tools[0].parameters: expected an object"),
        ("openai-responses", [{"type": "function", "name": "shell", "strict": "no"}],
         "request.tools[0].strict: expected a boolean"),
        ("openai-responses", [{"type": "web_search_preview", "name": 7}], "request.tools[0].name: expected a string"),
        ("anthropic", [SERVER_TOOL, {"name": "Read", "input_schema": "object"}],
         "request.tools[1].input_schema: expected an object"),
        ("anthropic", [{"description": "Read a file.", "input_schema": SCHEMA}], "request.tools[0].name: missing"),
        ("anthropic", [{"name": "Read", "input_schema": SCHEMA, "strict": "yes"}],
         "request.tools[0].strict: expected a boolean"),
        ("anthropic", [{"name": "Read", "description": 5, "input_schema": SCHEMA}],
         "request.tools[0].description: expected a string"),
        ("anthropic", [{"type": "web_search_20250305", "name": ""}], "request.tools[0].name: expected a non-empty string"),
    ],
)
def test_malformed_tool_definitions_name_the_field(call_format: str, tools: Any, message: str) -> None:
    make = {"openai-chat": chat_record, "openai-responses": responses_record, "anthropic": anthropic_record}
    record = with_tools(make[call_format](session_id="s"), tools)
    with pytest.raises(TranslationError) as excinfo:
        translate(record, call_format)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ({"name": "Bash"}, "model_parameters.tools: expected a list"),
        ([{"type": "function", "function": {"name": ["Bash"]}}], "model_parameters.tools[0].function.name: expected a string"),
        ([{"name": "Read", "input_schema": []}], "model_parameters.tools[0].input_schema: expected an object"),
        ([{"type": "function", "name": "shell", "parameters": 1}], "model_parameters.tools[0].parameters: expected an object"),
    ],
)
def test_malformed_litellm_tool_definitions_name_the_field(tools: Any, message: str) -> None:
    with pytest.raises(TranslationError) as excinfo:
        translate(litellm_payload(model_parameters={"tools": tools}), "litellm")
    assert str(excinfo.value) == message


# --- determinism and lossless raw -------------------------------------------------------


def test_same_record_twice_gives_the_same_call() -> None:
    first, second = translate(chat_record()), translate(chat_record())
    assert first == second
    assert the_call(first).inference_call_id == fact_id("call", ORG, "unknown", the_call(first).session_id,
                                                         "chatcmpl-1")


def test_call_id_follows_the_provider_id_not_the_envelope() -> None:
    later = chat_record(observed_at="2030-01-01T00:00:00Z", duration_ms=5)
    assert the_call(translate(later)).inference_call_id == the_call(translate(chat_record())).inference_call_id
    other = chat_record()
    other["response"]["id"] = "chatcmpl-2"
    assert the_call(translate(other)).inference_call_id != the_call(translate(chat_record())).inference_call_id


def test_org_id_is_part_of_the_call_id_and_normalized() -> None:
    record = chat_record()
    ids = {
        org: the_call(translate_call(record, format="openai-chat", org_id=org, captured_at=CAPTURED)).inference_call_id
        for org in ("acme", " ACME ", "globex")
    }
    assert ids["acme"] == ids[" ACME "] != ids["globex"]


def test_keyless_calls_hash_the_canonical_record() -> None:
    record = chat_record()
    del record["response"]["id"]
    call = the_call(translate(record))
    assert call.model_call_id is None
    reordered = dict(reversed(list(record.items())))  # key order does not matter
    assert the_call(translate(reordered)).inference_call_id == call.inference_call_id
    changed = json.loads(json.dumps(record))
    changed["request"]["messages"][0]["content"] = "list the files!"
    assert the_call(translate(changed)).inference_call_id != call.inference_call_id
    moved = dict(record, session_id="sess-2")
    assert the_call(translate(moved)).inference_call_id != call.inference_call_id


@needs_fixtures
def test_different_cassette_calls_get_different_ids() -> None:
    ids = [c.inference_call_id for stem in CASSETTE_CHECKS for c in cassette_calls(stem)]
    assert len(ids) == 22
    assert len(set(ids)) == len(ids)


def test_raw_is_the_record_losslessly() -> None:
    record = chat_record()
    record["request"]["temperature"] = float("nan")
    record["request"]["messages"][0]["content"] = "half a pair \ud83d here"
    record["response"]["system_fingerprint"] = float("inf")
    record["vendor_extra"] = {"nul": "a\x00b", "nested": [None, True, 1.5]}
    del record["response"]["id"]  # keyless, so the record digest must cope with NaN and surrogates too
    call = the_call(translate(record))
    assert math.isnan(call.raw["request"]["temperature"])
    assert call.raw["request"]["messages"][0]["content"] == "half a pair \ud83d here"
    assert call.raw["response"]["system_fingerprint"] == float("inf")
    assert call.raw["vendor_extra"] == {"nul": "a\x00b", "nested": [None, True, 1.5]}
    assert parts_of(call.input_messages[0]) == [("text", "half a pair \ud83d here")]
    assert the_call(translate(record)).inference_call_id == call.inference_call_id


# --- LiteLLM StandardLoggingPayload ------------------------------------------------------
#
# Built by hand from the documented payload fields (LiteLLM's StandardLoggingPayload; docs/operate.md).

LITELLM_CALL_ID = "200e6862-acd4-40fb-ae57-715310f5019a"


def litellm_payload(**extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": "chatcmpl-abc",
        "litellm_call_id": LITELLM_CALL_ID,
        "trace_id": "6b1d3c8e-7d43-4a55-9b7c-1f0e6f1c2a10",
        "call_type": "acompletion",
        "stream": False,
        "status": "success",
        "custom_llm_provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "startTime": 1750000000.25,
        "endTime": 1750000002.5,
        "completionStartTime": 1750000001.0,
        "response_time": 2.25,
        "metadata": {
            "user_api_key_hash": "hash",
            "user_api_key_user_id": "default_user_id",
            "user_api_key_team_id": None,
            "requester_metadata": {"session_id": "sess-lite", "user_id": "dev-1"},
            "requester_custom_headers": {},
        },
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Fix test_slug.py"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "toolu_a",
                        "type": "function",
                        "function": {"name": "Bash", "arguments": '{"cmd": "pytest"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "toolu_a", "content": "1 failed"},
        ],
        "response": {
            "id": "chatcmpl-abc",
            "object": "chat.completion",
            "model": "claude-sonnet-4-5-20250929",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "Fixing the slug.",
                        "reasoning_content": "The test fails on edges.",
                        "thinking_blocks": [
                            {"type": "thinking", "thinking": "The test fails on edges.", "signature": "sig"}
                        ],
                        "tool_calls": [
                            {"id": "toolu_b", "type": "function", "function": {"name": "Edit", "arguments": '{"path":'}}
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 900, "completion_tokens": 60, "total_tokens": 960},
        },
        "prompt_tokens": 1200,
        "completion_tokens": 80,
        "total_tokens": 1280,
        "response_cost": 0.0042,
        "model_parameters": {"tools": [{"type": "function", "function": {"name": "Bash"}}], "stream": False},
        "hidden_params": {"api_base": "https://api.anthropic.com"},
        "error_str": None,
        "error_information": None,
    }
    payload.update(extra)
    return payload


def test_litellm_chat_payload() -> None:
    translation = translate(litellm_payload(), "litellm")
    call = the_call(translation)
    assert call.gateway_provider == "litellm"
    assert call.model_provider == "anthropic"
    assert call.model == "claude-sonnet-4-5-20250929"
    assert call.model_call_id == LITELLM_CALL_ID
    assert call.inference_call_id == fact_id("call", ORG, "litellm", "sess-lite", LITELLM_CALL_ID)
    assert (call.session_id, call.user_id) == ("sess-lite", "dev-1")
    assert (call.input_tokens, call.output_tokens) == (1200, 80)  # the payload's own counts
    assert call.duration_ms == 2250
    assert call.observed_at == datetime.fromtimestamp(1750000002.5, tz=UTC)
    assert [(m.role, parts_of(m)) for m in call.input_messages] == [
        ("system", [("text", "You are a coding agent.")]),
        ("user", [("text", "Fix test_slug.py")]),
        ("assistant", [("tool_call", "toolu_a", "Bash", {"cmd": "pytest"})]),
        ("tool", [("tool_call_response", "toolu_a", "1 failed")]),
    ]
    (out,) = call.output_messages
    assert out.finish_reason == "tool_calls"
    # thinking_blocks beat the flattened reasoning_content (no duplicate reasoning part).
    assert parts_of(out) == [
        ("reasoning", "The test fails on edges."),
        ("text", "Fixing the slug."),
        ("tool_call", "toolu_b", "Edit", {}),
    ]
    assert translation.warnings == ("malformed_tool_arguments",)
    redacted = litellm_payload()
    redacted["metadata"]["user_api_key_hash"] = marker("hash")  # the virtual key's hash is a credential
    assert call.raw == redacted


def test_litellm_falls_back_to_response_id_usage_and_timestamps() -> None:
    payload = litellm_payload()
    for key in ("litellm_call_id", "prompt_tokens", "completion_tokens", "response_time"):
        del payload[key]
    call = the_call(translate(payload, "litellm"))
    assert call.model_call_id == "chatcmpl-abc"
    assert call.inference_call_id == fact_id("call", ORG, "litellm", call.session_id, "chatcmpl-abc")
    assert (call.input_tokens, call.output_tokens) == (900, 60)
    assert call.duration_ms == 2250  # endTime - startTime


def test_litellm_session_sources_in_order() -> None:
    payload = litellm_payload()
    payload["metadata"]["session_id"] = "top-level"
    assert the_call(translate(payload, "litellm")).session_id == "top-level"
    del payload["metadata"]["session_id"]
    del payload["metadata"]["requester_metadata"]["session_id"]
    payload["metadata"]["requester_custom_headers"] = {"x-sediment-session": "pi-session"}
    assert the_call(translate(payload, "litellm")).session_id == "pi-session"
    payload["metadata"]["requester_custom_headers"] = {"x-codex-turn-metadata": CODEX_TURN_METADATA}
    assert the_call(translate(payload, "litellm")).session_id == "019f6f4c-810d-7ab1-afad-7d40838a62cd"


def test_litellm_without_a_session_is_skipped_even_with_a_trace_id() -> None:
    payload = litellm_payload()
    payload["metadata"]["requester_metadata"] = None
    assert payload["trace_id"]
    assert translate(payload, "litellm") == Translation.skip("no_session")


def test_litellm_failure_is_skipped() -> None:
    payload = litellm_payload(status="failure", response=None, error_str="RateLimitError")
    assert translate(payload, "litellm") == Translation.skip("error_response")


@pytest.mark.parametrize("call_type", ["aembedding", "embedding", "aimage_generation", "arerank", "atranscription"])
def test_litellm_non_chat_call_types_are_not_model_calls(call_type: str) -> None:
    payload = litellm_payload(call_type=call_type, messages=["some text"], response={"data": [{"embedding": [0.1]}]})
    assert translate(payload, "litellm") == Translation.skip("not_a_model_call")


@pytest.mark.parametrize("call_type", ["acompletion", "completion", "aresponses", "anthropic_messages"])
def test_litellm_chat_call_types_are_translated(call_type: str) -> None:
    assert the_call(translate(litellm_payload(call_type=call_type), "litellm")).model_call_id == LITELLM_CALL_ID


def test_litellm_responses_payload_from_codex() -> None:
    payload = litellm_payload(
        id="resp_x",
        litellm_call_id="49264cf1-a817-4dba-9ed2-8c35f36be15a",
        call_type="aresponses",
        custom_llm_provider="openai",
        model="openai/gpt-5-codex",
        metadata={
            "requester_metadata": None,
            "requester_custom_headers": {"x-codex-turn-metadata": CODEX_TURN_METADATA},
        },
        model_parameters={"instructions": "You are Codex.", "stream": True},
        messages=[
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the slugger."}]},
            {"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "pytest"}', "call_id": "call_1"},
            {"type": "function_call_output", "call_id": "call_1", "output": "3 failed"},
        ],
        response={
            "id": "resp_x",
            "model": "gpt-5-codex",
            "object": "response",
            "status": "completed",
            "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Patching."}]},
                {"type": "function_call", "name": "apply_patch", "arguments": '{"patch": "..."}', "call_id": "call_2"},
            ],
            "usage": {"prompt_tokens": 39414, "completion_tokens": 296},
        },
        prompt_tokens=39414,
        completion_tokens=296,
    )
    call = the_call(translate(payload, "litellm"))
    assert call.session_id == "019f6f4c-810d-7ab1-afad-7d40838a62cd"
    assert call.user_id is None
    assert (call.model, call.model_provider, call.model_call_id) == (
        "gpt-5-codex",
        "openai",
        "49264cf1-a817-4dba-9ed2-8c35f36be15a",
    )
    assert [(m.role, parts_of(m)) for m in call.input_messages] == [
        ("system", [("text", "You are Codex.")]),
        ("user", [("text", "Fix the slugger.")]),
        ("assistant", [("tool_call", "call_1", "exec_command", {"cmd": "pytest"})]),
        ("tool", [("tool_call_response", "call_1", "3 failed")]),
    ]
    (out,) = call.output_messages
    assert (out.finish_reason, parts_of(out)) == (
        "completed",
        [("text", "Patching."), ("tool_call", "call_2", "apply_patch", {"patch": "..."})],
    )


def test_litellm_anthropic_passthrough_from_claude_code() -> None:
    identity = f"user_{'ab' * 32}_account_0a1b2c3d-0000-4000-8000-000000000001_session_{CLAUDE_SESSION}"
    payload = litellm_payload(
        metadata={"requester_metadata": {"user_id": identity}},
        end_user=identity,
        model_parameters={"system": [{"type": "text", "text": "You are Claude Code."}], "max_tokens": 32000},
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "Read a.py"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {"file": "a.py"}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_r", "content": "x = 1"}]},
        ],
        response={
            "id": "msg_p",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "redacted_thinking", "data": "cipher"}, {"type": "text", "text": "a.py sets x."}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "cache_read_input_tokens": 100, "output_tokens": 9},
        },
        prompt_tokens=None,
        completion_tokens=None,
    )
    del payload["litellm_call_id"]
    translation = translate(payload, "litellm")
    call = the_call(translation)
    assert call.session_id == CLAUDE_SESSION
    assert call.user_id == f"user_{'ab' * 32}_account_0a1b2c3d-0000-4000-8000-000000000001"
    assert call.model_call_id == "msg_p"
    assert (call.input_tokens, call.output_tokens) == (103, 9)
    assert [(m.role, parts_of(m)) for m in call.input_messages] == [
        ("system", [("text", "You are Claude Code.")]),
        ("user", [("text", "Read a.py")]),
        ("assistant", [("tool_call", "toolu_r", "Read", {"file": "a.py"})]),
        ("user", [("tool_call_response", "toolu_r", "x = 1")]),
    ]
    assert parts_of(call.output_messages[0]) == [("text", "a.py sets x.")]
    assert call.output_messages[0].finish_reason == "end_turn"
    assert translation.warnings == ("opaque_reasoning",)


def test_litellm_text_completion_and_string_messages() -> None:
    payload = litellm_payload(
        messages="def fib(n):",
        response={
            "id": "cmpl-1",
            "object": "text_completion",
            "choices": [{"text": " return n", "finish_reason": "stop"}],
        },
    )
    call = the_call(translate(payload, "litellm"))
    assert [(m.role, parts_of(m)) for m in call.input_messages] == [("user", [("text", "def fib(n):")])]
    assert [(m.role, parts_of(m), m.finish_reason) for m in call.output_messages] == [
        ("assistant", [("text", " return n")], "stop")
    ]


# --- the closed vocabularies --------------------------------------------------------------

CALLS_PACKAGE = REPOSITORY_ROOT / "sediment" / "ingest" / "calls"


def emission_sites(method: str) -> list[tuple[str, int, object]]:
    """``(module, line, argument)`` of every ``<x>.<method>(argument)`` call in the calls package
    (``warn`` on the translation's notes, ``skip`` on ``Translation``)."""
    sites = []
    for module in sorted(CALLS_PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method:
                (argument,) = node.args
                value = argument.value if isinstance(argument, ast.Constant) else ast.dump(argument)
                sites.append((module.name, node.lineno, value))
    return sites


def test_every_emitted_code_is_in_the_vocabulary() -> None:
    # Every place a translation raises a warning or skips a record names a vocabulary code as a
    # literal, so no code can be emitted that the vocabulary lacks.
    warns, skips = emission_sites("warn"), emission_sites("skip")
    assert len(warns) >= len(CALL_WARNINGS) and len(skips) >= len(CALL_SKIP_REASONS)
    assert [site for site in warns if site[2] not in CALL_WARNINGS] == []
    assert [site for site in skips if site[2] not in CALL_SKIP_REASONS] == []
    # …and every vocabulary code has a place that emits it.
    assert {site[2] for site in warns} == set(CALL_WARNINGS)
    assert {site[2] for site in skips} == set(CALL_SKIP_REASONS)


def _two_choices() -> dict[str, Any]:
    record = chat_record()
    record["response"]["choices"].append({"index": 1, "finish_reason": "stop", "message": {"role": "assistant"}})
    return record


def _tool_result_without_id() -> dict[str, Any]:
    record = chat_record()
    record["request"]["messages"].append({"role": "tool", "content": "orphan"})
    return record


def _image_in_the_prompt() -> dict[str, Any]:
    record = chat_record()
    record["request"]["messages"][0]["content"] = [{"type": "image_url", "image_url": {"url": "data:,"}}]
    return record


def _redacted_thinking() -> dict[str, Any]:
    record = anthropic_record(session_id="s")
    record["response"]["content"].insert(0, {"type": "redacted_thinking", "data": "cipher=="})
    return record


def _built_in_tool_item() -> dict[str, Any]:
    record = responses_record(session_id="s")
    record["response"]["output"].append({"type": "web_search_call", "id": "ws_1", "status": "completed"})
    return record


# One real translation per code: (format, record, the warnings it raises, the skip reason).
VOCABULARY_CASES: dict[str, tuple[str, Callable[[], Any], tuple[str, ...], str | None]] = {
    "malformed_tool_arguments": (
        "openai-chat", lambda: chat_with_tool_calls(function_call("c", '{"path":')), ("malformed_tool_arguments",), None,
    ),
    "tool_call_without_id": (
        "openai-chat", lambda: chat_with_tool_calls(function_call(None, "{}")), ("tool_call_without_id",), None,
    ),
    "tool_result_without_id": ("openai-chat", _tool_result_without_id, ("tool_result_without_id",), None),
    "non_text_part_dropped": ("openai-chat", _image_in_the_prompt, ("non_text_part_dropped",), None),
    "opaque_reasoning": ("anthropic", _redacted_thinking, ("opaque_reasoning",), None),
    "unsupported_item_dropped": ("openai-responses", _built_in_tool_item, ("unsupported_item_dropped",), None),
    "extra_choices_dropped": ("openai-chat", _two_choices, ("extra_choices_dropped",), None),
    "no_session": ("openai-chat", lambda: without_session(chat_record()), (), "no_session"),
    "error_response": (
        "anthropic", lambda: anthropic_record(session_id="s", response={"type": "error", "error": {}}), (), "error_response",
    ),
    "not_a_model_call": ("litellm", lambda: litellm_payload(call_type="aembedding"), (), "not_a_model_call"),
}


@pytest.mark.parametrize("code", sorted(VOCABULARY_CASES))
def test_vocabulary_case(code: str) -> None:
    call_format, make, warnings, skipped = VOCABULARY_CASES[code]
    translation = translate(make(), call_format)
    assert (translation.warnings, translation.skipped) == (warnings, skipped)
    assert code in (*translation.warnings, translation.skipped)


def test_every_vocabulary_code_is_emitted_by_a_case() -> None:
    assert sorted(VOCABULARY_CASES) == sorted((*CALL_WARNINGS, *CALL_SKIP_REASONS))
    emitted = Counter[str]()
    for call_format, make, _, _ in VOCABULARY_CASES.values():
        translation = translate(make(), call_format)
        emitted.update((*translation.warnings, *([translation.skipped] if translation.skipped else [])))
    assert set(emitted) == {*CALL_WARNINGS, *CALL_SKIP_REASONS}


# --- credentials are redacted from raw at capture ----------------------------------------

BEARER = "Bearer sk-proj-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-api03-0123456789abcdef"
COOKIE = "__cf_bm=x.H2GlMeh.t_Q; _cfuvid=VlHcJdsIsxGEt2lddKu"


@pytest.mark.parametrize(
    ("call_format", "make"),
    [("openai-chat", chat_record), ("openai-responses", responses_record), ("anthropic", anthropic_record)],
)
def test_credential_headers_are_redacted_in_raw_and_nothing_else(call_format: str, make: Callable[..., dict[str, Any]]) -> None:
    headers = {
        "Authorization": BEARER,
        "X-API-Key": ANTHROPIC_KEY,
        "cookie": [COOKIE, "second=1"],
        "x-sediment-session": "s-1",
        "User-Agent": "codex_cli_rs/0.104.0",
        "content-type": "application/json",
    }
    record = make(headers=headers)
    received = copy.deepcopy(record)
    call = the_call(translate(record, call_format))
    assert call.raw == {
        **received,
        "headers": {
            "Authorization": marker(BEARER),
            "X-API-Key": marker(ANTHROPIC_KEY),
            "cookie": [marker(COOKIE), marker("second=1")],
            "x-sediment-session": "s-1",
            "User-Agent": "codex_cli_rs/0.104.0",
            "content-type": "application/json",
        },
    }
    assert marker(BEARER) == "[redacted sha256:" + hashlib.sha256(BEARER.encode()).hexdigest() + "]"
    assert record == received  # the caller's record is not mutated
    assert BEARER not in json.dumps(call.model_dump(mode="json"))
    # Everything but raw is what the call without credential headers translates to.
    plain = the_call(translate(make(headers={"x-sediment-session": "s-1"}), call_format))
    assert call.model_dump(exclude={"raw"}) == plain.model_dump(exclude={"raw"})


def test_litellm_credentials_are_redacted_where_litellm_logs_them() -> None:
    virtual_key_hash = "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"
    payload = litellm_payload()
    payload["metadata"].update(
        {
            "user_api_key_hash": virtual_key_hash,
            "user_api_key_alias": "ci-bot",
            # LiteLLM copies every x-* request header here: a client's x-api-key included.
            "requester_custom_headers": {
                "x-api-key": ANTHROPIC_KEY,
                "x-litellm-api-key": "sk-1234",
                "x-goog-api-key": "AIzaSy-example",
                "x-stainless-lang": "python",
            },
        }
    )
    payload["litellm_params"] = {
        "api_key": "sk-provider-key",
        "api_base": "https://api.anthropic.com",
        "metadata": {"user_api_key": virtual_key_hash, "headers": {"authorization": BEARER, "accept": "*/*"}},
    }
    gemini = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent?key=*****yA1b"
    payload["hidden_params"] = {
        "api_base": gemini,
        "additional_headers": {"llm_provider-set-cookie": COOKIE, "x_ratelimit_remaining_requests": 99},
    }
    received = copy.deepcopy(payload)
    call = the_call(translate(payload, "litellm"))
    expected = copy.deepcopy(received)
    expected["metadata"]["user_api_key_hash"] = marker(virtual_key_hash)
    expected["metadata"]["requester_custom_headers"].update(
        {"x-api-key": marker(ANTHROPIC_KEY), "x-litellm-api-key": marker("sk-1234"),
         "x-goog-api-key": marker("AIzaSy-example")}
    )
    expected["litellm_params"]["api_key"] = marker("sk-provider-key")
    expected["litellm_params"]["metadata"]["user_api_key"] = marker(virtual_key_hash)
    expected["litellm_params"]["metadata"]["headers"]["authorization"] = marker(BEARER)
    expected["hidden_params"]["additional_headers"]["llm_provider-set-cookie"] = marker(COOKIE)
    expected["hidden_params"]["api_base"] = gemini.replace("*****yA1b", marker("*****yA1b"))
    assert call.raw == expected
    assert call.raw["metadata"]["user_api_key_user_id"] == "default_user_id"  # ids of the key's owner stay
    assert (call.session_id, call.user_id) == ("sess-lite", "dev-1")
    assert payload == received


def test_litellm_session_header_still_read_beside_redacted_ones() -> None:
    payload = litellm_payload()
    del payload["metadata"]["requester_metadata"]["session_id"]
    payload["metadata"]["requester_custom_headers"] = {"x-api-key": ANTHROPIC_KEY, "x-sediment-session": "pi-7"}
    call = the_call(translate(payload, "litellm"))
    assert call.session_id == "pi-7"
    assert call.raw["metadata"]["requester_custom_headers"] == {"x-api-key": marker(ANTHROPIC_KEY),
                                                                "x-sediment-session": "pi-7"}


def test_redaction_never_touches_the_conversation() -> None:
    # Names on the list inside what the model saw or said (tool arguments, results, schemas)
    # are content, kept byte for byte in raw as in the parts.
    schema = {"type": "object", "properties": {"api_key": {"type": "string"}, "authorization": {"type": "string"}}}
    record = anthropic_record(session_id="s", headers={"x-api-key": ANTHROPIC_KEY})
    record["request"]["tools"] = [{"name": "http", "input_schema": schema}]
    record["request"]["messages"] = [
        {"role": "user", "content": "call it"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "http", "input": {"api_key": "k", "cookie": "c=1"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "authorization: ok"}]},
    ]
    record["request"]["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    received = copy.deepcopy(record)
    call = the_call(translate(record, "anthropic"))
    assert call.raw == {**received, "headers": {"x-api-key": marker(ANTHROPIC_KEY)}}
    assert call.raw["request"] is record["request"]  # nothing to redact there: not even copied
    assert tool_calls(call.input_messages[2]) == [("toolu_1", "http", {"api_key": "k", "cookie": "c=1"})]
    assert call.tools == (ToolDefinition(name="http", parameters=schema),)


def test_redaction_leaves_every_id_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    # A keyless call is keyed by its record's digest: of the record as received, so the same
    # record ingested before redaction existed and after it is one Fact (one id).
    keyless_pair = chat_record(headers={"authorization": BEARER})
    del keyless_pair["response"]["id"]
    keyless_litellm = litellm_payload(metadata={"user_api_key_hash": "0" * 64, "session_id": "sess-lite",
                                                "requester_custom_headers": {"x-api-key": ANTHROPIC_KEY}})
    for key in ("litellm_call_id", "id"):
        del keyless_litellm[key]
    del keyless_litellm["response"]["id"]
    keyed = chat_record(headers={"authorization": BEARER})
    records = [("openai-chat", keyless_pair), ("litellm", keyless_litellm), ("openai-chat", keyed)]
    after = [the_call(translate(copy.deepcopy(r), f)) for f, r in records]
    assert [c.model_call_id is None for c in after] == [True, True, False]
    assert all(c.raw != r for c, (_, r) in zip(after, records, strict=True))  # each had a credential redacted
    monkeypatch.setattr(toolkit, "redact_record", lambda record: record)  # as before redaction existed
    monkeypatch.setenv("SEDIMENT_REDACT_CONTENT", "0")  # and content redaction
    before = [the_call(translate(copy.deepcopy(r), f)) for f, r in records]
    assert [c.raw for c in before] == [r for _, r in records]
    assert [c.inference_call_id for c in after] == [c.inference_call_id for c in before]


@needs_fixtures
def test_cassette_request_headers_keep_everything_but_the_cookie() -> None:
    # The recorder kept the Cloudflare cookie OpenAI's client sends back; recorded as the
    # envelope's headers, it is the one value redacted.
    stem = "pydantic-ai.test_openai.test_openai_instructions_with_tool_calls_keep_instructions"
    cassette = yaml.safe_load((FIXTURES / f"{stem}.yaml").read_text(encoding="utf-8"))
    redacted = 0
    for index, fmt, envelope in envelopes(stem):
        headers = cassette["interactions"][index]["request"]["headers"]
        call = the_call(translate({**envelope, "headers": headers}, fmt))
        expected = {k: [marker(v) for v in values] if k == "cookie" else values for k, values in headers.items()}
        assert call.raw == {**envelope, "headers": expected}
        assert call.model_dump(exclude={"raw"}) == the_call(translate(envelope, fmt)).model_dump(exclude={"raw"})
        redacted += "cookie" in headers
    assert redacted == 1


# --- empty assistant text is an empty text part ---------------------------------------------


def _chat_content(content: Any, *, with_calls: bool) -> dict[str, Any]:
    record = chat_record()
    message = record["response"]["choices"][0]["message"]
    message["content"] = content
    if not with_calls:
        del message["tool_calls"]
    return record


def _anthropic_content(*blocks: dict[str, Any]) -> dict[str, Any]:
    record = anthropic_record(session_id="s")
    record["response"]["content"] = list(blocks)
    return record


def _anthropic_stream_with_an_empty_text_block() -> dict[str, Any]:
    stream = sse(
        ("message_start", {"type": "message_start", "message": {"id": "msg_e", "role": "assistant", "content": []}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "tool_use", "id": "toolu_e", "name": "Read", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "input_json_delta", "partial_json": '{"file": "a.py"}'}}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
    )
    return {"request": {"messages": [{"role": "user", "content": "read"}]}, "response": stream, "session_id": "s"}


def _responses_output(*items: dict[str, Any]) -> dict[str, Any]:
    record = responses_record(session_id="s")
    record["response"]["output"] = list(items)
    return record


EMPTY_OUTPUT_TEXT = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "", "annotations": []}]}
SHELL_CALL = {"type": "function_call", "call_id": "call_r", "name": "shell", "arguments": '{"cmd":"ls"}'}
TOOL_USE = {"type": "tool_use", "id": "toolu_e", "name": "Read", "input": {"file": "a.py"}}
LS = ("tool_call", "call_1", "ls", {"path": "."})
READ = ("tool_call", "toolu_e", "Read", {"file": "a.py"})
SHELL = ("tool_call", "call_r", "shell", {"cmd": "ls"})


def _litellm_response(response: dict[str, Any]) -> dict[str, Any]:
    return litellm_payload(response=response)


@pytest.mark.parametrize(
    ("call_format", "make", "parts"),
    [
        ("openai-chat", lambda: _chat_content("", with_calls=True), [("text", ""), LS]),
        ("openai-chat", lambda: _chat_content("", with_calls=False), [("text", "")]),
        ("openai-chat", lambda: _chat_content([{"type": "text", "text": ""}], with_calls=True), [("text", ""), LS]),
        ("anthropic", lambda: _anthropic_content({"type": "text", "text": ""}, TOOL_USE), [("text", ""), READ]),
        ("anthropic", lambda: _anthropic_content({"type": "text", "text": ""}), [("text", "")]),
        ("anthropic", _anthropic_stream_with_an_empty_text_block, [("text", ""), READ]),
        ("openai-responses", lambda: _responses_output(EMPTY_OUTPUT_TEXT, SHELL_CALL), [("text", ""), SHELL]),
        ("openai-responses", lambda: _responses_output(EMPTY_OUTPUT_TEXT), [("text", "")]),
        ("litellm", lambda: _litellm_response({"id": "r", "choices": [{"finish_reason": "stop", "message": {
            "role": "assistant", "content": "", "tool_calls": [function_call("call_1", '{"path":"."}', "ls")]}}]}),
         [("text", ""), LS]),
        ("litellm", lambda: _litellm_response({"id": "r", "content": [{"type": "text", "text": ""}, TOOL_USE]}),
         [("text", ""), READ]),
        ("litellm", lambda: _litellm_response({"id": "r", "output": [EMPTY_OUTPUT_TEXT, SHELL_CALL]}),
         [("text", ""), SHELL]),
    ],
)
def test_an_empty_assistant_text_is_kept_as_an_empty_text_part(
    call_format: str, make: Callable[[], dict[str, Any]], parts: list[tuple[Any, ...]]
) -> None:
    translation = translate(make(), call_format)
    (out,) = the_call(translation).output_messages
    assert (out.role, parts_of(out)) == ("assistant", parts)
    assert translation.warnings == ()


def test_an_empty_refusal_or_null_content_gives_no_part() -> None:
    record = _chat_content(None, with_calls=True)
    record["response"]["choices"][0]["message"]["refusal"] = ""
    assert parts_of(the_call(translate(record)).output_messages[0]) == [LS]


def test_an_empty_system_prompt_gives_no_system_message() -> None:
    for system in ("", [{"type": "text", "text": ""}]):
        record = anthropic_record(session_id="s")
        record["request"]["system"] = system
        assert shape(the_call(translate(record, "anthropic")).input_messages) == [("user", ["text"])]


def chat_session(first_message: dict[str, Any], replayed: dict[str, Any], *, then: dict[str, Any]) -> list[InferenceCall]:
    """Two Chat calls of one Session: the first answers with ``first_message``, the second
    replays it as ``replayed`` and adds ``then``."""
    first = chat_record()
    first["response"]["choices"][0]["message"] = first_message
    second = chat_record()
    second["response"]["id"] = "chatcmpl-2"
    second["request"]["messages"] = [*first["request"]["messages"], replayed, then]
    second["observed_at"] = "2025-06-01T12:00:01Z"
    return [the_call(translate(first)), the_call(translate(second))]


def test_a_replayed_empty_text_part_still_matches() -> None:
    message = {"role": "assistant", "content": "", "tool_calls": [function_call("call_1", '{"path":"."}', "ls")]}
    tool = {"role": "tool", "tool_call_id": "call_1", "content": "a.py"}
    calls = chat_session(message, copy.deepcopy(message), then=tool)
    assert parts_of(calls[1].input_messages[1]) == [("text", ""), LS]
    segments, counts = segment_calls(calls)
    assert counts == Counter()
    (segment,) = segments
    # The second Turn adds the replayed output (its empty text part included) and the result.
    assert [parts_of(m) for m in segment[1].new_messages] == [[("text", ""), LS], [("tool_call_response", "call_1", "a.py")]]


def test_a_replayed_empty_output_text_item_still_matches() -> None:
    first = _responses_output(EMPTY_OUTPUT_TEXT, SHELL_CALL)
    second = responses_record(session_id="s", observed_at="2025-06-01T12:00:01Z")
    second["response"]["id"] = "resp_2"
    first["request"]["input"] = [{"role": "user", "content": "fix the bug"}]
    second["request"]["input"] = [*first["request"]["input"], EMPTY_OUTPUT_TEXT, SHELL_CALL,
                                  {"type": "function_call_output", "call_id": "call_r", "output": "a.py"}]
    calls = [the_call(translate(first, "openai-responses")), the_call(translate(second, "openai-responses"))]
    assert fragmented(calls) == Counter()


def test_an_output_of_only_empty_text_is_prior_output_absent() -> None:
    message = {"role": "assistant", "content": ""}
    calls = chat_session(message, copy.deepcopy(message), then={"role": "user", "content": "and?"})
    assert parts_of(calls[0].output_messages[0]) == [("text", "")]
    assert fragmented(calls) == Counter({"prior_output_absent": 1})


def test_an_empty_text_block_the_client_dropped_from_its_replay_still_matches() -> None:
    first = _anthropic_content({"type": "text", "text": ""}, TOOL_USE)
    second = anthropic_record(session_id="s", observed_at="2025-06-01T12:00:01Z")
    second["response"]["id"] = "msg_2"
    second["request"]["messages"] = [
        *first["request"]["messages"],
        {"role": "assistant", "content": [TOOL_USE]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_e", "content": "x = 1"}]},
    ]
    calls = [the_call(translate(first, "anthropic")), the_call(translate(second, "anthropic"))]
    assert fragmented(calls) == Counter()


# --- tool results that are JSON text stay strings --------------------------------------------

JSON_RESULTS = ['{"ok": true, "files": ["a.py"]}', "[1, 2.50]", "42", "null", "true", '"quoted"', ' {"padded": 1}\n']


def _chat_tool_result(result: str) -> tuple[str, dict[str, Any]]:
    record = chat_record()
    record["request"]["messages"].append({"role": "tool", "tool_call_id": "call_0", "content": result})
    return "openai-chat", record


def _responses_tool_result(result: str) -> tuple[str, dict[str, Any]]:
    record = responses_record(session_id="s")
    record["request"]["input"] = [{"type": "function_call_output", "call_id": "call_0", "output": result}]
    return "openai-responses", record


def _responses_custom_tool_result(result: str) -> tuple[str, dict[str, Any]]:
    record = responses_record(session_id="s")
    record["request"]["input"] = [{"type": "custom_tool_call_output", "call_id": "call_0", "output": result}]
    return "openai-responses", record


def _anthropic_tool_result(result: str) -> tuple[str, dict[str, Any]]:
    record = anthropic_record(session_id="s")
    record["request"]["messages"] = [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_0", "content": result}]}
    ]
    return "anthropic", record


def _litellm_tool_result(shape: str) -> Callable[[str], tuple[str, dict[str, Any]]]:
    def make(result: str) -> tuple[str, dict[str, Any]]:
        message = {
            "chat": {"role": "tool", "tool_call_id": "call_0", "content": result},
            "responses": {"type": "function_call_output", "call_id": "call_0", "output": result},
            "anthropic": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_0", "content": result}]},
        }[shape]
        return "litellm", litellm_payload(messages=[message])
    return make


TOOL_RESULT_FORMS: dict[str, Callable[[str], tuple[str, dict[str, Any]]]] = {
    "openai-chat tool message": _chat_tool_result,
    "openai-responses function_call_output": _responses_tool_result,
    "openai-responses custom_tool_call_output": _responses_custom_tool_result,
    "anthropic tool_result": _anthropic_tool_result,
    "litellm chat": _litellm_tool_result("chat"),
    "litellm responses": _litellm_tool_result("responses"),
    "litellm anthropic": _litellm_tool_result("anthropic"),
}


@pytest.mark.parametrize("result", JSON_RESULTS)
@pytest.mark.parametrize("form", sorted(TOOL_RESULT_FORMS))
def test_a_tool_result_that_is_json_text_stays_that_string(form: str, result: str) -> None:
    call_format, record = TOOL_RESULT_FORMS[form](result)
    call = the_call(translate(record, call_format))
    (found,) = [p for m in call.input_messages for p in m.parts if isinstance(p, ToolCallResponsePart)]
    assert found.id == "call_0"
    assert type(found.result) is str and found.result == result  # never parsed, never re-encoded


def test_an_anthropic_tool_result_of_blocks_keeps_its_json_text_blocks() -> None:
    blocks = [{"type": "text", "text": '{"ok": true}'}, {"type": "text", "text": "[1]"}]
    _, record = _anthropic_tool_result("")
    record["request"]["messages"][0]["content"][0]["content"] = copy.deepcopy(blocks)
    (part,) = the_call(translate(record, "anthropic")).input_messages[-1].parts
    assert isinstance(part, ToolCallResponsePart) and part.result == blocks
