"""The plugin framework (contract version 2): discovery, the registry's rules, core-owned
vocabularies, plugin schemas, typed settings, one-plugin dispatch, hook docs."""

from __future__ import annotations

import ast
import inspect
import json
import math
import re
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from sediment.errors import ConfigurationError, PluginError, UnknownTargetError
from sediment.evidence.verifier_commands import VerifierCommands
from sediment.export.pipeline import export_through_target
from sediment.host import hookspecs
from sediment.host.discovery import (
    BUILTIN_MANIFEST_PLUGINS,
    BUILTIN_OBJECTIVES,
    BUILTIN_PLUGINS,
    BUILTIN_PROFILES,
    BUILTIN_TARGETS,
    discover_entry_points,
    new_plugin_manager,
)
from sediment.host.kinds import TARGET_CORE_REASONS
from sediment.host.registry import load_registry
from sediment.plugin import (
    ManifestInfo,
    PluginSettings,
    Population,
    PopulationInfo,
    ProjectedRow,
    PublishedExport,
    RolloutEvidence,
    TargetInfo,
    atomic_write_bytes,
    hookimpl,
)
from sediment.settings import SettingsSources
from sediment.testing import outcome, plugin_registry, rollout, run_export

ROOT = Path(__file__).parents[1]
CI = (
    "conflicting_run_identity", "ambiguous_workflow_verdicts", "repository_identity_absent",
    "repository_identity_conflict", "repository_identity_unresolved",
    "repository_mirror_identity_unresolved", "repository_source_absent",
)
REPR = ("non_finite_number", "unrepresentable_unicode")
SEDIMENT_TASKS = (*CI, *REPR, "no_attributed_commit", "missing_verifier_evidence", "mirror_absent",
                  "no_commit_in_verifier_repo", "degenerate_commit_range", "root_commit_no_base",
                  "reference_patch_unavailable")
SWE_TASKS = (*CI, *REPR, "no_attributed_commit", "missing_verifier_evidence", "failed_reference_patch",
             "mirror_absent", "no_commit_in_verifier_repo", "degenerate_commit_range", "root_commit_no_base",
             "reference_patch_unavailable")
ROLLOUTS = (*CI, *REPR, "no_segments")
SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.com/r.json",
          "type": "object", "required": ["session_id"]}


def make_target(name: str, *, own: Sequence[str] = ("nope",), reason: str | None = None,
                calls: list[str] | None = None, body: Any = None, reads_ci: bool = False,
                schema_id: str = "https://example.com/r.json", schemas: Sequence[dict[str, Any]] = (SCHEMA,),
                remedies: dict[str, str] | None = None) -> types.ModuleType:
    module = types.ModuleType(f"plugin_{name.replace('-', '_')}")

    @hookimpl
    def describe_target() -> TargetInfo:
        return TargetInfo(populations={"rollouts": PopulationInfo(schema_id, tuple(own))}, needs_mirrors=False,
                          remedies=remedies or {})

    @hookimpl
    def register_schemas() -> Sequence[dict[str, Any]]:
        return list(schemas)

    @hookimpl
    def eligible(population: Population, evidence: RolloutEvidence) -> str | None:
        if calls is not None:
            calls.append(name)
        if reads_ci:
            evidence.ci  # noqa: B018 - consulting CI is what counts the resolver's reasons
        return reason

    @hookimpl
    def project_row(population: Population, evidence: RolloutEvidence) -> Sequence[ProjectedRow]:
        row = body if body is not None else {"session_id": evidence.rollout.session_id, "by": name,
                                             "schema_id": schema_id}
        return [ProjectedRow(evidence.rollout.split, dict(row))]

    for fn in (describe_target, register_schemas, eligible, project_row):
        setattr(module, fn.__name__, fn)
    return module


def export(registry: Any, tmp_path: Path, target: str, rollouts: Sequence[Any] = ()) -> dict[str, Any]:
    return export_through_target(list(rollouts) or [rollout("s1")], None, tmp_path / "out", target=target,
                                     split_enabled=False, registry=registry,
                                     verifier_commands=VerifierCommands.empty())


# --- discovery --------------------------------------------------------------------------


def test_discovery_finds_exactly_the_builtins() -> None:
    registry = load_registry()
    assert tuple(sorted(registry.targets)) == tuple(sorted(BUILTIN_TARGETS))
    assert tuple(sorted(registry.profiles)) == tuple(sorted(BUILTIN_PROFILES))
    assert tuple(registry.manifests) == BUILTIN_MANIFEST_PLUGINS
    origins = {p.origin.distribution for kind in (registry.targets, registry.profiles, registry.manifests)
               for p in kind.values()}
    assert origins == {"sediment"}


