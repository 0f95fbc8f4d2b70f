"""Fact models: the immutable, append-only evidence everything else derives from.

Field names, order and vocabularies follow docs/evidence.md (The Facts). Models are
frozen and reject unknown fields; ``raw`` payloads and free-form values are kept
losslessly (NaN, infinities, lone surrogates and NUL survive; only export declines them).

Scalar fields are strict where the wire format is: an integer is an integer (never ``true``,
``1.0`` or ``"1"``), a float is a number (never a bool or a string), a bool is ``true`` or
``false`` (never ``0`` / ``1``), a time is an RFC 3339 string with an offset or an aware
datetime (never unix seconds; see :data:`~sediment.identifiers.UtcDatetime`). Containers stay
as JSON gives them (a list for a tuple), so canonical records and bundles still validate
from parsed JSON.

Fact ids are at most :data:`~sediment.identifiers.FACT_ID_MAX_LENGTH` characters (the store's
key column), and a test result's run attempt fits the store's 32-bit integer column.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, model_validator

from sediment.identifiers import (
    BranchName,
    CommitSha,
    ExactInt,
    FactId,
    NonEmptyId,
    NonEmptyRepoSlug,
    OrgId,
    RepoSlug,
    UtcDatetime,
)

INT32_MAX = 2**31 - 1
"""The largest value of the store's ``INTEGER`` columns (PostgreSQL's is 32-bit)."""


class FactModel(BaseModel):
    """Base for every Fact and derived model: frozen, closed, lossless."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")


# --- message parts -------------------------------------------------------------------


class TextPart(FactModel):
    type: Literal["text"] = "text"
    content: str


class ReasoningPart(FactModel):
    type: Literal["reasoning"] = "reasoning"
    content: str


class ToolCallPart(FactModel):
    type: Literal["tool_call"] = "tool_call"
    id: NonEmptyId
    name: str
    arguments: dict[str, Any]


class ToolCallResponsePart(FactModel):
    type: Literal["tool_call_response"] = "tool_call_response"
    id: NonEmptyId
    result: Any = None


Part = Annotated[
    TextPart | ReasoningPart | ToolCallPart | ToolCallResponsePart,
    Field(discriminator="type"),
]


class InferenceMessage(FactModel):
    role: str
    parts: tuple[Part, ...]
    finish_reason: str | None = None


class ToolDefinition(FactModel):
    """One tool a call's request declared to the model.

    Function tools carry their name, description and the JSON Schema of their arguments
    (``parameters``, as the request sent it) and ``strict`` when the request set it. A
    provider's built-in tool (a web search, a code interpreter) keeps its provider ``type``
    and name; its other settings stay in the call's ``raw`` record.
    """

    type: str = "function"
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: StrictBool | None = None


# --- Facts ---------------------------------------------------------------------------

GatewayProvider = Literal["litellm", "portkey", "helicone", "unknown"]
CIProvider = Literal["github_actions", "jenkins", "gitlab_ci", "circleci", "buildkite", "other", "github_checks"]
CIResult = Literal[
    "passed", "failed", "error", "timed_out", "cancelled", "skipped", "neutral", "unknown"
]
VERDICT_RESULTS: frozenset[str] = frozenset({"passed", "failed"})
AgentHarness = Literal["claude-code", "copilot", "codex", "cursor", "pi"]


CaptureLack = Literal[
    "exact_request", "system_prompt", "tool_definitions", "sampling_parameters", "token_ids", "thinking_text",
]
"""What a call rebuilt from a client's transcript does not hold (``docs/transcripts.md``)."""
CAPTURE_LACKS: tuple[CaptureLack, ...] = (
    "exact_request", "system_prompt", "tool_definitions", "sampling_parameters", "token_ids", "thinking_text",
)
GATEWAY_CAPTURE = "gateway"
"""The capture source of a call recorded on the wire (a gateway or API call log)."""
_TRANSCRIPT_SOURCE = r"^transcript:[a-z0-9][a-z0-9-]*@[^\s]+$"


