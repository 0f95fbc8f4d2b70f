"""What the training datasets would look like, before anyone trains on them (docs/reports.md).

The report reads the records every participating objective yields through its
``diagnose_evidence`` hook (:mod:`sediment.host.diagnosis`) over one snapshot of the fact
store, plus the Sessions' edit observations and decisions, and summarizes:

- ``model_balance``: rows per (dataset, stratum, model);
- ``confidence_distributions``: count, mean, median, min, max and sample stdev of each Confidence
  metric, overall per stratum (``model`` null) and per (stratum, model);
- ``cross_split_duplicates``: prompts (the row's prompt as JSON with sorted keys, compared after
  ``strip().lower()``) that occur in both the train and the eval split of one stratum, named with
  their row ids;
- ``confidence_floor_exclusions``: per (stratum, model), units that passed everything but the
  Confidence floor, and how many the floor removes;
- per objective that declares prompt buckets (``ObjectiveInfo.prompt_buckets``), in ascending
  name, two sections named after it (``-`` becomes ``_``):
  ``<name>_bucket_sparsity``: per stratum, how many labelled members its prompt buckets hold
  (histogram ``1``, ``2``, ``3-5``, ``6-10``, ``10+`` = more than 10), singletons and buckets
  over the pair cap; ``<name>_near_duplicate_buckets``: pairs of its buckets (emitted rows
  grouped by org, model and prompt) of one org and model whose prompts' token sets have a
  Jaccard similarity at or above its threshold: the same task asked in slightly different
  words, which exact-prompt bucketing keeps apart;
- ``abandonment``: the abandonment summary (dormant: Sediment never concludes that a Session was
  abandoned; docs/attributed-completions.md);
- ``fate``: what became of each agent edit whose observation joins an attached decision
  (``deleted`` at retention ≤ 0.1, ``unmodified`` at ≥ 0.9, else ``partially_modified``).

The section names are the report's contract (docs/reports.md); the core names no objective: the
bucket sections take their names from the objectives that declare them. :func:`dataset_diagnostics`
is a pure function of its inputs: shuffled records give an equal report.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

from sediment.derive.attributed_completions import ABANDONMENT_POLICY_VERSION
from sediment.derive.edit_retention import four_gram_containment
from sediment.host.diagnosis import DiagnosedRow, Diagnosis, FloorCandidate, PromptBucket, Stratum
from sediment.model.facts import DeveloperDecision, EditObservation
from sediment.model.rollout import string_leaves
from sediment.reports.statistics import SIZE_BINS, size_bin, summary

#: The Fate rules' version and cut points.
FATE_POLICY_VERSION = "1"
FATE_DELETED_AT_MOST = 0.1
FATE_UNMODIFIED_AT_LEAST = 0.9
FATES: tuple[str, ...] = ("deleted", "partially_modified", "unmodified")
FATE_SKIP_REASONS: tuple[str, ...] = ("scorer_error", "invalid_score")
#: What the abandonment summary counts of Sessions it did not find abandoned.
ABANDONMENT_DERIVATION_SKIPS: tuple[str, ...] = ("no_accepted_decision", "reached_a_commit",
                                                 "session_commit_unobserved")
DEFAULT_MAX_EXAMPLES = 5
DEFAULT_NEAR_DUPLICATE_THRESHOLD = 0.8
_TOKEN = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*|[0-9]+")
#: The bins of the confidence histograms the text rendering draws (not part of ``--json``).
CONFIDENCE_BINS: tuple[str, ...] = ("<0", "[0.0,0.2)", "[0.2,0.4)", "[0.4,0.6)", "[0.6,0.8)", "[0.8,1.0)", "1.0")


@dataclass(frozen=True)
class DatasetDiagnosis:
    """One objective's records under one recipe (``dataset`` is the objective's name)."""

    dataset: str
    recipe_id: str
    recipe_version: int
    records: Sequence[Diagnosis]
    #: whether the objective declares prompt buckets (``ObjectiveInfo.prompt_buckets``): the
    #: report then has its two bucket sections, and only then may it hold PromptBuckets
    bucketed: bool = False
    #: the Jaccard similarity (in [0, 1]) at which two of its prompt buckets are flagged
    near_duplicate_threshold: float = DEFAULT_NEAR_DUPLICATE_THRESHOLD


@dataclass(frozen=True)
class SessionEdits:
    """One Session's decisions as attached to its calls, and its edit observations."""

    org_id: str
    session_id: str
    attached: Sequence[DeveloperDecision]
    observations: Sequence[EditObservation]
    accepted_decisions: int = 0
    reached_a_commit: bool = False
    observed_commit: bool = False