def test_the_test_kit_hides_other_installed_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "stray-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: stray\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[sediment]\nstray = json\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "stray" not in {s.origin.name for s in discover_entry_points()}
    assert {s.origin.name for s in discover_entry_points()} <= set(BUILTIN_PLUGINS)


@pytest.mark.sediment_installed_plugins
def test_the_marker_lifts_the_isolation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "stray-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: stray\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[sediment]\nstray = json\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "stray" in {s.origin.name for s in discover_entry_points()}


def test_duplicate_target_names_name_both_plugins() -> None:
    from sediment.host.discovery import PluginOrigin, PluginSource

    sources = [PluginSource(make_target("twin"), PluginOrigin("twin", dist, "1.0", "m")) for dist in ("dist-a", "dist-b")]
    with pytest.raises(PluginError, match="declared twice: by dist-a .* and by dist-b"):
        load_registry(sources)


def test_duplicate_entry_point_across_distributions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "impostor-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: impostor\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[sediment]\nnemo-gym = json\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match="'nemo-gym' is declared twice: by .*impostor"):
        discover_entry_points(blocked=(), only=None)


def test_blocked_and_load_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEDIMENT_BLOCK_PLUGINS", "swe-bench, openenv")
    names = {s.origin.name for s in discover_entry_points()}
    assert "swe-bench" not in names and "openenv" not in names and "sediment" in names
    monkeypatch.delenv("SEDIMENT_BLOCK_PLUGINS")
    monkeypatch.setenv("SEDIMENT_LOAD_PLUGINS", "nemo-gym")
    assert [s.origin.name for s in discover_entry_points()] == ["nemo-gym"]
    monkeypatch.setenv("SEDIMENT_LOAD_PLUGINS", "")
    assert discover_entry_points() == []


# --- vocabularies ------------------------------------------------------------------------


def test_vocabularies_are_the_contract_tuples() -> None:
    registry = load_registry()
    assert registry.targets["sediment"].vocabularies == {"tasks": SEDIMENT_TASKS, "rollouts": ROLLOUTS}
    assert registry.targets["swe-bench"].vocabularies == {"tasks": SWE_TASKS}
    assert registry.targets["nemo-gym"].vocabularies == {"rollouts": ROLLOUTS}


def test_a_plugin_declaring_only_its_reasons_still_counts_core_reasons(tmp_path: Path) -> None:
    sha = "a" * 40
    ambiguous = rollout("s1", commits=[sha], outcomes=[
        outcome("o1", sha, "passed", run_id="1"), outcome("o2", sha, "failed", run_id="2", workflow_name="lint",
                                                          workflow_id="78", workflow_path=".github/workflows/lint.yml")])
    nan_row = {"session_id": "s", "value": math.nan}
    registry = plugin_registry(("mine", make_target("mine", own=("mine_only",), body=nan_row, reads_ci=True)))
    assert registry.targets["mine"].vocabularies["rollouts"] == (*CI, *REPR, "mine_only")
    summary = export(registry, tmp_path, "mine", [ambiguous])
    assert summary["rollout_skipped"] == {"ambiguous_workflow_verdicts": 1, "non_finite_number": 1}
    assert summary["rollout_rows"] == 0


def test_declaring_a_core_reason_is_refused() -> None:
    with pytest.raises(PluginError, match=r"declares core skip reasons \['non_finite_number'\]; the registry adds"):
        plugin_registry(("bare", make_target("bare", own=("non_finite_number",))), builtins=False)


@pytest.mark.parametrize("own", [("nope", "nope"), ("Not-Snake",)])
def test_malformed_own_reasons_are_refused(own: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="skip reasons must be unique snake_case words"):
        PopulationInfo("https://example.com/r.json", own)


def test_unknown_skip_reason_is_a_plugin_error(tmp_path: Path) -> None:
    registry = plugin_registry(("liar", make_target("liar", reason="invented_reason")), builtins=False)
    with pytest.raises(PluginError, match="'invented_reason' is not in the rollouts vocabulary of target 'liar'"):
        export(registry, tmp_path, "liar")


# --- hook shape and dispatch -------------------------------------------------------------


def test_misspelt_hook_fails_loudly() -> None:
    module = make_target("typo")

    @hookimpl
    def project_rows() -> None:  # not a hook
        return None

    module.project_rows = project_rows  # type: ignore[attr-defined]
    with pytest.raises(PluginError, match="project_rows"):
        plugin_registry(("typo", module), builtins=False)