class CallCapture(FactModel):
    """How an inference call was captured, when it was not recorded on the wire.

    ``source`` is ``transcript:<client>@<client version>`` (``@unknown`` when the transcript
    names none); ``lacks`` lists, in :data:`CAPTURE_LACKS` order, what such a call does not
    hold that a wire record would; ``parent_session_id`` links a subagent's Session to the
    Session that started it. A call without a capture (``InferenceCall.capture`` null) came
    from a gateway or API call log: its capture source is :data:`GATEWAY_CAPTURE`.
    """

    source: str = Field(pattern=_TRANSCRIPT_SOURCE, max_length=200)
    lacks: tuple[CaptureLack, ...] = ()
    parent_session_id: NonEmptyId | None = None

    @model_validator(mode="after")
    def _ordered(self) -> CallCapture:
        if list(self.lacks) != sorted(set(self.lacks), key=CAPTURE_LACKS.index):
            raise ValueError("lacks must be distinct and in CAPTURE_LACKS order")
        return self


class InferenceCall(FactModel):
    """One model call of an agent Session; one Turn of a Rollout comes from one call.

    ``capture`` is null for a call recorded on the wire (a gateway or API call log); a call
    rebuilt from a client's transcript names its source and what it lacks (:class:`CallCapture`).
    """

    schema_version: Annotated[Literal[1], ExactInt] = 1
    inference_call_id: FactId
    org_id: OrgId
    session_id: NonEmptyId
    user_id: NonEmptyId | None = None
    gateway_provider: GatewayProvider = "unknown"
    model_provider: str | None = None
    model: NonEmptyId | None = None
    input_messages: tuple[InferenceMessage, ...] = ()
    output_messages: tuple[InferenceMessage, ...] = ()
    #: The tools the request declared, in request order; ``None`` when it declared none.
    tools: tuple[ToolDefinition, ...] | None = None
    input_tokens: StrictInt | None = Field(default=None, ge=0)
    output_tokens: StrictInt | None = Field(default=None, ge=0)
    duration_ms: StrictInt | None = Field(default=None, ge=0, le=2**63 - 1)
    model_call_id: NonEmptyId | None = None
    observed_at: UtcDatetime
    raw: dict[str, Any] = Field(default_factory=dict)
    capture: CallCapture | None = None

    @property
    def capture_source(self) -> str:
        """``gateway`` for a call recorded on the wire, else its transcript source."""
        return GATEWAY_CAPTURE if self.capture is None else self.capture.source


_DNS_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_DNS_HOST = re.compile(rf"^{_DNS_LABEL}(?:\.{_DNS_LABEL})*(?::[0-9]{{1,5}})?$")


def check_identity_triple(provider: str | None, host: str | None, repository_id: str | None) -> None:
    """Reject a repository identity triple that is partly present or ill-formed."""
    triple = (provider, host, repository_id)
    if any(v is None for v in triple) and any(v is not None for v in triple):
        raise ValueError(
            "repository_provider, repository_host and repository_id are all present or all absent"
        )
    if repository_id is not None and not (
        repository_id.isascii() and repository_id.isdigit() and not repository_id.startswith("0")
    ):
        raise ValueError("repository_id must be canonical positive decimal text")
    if host is not None and not _DNS_HOST.fullmatch(host):
        raise ValueError(f"repository_host must be a lowercase DNS host: {host!r}")


ForgeProvider = Literal["github", "gitlab"]
"""The forges whose immutable repository ids Sediment records (GitHub ``repository.id``, GitLab
``project.id``; renames are GitHub's only)."""


class _Identified(FactModel):
    """A Fact scoped to a repository that may carry the identity triple."""

    schema_version: Annotated[Literal[1, 2], ExactInt] = 2
    repository_provider: ForgeProvider | None = None
    repository_host: str | None = None
    repository_id: str | None = None

    @model_validator(mode="after")
    def _identity_triple(self) -> _Identified:
        check_identity_triple(self.repository_provider, self.repository_host, self.repository_id)
        if self.schema_version == 1 and self.repository_provider is not None:
            raise ValueError("repository identity is forbidden on schema_version 1 Facts")
        return self

    @property
    def is_identified(self) -> bool:
        return self.repository_provider is not None

    @property
    def forge_key(self) -> tuple[str | None, ...]:
        """``("identified", provider, host, repository_id)``: what keys an identified Fact's
        repository in its id and natural key instead of its name, so two lifetimes of one name
        never collapse into one Fact (pull request #1 of each, one history pushed to both)."""
        return ("identified", self.repository_provider, self.repository_host, self.repository_id)


