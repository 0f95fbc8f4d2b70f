"""``sediment explain ROW``: one exported row read top-down to the recorded Facts behind it
(the chain is built by :mod:`sediment.reports.explain`; this module only gathers the
source and renders)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from sediment.cli import console, settings

if TYPE_CHECKING:
    from sediment.reports.explain import Source
    from sediment.reports.exported_rows import RowRef


def explain(
    row: str = typer.Argument(..., metavar="ROW",
                              help="FILE:LINE of an exported row (1-based), a consumer-profile data or evidence "
                                   "line, or an instance_id (with --export)."),
    export: Path | None = typer.Option(None, "--export", metavar="DIR",
                                       help="Export directory (or a folder of them) to search for an instance_id."),
    source: Path | None = typer.Option(None, "--from", metavar="BUNDLE",
                                       help="Derived bundle to re-derive from (its recorded policy); default: the "
                                            "fact store."),
    org: str | None = typer.Option(None, "--org", help="Org id for the store (default: SEDIMENT_ORG_ID, else the "
                                                       "row's own org_id)."),
    mirrors: Path | None = typer.Option(None, "--mirrors", metavar="DIR", envvar=settings.MIRROR_ENV,
                                        show_envvar=True, help="Root of bare git mirrors (reference patches)."),
    config: Path | None = typer.Option(None, "--config", metavar="FILE", envvar="SEDIMENT_CONFIG_FILE",
                                       show_envvar=True, help="TOML plugin settings the export used."),
    assignments: list[str] = typer.Option([], "--set", metavar="PLUGIN.FIELD=VALUE",
                                          help="One plugin setting the export used (repeatable)."),
    verify: bool = typer.Option(False, "--verify", help="Re-derive the row and say whether it comes out "
                                                        "byte-identical; exit 11 when it does not."),
    as_json: bool = typer.Option(False, "--json", help="Print the chain as one JSON object on stdout."),
) -> int:
    """Explain one exported row top-down: its reward or label, recipe and policy, the CI
    resolution with every workflow attempt, the recorded CIOutcome Facts (quarantined or not),
    the attributed commits and how they were bound, and the Session with its calls. Rows of
    an objective without targets add the decisions, edit retention and Confidence steps behind
    their label, and every Session their completions belong to.

    The row is re-derived from the fact store and mirrors (or --from BUNDLE) exactly as its
    export would, which is how the Session behind it is found. Exit codes: 2 no such file, line or
    instance id; 1 a line that is not a JSON row; 10 its evidence is gone; 11 --verify found it
    re-derives differently (docs/explain.md).
    """
    from sediment.cli.export import _registry
    from sediment.errors import ExitCode
    from sediment.reports.explain import explain as build
    from sediment.reports.exported_rows import locate
    from sediment.settings import SettingsSources

    ref = locate(row, export)
    registry = _registry()
    sources = SettingsSources.load(config_file=config, overrides=assignments)
    registry.check_settings_sources(sources)
    chain = build(ref, _source(ref, source, org, mirrors), registry, verify=verify, settings=sources)
    if as_json:
        typer.echo(json.dumps(chain, ensure_ascii=False))
    else:
        render(chain)
    if verify and not chain["verify"]["byte_identical"]:
        return int(ExitCode.DRIFT)
    return 0


def _source(ref: RowRef, bundle: Path | None, org: str | None, mirrors: Path | None) -> Source:
    from sediment.errors import ConfigurationError
    from sediment.evidence.context import Evidence, store_evidence
    from sediment.model.policy import DerivationPolicy
    from sediment.reports.explain import Source, org_of

    try:
        mirror_root = settings.mirror_option(mirrors, "sediment explain")
    except ConfigurationError:
        mirror_root = None  # rows whose target reads no mirror explain without one
    if bundle is not None:
        from sediment.bundle.read import open_bundle

        opened = open_bundle(bundle)
        return Source("bundle", Evidence(opened, opened.split_enabled, mirror_root, opened.manifest.fragmented),
                      opened.manifest.policy, opened.manifest.quarantine_revision)
    row_org = org_of(ref.row) or org_of((ref.profile_evidence or {}).get("evidence") or {})
    org_id = settings.org_id(org) if org or not row_org else settings.org_id(row_org)
    store = settings.store()
    if mirror_root is not None:
        settings.settle_mirrors(org_id, root=mirror_root)
    return Source("store", store_evidence(store, org_id, mirror_root), DerivationPolicy(),
                  store.quarantine_revision(org_id), store, org_id)


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else _value(value)


def _render_labelling(labelling: dict[str, Any]) -> None:
    """The decisions, edit retention and Confidence steps behind an objective row's label."""
    show = console.show
    policy = labelling["policy"]
    if labelling["agrees"] is None:
        show(("label evidence ", "bold"), "(the row's provenance names no Confidence ladder policy: its label "
                                          "is no Confidence)")
    else:
        show(("label evidence ", "bold"), f"ladder policy v{policy['version']} {policy['digest']}"
             + ("" if labelling["same_policy"] else "  (differs from the row's: pass the settings the export used)"))
    for completion in labelling["completions"]:
        show(f"  {completion['role']} {completion['inference_call_id']} (Session {_value(completion['session_id'])})")
        for decision in completion["decisions"]:
            kind = ("explicit " if decision["explicit"] else "implicit ") + ("accept" if decision["accepted"]
                                                                               else "reject")
            retention = decision["edit_retention"]
            kept = ""
            if retention["source"] == "vendor":
                kept = f", edit retention {_number(retention['score'])} (vendor)"
            elif retention["source"] == "derived":
                figures = retention["figures"] or {}
                kept = (f", edit retention {_number(retention['score'])} "
                        f"(derived: {_value(figures.get('kept_4grams'))}/"
                        f"{_value(figures.get('applied_4grams'))} 4-grams kept, {_value(figures.get('rule'))}, "
                        f"{retention['observation_id']})")
            show(f"    decision {decision['decision_id']}: {kind}, {decision['agent_harness']} "
                 f"{decision['interaction_mode']}, {decision['file_path'] or '-'}{kept}")
        for attribution in completion["attributions"]:
            ci = attribution["ci"]
            show(f"    attributed {attribution['file_path']} @ {attribution['commit_sha']} "
                 f"({attribution['attribution_source']}, similarity {_number(attribution['similarity_score'])}); "
                 f"CI {_value(ci['verdict'])}, reliability {_number(ci['reliability'])}")
            confidence = attribution["confidence"]
            if confidence is None:
                continue
            for step in confidence["steps"]:
                inputs = ", ".join(f"{k}={_number(v)}" for k, v in step["inputs"].items())
                show(f"      {step['rung']}: {step['rule']} ({inputs}) → {_number(step['value'])}")
            show(f"      label confidence ({confidence['label']}): {_number(confidence['label_confidence'])}")
    if labelling["agrees"] is not None:
        replayed = ", ".join(f"{k}={_value(v)}" for k, v in labelling["replayed"].items())
        recorded = ", ".join(f"{k}={_value(v)}" for k, v in labelling["recorded"].items())
        mark = ("✓ ", "green") if labelling["agrees"] else ("✗ ", "red")
        show("  ", mark, f"replayed {replayed}; the row records {recorded}")