def test_target_hooks_without_describe_target_are_refused() -> None:
    module = make_target("half")
    del module.describe_target
    with pytest.raises(PluginError, match=r"implements \['eligible', 'project_row'\] but not describe_target"):
        plugin_registry(("half", module), builtins=False)


def test_calls_reach_the_chosen_target_only(tmp_path: Path) -> None:
    calls: list[str] = []
    registry = plugin_registry(("one", make_target("one", calls=calls)),
                               ("two", make_target("two", calls=calls, schemas=())), builtins=False)
    result = run_export([rollout("s1"), rollout("s2")], tmp_path / "out", target="two", registry=registry)
    assert calls == ["two", "two"]
    assert [r["by"] for r in result.rows["rollouts.jsonl"]] == ["two", "two"]


def test_unknown_target_lists_installed() -> None:
    with pytest.raises(UnknownTargetError, match="unsupported RLVR target: trl; installed targets: nemo-gym, sediment, swe-bench"):
        load_registry().get("trl")


# --- schemas ----------------------------------------------------------------------------


def test_plugin_schemas_validate_plugin_rows(tmp_path: Path) -> None:
    strict = {**SCHEMA, "properties": {"by": {"const": "someone else"}}}
    registry = plugin_registry(("strict", make_target("strict", schemas=[strict])), builtins=False)
    assert "https://example.com/r.json" in registry.schemas
    with pytest.raises(AssertionError, match=r"by: 'someone else' was expected"):
        run_export([rollout("s1")], tmp_path / "out", target="strict", registry=registry)


def test_a_schema_registered_twice_names_both_plugins() -> None:
    with pytest.raises(PluginError, match=r"schema https://example.com/r.json is registered twice: by plugin 'a' .* and by plugin 'b'"):
        plugin_registry(("a", make_target("a")), ("b", make_target("b")), builtins=False)


def test_a_declared_schema_must_be_registered() -> None:
    with pytest.raises(PluginError, match="declares schema https://example.com/other.json for rollouts, but no plugin registers it"):
        plugin_registry(("ghost", make_target("ghost", schema_id="https://example.com/other.json")), builtins=False)


def test_builtin_plugins_ship_their_row_schemas() -> None:
    """Each built-in target's row schemas come from the target itself, not from the core."""
    from sediment.validation import core_schemas

    registry = load_registry()
    for target in registry.targets.values():
        for population in target.populations:
            assert target.schema_id(population) not in core_schemas(), target.name
            solo = plugin_registry((target.name, __import__(target.origin.value)), builtins=False)
            assert target.schema_id(population) in solo.schemas
    assert "https://sediment.so/schemas/profile-rows/profile-evidence/v1.json" in core_schemas()


def test_every_builtin_profile_registers_its_own_native_schema() -> None:
    """Every built-in profile declares the schema of its data rows and registers exactly that one
    (profiles sharing a package's schemas folder each pick their own, so none is registered twice)."""
    import importlib

    from sediment.validation import schemas_in

    registry = load_registry()
    assert len(registry.profiles) == 11
    for name, profile in registry.profiles.items():
        assert profile.info.native_schema in registry.schemas, name
        module = importlib.import_module(profile.origin.value)
        if not hasattr(module, "register_schemas"):  # the swe-bench profiles: SWE-bench shapes, by that target
            target = importlib.import_module(registry.targets[profile.info.target].origin.value)
            assert profile.info.native_schema in [s["$id"] for s in target.register_schemas()], name
            continue
        assert [s["$id"] for s in module.register_schemas()] == [profile.info.native_schema], name
    with pytest.raises(ValueError, match=r"^sediment_hf_chat/schemas holds no schema https://example.com/gone.json$"):
        schemas_in("sediment_hf_chat", ids=("https://example.com/gone.json",))


def test_the_rlvr_components_are_the_rlvr_plugins() -> None:
    """The turn, decision and inference-message components of RLVR rows are registered by
    plugins/rlvr (the core ships none of them), and the built-in targets' rows $ref them."""
    from sediment.validation import core_schemas

    ids = [f"https://sediment.so/schemas/training-rows/{name}.json"
           for name in ("rlvr-turn/v3", "rlvr-decision/v2", "rlvr-inference-message/v2")]
    assert [i for i in ids if i in core_schemas()] == []
    import sediment_rlvr

    assert [s["$id"] for s in sediment_rlvr.register_schemas()] == sorted(ids)
    assert [i for i in ids if i in load_registry().schemas] == ids
    assert sorted(p.name for p in (ROOT / "plugins" / "rlvr" / "schemas").glob("*.json")) == [
        "rlvr-decision.v2.json", "rlvr-inference-message.v2.json", "rlvr-turn.v3.json"]