class CIOutcome(_Identified):
    """One provider pipeline-run attempt (repository-scoped). Field order is the JSON order."""

    outcome_id: FactId
    org_id: OrgId
    provider: CIProvider
    run_id: NonEmptyId
    run_attempt: StrictInt | None = Field(default=None, ge=1)
    repo: NonEmptyRepoSlug
    commit_sha: CommitSha
    branch: BranchName
    result: CIResult
    workflow_name: str = ""
    workflow_id: str | None = None
    workflow_path: str | None = None
    run_url: str | None = None
    provider_result: str | None = None
    error_type: str | None = None
    reason: str | None = Field(default=None, max_length=4096)
    source_event_type: str | None = None
    source_spec_version: str | None = None
    source_event_id: str | None = None
    pr_number: StrictInt | None = Field(default=None, ge=1)
    captured_at: UtcDatetime
    raw: dict[str, Any] = Field(default_factory=dict)

    @property
    def is_verdict(self) -> bool:
        return self.result in VERDICT_RESULTS


TestOutcome = Literal["passed", "failed", "error", "skipped"]
TEST_OUTCOMES: tuple[TestOutcome, ...] = ("passed", "failed", "error", "skipped")
TestRunner = Literal["pytest", "jest", "go", "surefire", "nextest", "junit"]
TEST_RUNNERS: tuple[TestRunner, ...] = ("pytest", "jest", "go", "surefire", "nextest", "junit")


class TestCaseResult(FactModel):
    """One recorded test outcome of one CI run attempt, read from a JUnit XML report.

    It binds to the CIOutcome of the same ``(org_id, provider, run_id, run_attempt)``. ``test_id``
    is normalized per runner to the form SWE-bench's log parsers report (pytest:
    ``path/to/test_x.py::Class::name[param]``), so one test matches across attempts and
    commits; ``classname`` and ``name`` keep what the report said. ``report_sha256`` and
    ``locator`` (the element's path in the report, e.g. ``testsuites/testsuite[1]/testcase[4]``)
    name the exact element it came from; ``raw`` keeps that element losslessly.
    ``flaky_reruns`` counts failed reruns the runner recorded inside this attempt (a test that
    passed only on a rerun).
    """

    __test__ = False  # not a pytest test class

    schema_version: Annotated[Literal[1], ExactInt] = 1
    test_result_id: FactId
    org_id: OrgId
    provider: CIProvider
    run_id: NonEmptyId
    run_attempt: StrictInt = Field(ge=1, le=INT32_MAX)
    repo: NonEmptyRepoSlug
    commit_sha: CommitSha
    runner: TestRunner
    test_id: NonEmptyId
    outcome: TestOutcome
    classname: str | None = None
    name: str
    suite: str | None = None
    test_file: str | None = None
    duration_ms: StrictInt | None = Field(default=None, ge=0)
    flaky_reruns: StrictInt = Field(default=0, ge=0)
    report_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    locator: NonEmptyId
    captured_at: UtcDatetime
    raw: dict[str, Any] = Field(default_factory=dict)


ObservationSource = Literal["git_notes", "git_ai_notes"]


class SessionCommitObservation(_Identified):
    """The first time a mirror refresh exposed a git-note Session→commit edge."""

    observation_id: FactId
    org_id: OrgId
    repo: NonEmptyRepoSlug
    commit_sha: CommitSha
    session_id: NonEmptyId
    source_push_id: str | None = None
    captured_at: UtcDatetime
    #: which notes named the edge: ``refs/notes/sediment`` (``git_notes``) or git-ai's
    #: ``refs/notes/ai`` authorship notes (``git_ai_notes``, sediment.git.ai_notes)
    attribution_source: ObservationSource = "git_notes"