@dataclass(frozen=True)
class ConfidenceHistogram:
    """The text rendering's chart of one metric of one stratum (not part of ``--json``)."""

    dataset: str
    stratum: Stratum
    metric: str
    bins: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class PromptBucketSections:
    """The two sections of one objective that declares prompt buckets."""

    bucket_sparsity: list[dict[str, Any]]
    near_duplicate_buckets: list[dict[str, Any]]


def section_prefix(objective: str) -> str:
    """How an objective's name starts its report sections (and its option's Python name)."""
    return objective.replace("-", "_")


@dataclass(frozen=True)
class DatasetDiagnosticsReport:
    """The report; :meth:`as_json` is ``--json``: ``model_balance``, ``confidence_distributions``,
    ``cross_split_duplicates``, ``confidence_floor_exclusions``, then per bucketing objective
    (ascending name) ``<name>_bucket_sparsity`` and ``<name>_near_duplicate_buckets``, then
    ``abandonment`` and ``fate``."""

    model_balance: list[dict[str, Any]]
    confidence_distributions: list[dict[str, Any]]
    cross_split_duplicates: list[dict[str, Any]]
    confidence_floor_exclusions: list[dict[str, Any]]
    #: per objective that declares prompt buckets, by name, in ascending name
    prompt_buckets: dict[str, PromptBucketSections]
    abandonment: dict[str, Any]
    fate: dict[str, Any]
    org_id: str = ""
    histograms: tuple[ConfidenceHistogram, ...] = field(default=(), repr=False)

    def as_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "model_balance": self.model_balance,
            "confidence_distributions": self.confidence_distributions,
            "cross_split_duplicates": self.cross_split_duplicates,
            "confidence_floor_exclusions": self.confidence_floor_exclusions,
        }
        for name, sections in self.prompt_buckets.items():
            found[f"{section_prefix(name)}_bucket_sparsity"] = sections.bucket_sparsity
            found[f"{section_prefix(name)}_near_duplicate_buckets"] = sections.near_duplicate_buckets
        found |= {"abandonment": self.abandonment, "fate": self.fate}
        return copy.deepcopy(found)


def _stratum_fields(stratum: Stratum) -> dict[str, Any]:
    return {"chosen_label_source": stratum.chosen_label_source,
            "rejected_label_source": stratum.rejected_label_source,
            "eligibility_source": stratum.eligibility_source}


def _head(d: DatasetDiagnosis, stratum: Stratum) -> dict[str, Any]:
    return {"dataset": d.dataset, "recipe_id": d.recipe_id, "recipe_version": d.recipe_version,
            **_stratum_fields(stratum)}


def _rows(d: DatasetDiagnosis) -> list[DiagnosedRow]:
    return sorted((r for r in d.records if isinstance(r, DiagnosedRow)),
                  key=lambda r: (r.stratum.sort_key, r.model, r.org_id, r.row_id, r.split))


def _model_balance(datasets: Sequence[DatasetDiagnosis]) -> list[dict[str, Any]]:
    found = []
    for d in datasets:
        counts = Counter((r.stratum, r.model) for r in _rows(d))
        for (stratum, model), n in sorted(counts.items(), key=lambda kv: (kv[0][0].sort_key, kv[0][1])):
            found.append({**_head(d, stratum), "model": model, "rows": n})
    return found


def _stats(values: list[float]) -> dict[str, Any]:
    return asdict(summary(values))


def _metric_names(rows: Iterable[DiagnosedRow]) -> list[str]:
    names: list[str] = []
    for row in rows:
        names.extend(m for m in row.metrics if m not in names)
    return names


def _bin(value: float) -> str:
    if value < 0:
        return CONFIDENCE_BINS[0]
    if value >= 1.0:
        return CONFIDENCE_BINS[-1]
    return CONFIDENCE_BINS[1 + min(4, int(value * 5))]