def _value(value: Any) -> str:
    """A value as the human output spells it: ``-`` for none, ``true``/``false`` as in ``--json``."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render(chain: dict[str, Any]) -> None:
    """The chain top-down on stdout (styled on a terminal, plain text when piped)."""
    row = chain["row"]
    show = console.show
    show((row["kind"], "bold"), f"  {row['file']}:{row['line']}")
    for key, value in row["identity"].items():
        show(f"  {key}: {value}")
    if "profile" in row:
        profile = row["profile"]["evidence"]
        show(f"  profile line → canonical row sha256 {profile['source_row_sha256']} ({profile['canonical_schema']})")
    show("  label: " + ", ".join(f"{k}={_value(v)}" for k, v in row["label"].items()))
    recipe, policy = chain["recipe"], chain["policy"]
    show(("recipe ", "bold"), f"{_value(recipe['recipe_id'])} v{_value(recipe['recipe_version'])}")
    recorded = policy["row"]
    show(("policy ", "bold"), "row: " + ", ".join(f"{k}={_value(v)}" for k, v in recorded.items()
                                                  if not isinstance(v, dict)))
    src = policy["source"]
    show(f"  {src['kind']}: policy {src['policy_digest']}, quarantine revision "
         f"{_value(src['quarantine_revision'])}" + ("" if policy["same_policy"] else "  (differs from the row's)"))
    for resolution in chain["ci_resolutions"]:
        show(("CI resolution ", "bold"), f"{resolution['repo']}@{resolution['commit_sha']}: verdict "
             f"{_value(resolution['verdict'])}, reliability {_value(resolution['reliability'])}, suspected flake "
             f"{'yes' if resolution['suspected_flake'] else 'no'}")
        for workflow in resolution["workflows"]:
            show(f"  workflow {workflow['workflow_name']} ({workflow['provider']}, branch {workflow['branch']}): "
                 f"verdict {_value(workflow['verdict'])}, reliability {_value(workflow['reliability'])}")
            for attempt in workflow["attempts"]:
                mark = ("verdict", "green") if attempt["role"] == "verdict" else (attempt["role"], "yellow")
                show(f"    run {attempt['run_id']} attempt {attempt['run_attempt']}: {attempt['result']}  ",
                     mark, f"  {attempt['outcome_id']}")
    if chain["ci_outcomes"]:
        show(("CIOutcome Facts", "bold"))
    for outcome in chain["ci_outcomes"]:
        state = ("quarantined", "red") if outcome["quarantined"] else (
            "recorded" if outcome["recorded_in"] else "not recorded", "")
        show(f"  {outcome['outcome_id']} {outcome['provider']} run {outcome['run_id']} attempt "
             f"{outcome['run_attempt']}: {outcome['provider_result']} → {outcome['result']}, delivery "
             f"{_value(outcome['delivery_id'])}, captured {outcome['captured_at']}, ", state,
             f" ({_value(outcome['recorded_in'])})")
    attribution = chain["attribution"]
    show(("attribution ", "bold"), _value(attribution["source"]))
    for commit in attribution.get("commits", []):
        show(f"  commit {commit['repo']}@{commit['commit_sha']}")
    for note in attribution["notes"]:
        show(f"  note {note['note']} bound {note['commit_sha']} ({note['observation_id']}, captured "
             f"{note['captured_at']})" + (" quarantined" if note["quarantined"] else ""))
    for figure in attribution.get("jaccard", []):
        show(f"  jaccard {figure['similarity_score']:.3f} {figure['file_path']} @ {figure['commit_sha']} "
             f"(call {figure['inference_call_id']})")
    for session in chain["sessions"]:
        show(("Session ", "bold"), f"{session['session_id']} ({session['org_id']}, {len(session['calls'])} calls)")
        for call in session["calls"]:
            show(f"  [{call['segment']}] {call['inference_call_id']} {_value(call['model'])} "
                 f"{_value(call['observed_at'])}" + (f" decisions {', '.join(call['decisions'])}"
                                                     if call["decisions"] else ""))
    if chain["labelling"] is not None:
        _render_labelling(chain["labelling"])
    if chain["facts"]:
        show(("Facts the row names", "bold"))
    for fact in chain["facts"]:
        extra = ", ".join(f"{k}={_value(v)}" for k, v in fact.items() if k not in ("table", "fact_id", "recorded",
                                                                             "quarantined"))
        known = "quarantined" if fact["quarantined"] else ("recorded" if fact["recorded"] else "not recorded")
        show(f"  {fact['table']}/{fact['fact_id']}: {known}" + (f" ({extra})" if extra else ""))
    if "verify" in chain:
        result = chain["verify"]
        if result["byte_identical"]:
            show(("✓ verify: ", "green"), "re-derives byte-identical")
        else:
            show(("✗ verify: ", "red"), "re-derives differently" if result["rederived"] else "no longer derives")
            for change in result["changes"]:
                show(f"  {change}")
