"""The published row schemas: well-formed, closed, cross-referenced, and usable.

Self-contained: reads the core's ``schemas/*/*.json`` and the built-in plugins'
``plugins/*/schemas/*.json`` (no project imports).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

ROOT = Path(__file__).parents[1]
SCHEMA_DIRS = [ROOT / "schemas" / "training-rows", ROOT / "schemas" / "trainer-messages",
               ROOT / "schemas" / "profile-rows", *sorted(ROOT.glob("plugins/*/schemas"))]
SCHEMAS = "https://sediment.so/schemas/"
BASE = f"{SCHEMAS}training-rows/"
DRAFT_URI = "https://json-schema.org/draft/2020-12/schema"
FILE_NAME = re.compile(r"^(?P<slug>[a-z0-9]+(?:-[a-z0-9]+)*)\.v(?P<version>[1-9][0-9]*)\.json$")

EXPECTED_FILES = {
    # rows
    "sediment-rlvr-task.v3.json",
    "sediment-rlvr-rollout.v4.json",
    "swe-bench-task.v3.json",
    "swe-bench-instance.v2.json",  # the native rows of profile swe-bench-tasks-v2 (docs/profiles.md)
    "harbor-task-index.v1.json",  # the native rows of profile harbor-tasks-v1
    "nemo-gym-swebench-task.v1.json",  # the native rows of profile nemo-gym-swebench-tasks-v1
    "hf-chat-messages-row.v1.json",  # the native rows of profile hf-chat-messages-v1 (plugins/hf_chat)
    "hf-chat-prompt-row.v1.json",  # ... of hf-chat-prompts-v1
    "hf-trl-sft-row.v3.json",  # ... of hf-trl-sft-v3
    "hf-trl-dpo-row.v4.json",  # ... of hf-trl-dpo-v4
    "fireworks-sft-row.v2.json",  # ... of fireworks-sft-v2 (plugins/fireworks)
    "fireworks-dpo-row.v3.json",  # ... of fireworks-dpo-v3
    "verifiers-task.v1.json",  # ... of verifiers-tasks-v1 (plugins/responses)
    "nemo-gym-rollout-row.v2.json",  # ... of nemo-gym-rollouts-v2
    "nemo-gym-rollout.v4.json",
    "diff-sft-sample.v4.json",
    "sft-sample.v4.json",
    "sft-metadata.v4.json",
    # components (docs/exports.md)
    "rlvr-turn.v3.json",
    "rlvr-decision.v2.json",
    "rlvr-inference-message.v2.json",
    "nemo-gym-metadata.v4.json",
    "nemo-gym-response.v3.json",
    "nemo-gym-responses-create-params.v2.json",
    "swe-bench-metadata.v3.json",
    "verification.v1.json",
    # DPO (docs/dpo.md)
    "dpo-pair.v5.json",
    "dpo-metadata.v5.json",
    "dpo-provenance.v1.json",
    # diff-SFT (docs/diff-sft.md)
    "diff-sft-metadata.v4.json",
    "diff-sft-source-ids.v2.json",
    # shared components
    "ci-outcome.v1.json",
    "ci-resolution.v1.json",
    "ci-workflow-resolution.v1.json",
    "provenance.v1.json",
    "training-provenance.v1.json",
    "repository-identity.v1.json",
    "call-capture.v1.json",
    "message-part.v1.json",
    # trainer messages (the SFT / DPO message components)
    "function-call.v1.json",
    "tool-call.v1.json",
    "text-message.v1.json",
    "assistant-content-message.v1.json",
    "assistant-thinking-message.v1.json",
    "assistant-tool-call-message.v1.json",
    "tool-message.v1.json",
    "tool-definition.v1.json",
    # profile exports
    "profile-evidence.v1.json",
    # recovery (plugins/recovery)
    "recovery-row.v3.json",
    "recovery-attribution-evidence.v1.json",
}

# Keywords whose value is a map of name -> subschema, a subschema, or a list of subschemas.
SCHEMA_MAP_KEYWORDS = ("$defs", "properties", "patternProperties", "dependentSchemas")
SCHEMA_KEYWORDS = (
    "additionalProperties", "items", "contains", "propertyNames", "not", "if", "then", "else",
    "unevaluatedItems", "unevaluatedProperties", "contentSchema",
)
SCHEMA_LIST_KEYWORDS = ("allOf", "anyOf", "oneOf", "prefixItems")
OBJECT_KEYWORDS = (
    "properties", "patternProperties", "additionalProperties", "required", "propertyNames",
    "minProperties", "maxProperties", "dependentRequired", "dependentSchemas",
    "unevaluatedProperties",
)


def schema_files() -> list[Path]:
    return sorted((p for d in SCHEMA_DIRS for p in d.glob("*.json")), key=lambda p: p.name)


def family(path: Path) -> str:
    """The core's folder (``training-rows``, ``trainer-messages``, ``profile-rows``); ``training-rows``
    for every plugin's row schema."""
    return path.parent.name if path.parent.parent.name == "schemas" else "training-rows"