def _confidence(datasets: Sequence[DatasetDiagnosis]) -> tuple[list[dict[str, Any]], list[ConfidenceHistogram]]:
    found: list[dict[str, Any]] = []
    charts: list[ConfidenceHistogram] = []
    for d in datasets:
        rows = _rows(d)
        for metric in _metric_names(rows):
            measured = [r for r in rows if metric in r.metrics and math.isfinite(r.metrics[metric])]
            by_stratum: dict[Stratum, list[float]] = defaultdict(list)
            by_model: dict[tuple[Stratum, str], list[float]] = defaultdict(list)
            for r in measured:
                by_stratum[r.stratum].append(r.metrics[metric])
                by_model[(r.stratum, r.model)].append(r.metrics[metric])
            for stratum in sorted(by_stratum, key=lambda s: s.sort_key):
                values = by_stratum[stratum]
                found.append({**_head(d, stratum), "metric": metric, "model": None, "stats": _stats(values)})
                counts = Counter(_bin(v) for v in values)
                charts.append(ConfidenceHistogram(d.dataset, stratum, metric,
                                                  tuple((b, counts.get(b, 0)) for b in CONFIDENCE_BINS)))
            for (stratum, model) in sorted(by_model, key=lambda k: (k[0].sort_key, k[1])):
                found.append({**_head(d, stratum), "metric": metric, "model": model,
                              "stats": _stats(by_model[(stratum, model)])})
    return found, charts


def prompt_text(prompt: Any) -> str:
    """A prompt as the duplicate check compares it: JSON with sorted keys (non-ASCII kept)."""
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False)


def _cross_split(datasets: Sequence[DatasetDiagnosis], max_examples: int) -> list[dict[str, Any]]:
    found = []
    for d in datasets:
        by_stratum: dict[Stratum, dict[str, dict[str, list[str]]]] = defaultdict(
            lambda: defaultdict(lambda: {"train": [], "eval": []}))
        shown: dict[tuple[Stratum, str], str] = {}
        for r in _rows(d):
            text = prompt_text(r.prompt)
            key = text.strip().lower()
            if r.split in ("train", "eval"):
                by_stratum[r.stratum][key][r.split].append(r.row_id)
            current = shown.get((r.stratum, key))
            shown[(r.stratum, key)] = text if current is None else min(current, text)
        for stratum in sorted(by_stratum, key=lambda s: s.sort_key):
            both = sorted(k for k, sides in by_stratum[stratum].items() if sides["train"] and sides["eval"])
            examples = []
            for key in both[:max_examples]:
                sides = by_stratum[stratum][key]
                examples.append({"prompt": shown[(stratum, key)], "train_count": len(sides["train"]),
                                 "eval_count": len(sides["eval"]), "train_row_ids": sorted(sides["train"]),
                                 "eval_row_ids": sorted(sides["eval"])})
            found.append({**_head(d, stratum), "duplicate_prompt_count": len(both), "examples": examples})
    return found


def _floor(datasets: Sequence[DatasetDiagnosis]) -> list[dict[str, Any]]:
    found = []
    for d in datasets:
        best: dict[tuple[Stratum, str, str, str], FloorCandidate] = {}
        for c in (r for r in d.records if isinstance(r, FloorCandidate)):
            key = (c.stratum, c.org_id, c.completion_id, c.model)
            if key not in best or c.confidence > best[key].confidence:
                best[key] = c
        groups: dict[tuple[Stratum, str], list[FloorCandidate]] = defaultdict(list)
        for (stratum, _, _, model), c in best.items():
            groups[(stratum, model)].append(c)
        for stratum, model in sorted(groups, key=lambda k: (k[0].sort_key, k[1])):
            members = groups[(stratum, model)]
            excluded = sum(1 for c in members if c.excluded)
            found.append({"dataset": d.dataset, "recipe_id": d.recipe_id, "recipe_version": d.recipe_version,
                          "eligibility_source": stratum.eligibility_source, "model": model,
                          "otherwise_eligible_completions": len(members), "excluded_by_floor": excluded,
                          "exclusion_rate": excluded / len(members)})
    return found


def _pair_head(d: DatasetDiagnosis, stratum: Stratum) -> dict[str, Any]:
    return {"recipe_id": d.recipe_id, "recipe_version": d.recipe_version,
            "chosen_label_source": stratum.chosen_label_source,
            "rejected_label_source": stratum.rejected_label_source}