AGENT_HARNESSES: tuple[AgentHarness, ...] = ("claude-code", "copilot", "codex", "cursor", "pi")
InteractionMode = Literal["agent", "inline"]
RetryToolName = Literal["Edit", "Write"]
INT64_MAX = 2**63 - 1
"""The largest count or delay a Fact holds (the contract's bound: a signed 64-bit integer)."""
UNKNOWN_USER_ID = "unknown"
"""The legacy literal some clients wrote for a missing user: stored as sent (Facts are lossless),
read by derivations as :data:`None` (see :func:`known_user`)."""
FACT_SCHEMA_BASE = "https://sediment.so/schemas/facts"


def known_user(user_id: str | None) -> str | None:
    """A Fact's ``user_id`` as derivations read it: the legacy ``"unknown"`` is no user."""
    return None if user_id == UNKNOWN_USER_ID else user_id


class DeveloperDecision(FactModel):
    """A developer's accept/reject of an agent edit (docs/evidence.md, The Facts; ``facts/developer-decision`` v3).

    ``explicit`` is true for a human gesture (a permission prompt answered, an edit kept or
    undone by hand), false for an auto-applied or retention-inferred one; the pair
    ``(accepted, explicit)`` is the decision vocabulary (explicit or implicit accept or reject).
    ``file_path`` is the path exactly as the client sent it (``""`` when it sent none, as
    rejects usually do; Claude Code sends absolute paths, see :mod:`sediment.git.edit_paths`).
    ``call_id`` joins the decision to an inference call: a provider's response id or the id of
    a tool call the response made. ``edit_retention_score`` is the vendor's graded retention
    (Copilot's ``survival_rate_four_gram``), never overwritten; a derivation may fill a missing
    one from an EditObservation (:mod:`sediment.derive.edit_retention`). ``occurred_at`` is the
    client's event time, never the ingest time.
    """

    schema_id: ClassVar[str] = f"{FACT_SCHEMA_BASE}/developer-decision/v3.json"

    decision_id: FactId
    org_id: OrgId
    session_id: NonEmptyId
    user_id: NonEmptyId | None = None
    agent_harness: AgentHarness
    file_path: str = ""
    accepted: StrictBool
    explicit: StrictBool
    interaction_mode: InteractionMode
    commit_sha: CommitSha | None = None
    call_id: NonEmptyId | None = None
    edit_retention_score: StrictFloat | None = Field(default=None, ge=0.0, le=1.0)
    observation_delay_ms: StrictInt | None = Field(default=None, ge=0, le=INT64_MAX)
    occurred_at: UtcDatetime
    captured_at: UtcDatetime
    raw: dict[str, Any] = Field(default_factory=dict)


class EditObservation(FactModel):
    """What became of one applied agent edit by the end of its Session (docs/evidence.md, The Facts;
    ``facts/edit-observation`` v3).

    ``applied_text`` is the text the edit tool applied (an Edit's new string, a Write's
    content); ``observed_file_text`` the file's content when the Session ended (``""``: the
    file was gone). ``external_lines_added`` / ``external_lines_removed`` count lines something
    other than the agent changed in between (a person, a formatter); ``None`` when no window
    covered the call, never a zero. ``call_id`` is the edit's tool-call id, the join to its
    DeveloperDecision. ``raw`` keeps only ``{"tool_name": …}``: the texts are the fields.
    """

    schema_id: ClassVar[str] = f"{FACT_SCHEMA_BASE}/edit-observation/v3.json"

    observation_id: FactId
    org_id: OrgId
    session_id: NonEmptyId
    user_id: NonEmptyId | None = None
    agent_harness: AgentHarness
    file_path: str
    call_id: NonEmptyId
    applied_text: str
    observed_file_text: str
    external_lines_added: StrictInt | None = Field(default=None, ge=0, le=INT64_MAX)
    external_lines_removed: StrictInt | None = Field(default=None, ge=0, le=INT64_MAX)
    occurred_at: UtcDatetime
    captured_at: UtcDatetime
    raw: dict[str, Any] = Field(default_factory=dict)


