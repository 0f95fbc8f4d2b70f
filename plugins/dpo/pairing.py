"""DPO pairing (docs/dpo.md): members, labels, buckets, pairs and their rows.

:func:`project_pairs` reads every Session's attributed completions, admits each completion as
a bucket member (or counts why not), then visits the buckets in ascending key order and pairs
their chosen and rejected members. It yields finished rows (dicts in ``dpo-pair`` v5 key
order) and skip reasons (strings), in output order. It is a pure function of the evidence: the
same completions in any Session order give the same rows and counts.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import pickle
import re
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cmp_to_key
from pathlib import Path
from typing import Any, Literal

from sediment.plugin import (
    RESOLVER_SKIP_REASONS,
    TRAINER_SKIP_REASONS,
    AttributedCompletion,
    LabelConfidencePolicy,
    SessionCompletions,
    TrainerConversation,
    TrainingProvenance,
    capture_row,
    chat_tools,
    map_conversation,
    pair_confidence,
    plain,
    put_optional,
    representable_json_text,
    representation_problem,
    strict_json,
)

PAIR_SCHEMA_ID = "https://sediment.so/schemas/training-rows/dpo-pair/v5.json"
PAIR_SCHEMA_VERSION = 5
RECIPE_VERSION = 2
#: The version of the pairing rules below (upstream's DPOPolicy has none; docs/dpo.md).
DPO_POLICY_VERSION = "1"
#: ``(recipe id, version, description)``, the default first.
DPO_RECIPES: tuple[tuple[str, int, str], ...] = (
    ("dpo_human", RECIPE_VERSION, "explicit accept chosen, explicit reject rejected (a reject wins); CI ignored"),
    ("dpo_outcome", RECIPE_VERSION, "resolved CI pass chosen, fail rejected; flakes unreliable; decisions ignored"),
)
#: What DPO itself counts, after the CI resolver's and the trainer mapper's reasons.
DPO_OWN_SKIP_REASONS: tuple[str, ...] = (
    "inference_call_not_found",
    "promptless",
    "model_absent",
    "no_label_source",
    "unreliable_ci_resolution",
    "bucket_capped",
    "identical_responses",
    # Ours (docs/dpo.md): an extra completion of one call in a bucket, dropped by the dedupe.
    "duplicate_completion",
    # Ours (docs/dpo.md): the two calls of a pair declared different tools, so the prompt a
    # model saw (messages and tool definitions) was not the same.
    "tools_differ",
)
#: Every reason, in vocabulary order (upstream's ``DPO_SKIP_REASONS``, then ``duplicate_completion``
#: and ``tools_differ``).
DPO_SKIP_REASONS: tuple[str, ...] = (*RESOLVER_SKIP_REASONS, *TRAINER_SKIP_REASONS, *DPO_OWN_SKIP_REASONS)

Label = Literal["chosen", "rejected"]
LabelFormula = Literal["label", "upstream"]


@dataclass(frozen=True)
class DPOPolicy:
    """The pairing policy: the ladder, the per-bucket cap, the recipe and the label-confidence
    formula (``label``: ``min(chosen, 1 − rejected)``; ``upstream``: ``min(chosen, rejected)``)."""

    label_confidence: LabelConfidencePolicy = field(default_factory=LabelConfidencePolicy)
    max_pairs_per_bucket: int = 3
    recipe_id: str = "dpo_human"
    label_confidence_formula: LabelFormula = "label"

    def __post_init__(self) -> None:
        if self.recipe_id not in {name for name, _, _ in DPO_RECIPES}:
            raise ValueError(f"unsupported DPO recipe '{self.recipe_id}'")
        if isinstance(self.max_pairs_per_bucket, bool) or not isinstance(self.max_pairs_per_bucket, int) \
                or self.max_pairs_per_bucket < 1:
            raise ValueError(f"DPOPolicy.max_pairs_per_bucket must be >= 1 (got {self.max_pairs_per_bucket})")
        if self.label_confidence_formula not in ("label", "upstream"):
            raise ValueError(f"unsupported DPO label confidence formula '{self.label_confidence_formula}'")


@dataclass(frozen=True)
class Member:
    """One admitted completion: its AC, mapped conversation (or the representation reason that
    will decline a pair selecting it), label, Confidence and the CI facts a row reads."""

    completion: AttributedCompletion
    model: str
    conversation: TrainerConversation | None
    representation: str | None
    label: Label | None
    label_source: str | None
    unlabelled: str | None
    confidence: float | None
    reliability: float | None
    resolver_skipped: Counter[str]
    #: The call's transcript capture as rows carry it; ``None`` for a call recorded on the wire.
    capture: dict[str, Any] | None = None
    #: The tool definitions the call's request declared, as rows hold them (``chat_tools``).
    tools: list[dict[str, Any]] = field(default_factory=list)

    @property
    def call_id(self) -> str:
        return self.completion.inference_call_id

    def rank(self) -> tuple[Any, ...]:
        return (self.label is not None, self.confidence is not None, self.confidence or 0.0,
                self.completion.sort_key)


#: Each message's text in a prompt key, by the message object's id (the object kept, so an id is
#: never taken for another object's): a Session's calls share their history's message objects.
MessageKeys = dict[int, tuple[Any, str]]


#: An escape of a character at or above U+007F in ``ensure_ascii`` JSON (control characters below
#: U+0020 are escaped as ``\u00XX`` either way; a literal backslash is ``\\``, which at worst
#: makes a false alarm).
_ESCAPED_NON_ASCII = re.compile(r"\\u(?!00[01][0-9a-f])")


def _message_key(message: Any) -> str:
    """One message's text in a prompt key (non-ASCII kept). The ASCII encoder is the faster, and
    gives the same text when no character needed one of its escapes, which is then used."""
    dumped = message.model_dump(mode="python", exclude_none=True)
    text = json.dumps(dumped, sort_keys=True, ensure_ascii=True, allow_nan=True, default=repr)
    if "\\u" in text and _ESCAPED_NON_ASCII.search(text):
        text = json.dumps(dumped, sort_keys=True, ensure_ascii=False, allow_nan=True, default=repr)
    return text


def prompt_key(messages: Iterable[Any], known: MessageKeys | None = None) -> str:
    """The structural prompt: the input messages (null fields left out) as JSON with sorted keys,
    non-ASCII kept; exact equality of roles, order, parts and scalar types. It is the JSON array
    of each message's own text (``json.dumps`` joins a list's items with ``", "``), so each
    message is encoded once per ``known`` (one Session's), not once per call that replays it."""
    texts = []
    for message in messages:
        held = None if known is None else known.get(id(message))
        if held is None or held[0] is not message:
            held = (message, _message_key(message))
            if known is not None:
                known[id(message)] = held
        texts.append(held[1])
    return "[" + ", ".join(texts) + "]"


def _tools_key(tools: list[dict[str, Any]]) -> str:
    """Declared tools compared exactly: order, names, schemas and scalar types count, object
    key order does not (NaN allowed here: the row's representation check counts it)."""
    return json.dumps(tools, sort_keys=True, ensure_ascii=False, allow_nan=True)


def _label(completions: SessionCompletions, completion: AttributedCompletion, recipe: str
           ) -> tuple[Label | None, str | None, str | None]:
    """``(label, label source, unlabelled reason)`` under ``recipe``."""
    if recipe == "dpo_human":
        explicit = [d for d in completion.decisions if d.explicit]
        if completion.abandonment is None and explicit:
            if any(not d.accepted for d in explicit):
                return "rejected", "explicit_reject", None
            return "chosen", "explicit_accept", None
        return None, None, "no_label_source"
    resolution = completions.resolution(completion).resolution
    if resolution is None or resolution.verdict is None:
        return None, None, "no_label_source"
    if resolution.suspected_flake:
        return None, None, "unreliable_ci_resolution"
    if resolution.verdict == "passed":
        return "chosen", "resolved_ci_pass", None
    return "rejected", "resolved_ci_fail", None


def _admit(completions: SessionCompletions, completion: AttributedCompletion, policy: DPOPolicy,
           known: MessageKeys | None = None) -> tuple[tuple[str, str, str], Member] | str:
    """The member's bucket key and itself, or the reason it is not admitted (per AC); ``known``:
    the Session's message keys so far (:func:`prompt_key`)."""
    call = completions.calls.get(completion.inference_call_id)
    if call is None:
        return "inference_call_not_found"
    if not call.input_messages:
        return "promptless"
    if call.model is None:
        return "model_absent"
    try:
        prompt: str | None = prompt_key(call.input_messages, known)
    except (TypeError, ValueError):  # keys that cannot be sorted: computed again below, after the mapping
        prompt = None
    # a prompt whose key holds no lone surrogate and no non-finite number maps to a representable
    # prompt (its mapped strings and numbers are the messages'): only the completion is checked
    representable = prompt is not None and representable_json_text(prompt)
    mapped = map_conversation(call.input_messages, call.output_messages, prompt_representable=representable)
    conversation: TrainerConversation | None = None
    representation: str | None = None
    if isinstance(mapped, TrainerConversation):
        conversation = mapped
    elif mapped.is_representation:
        representation = mapped.reason
    else:
        return mapped.reason
    label, source, unlabelled = _label(completions, completion, policy.recipe_id)
    found = completions.resolution(completion)
    member = Member(
        completion=completion, model=call.model, conversation=conversation, representation=representation,
        label=label, label_source=source, unlabelled=unlabelled,
        confidence=completions.confidence(completion, policy.label_confidence),
        reliability=None if found.resolution is None else found.resolution.reliability,
        resolver_skipped=Counter(found.skipped),
        capture=None if call.capture is None else capture_row(call.capture),
        tools=chat_tools(call.tools))
    key = prompt if prompt is not None else prompt_key(call.input_messages, known)
    return (completion.org_id, call.model, key), member


def _provenance(member: Member, policy: DPOPolicy) -> Any:
    return plain(TrainingProvenance.of(member.completion.provenance, policy.label_confidence))


def _identity(member: Member) -> Any:
    identity = member.completion.repository_identity
    return None if identity is None else plain(identity)


def pair_row(chosen: Member, rejected: Member, policy: DPOPolicy) -> dict[str, Any]:
    """The ``dpo-pair`` v5 row of one pair (keys in contract order); ``tools`` are the tool
    definitions both calls declared (a pair whose calls declared different ones is never built:
    ``tools_differ``)."""
    assert chosen.conversation is not None and rejected.conversation is not None
    if chosen.confidence is None or rejected.confidence is None:
        raise ValueError("a labelled DPO member always has a Confidence (it has a decision or CI outcomes)")
    values = pair_confidence(chosen.confidence, rejected.confidence)
    label_value = (values.label_confidence if policy.label_confidence_formula == "label"
                   else values.upstream_label_confidence)
    reliabilities = [r for r in (chosen.reliability, rejected.reliability) if r is not None]
    a, b = chosen.completion, rejected.completion
    row: dict[str, Any] = {
        "prompt": chosen.conversation.as_dict()["prompt"],
        "chosen": chosen.conversation.as_dict()["completion"],
        "rejected": rejected.conversation.as_dict()["completion"],
        "tools": copy.deepcopy(chosen.tools),
        "metadata": {
            "org_id": a.org_id,
            "source_model": chosen.model,
            "chosen_completion_id": a.inference_call_id,
            "rejected_completion_id": b.inference_call_id,
            "recipe_id": policy.recipe_id,
            "recipe_version": RECIPE_VERSION,
            "chosen_label_source": chosen.label_source,
            "rejected_label_source": rejected.label_source,
            "label_confidence": label_value,
            "ci_reliability": min(reliabilities) if reliabilities else None,
            "confidence_margin": values.confidence_margin,
            "provenance": {
                "chosen": _provenance(chosen, policy),
                "rejected": _provenance(rejected, policy),
                "dpo_policy_version": DPO_POLICY_VERSION,
                "max_pairs_per_bucket": policy.max_pairs_per_bucket,
                "label_confidence_formula": policy.label_confidence_formula,
            },
            "split": "eval" if "eval" in (a.split, b.split) else a.split,
            "chosen_repository_identity": _identity(chosen),
            "rejected_repository_identity": _identity(rejected),
            "chosen_attribution_source": a.attribution_source,
            "rejected_attribution_source": b.attribution_source,
            "chosen_session_commit_observation_ids": list(a.observation_ids),
            "rejected_session_commit_observation_ids": list(b.observation_ids),
            "schema_id": PAIR_SCHEMA_ID,
            "schema_version": PAIR_SCHEMA_VERSION,
        },
    }
    put_optional(row["metadata"], "chosen_capture", chosen.capture)
    put_optional(row["metadata"], "rejected_capture", rejected.capture)
    return row


def _bucket(members: list[Member], policy: DPOPolicy) -> Iterator[dict[str, Any] | str]:
    kept: dict[str, Member] = {}
    for member in members:
        current = kept.get(member.call_id)
        if current is None:
            kept[member.call_id] = member
            continue
        yield "duplicate_completion"
        if member.rank() > current.rank():
            kept[member.call_id] = member
    chosen: list[Member] = []
    rejected: list[Member] = []
    for call_id in sorted(kept):
        member = kept[call_id]
        for reason, count in member.resolver_skipped.items():
            yield from [reason] * count
        if member.label is None:
            assert member.unlabelled is not None
            yield member.unlabelled
        elif member.label == "chosen":
            chosen.append(member)
        else:
            rejected.append(member)
    if not chosen or not rejected:
        return
    pairs = [(c, r) for c in chosen for r in rejected]
    for c, r in pairs[:policy.max_pairs_per_bucket]:
        marked = c.representation or r.representation
        if marked is not None:
            yield marked
            continue
        if _tools_key(c.tools) != _tools_key(r.tools):
            yield "tools_differ"
            continue
        row = pair_row(c, r, policy)
        problem = representation_problem(row)
        if problem is not None:
            yield problem
            continue
        if strict_json(row["chosen"]) == strict_json(row["rejected"]):
            yield "identical_responses"
            continue
        yield row
    if len(pairs) > policy.max_pairs_per_bucket:
        yield "bucket_capped"


#: How many characters of each bucket's prompt stay in memory to order the buckets (the whole
#: prompt is read back from disk only when two prompts share this prefix).
PROMPT_PREFIX = 4096


def _bucket_order(meta: dict[bytes, tuple[str, str, str]], full_text: Callable[[bytes], str]) -> list[bytes]:
    """The bucket digests in ascending ``(org, model, prompt)`` order, as sorting the full keys
    would give: prefixes decide unless they are equal and truncated, then the prompts are read."""
    def compare(a: bytes, b: bytes) -> int:
        (org_a, model_a, prefix_a), (org_b, model_b, prefix_b) = meta[a], meta[b]
        left: tuple[str, ...] = (org_a, model_a, prefix_a)
        right: tuple[str, ...] = (org_b, model_b, prefix_b)
        if left == right:
            left, right = (org_a, model_a, full_text(a)), (org_b, model_b, full_text(b))
        return (left > right) - (left < right)

    return sorted(meta, key=cmp_to_key(compare))


#: Runs of Sessions handed to a job, the job's result per run, in Session order
#: (:meth:`~sediment.plugin.ExportContext.session_runs`, which spreads the runs over workers).
SessionRuns = Callable[[Callable[[Iterator[SessionCompletions]], "AdmittedRun"]], Iterator["AdmittedRun"]]


def _runs(sessions: Iterable[SessionCompletions] | SessionRuns) -> SessionRuns:
    """``sessions`` as runs: a ``session_runs`` as it is, Sessions as one run admitted here."""
    if callable(sessions):
        return sessions
    def runs(job: Callable[[Iterator[SessionCompletions]], AdmittedRun]) -> Iterator[AdmittedRun]:
        yield job(iter(sessions))
    return runs


def project_pairs(sessions: Iterable[SessionCompletions] | SessionRuns, policy: DPOPolicy
                  ) -> Iterator[dict[str, Any] | str]:
    """Every pair row and skip reason of ``sessions`` under ``policy``, in output order:
    admission counts (per AC, Sessions in the order given), then per bucket in ascending key
    order its dedupe, CI-resolver and labelling counts, pairs and cap count. ``sessions`` is the
    Sessions' completions, or an export's ``ExportContext.session_runs`` (which admits runs of
    them in worker processes)."""
    for item in spooled_buckets(sessions, policy):
        if isinstance(item, str):
            yield item
        else:
            yield from _bucket(item[1], policy)


#: The spool's tables: each bucket's whole prompt, and each admitted member (pickled) by bucket.
_SCHEMA = ("CREATE TABLE prompt (digest BLOB PRIMARY KEY, text BLOB)",
           "CREATE TABLE member (digest BLOB, seq INTEGER, body BLOB)")


def _scratch(path: str) -> sqlite3.Connection:
    """A scratch SQLite file read back by one process: no rollback journal, no sync, and pages
    large enough for a prompt or a member (megabytes each) to take few of them (a new file's)."""
    db = sqlite3.connect(path)
    for pragma in ("page_size = 65536", "journal_mode = OFF", "synchronous = OFF"):
        db.execute(f"PRAGMA {pragma}")
    return db


@dataclass
class AdmittedRun:
    """One run of Sessions admitted: its admission skip reasons in order, the spool file holding
    its members (``seq`` from 0) and the prompts of the buckets it opened, with each such
    bucket's ``(org, model, prompt prefix)``."""

    reasons: list[str]
    path: str
    buckets: dict[bytes, tuple[str, str, str]]
    members: int


def admit_run(sessions: Iterator[SessionCompletions], policy: DPOPolicy, directory: str) -> AdmittedRun:
    """Admit each completion of ``sessions`` into a new spool file in ``directory``."""
    path = str(Path(tempfile.mkdtemp(dir=directory)) / "members.db")  # a name no other worker's run takes
    run = AdmittedRun([], path, {}, 0)
    db = _scratch(path)
    try:
        for statement in _SCHEMA:
            db.execute(statement)
        for completions in sessions:
            known: MessageKeys = {}
            for completion in completions:
                admitted = _admit(completions, completion, policy, known)
                if isinstance(admitted, str):
                    run.reasons.append(admitted)
                    continue
                (org, model, prompt), member = admitted
                # the key's identity: org and model as JSON (no raw newline), a newline, the prompt
                digest = hashlib.sha256(json.dumps([org, model]).encode("ascii") + b"\n"
                                        + prompt.encode("utf-8", "surrogatepass")).digest()
                if digest not in run.buckets:
                    run.buckets[digest] = (org, model, prompt[:PROMPT_PREFIX])
                    db.execute("INSERT INTO prompt VALUES (?, ?)", (digest, prompt.encode("utf-8", "surrogatepass")))
                db.execute("INSERT INTO member VALUES (?, ?, ?)",
                           (digest, run.members, pickle.dumps(member, protocol=pickle.HIGHEST_PROTOCOL)))
                run.members += 1
        db.commit()
    finally:
        db.close()
    return run


def spooled_buckets(sessions: Iterable[SessionCompletions] | SessionRuns, policy: DPOPolicy
                    ) -> Iterator[str | tuple[tuple[str, str], list[Member]]]:
    """Each admission skip reason (per AC, Sessions in the order given), then each bucket in
    ascending ``(org, model, prompt)`` order as ``((org, model), its members)``, the members
    ordered by call id and completion.

    Memory stays flat as Sessions grow: a bucket key holds the whole prompt and a member its
    mapped conversation, so admitted members and their prompts wait in temporary SQLite files;
    only each bucket's digest and a prompt prefix stay in memory, and one bucket is resident at
    a time. Admission is per Session, so runs of Sessions may be admitted apart (``sessions``
    given as runs), each into its own file; their members join one file in Session order, as one run's would."""
    with tempfile.TemporaryDirectory(prefix="sediment-dpo-") as directory:
        meta: dict[bytes, tuple[str, str, str]] = {}
        db: sqlite3.Connection | None = None
        try:
            seq = 0
            for run in _runs(sessions)(lambda part: admit_run(part, policy, directory)):
                yield from run.reasons
                if db is None:  # the first run's file is the spool the others join
                    db, seq = _scratch(run.path), run.members
                    meta.update(run.buckets)
                    continue
                db.execute("ATTACH DATABASE ? AS run", (run.path,))
                db.execute("INSERT OR IGNORE INTO prompt SELECT digest, text FROM run.prompt")
                db.execute("INSERT INTO member SELECT digest, seq + ?, body FROM run.member", (seq,))
                db.commit()
                db.execute("DETACH DATABASE run")
                os.unlink(run.path)
                for digest, values in run.buckets.items():
                    meta.setdefault(digest, values)
                seq += run.members
            if db is None:
                return
            db.execute("CREATE INDEX member_bucket ON member (digest, seq)")
            spool = db

            def full_text(digest: bytes) -> str:
                [(text,)] = spool.execute("SELECT text FROM prompt WHERE digest = ?", (digest,)).fetchall()
                return bytes(text).decode("utf-8", "surrogatepass")

            for digest in _bucket_order(meta, full_text):
                members = [pickle.loads(body) for (body,) in spool.execute(
                    "SELECT body FROM member WHERE digest = ? ORDER BY seq", (digest,))]
                org, model, _ = meta[digest]
                yield (org, model), sorted(members, key=lambda m: (m.call_id, m.completion.sort_key))
        finally:
            if db is not None:
                db.close()