@cache
def load(name: str) -> dict[str, Any]:
    [path] = [p for p in schema_files() if p.name == name]
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


@cache
def registry() -> Registry:
    resources = [
        (schema["$id"], Resource.from_contents(schema, default_specification=DRAFT202012))
        for schema in (load(p.name) for p in schema_files())
    ]
    return Registry().with_resources(resources)


def schema_id(slug: str, version: int) -> str:
    return f"{BASE}{slug}/v{version}.json"


def subschemas(schema: Any, pointer: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every (sub)schema object in ``schema`` with its JSON pointer (boolean schemas skipped)."""
    if not isinstance(schema, dict):
        return
    yield pointer, schema
    for keyword in SCHEMA_MAP_KEYWORDS:
        for name, child in schema.get(keyword, {}).items():
            yield from subschemas(child, f"{pointer}/{keyword}/{name}")
    for keyword in SCHEMA_KEYWORDS:
        if keyword in schema:
            yield from subschemas(schema[keyword], f"{pointer}/{keyword}")
    for keyword in SCHEMA_LIST_KEYWORDS:
        for index, child in enumerate(schema.get(keyword, [])):
            yield from subschemas(child, f"{pointer}/{keyword}/{index}")


def is_object_schema(schema: dict[str, Any]) -> bool:
    declared = schema.get("type")
    types = declared if isinstance(declared, list) else [declared]
    return "object" in types or any(keyword in schema for keyword in OBJECT_KEYWORDS)


def test_every_expected_file_is_published() -> None:
    assert {p.name for p in schema_files()} == EXPECTED_FILES


@pytest.mark.parametrize("path", schema_files(), ids=lambda p: p.name)
def test_file_is_a_draft_2020_12_schema_named_by_its_id(path: Path) -> None:
    schema = load(path.name)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == DRAFT_URI
    match = FILE_NAME.fullmatch(path.name)
    assert match, f"{path.name} is not named <slug>.v<version>.json"
    assert schema["$id"] == f"https://sediment.so/schemas/{family(path)}/{match['slug']}/v{match['version']}.json"


@pytest.mark.parametrize("path", schema_files(), ids=lambda p: p.name)
def test_every_object_schema_is_closed(path: Path) -> None:
    open_objects = [
        pointer
        for pointer, sub in subschemas(load(path.name))
        if is_object_schema(sub) and sub.get("additionalProperties") is not False
    ]
    assert not open_objects, f"object schemas without additionalProperties false: {open_objects}"


@pytest.mark.parametrize("path", schema_files(), ids=lambda p: p.name)
def test_every_ref_resolves_to_a_published_file(path: Path) -> None:
    schema = load(path.name)
    published = {load(p.name)["$id"] for p in schema_files()}
    resolver = registry().resolver(base_uri=schema["$id"])
    refs = [(pointer, sub["$ref"]) for pointer, sub in subschemas(schema) if "$ref" in sub]
    for pointer, ref in refs:
        assert ref.startswith(SCHEMAS), f"{pointer}: $ref {ref} is not an absolute schema id"
        assert urldefrag(ref).url in published, f"{pointer}: $ref {ref} names no published file"
        resolved = resolver.lookup(ref)
        assert isinstance(resolved.contents, dict), f"{pointer}: $ref {ref} is not a schema object"


# --- sample rows, shaped like the targets' output ------------------------------------------

ORG, SESSION, SHA = "acme", "sess-1", "0123456789abcdef0123456789abcdef01234567"
PROVENANCE = {"policy_version": "4", "quarantine_revision": 0, "policy_digest": "a" * 64}
OUTCOME = {
    "schema_version": 2, "repository_provider": None, "repository_host": None,
    "repository_id": None, "outcome_id": "o-1", "org_id": ORG, "provider": "github_actions",
    "run_id": "101", "run_attempt": 1, "repo": "owner/repo", "commit_sha": SHA, "branch": "main",
    "result": "passed", "workflow_name": "tests", "workflow_id": "9001",
    "workflow_path": ".github/workflows/tests.yml", "run_url": None, "provider_result": "success",
    "error_type": None, "reason": None, "source_event_type": None, "source_spec_version": None,
    "source_event_id": None, "pr_number": None, "captured_at": "2026-03-02T09:20:00Z",
    "raw": {"conclusion": "success"},
}
RESOLUTION = {
    "org_id": ORG, "repo": "owner/repo", "commit_sha": SHA, "verdict": "passed",
    "reliability": 1.0, "suspected_flake": False,
    "workflow_resolutions": [{
        "provider": "github_actions", "run_id": "101", "workflow_id": "9001",
        "workflow_name": "tests", "workflow_path": ".github/workflows/tests.yml",
        "branch": "main", "verdict": "passed", "reliability": 1.0, "suspected_flake": False,
        "source_outcome_ids": ["o-1"], "verdict_outcome_id": "o-1", "non_verdict_outcome_ids": [],
    }],
    "source_outcome_ids": ["o-1"], "verdict_outcome_ids": ["o-1"], "non_verdict_outcome_ids": [],
    "provenance": {**PROVENANCE, "policy_version": "2"}, "repository_identity": None,
}
TOOL_CALL = {"type": "tool_call", "id": "tc-1", "name": "edit", "arguments": {"path": "a.py"}}
TURN = {
    "inference_call_id": "call-1",
    "new_messages": [
        {"role": "user", "parts": [{"type": "text", "content": "Fix add()."}]},
        {"role": "assistant", "parts": [{"type": "reasoning", "content": "hm"}, TOOL_CALL],
         "finish_reason": "tool_calls"},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "tc-1", "result": None}]},
    ],
    "completion": "a.py",
    "tool_calls": [TOOL_CALL],
    "decisions": [{"accepted": True, "explicit": False, "agent_harness": "codex",
                   "interaction_mode": "agent", "file_path": ""}],
}
EVIDENCE = {
    "attribution_source": "git_notes", "split": "train", "provenance": PROVENANCE,
    "session_commit_observation_ids": ["obs-1"], "repository_identity": None,
}
TASK = {
    "instance_id": f"{ORG}-{SESSION}-{SHA[:7]}", "recipe_id": "rlvr_ci", "recipe_version": 1,
    "reward_source": "resolved_ci_pass", "repo": "owner/repo", "base_commit": SHA,
    "problem_statement": "Fix add().", "reference_patch": "", "verifier_results": [OUTCOME],
    "ci_resolution": RESOLUTION, **EVIDENCE,
    "schema_id": schema_id("sediment-rlvr-task", 3), "schema_version": 3,
}
ROLLOUT = {
    "instance_id": f"{ORG}-{SESSION}-seg0", "recipe_id": "rlvr_ci", "recipe_version": 1,
    "reward_source": "resolved_ci_pass", "ci_resolution": RESOLUTION, "org_id": ORG,
    "session_id": SESSION, "segment_index": 0, "turns": [TURN], "verifier_results": [OUTCOME],
    "ci_resolutions": [RESOLUTION], **EVIDENCE,
    "schema_id": schema_id("sediment-rlvr-rollout", 4), "schema_version": 4,
}
SWE = {
    "instance_id": f"{ORG}-{SESSION}-{SHA[:7]}", "repo": "owner/repo", "base_commit": SHA,
    "problem_statement": "Fix add().", "patch": "",
    "metadata": {
        "recipe_id": "rlvr_ci", "recipe_version": 1, "reward_source": "resolved_ci_pass",
        "verification": {"verification_command": "pytest -q"}, "verifier_results": [OUTCOME],
        "ci_resolution": RESOLUTION, **EVIDENCE,
        "schema_id": schema_id("swe-bench-task", 3), "schema_version": 3,
    },
}
NEMO = {
    "responses_create_params": {"input": TURN["new_messages"]},
    "response": {"turns": [TURN]},
    "reward": 1.0,
    "metadata": {
        "instance_id": f"{ORG}-{SESSION}-seg0", "recipe_id": "rlvr_ci", "recipe_version": 1,
        "reward_source": "resolved_ci_pass", "org_id": ORG, "session_id": SESSION,
        "segment_index": 0, "verifier_results": [OUTCOME], "ci_resolution": RESOLUTION,
        **EVIDENCE, "schema_id": schema_id("nemo-gym-rollout", 4), "schema_version": 4,
    },
}
RECOVERY = {
    "org_id": ORG, "recipe_id": "recovery_ci", "recipe_version": 1, "repo": "owner/repo", "branch": "main",
    "workflow_name": "tests", "workflow_path": ".github/workflows/tests.yml", "failed_commit_sha": SHA,
    "fixed_commit_sha": "f" * 40, "failed_outcome_id": "o-1", "fixed_outcome_id": "o-2",
    "recovery_diff": "diff --git a/a.py b/a.py\n", "failed_inference_call_ids": [],
    "fixed_inference_call_ids": ["call-1"], "provenance": {**PROVENANCE, "policy_version": "5"}, "split": "train",
    "repository_identity": None, "failed_attribution_evidence": [],
    "fixed_attribution_evidence": [{"inference_call_id": "call-1", "session_id": SESSION,
                                    "attribution_sources": ["git_notes"], "session_commit_observation_ids": ["obs-1"]}],
    "schema_id": schema_id("recovery-row", 3), "schema_version": 3,
}
SAMPLES = {
    "recovery-row.v3.json": RECOVERY,
    "sediment-rlvr-task.v3.json": TASK,
    "sediment-rlvr-rollout.v4.json": ROLLOUT,
    "swe-bench-task.v3.json": SWE,
    "nemo-gym-rollout.v4.json": NEMO,
}


def errors(name: str, row: Any) -> list[str]:
    validator = Draft202012Validator(load(name), registry=registry())
    return [error.message for error in validator.iter_errors(row)]


def mutated(row: dict[str, Any], change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    copied = copy.deepcopy(row)
    change(copied)
    return copied


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_row_validates_and_extra_keys_are_rejected(name: str) -> None:
    row = SAMPLES[name]
    assert errors(name, row) == []
    assert errors(name, mutated(row, lambda r: r.update(unexpected=1)))


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("sediment-rlvr-rollout.v4.json",
         lambda r: (r.pop("reward_source"), r.pop("ci_resolution"))),
        ("nemo-gym-rollout.v4.json",
         lambda r: (r.pop("reward"), r["metadata"].pop("reward_source"),
                    r["metadata"].pop("ci_resolution"))),
        ("sediment-rlvr-task.v3.json",
         lambda r: r.update(verification={"verification_command": "pytest -q"})),
        ("swe-bench-task.v3.json", lambda r: r["metadata"].pop("verification")),
        ("sediment-rlvr-task.v3.json", lambda r: r.update(repository_identity={
            "provider": "github", "host": "github.com", "repository_id": "42"})),
        ("nemo-gym-rollout.v4.json", lambda r: r.update(reward=0.0)),
        ("recovery-row.v3.json", lambda r: r.update(workflow_path=None, repository_identity={
            "provider": "github", "host": "github.com", "repository_id": "42"})),
    ],
)
def test_optional_fields_may_be_absent_or_present(
    name: str, change: Callable[[dict[str, Any]], object]
) -> None:
    assert errors(name, mutated(SAMPLES[name], change)) == []


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("sediment-rlvr-rollout.v4.json", lambda r: r.update(reward_source=None)),
        ("sediment-rlvr-rollout.v4.json", lambda r: r.update(ci_resolution=None)),
        ("nemo-gym-rollout.v4.json", lambda r: r.update(reward=None)),
        ("nemo-gym-rollout.v4.json", lambda r: r.update(reward=0.5)),
        ("sediment-rlvr-task.v3.json", lambda r: r.update(verification=None)),
        ("sediment-rlvr-task.v3.json", lambda r: r.pop("reward_source")),
        ("sediment-rlvr-task.v3.json", lambda r: r.pop("repository_identity")),
        ("sediment-rlvr-task.v3.json",
         lambda r: r.update(session_commit_observation_ids=["a", "a"])),
        ("sediment-rlvr-task.v3.json", lambda r: r["verifier_results"][0].update(outcome_id="a\0")),
        ("sediment-rlvr-task.v3.json",
         lambda r: r["verifier_results"][0].update(captured_at="2026-03-02T09:20:00+00:00")),
        ("sediment-rlvr-rollout.v4.json",
         lambda r: r["turns"][0]["new_messages"][1].update(finish_reason=None)),
        ("sediment-rlvr-rollout.v4.json",
         lambda r: r["turns"][0]["decisions"][0].update(decision_id="d-1")),
        ("swe-bench-task.v3.json", lambda r: r.update(test_patch="")),
        ("swe-bench-task.v3.json",
         lambda r: r["metadata"].update(reward_source="resolved_ci_fail")),
        ("recovery-row.v3.json", lambda r: r.pop("failed_inference_call_ids")),
        ("recovery-row.v3.json", lambda r: r.update(workflow_path="")),
        ("recovery-row.v3.json", lambda r: r.update(fixed_inference_call_ids=["call-1", "call-1"])),
        ("recovery-row.v3.json", lambda r: r["fixed_attribution_evidence"][0].update(attribution_sources=[])),
        ("recovery-row.v3.json", lambda r: r["fixed_attribution_evidence"][0].update(extra=1)),
        ("recovery-row.v3.json", lambda r: r.update(recipe_id="rlvr_ci")),
        ("recovery-row.v3.json", lambda r: r.update(split="test")),
    ],
)
def test_contract_violations_are_rejected(
    name: str, change: Callable[[dict[str, Any]], object]
) -> None:
    assert errors(name, mutated(SAMPLES[name], change))


CAPTURE = {"source": "transcript:claude-code@2.0.69", "lacks": ["exact_request", "token_ids"],
           "parent_session_id": "parent-1"}


@pytest.mark.parametrize(("change", "valid"), [
    (lambda c: None, True),
    (lambda c: c.pop("parent_session_id"), True),
    (lambda c: c.update(lacks=[]), True),
    (lambda c: c.update(source="gateway"), False),
    (lambda c: c.update(source="transcript:Claude Code@1"), False),
    (lambda c: c.update(lacks=["token_ids", "token_ids"]), False),
    (lambda c: c.update(lacks=["tokens"]), False),
    (lambda c: c.pop("lacks"), False),
    (lambda c: c.update(parent_session_id=""), False),
    (lambda c: c.update(extra=1), False),
])
def test_the_call_capture_schema(change: Callable[[dict[str, Any]], object], valid: bool) -> None:
    """The marker SFT, diff-SFT and DPO metadata carry for a call rebuilt from a client transcript."""
    assert (errors("call-capture.v1.json", mutated(CAPTURE, change)) == []) is valid


@pytest.mark.parametrize(("first", "second"), [
    ("verifiers-task.v1.json", "nemo-gym-rollout-row.v2.json"),
    ("hf-trl-sft-row.v3.json", "hf-trl-dpo-row.v4.json"),
])
def test_sibling_profiles_share_their_component_definitions_verbatim(first: str, second: str) -> None:
    """Each profile registers only its own schema (a sibling may not be loaded), so siblings carry
    their shared components as ``$defs``: they must not drift apart."""
    def components(name: str) -> Any:  # their references to each other made relative to the file
        schema = load(name)
        return json.loads(json.dumps(schema["$defs"]).replace(schema["$id"], ""))

    assert components(first) == components(second)


NATIVE_ROW_SCHEMAS = ["swe-bench-instance.v2.json", "harbor-task-index.v1.json", "nemo-gym-swebench-task.v1.json",
                      "hf-chat-messages-row.v1.json", "hf-chat-prompt-row.v1.json", "hf-trl-sft-row.v3.json",
                      "hf-trl-dpo-row.v4.json", "fireworks-sft-row.v2.json", "fireworks-dpo-row.v3.json",
                      "verifiers-task.v1.json", "nemo-gym-rollout-row.v2.json"]


@pytest.mark.parametrize("name", NATIVE_ROW_SCHEMAS)
def test_a_native_row_schema_names_no_schema_id(name: str) -> None:
    """A profile's data rows are not canonical rows: no schema_id, at the top or under metadata."""
    properties = load(name)["properties"]
    assert "schema_id" not in properties
    assert "schema_id" not in properties.get("metadata", {}).get("properties", {})