# --- settings and manifests --------------------------------------------------------------


class Greeting(PluginSettings):
    greeting: str
    loud: bool = False
    where: str = Field(default="here", json_schema_extra={"env": "GREETING_WHERE"})


def make_manifest(name: str, *, file: str = "hello.txt", written: str | None = None) -> types.ModuleType:
    module = types.ModuleType(f"manifest_{name}")

    @hookimpl
    def describe_manifest() -> ManifestInfo:
        return ManifestInfo(files=(file,))

    @hookimpl
    def plugin_settings() -> type[PluginSettings]:
        return Greeting

    @hookimpl
    def write_manifest(published: PublishedExport, settings: Greeting) -> Path:
        path = published.out_dir / (written or file)
        text = settings.greeting.upper() if settings.loud else settings.greeting
        atomic_write_bytes(path, f"{text} from {settings.where} for {published.target}\n".encode())
        return path

    for fn in (describe_manifest, plugin_settings, write_manifest):
        setattr(module, fn.__name__, fn)
    return module


def test_settings_precedence_flags_over_environment_over_file(tmp_path: Path) -> None:
    config = tmp_path / "sediment.toml"
    config.write_text('[plugins.hello]\ngreeting = "from file"\nloud = true\n')
    registry = plugin_registry(("t", make_target("t")), ("hello", make_manifest("hello")), builtins=False)
    environ = {"SEDIMENT_HELLO_GREETING": "from env", "GREETING_WHERE": "there"}
    sources = SettingsSources.load(config_file=config, environ=environ, overrides=["hello.loud=false"])
    assert registry.settings("hello", sources) == Greeting(greeting="from env", loud=False, where="there")
    summary = export_through_target([rollout("s1")], None, tmp_path / "out", target="t", split_enabled=False,
                                        registry=registry, settings=sources, verifier_commands=VerifierCommands.empty())
    assert summary["manifests"] == {"hello": [str(tmp_path / "out" / "hello.txt")]}
    assert (tmp_path / "out" / "hello.txt").read_text() == "from env from there for t\n"


def test_missing_and_invalid_settings_name_the_field(tmp_path: Path) -> None:
    registry = plugin_registry(("t", make_target("t")), ("hello", make_manifest("hello")), builtins=False)
    with pytest.raises(ConfigurationError, match=r"plugin hello setting greeting: Field required .*--set hello.greeting=VALUE or \$SEDIMENT_HELLO_GREETING"):
        export(registry, tmp_path, "t")
    assert not (tmp_path / "out").exists()  # a manifest's settings are checked before the directory is claimed
    sources = SettingsSources.load(environ={}, overrides=["hello.greeting=hi", "hello.loud=perhaps"])
    with pytest.raises(ConfigurationError, match=r"plugin hello setting loud: Input should be a valid boolean.* \(from --set hello.loud;"):
        registry.settings("hello", sources)
    with pytest.raises(ConfigurationError, match="settings name plugins that are not installed: nobody"):
        registry.check_settings_sources(SettingsSources.load(environ={}, overrides=["nobody.x=1"]))
    with pytest.raises(ConfigurationError, match="--set expects PLUGIN.FIELD=VALUE"):
        SettingsSources.load(environ={}, overrides=["greeting"])


def test_a_manifest_outside_its_declared_files_is_a_plugin_error(tmp_path: Path) -> None:
    registry = plugin_registry(("t", make_target("t")), ("hello", make_manifest("hello", written="other.txt")),
                               builtins=False)
    sources = SettingsSources.load(environ={}, overrides=["hello.greeting=hi"])
    with pytest.raises(PluginError, match=r"manifest plugin 'hello' wrote .*other.txt, which is not one of its declared files \['hello.txt'\]"):
        export_through_target([rollout("s1")], None, tmp_path / "out", target="t", split_enabled=False,
                                  registry=registry, settings=sources, verifier_commands=VerifierCommands.empty())