def _sparsity(d: DatasetDiagnosis) -> list[dict[str, Any]]:
    found = []
    if d.bucketed:
        by_stratum: dict[Stratum, list[PromptBucket]] = defaultdict(list)
        for b in (r for r in d.records if isinstance(r, PromptBucket)):
            if b.members:
                by_stratum[b.stratum].append(b)
        for stratum in sorted(by_stratum, key=lambda s: s.sort_key):
            buckets = by_stratum[stratum]
            histogram = Counter(size_bin(b.members) for b in buckets)
            candidates = sum(b.members for b in buckets)
            singletons = sum(b.members for b in buckets if b.members == 1)
            found.append({**_pair_head(d, stratum), "total_buckets": len(buckets), "total_candidates": candidates,
                          "bucket_size_histogram": {k: histogram.get(k, 0) for k in SIZE_BINS},
                          "singleton_candidates": singletons,
                          "singleton_candidate_fraction": singletons / candidates if candidates else 0.0,
                          "cap_hit_buckets": sum(1 for b in buckets if b.cap_hit)})
    return found


def prompt_tokens(prompt: Any) -> frozenset[str]:
    """The lowercased identifier and number tokens of every string in ``prompt``."""
    return frozenset(t.lower() for t in _TOKEN.findall("\n".join(string_leaves(prompt))))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 0.0 when both are empty."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def _near_duplicates(d: DatasetDiagnosis, max_examples: int) -> list[dict[str, Any]]:
    found = []
    threshold = d.near_duplicate_threshold
    if d.bucketed:
        strata = sorted({r.stratum for r in _rows(d)} | {b.stratum for b in d.records if isinstance(b, PromptBucket)},
                        key=lambda s: s.sort_key)
        for stratum in strata:
            buckets: dict[tuple[str, str, str], list[DiagnosedRow]] = defaultdict(list)
            prompts: dict[tuple[str, str, str], Any] = {}
            for r in _rows(d):
                if r.stratum == stratum:
                    key = (r.org_id, r.model, prompt_text(r.prompt))
                    buckets[key].append(r)
                    prompts[key] = r.prompt
            by_model: dict[tuple[str, str], list[tuple[str, str, str]]] = defaultdict(list)
            for key in sorted(buckets):
                by_model[(key[0], key[1])].append(key)
            comparable = 0
            flagged = []
            for (org, model), keys in sorted(by_model.items()):
                tokens = {k: prompt_tokens(prompts[k]) for k in keys}
                for a, b in combinations(keys, 2):
                    comparable += 1
                    similarity = jaccard(tokens[a], tokens[b])
                    if similarity >= threshold:
                        flagged.append((org, model, similarity, a, b))
            flagged.sort(key=lambda f: (-f[2], f[0], f[1], f[3][2], f[4][2]))
            examples = [{"org_id": org, "model": model, "similarity": similarity,
                         "bucket_a_prompt": a[2], "bucket_b_prompt": b[2],
                         "bucket_a_rows": len(buckets[a]), "bucket_b_rows": len(buckets[b]),
                         "bucket_a_row_ids": sorted(r.row_id for r in buckets[a]),
                         "bucket_b_row_ids": sorted(r.row_id for r in buckets[b])}
                        for org, model, similarity, a, b in flagged[:max_examples]]
            found.append({**_pair_head(d, stratum), "threshold": threshold, "bucket_count": len(buckets),
                          "comparable_pair_count": comparable, "near_miss_pair_count": len(flagged),
                          "examples": examples})
    return found


def _fate_of(score: float) -> str:
    if score <= FATE_DELETED_AT_MOST:
        return "deleted"
    if score >= FATE_UNMODIFIED_AT_LEAST:
        return "unmodified"
    return "partially_modified"