class RejectedEdit(FactModel):
    """The text a developer refused for one agent edit (docs/evidence.md, The Facts; ``facts/rejected-edit``
    v3): ``proposed`` is the refused new string or content as the model wrote it; ``call_id``
    joins it to the rejecting DeveloperDecision. Stored, not read by any export yet (a DPO pair
    needs a whole inference call)."""

    schema_id: ClassVar[str] = f"{FACT_SCHEMA_BASE}/rejected-edit/v3.json"

    rejection_id: FactId
    org_id: OrgId
    session_id: NonEmptyId
    user_id: NonEmptyId | None = None
    agent_harness: AgentHarness
    file_path: str
    call_id: NonEmptyId
    proposed: str
    occurred_at: UtcDatetime
    captured_at: UtcDatetime
    raw: dict[str, Any] = Field(default_factory=dict)


class RetryLinkage(FactModel):
    """A rejected edit call and the accepted retry that followed it, on the same file with the
    same tool (docs/evidence.md, The Facts; ``facts/retry-linkage`` v3). Ids only, never text; stored, not
    read by any export yet."""

    schema_id: ClassVar[str] = f"{FACT_SCHEMA_BASE}/retry-linkage/v3.json"

    retry_linkage_id: FactId
    org_id: OrgId
    session_id: NonEmptyId
    user_id: NonEmptyId | None = None
    agent_harness: AgentHarness
    file_path: NonEmptyId
    tool_name: RetryToolName
    rejected_call_id: NonEmptyId
    accepted_call_id: NonEmptyId
    occurred_at: UtcDatetime
    captured_at: UtcDatetime
    raw: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _distinct_calls(self) -> RetryLinkage:
        if self.rejected_call_id == self.accepted_call_id:
            raise ValueError("rejected_call_id and accepted_call_id must differ")
        return self


class Push(_Identified):
    """A branch push seen by the forge (drives mirror refresh; commits newest last)."""

    push_id: FactId
    org_id: OrgId
    provider: Literal["github"] = "github"
    repo: RepoSlug
    ref: BranchName
    before_sha: CommitSha | None = None
    after_sha: CommitSha
    commit_shas: tuple[CommitSha, ...] = ()
    pusher: str | None = None
    source_event_id: str | None = None
    pushed_at: UtcDatetime | None = None
    captured_at: UtcDatetime
    raw: dict[str, Any] = Field(default_factory=dict)


class PullRequestMerge(_Identified):
    """A merged pull request (diagnostic reports only; never read by a training recipe)."""

    merge_id: FactId
    org_id: OrgId
    provider: Literal["github"] = "github"
    repo: NonEmptyRepoSlug
    pr_number: StrictInt = Field(ge=1)
    head_repo: RepoSlug = ""
    head_repository_provider: Literal["github"] | None = None
    head_repository_host: str | None = None
    head_repository_id: str | None = None
    head_ref: BranchName
    head_sha: CommitSha
    base_ref: BranchName
    base_sha: CommitSha
    merge_commit_sha: CommitSha
    merged_at: UtcDatetime
    source_event_id: str | None = None
    captured_at: UtcDatetime


class RepositoryRename(FactModel):
    """A repository's name changed (stored; not yet applied to identity)."""

    rename_id: FactId
    org_id: OrgId
    provider: Literal["github"] = "github"
    repository_host: str | None = None
    repository_id: str | None = None
    old_repo: NonEmptyRepoSlug
    new_repo: NonEmptyRepoSlug
    renamed_at: UtcDatetime
    source_event_id: str | None = None
    captured_at: UtcDatetime


class RepositoryIdentity(FactModel):
    """A forge's immutable identity for a repository (never supplied by a name or SHA)."""

    provider: ForgeProvider
    host: str
    repository_id: str

    @model_validator(mode="after")
    def _well_formed(self) -> RepositoryIdentity:
        check_identity_triple(self.provider, self.host, self.repository_id)
        return self