def test_a_declared_manifest_file_belongs_to_an_export(tmp_path: Path) -> None:
    registry = plugin_registry(("t", make_target("t")), ("hello", make_manifest("hello")), builtins=False)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "hello.txt").write_text("stale\n")
    from sediment.errors import OutputDirectoryError

    sources = SettingsSources.load(environ={}, overrides=["hello.greeting=hi"])  # settings are checked first
    with pytest.raises(OutputDirectoryError, match=r"artifacts without a target claim \(hello.txt\)"):
        export_through_target([rollout("s1")], None, tmp_path / "out", target="t", split_enabled=False,
                                  registry=registry, settings=sources, verifier_commands=VerifierCommands.empty())


# --- the public module and the hook reference --------------------------------------------


def test_hookspecs_document_every_argument() -> None:
    pm = new_plugin_manager()
    names = [n for n, f in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(f, "sediment_spec")]
    assert set(names) == {"describe_objective", "describe_target", "describe_profile", "describe_manifest",
                          "plugin_settings", "register_schemas", "project_evidence", "diagnose_evidence", "eligible",
                          "project_row", "adapt_row", "write_manifest", "describe_importer", "import_source",
                          "import_store"}
    for name in names:
        spec = getattr(pm.hook, name).spec
        assert spec.opts["firstresult"], f"{name} is dispatched one plugin at a time"
        doc = inspect.getdoc(spec.function) or ""
        assert ":return:" in doc, name
        for arg in spec.argnames:
            assert f":param {arg}:" in doc, f"{name} does not document {arg}"


def test_docs_hook_reference_is_generated_from_the_hookspecs() -> None:
    from sediment.host.hookdocs import BEGIN, END, render_reference

    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    block = text[text.index(BEGIN) + len(BEGIN):text.index(END)]
    assert block.strip() == render_reference().strip(), "run scripts/plugin-docs to regenerate docs/plugins.md"


def _sediment_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m == "sediment" or m.startswith("sediment.")}


