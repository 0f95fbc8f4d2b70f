"""Test kit for Sediment and for plugin authors (load with ``pytest_plugins = ["sediment.testing"]``).

Builders for real git mirrors, Facts and Rollouts, and a helper that reads exported JSONL
and validates every row against the published schemas.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sediment.facts import CIOutcome, InferenceCall, InferenceMessage, TextPart, ToolCallPart
from sediment.mirrors import MirrorRoot, MirrorWriter
from sediment.policy import ROLLOUT_IMPLEMENTATION_VERSION, DerivationPolicy, Provenance
from sediment.rollout import CommitRef, Rollout, segment_calls
from sediment.split import Split
from sediment.validation import row_errors

ORG = "acme"
REPO = "owner/repo"
T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
POLICY = DerivationPolicy()
PROVENANCE = Provenance(policy_version=ROLLOUT_IMPLEMENTATION_VERSION, quarantine_revision=0,
                        policy_digest=POLICY.digest)


class GitRepo:
    """A real bare mirror in a mirror root, with commits made one by one."""

    def __init__(self, root: MirrorRoot, repo: str = REPO, org_id: str = ORG) -> None:
        self.root = root
        self.repo = repo
        self.path = root.mirror_path(org_id, repo)
        self._writer = MirrorWriter(self.path)
        self._clock = 1_767_000_000

    def commit(self, files: dict[str, str | None], message: str = "change") -> str:
        self._clock += 60
        return self._writer.commit(files, message, when=self._clock)


def message(role: str, *parts: Any, finish_reason: str | None = None) -> InferenceMessage:
    """A message from parts (plain strings become text parts)."""
    typed = tuple(TextPart(content=p) if isinstance(p, str) else p for p in parts)
    return InferenceMessage(role=role, parts=typed, finish_reason=finish_reason)


def call(session_id: str, index: int, inputs: Sequence[InferenceMessage],
         outputs: Sequence[InferenceMessage], *, org_id: str = ORG, **fields: Any) -> InferenceCall:
    return InferenceCall(
        inference_call_id=f"{session_id}-c{index}", org_id=org_id, session_id=session_id,
        input_messages=tuple(inputs), output_messages=tuple(outputs),
        observed_at=T0 + timedelta(seconds=index), **fields,
    )


def conversation(session_id: str, prompt: str = "fix the bug", turns: int = 2,
                 *, org_id: str = ORG) -> list[InferenceCall]:
    """A replaying tool loop of ``turns`` calls that continues as one segment."""
    history = [message("user", prompt)]
    calls = []
    for index in range(turns):
        output = message("assistant", ToolCallPart(id=f"{session_id}-t{index}", name="edit",
                                                   arguments={"path": "a.py", "text": f"step {index}"}))
        calls.append(call(session_id, index, history, [output], org_id=org_id))
        history = [*history, output]
    return calls


def outcome(outcome_id: str, sha: str, result: str = "passed", *, run_id: str = "1",
            attempt: int | None = 1, repo: str = REPO, org_id: str = ORG,
            minutes: int = 0, **fields: Any) -> CIOutcome:
    base: dict[str, Any] = {
        "workflow_name": "tests", "workflow_id": "77", "workflow_path": ".github/workflows/ci.yml",
        "branch": "main", "provider": "github_actions",
    }
    base.update(fields)
    return CIOutcome(
        outcome_id=outcome_id, org_id=org_id, run_id=run_id, run_attempt=attempt, repo=repo,
        commit_sha=sha, result=result, captured_at=T0 + timedelta(minutes=minutes), **base,
    )


def rollout(session_id: str, *, calls: Sequence[InferenceCall] | None = None,
            commits: Sequence[str | CommitRef] = (), outcomes: Sequence[CIOutcome] = (),
            split: Split = "train", org_id: str = ORG, repo: str = REPO, **fields: Any) -> Rollout:
    """A Rollout built through real segmentation of ``calls`` (a two-call loop by default)."""
    segments, _ = segment_calls(calls if calls is not None else conversation(session_id, org_id=org_id))
    refs = tuple(c if isinstance(c, CommitRef) else CommitRef(repo=repo, commit_sha=c) for c in commits)
    values: dict[str, Any] = {
        "org_id": org_id, "session_id": session_id, "segments": segments, "commits": refs,
        "attribution_source": "git_notes", "terminal_outcomes": tuple(outcomes),
        "provenance": PROVENANCE, "split": split,
    }
    values.update(fields)
    return Rollout(**values)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Parse a JSONL file and assert every row validates against its published schema."""
    rows = []
    with path.open("r", encoding="ascii") as handle:
        for number, line in enumerate(handle, start=1):
            row = json.loads(line)
            errors = row_errors(row)
            assert not errors, f"{path.name}:{number} violates its schema: {errors}"
            rows.append(row)
    return rows


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every regular file under ``directory`` (relative name → bytes)."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture
def mirror_root(tmp_path: Path) -> MirrorRoot:
    path = tmp_path / "mirrors"
    path.mkdir()
    return MirrorRoot(path)


@pytest.fixture
def git_repo(mirror_root: MirrorRoot) -> GitRepo:
    return GitRepo(mirror_root)


@pytest.fixture(autouse=True)
def _clean_sediment_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No operator configuration leaks into tests."""
    for name in ("SEDIMENT_VERIFIER_COMMANDS_FILE", "SEDIMENT_OPENENV_IMAGE", "SEDIMENT_OPENENV_PACKAGE",
                 "SEDIMENT_NEMO_GYM_RESOURCES_SERVER", "SEDIMENT_NEMO_GYM_CONFIG", "SEDIMENT_MIRROR_PATH",
                 "SEDIMENT_BLOCK_PLUGINS", "SEDIMENT_RAISE_ERRORS", "SEDIMENT_HOME", "SEDIMENT_DATABASE_URL",
                 "SEDIMENT_ORG_ID"):
        monkeypatch.delenv(name, raising=False)
    yield


def _postgres_database(base_url: str) -> str:
    """A fresh, uniquely named database on the test server; its URL."""
    import secrets

    import psycopg

    name = f"sediment_test_{secrets.token_hex(6)}"
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return base_url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh fact store URL on each backend. PostgreSQL needs SEDIMENT_TEST_DATABASE_URL
    (``./run test`` starts a server); under CI its absence is a failure, not a skip."""
    import os

    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'facts.db'}"
    base = os.environ.get("SEDIMENT_TEST_DATABASE_URL")
    if not base:
        if os.environ.get("CI") == "true":
            pytest.fail("SEDIMENT_TEST_DATABASE_URL is not set under CI: the PostgreSQL store tests must run")
        pytest.skip("no PostgreSQL test server (run the suite through ./run test)")
    return _postgres_database(base)