def _fate(sessions: Sequence[SessionEdits], quarantine_revision: int) -> dict[str, Any]:
    fates: Counter[str] = Counter()
    explicit: Counter[str] = Counter()
    external = 0
    skipped: Counter[str] = Counter()
    seen: set[str] = set()
    for s in sorted(sessions, key=lambda s: (s.org_id, s.session_id)):
        by_key: dict[tuple[str, str, str, str], list[DeveloperDecision]] = defaultdict(list)
        for d in s.attached:
            if d.call_id is not None:
                by_key[(d.org_id, d.agent_harness, d.session_id, d.call_id)].append(d)
        for o in sorted(s.observations, key=lambda o: o.observation_id):
            decisions = by_key.get((o.org_id, o.agent_harness, o.session_id, o.call_id))
            if not decisions or o.observation_id in seen:
                continue
            seen.add(o.observation_id)
            try:
                score = four_gram_containment(o.applied_text, o.observed_file_text)
            except Exception:  # a scorer bug skips the one observation, counted
                skipped["scorer_error"] += 1
                continue
            if not isinstance(score, float | int) or not math.isfinite(score):
                skipped["invalid_score"] += 1
                continue
            fate = _fate_of(min(1.0, max(0.0, float(score))))
            fates[fate] += 1
            if any(d.explicit and d.accepted for d in decisions):
                explicit[fate] += 1
            if (o.external_lines_added or 0) > 0 or (o.external_lines_removed or 0) > 0:
                external += 1
    return {"fates": {f: fates.get(f, 0) for f in FATES},
            "explicit_accept_fates": {f: explicit.get(f, 0) for f in FATES},
            "fates_with_external_changes": external,
            "skipped": {r: skipped.get(r, 0) for r in FATE_SKIP_REASONS},
            "provenance": {"policy_version": FATE_POLICY_VERSION, "quarantine_revision": quarantine_revision}}


def _abandonment(sessions: Sequence[SessionEdits], quarantine_revision: int) -> dict[str, Any]:
    skipped: Counter[str] = Counter()
    for s in sessions:
        if not s.accepted_decisions:
            skipped["no_accepted_decision"] += 1
        elif s.observed_commit:
            skipped["reached_a_commit"] += 1
        else:
            skipped["session_commit_unobserved"] += 1
    return {"abandoned_sessions": 0, "grade_eligible_sessions": 0, "implicit_only_sessions": 0,
            "negative_completions": 0, "explicit_accepts_unjoined": 0,
            "derivation_skipped": {k: skipped[k] for k in sorted(skipped)},
            "provenance": {"policy_version": ABANDONMENT_POLICY_VERSION, "quarantine_revision": quarantine_revision}}


def check_options(max_examples: int, near_duplicate_thresholds: Mapping[str, float]) -> None:
    """Refuse ``max_examples`` below 0 and a threshold (per objective name) outside [0, 1]."""
    if isinstance(max_examples, bool) or not isinstance(max_examples, int) or max_examples < 0:
        raise ValueError("--max-examples must be >= 0")
    for name, threshold in sorted(near_duplicate_thresholds.items()):
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"--{name}-near-duplicate-threshold must be between 0.0 and 1.0")


def dataset_diagnostics(datasets: Sequence[DatasetDiagnosis], sessions: Sequence[SessionEdits], *,
                        org_id: str = "", quarantine_revision: int = 0, max_examples: int = DEFAULT_MAX_EXAMPLES,
                        ) -> DatasetDiagnosticsReport:
    """The report over the objectives' records and the Sessions' edits (module docstring).

    :param datasets: one per participating objective; reported in ascending dataset name. Only
        a ``bucketed`` one may hold PromptBuckets (a ValueError otherwise).
    :param max_examples: how many examples a duplicate section lists (at least 0).
    """
    check_options(max_examples, {d.dataset: d.near_duplicate_threshold for d in datasets if d.bucketed})
    for d in datasets:
        if not d.bucketed and any(isinstance(r, PromptBucket) for r in d.records):
            raise ValueError(f"dataset {d.dataset!r} holds PromptBuckets but does not declare prompt buckets")
    ordered = sorted(datasets, key=lambda d: d.dataset)
    distributions, charts = _confidence(ordered)
    return DatasetDiagnosticsReport(
        model_balance=_model_balance(ordered),
        confidence_distributions=distributions,
        cross_split_duplicates=_cross_split(ordered, max_examples),
        confidence_floor_exclusions=_floor(ordered),
        prompt_buckets={d.dataset: PromptBucketSections(_sparsity(d), _near_duplicates(d, max_examples))
                        for d in ordered if d.bucketed},
        abandonment=_abandonment(sessions, quarantine_revision),
        fate=_fate(sessions, quarantine_revision),
        org_id=org_id,
        histograms=tuple(charts),
    )