@pytest.mark.parametrize("path", sorted(p for p in [*ROOT.glob("plugins/*/*.py"),
                                                    *ROOT.glob("examples/*/src/*/*.py")]),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_plugins_import_only_the_public_plugin_module(path: Path) -> None:
    assert _sediment_imports(path) <= {"sediment.plugin"}, "plugins import sediment.plugin only"


#: The tests of the built-in plugins and of the example plugins: what a plugin author's tests may
#: import from Sediment is the plugin module and the test kit, nothing else.
PLUGIN_TESTS = sorted(p for p in [*ROOT.glob("plugins/*/tests/**/*.py"), *ROOT.glob("examples/*/tests/**/*.py"),
                                  *ROOT.glob("tests/test_third_party_*.py")])


@pytest.mark.parametrize("path", PLUGIN_TESTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_plugin_tests_import_only_the_plugin_module_and_the_test_kit(path: Path) -> None:
    imported = _sediment_imports(path)
    assert imported <= {"sediment.plugin", "sediment.testing"}, (
        f"plugin tests import sediment.plugin and sediment.testing only, not {sorted(imported - {'sediment.plugin', 'sediment.testing'})}")


def test_the_one_import_rule_sees_every_plugin_test_file() -> None:
    """The glob above finds the test files of every built-in plugin and of the three examples."""
    folders = {p.relative_to(ROOT).parts[1] for p in PLUGIN_TESTS if p.relative_to(ROOT).parts[0] == "plugins"}
    assert folders == {p.parent.name for p in ROOT.glob("plugins/*/tests")}
    assert {p.name for p in PLUGIN_TESTS if p.parent == ROOT / "tests"} == {
        "test_third_party_objective.py", "test_third_party_profile.py", "test_third_party_target.py"}


def test_the_public_module_exports_what_it_lists() -> None:
    import sediment.plugin as public

    assert sorted(public.__all__) == sorted(n for n in public.__all__ if hasattr(public, n))
    assert public.CONTRACT_VERSION == 2


def test_the_core_never_names_a_builtin_plugin() -> None:
    names = sorted(set(BUILTIN_PLUGINS) - {"sediment"}, key=len, reverse=True)  # "sediment" is also the project
    builtin = re.compile("|".join(re.escape(f'"{name}"') for name in names))
    allowed = {"sediment/host/discovery.py"}  # the pinned BUILTIN_* constants
    offenders = []
    for path in sorted(ROOT.glob("sediment/**/*.py")):  # sediment/cli/ included
        relative = str(path.relative_to(ROOT))
        if relative in allowed:
            continue
        text = path.read_text(encoding="utf-8")
        for match in builtin.finditer(text):
            line = text[: match.start()].count("\n") + 1
            offenders.append(f"{relative}:{line}: {match.group()}")
    assert offenders == [], offenders


#: Word parts of the built-in objectives' names that are no ordinary word ("recovery" is), looked
#: for in identifiers (split at "_") and in option names and other code strings (split at "_"/"-").
BUILTIN_WORD_PARTS = frozenset({"dpo", "rlvr", "sft"})
#: The deliberate exceptions to the naming rule, each with its reason: (path, token) → why. A
#: path with token None is exempt as a whole. Docstrings and comments are not scanned: they
#: explain the built-ins (as examples, or what a generic mechanism does for them).
NAMING_EXCEPTIONS: dict[tuple[str, str | None], str] = {
    ("sediment/host/discovery.py", None): "the pinned BUILTIN_* guard lists that keep a third party from taking "
                                          "a built-in's name",
    ("sediment/__init__.py", "export_rlvr_from_rollouts"): "the seed's library API, kept for its callers as a thin "
                                                           "call of export_through_target",
    ("sediment/__init__.py", "export_rlvr_from_bundle"): "the seed's library API, kept for its callers",
    ("sediment/testing/__init__.py", "export_rlvr_from_rollouts"): "the test kit re-exports the seed's library API",
    ("sediment/cli/library.py", "SFT"): "the trajectory library's SFT-eligible view (docs/trajectories.md): a "
                                        "property of a trajectory, not the sft objective",
    ("sediment/cli/library.py", "SFT-eligible"): "the same view's help text",
    ("sediment/trajectory/adapter.py", "sft_eligible"): "a published field of trajectory library rows; renaming it "
                                                        "changes their bytes",
    ("sediment/trajectory/library.py", "sft_eligible"): "the same published field",
    ("sediment/trajectory/rankings.py", "sft_eligible"): "the same published field",
    ("sediment/trajectory/rankings.py", "sft_eligibility_reasons"): "its published companion field",
    ("sediment/trajectory/catalog.py", "sft_eligible"): "`library list` reads and filters the same published field",
    ("sediment/cli/library.py", "sft_eligible"): "`library list --eligible` filters on that field",
    ("sediment/trajectory/gallery.py", "sft_eligible"): "the gallery shows that field",
    ("sediment/trajectory/gallery.py", "SFT"): "the gallery's label of the SFT-eligible view",
    ("sediment/trajectory/gallery.py", "SFT-eligible"): "the same view's label",
    ("sediment/demo/__init__.py", "sess-dpo-power"): "a demo Session id: input data the golden export pins",
    ("sediment/demo/__init__.py", "sess-dpo-power-loop"): "a demo Session id: input data the golden export pins",
    ("sediment/demo/__init__.py", "call_sess-dpo-power_0"): "a demo call id derived from that Session id",
    ("sediment/demo/__init__.py", "call_sess-dpo-power-loop_0"): "a demo call id derived from that Session id",
}


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                    first.value.value, str):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def core_naming_offenders(root: Path, recipes: set[str], schema_names: set[str]) -> list[str]:
    """Every identifier, code string or option name under ``root/sediment`` that names a built-in:
    a word part of ``BUILTIN_WORD_PARTS``, a recipe id, or a schema file's name (``dpo-pair`` of
    ``dpo-pair.v4.json``), outside ``NAMING_EXCEPTIONS``."""
    import io
    import tokenize

    named = re.compile("|".join(rf"(?<![\w-]){re.escape(n)}(?![\w-])" for n in sorted(recipes | schema_names)))
    offenders = []
    for path in sorted(root.glob("sediment/**/*.py")):
        relative = str(path.relative_to(root))
        if (relative, None) in NAMING_EXCEPTIONS:
            continue
        text = path.read_text(encoding="utf-8")
        docstrings = _docstring_lines(ast.parse(text))
        found: list[tuple[int, str, str]] = []
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            line = token.start[0]
            if token.type == tokenize.NAME:
                if BUILTIN_WORD_PARTS & set(token.string.lower().split("_")):
                    found.append((line, "identifier", token.string))
            elif token.type == tokenize.STRING and line not in docstrings:
                for word in re.findall(r"[A-Za-z0-9_-]+", token.string):
                    if BUILTIN_WORD_PARTS & set(re.split(r"[-_]", word.lower())):
                        found.append((line, "string", word))
                found += [(line, "recipe or schema", m.group()) for m in named.finditer(token.string)]
        offenders += [f"{relative}:{line}: {kind} {value}" for line, kind, value in found
                      if (relative, value) not in NAMING_EXCEPTIONS]
    return offenders


def _builtin_recipes_and_schemas() -> tuple[set[str], set[str]]:
    registry = load_registry()
    recipes = {r.name for name in BUILTIN_OBJECTIVES for r in registry.objectives[name].info.recipes}
    schemas = {re.sub(r"\.v[0-9]+\.json$", "", p.name) for p in ROOT.glob("plugins/*/schemas/*.json")}
    return recipes, schemas


def test_the_core_never_names_a_builtin_in_identifiers_recipes_options_or_schemas() -> None:
    """Beyond quoted plugin names: no identifier, option name or code string of the core (cli/
    included) carries a built-in objective's name, recipe id or schema file name, except the
    deliberate exceptions listed with their reasons."""
    recipes, schemas = _builtin_recipes_and_schemas()
    assert {"rlvr_ci", "dpo_human", "sft_curated"} <= recipes and {"dpo-pair", "rlvr-turn"} <= schemas
    assert core_naming_offenders(ROOT, recipes, schemas) == []
    unused = [key for key in NAMING_EXCEPTIONS if key[1] is not None
              and key[1] not in (ROOT / key[0]).read_text(encoding="utf-8")]
    assert unused == [], "an exception no longer needed: drop it"


def test_the_naming_rule_catches_each_kind_of_violation(tmp_path: Path) -> None:
    """Self-test: a planted violation of each kind is reported, in cli/ too; docstrings and
    comments are not."""
    recipes, schemas = _builtin_recipes_and_schemas()
    (tmp_path / "sediment" / "cli").mkdir(parents=True)
    (tmp_path / "sediment" / "fine.py").write_text(
        '"""Explains dpo_human and rlvr-turn.v3.json to a reader."""\n# the dpo objective\nx = "generic"\n')
    (tmp_path / "sediment" / "cli" / "bad.py").write_text(
        'def dpo_sections():\n    return "--dpo-near-duplicate-threshold"\n')
    (tmp_path / "sediment" / "bad.py").write_text(
        'RECIPE = "rlvr_ci"\nSCHEMA = "dpo-pair.v4.json"\nOTHER = ("recovery_ci", "swe-bench-task/v3.json")\n')
    assert core_naming_offenders(tmp_path, recipes, schemas) == [
        "sediment/bad.py:1: string rlvr_ci",
        "sediment/bad.py:1: recipe or schema rlvr_ci",
        "sediment/bad.py:2: string dpo-pair",
        "sediment/bad.py:2: recipe or schema dpo-pair",
        "sediment/bad.py:3: recipe or schema recovery_ci",
        "sediment/bad.py:3: recipe or schema swe-bench-task",
        "sediment/cli/bad.py:1: identifier dpo_sections",
        "sediment/cli/bad.py:2: string --dpo-near-duplicate-threshold",
    ]


def test_targets_json_is_machine_readable() -> None:
    described = load_registry().targets["nemo-gym"].as_json()
    assert json.loads(json.dumps(described))["files"] == {"rollouts": ["rollouts.jsonl", "rollouts.train.jsonl",
                                                                       "rollouts.eval.jsonl"]}


# --- remedies: what would change a skip ---------------------------------------------------


def test_an_export_whose_every_unit_is_skipped_names_the_dominant_reason_and_its_remedy(tmp_path: Path) -> None:
    registry = plugin_registry(("t", make_target("t", reason="nope", remedies={"nope": "record a verdict"})),
                               builtins=False)
    summary = export(registry, tmp_path, "t", [rollout("s1"), rollout("s2"), rollout("s3")])
    assert summary["written"] == {}
    assert summary["nothing_written"] == {"units": "rollouts", "read": 3, "reason": "nope", "count": 3,
                                          "remedy": "record a verdict"}
    from sediment.evidence.remedies import hint_line

    assert hint_line(summary["nothing_written"]) == \
        "nothing written: all 3 rollouts skipped, mostly nope (3): record a verdict"
    written = export(plugin_registry(("t", make_target("t")), builtins=False), tmp_path / "w", "t")
    assert "nothing_written" not in written  # rows were written: no hint
    empty = export_through_target([], None, tmp_path / "empty", target="t", split_enabled=False,
                                      registry=registry, verifier_commands=VerifierCommands.empty())
    # nothing read at all (an empty bundle or store): the hint says so, and what would change it
    from sediment.evidence.remedies import NO_UNITS_REMEDY

    assert empty["nothing_written"] == {"units": "rollouts", "read": 0, "reason": None, "count": 0,
                                        "remedy": NO_UNITS_REMEDY}
    assert hint_line(empty["nothing_written"]) == f"nothing written: no rollouts in the evidence: {NO_UNITS_REMEDY}"


def test_the_no_units_remedy_names_each_step_a_new_user_can_miss() -> None:
    """Issue 25's README walk: a Session bound to its commit by a note, whose calls edited other
    files than the commit's, gave no attributed completion, and the hint named only binding. It
    now points at derive's count of those files too; it stays one printable line."""
    from sediment.evidence.remedies import NO_UNITS_REMEDY

    for step in ("ingest", "mirrors", "`sediment hooks install`", "`sediment derive --explain-attribution SESSION`",
                 "`file_attribution.no_match`", "derive again"):
        assert step in NO_UNITS_REMEDY, step
    assert NO_UNITS_REMEDY.isprintable()


def test_the_dominant_reason_is_the_most_counted_then_the_first_by_name() -> None:
    from sediment.evidence.remedies import CORE_REMEDIES, dominant, nothing_written

    assert dominant([{"b": 2, "a": 1}, {"a": 1, "c": 0}]) == ("a", 2)
    assert dominant([{}, {"c": 0}]) is None
    hint = nothing_written("pairs", 0, [{"mirror_absent": 2}], {})
    assert hint is not None and hint["remedy"] is None
    from sediment.evidence.remedies import hint_line

    assert hint_line(hint) == "nothing written: no pairs derived, mostly mirror_absent (2)"
    assert set(CORE_REMEDIES) <= set(TARGET_CORE_REASONS)


def test_remedies_name_reasons_of_the_vocabulary_and_are_one_line() -> None:
    with pytest.raises(PluginError, match=r"declares remedies for reasons outside its vocabulary: \['elsewhere'\]"):
        plugin_registry(("t", make_target("t", remedies={"elsewhere": "x"})), builtins=False)
    with pytest.raises(ValueError, match="must be one non-empty line"):
        TargetInfo(populations={"rollouts": PopulationInfo("https://example.com/r.json", ("nope",))},
                   needs_mirrors=False, remedies={"nope": "two\nlines"})


def test_every_builtin_remedy_names_a_reason_its_plugin_counts() -> None:
    registry = load_registry()
    declared = [*registry.objectives.values(), *registry.targets.values(), *registry.profiles.values()]
    assert sum(len(p.info.remedies) for p in declared) >= 30  # the registry checked each against its vocabulary
    sft = registry.remedies(registry.objective("sft"))
    assert "--recipe sft_verified" in sft["no_eligibility_source"]
    swe = registry.remedies(registry.objective("rlvr"), registry.targets["swe-bench"],
                            registry.profiles["swe-bench-tasks-v2"])
    assert "environments setting" in swe["environment_unconfigured"]
    assert "sediment mirror" in swe["no_attributed_commit"] and "ingest" in swe["missing_verifier_evidence"]


def test_every_cross_reference_in_a_hookspec_docstring_resolves() -> None:
    """A ``:func:``/``:class:``/``:data:`` reference in a hook's docstring names something that
    exists (``import_source`` once sent authors to ``sediment.plugin.read_units``, which did not)."""
    import importlib

    text = Path(hookspecs.__file__).read_text(encoding="utf-8")
    unresolved = []
    for ref in sorted(set(re.findall(r":(?:func|class|data|mod|meth|attr):`~?([\w.]+)`", text))):
        parts = ref.split(".")
        found: Any = None
        for cut in range(len(parts), 0, -1):
            try:
                found = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attribute in parts[cut:]:
                found = getattr(found, attribute, None)
            break
        if found is None:
            unresolved.append(ref)
    assert unresolved == []
    assert "sediment.plugin.read_units" not in text and "build_trajectory" not in text


def test_a_population_declares_where_its_rows_keep_sediments_fields() -> None:
    """The core reads instance_id/split/reward_source at a row's top level, else only under the
    key the population declares (PopulationInfo.fields_under): it knows no target's row shape."""
    from sediment.export.adaptation import row_field
    from sediment.plugin import PopulationInfo

    nested = {"response": {}, "metadata": {"instance_id": "i-1", "split": "eval"}}
    assert row_field(nested, "instance_id") is None  # undeclared: top level only
    assert row_field(nested, "instance_id", "metadata") == "i-1"
    assert row_field({"instance_id": "top", **nested}, "instance_id", "metadata") == "top"
    assert row_field({"metadata": "not an object"}, "split", "metadata") is None
    assert load_registry().targets["nemo-gym"].info.populations["rollouts"].fields_under == "metadata"
    with pytest.raises(ValueError, match="fields_under must be a snake_case word"):
        PopulationInfo("https://example.com/x.json", fields_under="Meta Data")
