"""Synthesize an organisation's evidence as real input files (deterministic for a seed).

Per Session: a replaying tool loop of gateway calls (OpenAI Chat request/response pairs:
an ~8 KiB user/tool message and ~2 KiB of assistant tool-call arguments per turn, every call
replaying all turns before it), one commit with a ``refs/notes/sediment`` note in an origin
repository, and GitHub ``workflow_run`` deliveries for it (every fifth run failed first and
passed on its second attempt, and every seventh failed and the next Session's commit turned it
green: a recovery). The developer's decisions arrive as one agent shim's OTLP log: per ten
Sessions, the first two answer the same task and the developer accepts the first one's opening
edit and rejects the second's (a DPO pair); every third other Session's last edit is explicitly
accepted (SFT and diff-SFT rows) and every eleventh's explicitly rejected.

With ``uncommitted_every`` N > 0, every Nth Session (the Nth, the 2Nth, ...) is an abandoned
attempt: its calls make the edits the next Session makes (the next Session redoes its task),
but it commits nothing, no note names it, and no CI runs for it. Its calls look like every
other Session's, so only the notes on the next Session's commit say whose work that commit is.

The input files are written compressed, as a gateway's rotated logs are: ``zst`` (Zstandard,
the default), ``gz`` or ``none``; the text is streamed through the compressor, so the replayed
bytes are never on disk. ``input_bytes`` counts the replayed (inflated) bytes,
``compressed_bytes`` what is on disk.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import zstandard

from sediment.demo import decision_log
from sediment.git.mirror_writer import MirrorWriter

REPO = "bench/monorepo"
T0 = datetime(2026, 6, 1, tzinfo=UTC)
SESSIONS_PER_FILE = 10
COMPRESSIONS = ("zst", "gz", "none")
#: The call log formats the bench writes (``sediment ingest calls --format``).
CALL_FORMATS = ("openai-chat", "openai-responses", "anthropic", "litellm")
#: Zstandard's level 3 (its default) with a 2^23-byte window: a call replays the one before it,
#: up to a few MiB back, so the window reaches the replay as a rotating gateway's compressor would.
ZSTD_PARAMETERS = {"level": 3, "window_log": 23}


@dataclass(frozen=True)
class Profile:
    name: str
    sessions: int
    calls: int
    user_bytes: int = 8192
    assistant_bytes: int = 2048
    #: every Nth Session commits nothing and writes no note (0: every Session commits)
    uncommitted_every: int = 0
    #: about how many bytes of tool definitions every call declares (0: none), as a coding
    #: agent declares its tools with every call (tens of KB)
    tool_bytes: int = 0
    #: how the calls are logged: a request/response pair of one of the three APIs, or a LiteLLM
    #: gateway's payload (:data:`CALL_FORMATS`; the same turns in each)
    call_format: str = "openai-chat"

    def commits(self, index: int) -> bool:
        """Whether Session ``index`` commits (with a note) and has CI runs."""
        return not (self.uncommitted_every > 0 and index % self.uncommitted_every == self.uncommitted_every - 1)


PROFILES = {
    "smoke": Profile("smoke", 2, 6),
    "pilot-tenth": Profile("pilot-tenth", 240, 100),
    "pilot": Profile("pilot", 2400, 100),
}


@dataclass
class Synthesis:
    call_files: list[Path] = field(default_factory=list)
    webhook_files: list[Path] = field(default_factory=list)
    decision_files: list[Path] = field(default_factory=list)
    decisions: int = 0
    #: each committing Session's commit SHA, by Session id
    commits: dict[str, str] = field(default_factory=dict)
    #: the Sessions that commit nothing (``Profile.uncommitted_every``)
    uncommitted: list[str] = field(default_factory=list)
    #: the conclusion of each commit's last workflow run attempt, by commit SHA
    verdicts: dict[str, str] = field(default_factory=dict)
    origin: Path = Path()
    calls: int = 0
    input_bytes: int = 0
    #: the input files' size on disk (compressed)
    compressed_bytes: int = 0
    compression: str = "none"
    call_format: str = "openai-chat"
    replayed_message_bytes: int = 0
    unique_message_bytes: int = 0


class _Text:
    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(4096)]
        self._blocks = [" ".join(rng.choices(words, k=2200)) for _ in range(64)]

    def make(self, label: str, size: int, salt: int) -> str:
        block = self._blocks[salt % len(self._blocks)]
        start = (salt * 7919) % max(1, len(block) - size)
        return (label + " " + block[start:start + size])[:size]


@functools.cache
def tool_list(size: int) -> list[dict[str, Any]]:
    """Function tools of about ``size`` bytes of JSON in all, the same for every call of every
    Session (one agent's tools): each with a description and a small parameter schema."""
    text = _Text(11)
    tools: list[dict[str, Any]] = []
    while len(json.dumps(tools)) < size:
        n = len(tools)
        tools.append({"type": "function", "function": {
            "name": f"tool_{n}", "description": text.make(f"[tool {n}]", 1500, 7 * n + 3),
            "parameters": {"type": "object", "properties": {
                "path": {"type": "string", "description": text.make(f"[tool {n} path]", 120, 11 * n)},
                "limit": {"type": "integer", "minimum": 1, "default": 2000}},
                "required": ["path"], "additionalProperties": False}}})
    return tools


def session_id(index: int) -> str:
    return f"bench-s{index:05d}"


def _session(profile: Profile, text: _Text, index: int) -> tuple[str, list[dict[str, Any]], str, set[str]]:
    session = session_id(index)
    # an uncommitted Session makes the edits the next Session makes (its task redone there)
    author, author_index = (session, index) if profile.commits(index) else (session_id(index + 1), index + 1)
    start = T0 + timedelta(minutes=30 * index)
    # the first two Sessions of every ten answer one task (a DPO bucket)
    task, salt = (f"[pair {index // 10} task]", index // 10) if index % 10 < 2 else (f"[{session} task]", index)
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": text.make(task, profile.user_bytes, salt)},
    ]
    records = []
    final_content = ""
    calls = session_calls(profile, index)
    for turn in range(calls):
        last = turn == calls - 1
        if last:
            message: dict[str, Any] = {"role": "assistant", "content": "Done."}
        else:
            final_content = text.make(f"[{author} edit {turn}]", profile.assistant_bytes, author_index * 131 + turn)
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{session}_{turn}", "type": "function",
                "function": {"name": "write_file",
                             "arguments": json.dumps({"path": f"src/{session}.py", "content": final_content})}}]}
        records.append({
            "session_id": session,
            "observed_at": (start + timedelta(seconds=10 * turn)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "request": {"model": "bench-model", "messages": history,
                        **({"tools": tool_list(profile.tool_bytes)} if profile.tool_bytes else {})},
            "response": {"id": f"chatcmpl-{session}-{turn}", "object": "chat.completion", "model": "bench-model",
                         "choices": [{"index": 0, "message": message,
                                      "finish_reason": "stop" if last else "tool_calls"}],
                         "usage": {"prompt_tokens": 2000 * (turn + 1), "completion_tokens": 500}},
        })
        history = [*history, message]
        if not last:
            history.append({"role": "tool", "tool_call_id": f"call_{session}_{turn}",
                            "content": text.make(f"[{session} result {turn}]", profile.user_bytes,
                                                 index * 977 + turn)})
    unique = {json.dumps(m, sort_keys=True) for m in history}
    return session, records, final_content, unique


def logged(record: dict[str, Any], call_format: str) -> dict[str, Any]:
    """A synthesized call (an OpenAI Chat request/response pair) as ``call_format`` logs it: the
    same turns, tool calls and results, in that API's shapes, or in a LiteLLM payload."""
    if call_format == "openai-chat":
        return record
    request, response = record["request"], record["response"]
    (choice,) = response["choices"]
    envelope = {"session_id": record["session_id"], "observed_at": record["observed_at"]}
    usage = {"input_tokens": response["usage"]["prompt_tokens"], "output_tokens": response["usage"]["completion_tokens"]}
    functions = [tool["function"] for tool in request.get("tools", [])]
    if call_format == "litellm":
        return {"id": response["id"], "call_type": "acompletion", "status": "success", "custom_llm_provider": "openai",
                "model": request["model"], "startTime": record["observed_at"], "endTime": record["observed_at"],
                "messages": request["messages"], "response": response,
                "prompt_tokens": usage["input_tokens"], "completion_tokens": usage["output_tokens"],
                "model_parameters": {"tools": request["tools"]} if "tools" in request else {},
                "metadata": {"session_id": record["session_id"]}}
    if call_format == "openai-responses":
        items = [item for message in request["messages"] for item in _response_items(message)]
        return {**envelope, "request": {"model": request["model"], "input": items,
                                        **({"tools": [{"type": "function", **f} for f in functions]} if functions else {})},
                "response": {"id": response["id"], "object": "response", "model": response["model"],
                             "status": "completed", "output": _response_items(choice["message"]), "usage": usage}}
    if call_format == "anthropic":
        system, *turns = request["messages"]
        content = _anthropic_message(choice["message"])["content"]
        return {**envelope, "request": {
            "model": request["model"], "max_tokens": 4096, "system": system["content"],
            "messages": [_anthropic_message(message) for message in turns],
            **({"tools": [{"name": f["name"], "description": f["description"], "input_schema": f["parameters"]}
                          for f in functions]} if functions else {})},
            "response": {"id": response["id"], "type": "message", "role": "assistant", "model": response["model"],
                         "content": content if isinstance(content, list) else [{"type": "text", "text": content}],
                         "stop_reason": "tool_use" if choice["finish_reason"] == "tool_calls" else "end_turn",
                         "usage": usage}}
    raise ValueError(f"call format: expected one of {', '.join(CALL_FORMATS)}, got {call_format!r}")


def _response_items(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A Chat message as OpenAI Responses items."""
    if message["role"] == "tool":
        return [{"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"]}]
    if message.get("tool_calls"):
        return [{"type": "function_call", "call_id": call["id"], "name": call["function"]["name"],
                 "arguments": call["function"]["arguments"]} for call in message["tool_calls"]]
    kind = "output_text" if message["role"] == "assistant" else "input_text"
    return [{"type": "message", "role": message["role"], "content": [{"type": kind, "text": message["content"]}]}]


def _anthropic_message(message: dict[str, Any]) -> dict[str, Any]:
    """A Chat message as an Anthropic message (a tool result is the user's ``tool_result`` block)."""
    if message["role"] == "tool":
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": message["tool_call_id"],
                                             "content": message["content"]}]}
    if message.get("tool_calls"):
        return {"role": "assistant", "content": [{"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                                                  "input": json.loads(call["function"]["arguments"])}
                                                 for call in message["tool_calls"]]}
    return {"role": message["role"], "content": message["content"]}


def session_calls(profile: Profile, index: int) -> int:
    """How many calls Session ``index`` makes: a DPO pair's two Sessions answer in one edit (their
    decided call's prompt is the task itself), the others make the profile's number of calls."""
    return min(2, profile.calls) if index % 10 < 2 else profile.calls


def _decisions(profile: Profile, index: int, session: str, at: datetime
               ) -> list[tuple[datetime, str, dict[str, str | bool]]]:
    """The developer's decisions on one Session's edits (see the module's docstring)."""
    if session_calls(profile, index) < 2:
        return []
    if index % 10 == 0 or (index % 10 > 1 and index % 11 != 5 and index % 3 == 0):
        accept = True
    elif index % 10 == 1 or index % 11 == 5:
        accept = False
    else:
        return []
    # the decided edit is the Session's last one (the committed file's content)
    turn = session_calls(profile, index) - 2
    return [(at, "sediment.tool_decision", {
        "agent": "pi", "session.id": session, "tool_use_id": f"call_{session}_{turn}", "tool_name": "write",
        "decision": "accept" if accept else "reject", "explicit": True, "file_path": f"src/{session}.py"})]


def _workflow_run(run_id: int, attempt: int, sha: str, conclusion: str, at: datetime) -> dict[str, Any]:
    run = {"id": run_id, "name": "ci", "head_branch": "main", "head_sha": sha, "path": ".github/workflows/ci.yml",
           "status": "completed", "conclusion": conclusion, "workflow_id": 77, "run_attempt": attempt,
           "html_url": f"https://github.com/{REPO}/actions/runs/{run_id}", "pull_requests": [],
           "updated_at": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "repository": {"id": 1, "full_name": REPO}}
    return {"headers": {"X-GitHub-Event": "workflow_run", "X-GitHub-Delivery": f"bench-{run_id}-{attempt}"},
            "payload": {"action": "completed", "workflow_run": run,
                        "repository": {"id": 1, "full_name": REPO, "owner": {"login": "bench"}}}}


def _writer(path: Path, compression: str) -> tuple[Path, IO[bytes]]:
    """The file for ``path``'s content, compressed as asked (its name gains ``.zst`` or ``.gz``)."""
    if compression == "none":
        return path, path.open("wb")
    if compression == "gz":
        path = path.with_name(path.name + ".gz")
        return path, gzip.GzipFile(path, "wb", compresslevel=6, mtime=0)  # type: ignore[return-value]
    path = path.with_name(path.name + ".zst")
    params = zstandard.ZstdCompressionParameters.from_level(ZSTD_PARAMETERS["level"],
                                                           window_log=ZSTD_PARAMETERS["window_log"],
                                                           write_checksum=True)
    compressor = zstandard.ZstdCompressor(compression_params=params)
    return path, compressor.stream_writer(path.open("wb"), closefd=True)  # type: ignore[return-value]


def _write_whole(path: Path, data: bytes, compression: str) -> Path:
    path, handle = _writer(path, compression)
    with handle:
        handle.write(data)
    return path


def synthesize(profile: Profile, directory: Path, *, seed: int = 7, compression: str = "zst") -> Synthesis:
    """Write the profile's input files under ``directory``, compressed as ``compression`` says."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "calls").mkdir(exist_ok=True)
    (directory / "webhooks").mkdir(exist_ok=True)
    text = _Text(seed)
    result = Synthesis(origin=directory / "origin.git", compression=compression, call_format=profile.call_format)
    git = MirrorWriter(result.origin)
    git.commit({"README.md": "# bench\n"}, "base", when=int(T0.timestamp()) - 3600)
    handle = None
    deliveries = []
    decisions: list[tuple[datetime, str, dict[str, str | bool]]] = []
    if profile.tool_bytes:  # one agent's tools: unique content once
        result.unique_message_bytes += len(json.dumps(tool_list(profile.tool_bytes), sort_keys=True))
    for index in range(profile.sessions):
        if index % SESSIONS_PER_FILE == 0:
            if handle is not None:
                handle.close()
            path, handle = _writer(directory / "calls" / f"calls-{index // SESSIONS_PER_FILE:04d}.jsonl",
                                   compression)
            result.call_files.append(path)
        session, records, content, unique = _session(profile, text, index)
        assert handle is not None
        for record in records:
            line = (json.dumps(logged(record, profile.call_format)) + "\n").encode("utf-8")
            handle.write(line)
            result.input_bytes += len(line)
            result.replayed_message_bytes += sum(len(json.dumps(m)) for m in record["request"]["messages"])
        result.calls += len(records)
        result.unique_message_bytes += sum(len(u) for u in unique)
        at = T0 + timedelta(minutes=30 * index + 20)
        decided = _decisions(profile, index, session, T0 + timedelta(minutes=30 * index + 18))
        decisions += decided
        if not profile.commits(index):
            result.uncommitted.append(session)
            continue
        sha = git.commit({f"src/{session}.py": content}, f"{session} work", when=int(at.timestamp()))
        git.add_note(sha, [{"tool": "codex", "session_id": session, "stamped_at": at.isoformat()}])
        result.commits[session] = sha
        run_id = 1000 + index
        if index % 5 == 4:
            deliveries.append(_workflow_run(run_id, 1, sha, "failure", at + timedelta(minutes=5)))
            deliveries.append(_workflow_run(run_id, 2, sha, "success", at + timedelta(minutes=9)))
        else:
            deliveries.append(_workflow_run(run_id, 1, sha, "success" if index % 7 else "failure",
                                            at + timedelta(minutes=5)))
        result.verdicts[sha] = deliveries[-1]["payload"]["workflow_run"]["conclusion"]
    if handle is not None:
        handle.close()
    hook_text = "".join(json.dumps(d) + "\n" for d in deliveries).encode("utf-8")
    result.webhook_files.append(_write_whole(directory / "webhooks" / "workflow_runs.jsonl", hook_text, compression))
    result.input_bytes += len(hook_text)
    log = directory / "decisions.otlp.json"
    result.decision_files.append(_write_whole(log, json.dumps(decision_log(decisions)).encode("utf-8"), compression))
    result.compressed_bytes = sum(p.stat().st_size for p in result.call_files + result.webhook_files)
    result.decisions = len(decisions)
    return result


def digest_files(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()
