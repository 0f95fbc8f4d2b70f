"""Server-Sent Event streams: a streamed response's events and their JSON payloads, read
by the call formats that accept one."""

from __future__ import annotations

from typing import Any

from sediment.ingest.calls.fields import as_object, fail
from sediment.ingest.reading.json_text import RecordProblem, read_json


def is_event_stream(text: str) -> bool:
    """True when ``text`` reads as Server-Sent Events (its first line is a field or comment)."""
    first = text.lstrip().split("\n", 1)[0]
    return first.startswith(("data:", "event:", ":"))


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """``(event name, data)`` for each event of an SSE stream; comments and ids are ignored."""
    events: list[tuple[str | None, str]] = []
    name: str | None = None
    data: list[str] = []
    for line in [*text.splitlines(), ""]:
        if not line:
            if data:
                events.append((name, "\n".join(data)))
            name, data = None, []
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if key == "event":
            name = value
        elif key == "data":
            data.append(value)
    return events


def event_payloads(text: str) -> list[tuple[str | None, dict[str, Any]]]:
    """Each SSE event whose data is a JSON object (the ``[DONE]`` sentinel ends the stream)."""
    payloads: list[tuple[str | None, dict[str, Any]]] = []
    for position, (name, data) in enumerate(sse_events(text)):
        if data.strip() == "[DONE]":
            break
        try:
            payload = read_json(data)
        except RecordProblem as exc:
            fail(f"response(event {position})", "invalid JSON in SSE data" if exc.syntax else str(exc))
        payloads.append((name, as_object(payload, f"response(event {position})")))
    if not payloads:
        fail("response", "empty SSE stream")
    return payloads