def session_edits(rollout: Any) -> SessionEdits:
    """What the Fate and abandonment sections read of one Session's Rollout: its decisions as
    attached to its calls (:mod:`sediment.derive.decision_attachment`), its edit observations, and
    whether it has an accepted decision and an observed commit."""
    from sediment.derive.attributed_completions import completion_calls
    from sediment.derive.decision_attachment import CallTarget, attach_decisions

    calls = completion_calls(rollout)
    targets = [CallTarget.of(c.inference_call_id, c.org_id, c.session_id, c.model_call_id, c.output_messages)
               for c in calls.values()]
    attachment = attach_decisions(targets, rollout.session_decisions)
    attached = [d for call_id in sorted(attachment.by_call) for d in attachment.by_call[call_id]]
    return SessionEdits(org_id=rollout.org_id, session_id=rollout.session_id, attached=attached,
                        observations=tuple(rollout.edit_observations),
                        accepted_decisions=sum(1 for d in rollout.session_decisions if d.accepted),
                        reached_a_commit=bool(rollout.file_attributions),
                        observed_commit=bool(rollout.session_commit_observations))


def evidence_dataset_diagnostics(evidence: Any, org_id: str, *, registry: Any, sources: Any,
                                 recipes: dict[str, str | None] | None = None,
                                 max_examples: int = DEFAULT_MAX_EXAMPLES,
                                 near_duplicate_thresholds: Mapping[str, float] | None = None,
                                 ) -> DatasetDiagnosticsReport:
    """:func:`dataset_diagnostics` over an export's evidence (``sediment.evidence.context.Evidence``):
    every installed objective that implements ``diagnose_evidence`` reads it under the recipe
    ``recipes`` names for it (default: its first), then the Sessions' edits are read from its
    Rollouts.

    :param registry: the plugin registry (:func:`sediment.host.registry.load_registry`).
    :param sources: the plugin settings sources (``SettingsSources``), as for an export.
    :param near_duplicate_thresholds: per objective that declares prompt buckets, the Jaccard
        similarity its bucket pairs are flagged at (default :data:`DEFAULT_NEAR_DUPLICATE_THRESHOLD`).
    """
    from sediment.errors import PluginError
    from sediment.evidence.context import ExportContext, export_order

    thresholds = dict(near_duplicate_thresholds or {})
    check_options(max_examples, thresholds)  # before reading anything
    source = evidence.rollouts
    repositories = evidence.repositories or getattr(source, "repositories", None)
    datasets = []
    for name, objective in sorted(registry.objectives.items()):
        if not objective.diagnoses:
            continue
        recipe = objective.recipe((recipes or {}).get(name))
        context = ExportContext(evidence, recipe=recipe, repositories=repositories, settings=sources)
        records = list(objective.diagnose(context, registry.settings(name, sources)))
        strange = [r for r in records if not isinstance(r, DiagnosedRow | PromptBucket | FloorCandidate)]
        if strange:
            raise PluginError(f"objective {name!r} yielded {type(strange[0]).__name__} from diagnose_evidence; "
                              "expected DiagnosedRow, PromptBucket or FloorCandidate")
        bucketed = objective.info.prompt_buckets
        if not bucketed and any(isinstance(r, PromptBucket) for r in records):
            raise PluginError(f"objective {name!r} yielded PromptBucket from diagnose_evidence but does not declare "
                              "prompt_buckets=True (ObjectiveInfo)")
        datasets.append(DatasetDiagnosis(name, recipe.name, recipe.version, records, bucketed=bucketed,
                                         near_duplicate_threshold=thresholds.get(
                                             name, DEFAULT_NEAR_DUPLICATE_THRESHOLD)))
    sessions = [session_edits(source[index]) for index in export_order(source)]
    facts = evidence.facts
    return dataset_diagnostics(datasets, sessions, org_id=org_id,
                               quarantine_revision=0 if facts is None else facts.quarantine_revision,
                               max_examples=max_examples)


def store_dataset_diagnostics(store: Any, org_id: str, mirrors: Any, *, registry: Any, sources: Any,
                              recipes: dict[str, str | None] | None = None,
                              max_examples: int = DEFAULT_MAX_EXAMPLES,
                              near_duplicate_thresholds: Mapping[str, float] | None = None,
                              ) -> DatasetDiagnosticsReport:
    """:func:`evidence_dataset_diagnostics` over the fact store: the org's Rollouts derived one
    Session at a time under the default derivation policy, as a direct export reads them."""
    from sediment.evidence.context import store_evidence

    check_options(max_examples, near_duplicate_thresholds or {})
    return evidence_dataset_diagnostics(store_evidence(store, org_id, mirrors), org_id, registry=registry,
                                        sources=sources, recipes=recipes, max_examples=max_examples,
                                        near_duplicate_thresholds=near_duplicate_thresholds)
