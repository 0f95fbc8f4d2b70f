"""The one module a Sediment plugin imports (plugin contract version 2).

Everything an objective, a target, a consumer profile or a manifest writer needs is here: the
hook marker, the declarations, the evidence types and the helpers for building rows. Plugins
import nothing else from ``sediment``; tests use :mod:`sediment.testing` as well. See
``docs/plugins.md``.

Importing this module is light: the declarations and the hook marker load at once; every other
name (settings, evidence, CI, git, the row helpers) loads its module on first use (PEP 562
``__getattr__``), so a plugin pays only for the names it imports.

A target::

    from sediment.plugin import PopulationInfo, ProjectedRow, TargetInfo, hookimpl

    @hookimpl
    def describe_target():
        return TargetInfo(populations={"rollouts": PopulationInfo(SCHEMA_ID, ("no_verdict",))},
                          needs_mirrors=False)
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from sediment.evidence.recipe import Recipe
from sediment.host.declarations import (
    SPLIT_ORDER,
    AdaptedRow,
    Declined,
    Dependency,
    ImporterInfo,
    IncompatibleRow,
    ManifestInfo,
    NotDerived,
    ObjectiveInfo,
    Population,
    PopulationInfo,
    ProfileInfo,
    ProjectedRow,
    PublishedExport,
    TargetInfo,
    TaskDirectory,
)
from sediment.host.diagnosis import DiagnosedRow, FloorCandidate, PromptBucket, Stratum
from sediment.host.hookspecs import CONTRACT_VERSION, hookimpl
from sediment.split import Split

if TYPE_CHECKING:
    from sediment.ci.resolution import (
        RESOLVER_SKIP_REASONS,
        CIResolution,
        CIResolutionResult,
        CIWorkflowResolution,
        CommitKey,
        resolve_ci,
    )
    from sediment.ci.times import finished_time
    from sediment.ci.transitions import TRANSITION_SKIP_REASONS, TestTransitions
    from sediment.derive.attributed_completions import (
        AttributedCompletion,
        CompletionCall,
        CompletionResolution,
        SessionAbandonment,
        SessionCompletions,
    )
    from sediment.derive.confidence import LabelConfidencePolicy, PairConfidence, label_confidence, pair_confidence
    from sediment.evidence.attributed_calls import AttributedCall, CallRecord, CommitAttributions
    from sediment.evidence.chat_tools import chat_tools, tools_state
    from sediment.evidence.context import ExportContext
    from sediment.evidence.reference_patch import PATCH_SKIP_REASONS, ReferencePatch
    from sediment.evidence.representation import (
        REPRESENTATION_REASONS,
        representable_json_text,
        representation_problem,
    )
    from sediment.evidence.rollout import RolloutEvidence, put_optional, reward_source
    from sediment.evidence.tasks import (
        TASK_REMEDIES,
        TaskBasis,
        task_basis,
        task_ineligibility,
        task_instance_id,
        task_skip_reasons,
    )
    from sediment.evidence.trainer_messages import (
        TRAINER_SKIP_REASONS,
        TrainerConversation,
        TrainerDecline,
        TrainingProvenance,
        map_conversation,
        map_inference_prompt,
        strict_json,
    )
    from sediment.evidence.turns import (
        ROLLOUT_SKIP_REASONS,
        capture_row,
        decision_row,
        message_row,
        segment_instance_id,
        turn_row,
    )
    from sediment.export.parquet import parquet_json_columns
    from sediment.export.writer import atomic_write_bytes
    from sediment.git.archive import tree_archive
    from sediment.git.mirror import Mirror
    from sediment.git.read_error import MirrorReadError
    from sediment.identifiers import render_datetime
    from sediment.importing import kit as trajectory_kit
    from sediment.model.facts import (
        CallCapture,
        CIOutcome,
        InferenceMessage,
        Part,
        ReasoningPart,
        TestCaseResult,
        TextPart,
        ToolCallPart,
        ToolCallResponsePart,
        ToolDefinition,
    )
    from sediment.model.policy import Provenance
    from sediment.model.rollout import Rollout, Turn
    from sediment.records import canonical_digest, canonical_json, plain, sha256_hex, sortable_time
    from sediment.settings import PluginSettings, ReadableFile
    from sediment.trajectory.record import Trajectory
    from sediment.trajectory.sources import ImportRefusal
    from sediment.validation import schemas_in

__all__ = [
    "CONTRACT_VERSION",
    "PATCH_SKIP_REASONS",
    "REPRESENTATION_REASONS",
    "RESOLVER_SKIP_REASONS",
    "ROLLOUT_SKIP_REASONS",
    "SPLIT_ORDER",
    "TASK_REMEDIES",
    "TRAINER_SKIP_REASONS",
    "TRANSITION_SKIP_REASONS",
    "AdaptedRow",
    "AttributedCall",
    "AttributedCompletion",
    "CIOutcome",
    "CIResolution",
    "CIResolutionResult",
    "CIWorkflowResolution",
    "CallCapture",
    "CallRecord",
    "CommitAttributions",
    "CommitKey",
    "CompletionCall",
    "CompletionResolution",
    "Declined",
    "Dependency",
    "DiagnosedRow",
    "ExportContext",
    "FloorCandidate",
    "IncompatibleRow",
    "InferenceMessage",
    "LabelConfidencePolicy",
    "ManifestInfo",
    "Mirror",
    "MirrorReadError",
    "NotDerived",
    "ObjectiveInfo",
    "PairConfidence",
    "Part",
    "PluginSettings",
    "Population",
    "PopulationInfo",
    "ProfileInfo",
    "ProjectedRow",
    "PromptBucket",
    "Provenance",
    "PublishedExport",
    "ReadableFile",
    "ReasoningPart",
    "Recipe",
    "ReferencePatch",
    "Rollout",
    "RolloutEvidence",
    "SessionAbandonment",
    "SessionCompletions",
    "Split",
    "Stratum",
    "TargetInfo",
    "TaskBasis",
    "TaskDirectory",
    "TestCaseResult",
    "TestTransitions",
    "TextPart",
    "ToolCallPart",
    "ToolCallResponsePart",
    "ToolDefinition",
    "TrainerConversation",
    "TrainerDecline",
    "TrainingProvenance",
    "Turn",
    "atomic_write_bytes",
    "canonical_digest",
    "canonical_json",
    "capture_row",
    "chat_tools",
    "decision_row",
    "finished_time",
    "hookimpl",
    "label_confidence",
    "map_conversation",
    "map_inference_prompt",
    "message_row",
    "pair_confidence",
    "parquet_json_columns",
    "plain",
    "put_optional",
    "render_datetime",
    "representable_json_text",
    "representation_problem",
    "resolve_ci",
    "reward_source",
    "schemas_in",
    "segment_instance_id",
    "sha256_hex",
    "sortable_time",
    "strict_json",
    "task_basis",
    "task_ineligibility",
    "task_instance_id",
    "task_skip_reasons",
    "tools_state",
    "tree_archive",
    "turn_row",
]

# --- the trajectory library: importer plugins (``describe_importer`` / ``import_source``) -----
__all__ += ["ImportRefusal", "ImporterInfo", "Trajectory", "trajectory_kit"]

#: The names loaded on first use: name -> the module that defines it. A module (``trajectory_kit``)
#: maps to itself. Keep in step with the ``TYPE_CHECKING`` imports above (tests check both).
_LAZY: dict[str, str] = {
    "RESOLVER_SKIP_REASONS": "sediment.ci.resolution",
    "CIResolution": "sediment.ci.resolution",
    "CIResolutionResult": "sediment.ci.resolution",
    "CIWorkflowResolution": "sediment.ci.resolution",
    "CommitKey": "sediment.ci.resolution",
    "resolve_ci": "sediment.ci.resolution",
    "finished_time": "sediment.ci.times",
    "PluginSettings": "sediment.settings",
    "ReadableFile": "sediment.settings",
    "canonical_digest": "sediment.records",
    "canonical_json": "sediment.records",
    "plain": "sediment.records",
    "sha256_hex": "sediment.records",
    "sortable_time": "sediment.records",
    "render_datetime": "sediment.identifiers",
    "TRANSITION_SKIP_REASONS": "sediment.ci.transitions",
    "TestTransitions": "sediment.ci.transitions",
    "AttributedCompletion": "sediment.derive.attributed_completions",
    "CompletionCall": "sediment.derive.attributed_completions",
    "CompletionResolution": "sediment.derive.attributed_completions",
    "SessionAbandonment": "sediment.derive.attributed_completions",
    "SessionCompletions": "sediment.derive.attributed_completions",
    "LabelConfidencePolicy": "sediment.derive.confidence",
    "PairConfidence": "sediment.derive.confidence",
    "label_confidence": "sediment.derive.confidence",
    "pair_confidence": "sediment.derive.confidence",
    "AttributedCall": "sediment.evidence.attributed_calls",
    "CallRecord": "sediment.evidence.attributed_calls",
    "CommitAttributions": "sediment.evidence.attributed_calls",
    "ExportContext": "sediment.evidence.context",
    "PATCH_SKIP_REASONS": "sediment.evidence.reference_patch",
    "ReferencePatch": "sediment.evidence.reference_patch",
    "REPRESENTATION_REASONS": "sediment.evidence.representation",
    "representable_json_text": "sediment.evidence.representation",
    "representation_problem": "sediment.evidence.representation",
    "RolloutEvidence": "sediment.evidence.rollout",
    "put_optional": "sediment.evidence.rollout",
    "reward_source": "sediment.evidence.rollout",
    "TASK_REMEDIES": "sediment.evidence.tasks",
    "TaskBasis": "sediment.evidence.tasks",
    "task_basis": "sediment.evidence.tasks",
    "task_ineligibility": "sediment.evidence.tasks",
    "task_instance_id": "sediment.evidence.tasks",
    "task_skip_reasons": "sediment.evidence.tasks",
    "chat_tools": "sediment.evidence.chat_tools",
    "tools_state": "sediment.evidence.chat_tools",
    "TRAINER_SKIP_REASONS": "sediment.evidence.trainer_messages",
    "TrainerConversation": "sediment.evidence.trainer_messages",
    "TrainerDecline": "sediment.evidence.trainer_messages",
    "TrainingProvenance": "sediment.evidence.trainer_messages",
    "map_conversation": "sediment.evidence.trainer_messages",
    "map_inference_prompt": "sediment.evidence.trainer_messages",
    "strict_json": "sediment.evidence.trainer_messages",
    "ROLLOUT_SKIP_REASONS": "sediment.evidence.turns",
    "capture_row": "sediment.evidence.turns",
    "decision_row": "sediment.evidence.turns",
    "message_row": "sediment.evidence.turns",
    "segment_instance_id": "sediment.evidence.turns",
    "turn_row": "sediment.evidence.turns",
    "atomic_write_bytes": "sediment.export.writer",
    "parquet_json_columns": "sediment.export.parquet",
    "Mirror": "sediment.git.mirror",
    "tree_archive": "sediment.git.archive",
    "MirrorReadError": "sediment.git.read_error",
    "CallCapture": "sediment.model.facts",
    "CIOutcome": "sediment.model.facts",
    "InferenceMessage": "sediment.model.facts",
    "Part": "sediment.model.facts",
    "ReasoningPart": "sediment.model.facts",
    "TestCaseResult": "sediment.model.facts",
    "TextPart": "sediment.model.facts",
    "ToolCallPart": "sediment.model.facts",
    "ToolCallResponsePart": "sediment.model.facts",
    "ToolDefinition": "sediment.model.facts",
    "Provenance": "sediment.model.policy",
    "Rollout": "sediment.model.rollout",
    "Turn": "sediment.model.rollout",
    "schemas_in": "sediment.validation",
    "trajectory_kit": "sediment.importing.kit",
    "Trajectory": "sediment.trajectory.record",
    "ImportRefusal": "sediment.trajectory.sources",
}


def __getattr__(name: str) -> object:
    """Load a lazy name on first use and keep it (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = import_module(module)
    value = loaded if name == "trajectory_kit" else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
