"""Test kit for Sediment and for plugin authors, registered as a pytest plugin (``pytest11``
entry point ``sediment``): installing Sediment makes it available to every test suite.

- Builders: real git mirrors (:class:`GitRepo`, fixtures ``mirror_root`` and ``git_repo``),
  Facts and Rollouts (:func:`message`, :func:`call`, :func:`conversation`, :func:`outcome`,
  :func:`rollout`).
- :func:`plugin_registry` registers plugins inline for one test (hookimpl modules, classes or
  objects, under a name), beside the built-ins (or only beside the built-in objectives);
  nothing global changes.
- :func:`run_export` runs a target or profile export into a temporary directory and returns
  the summary and the rows of every file, each validated against its schema;
  :func:`run_objective` does the same for an objective without targets.
- :func:`read_rows` reads one JSONL file and validates every row against the registered
  schemas (the core's and every plugin's).

Isolation: every test sees only Sediment's built-in plugins through entry-point discovery
(``SEDIMENT_LOAD_PLUGINS`` is set to them), so whatever else happens to be installed cannot
change a result; mark a test ``@pytest.mark.sediment_installed_plugins`` to discover every
installed plugin instead. No operator configuration (``SEDIMENT_*`` variables) leaks in.

Lanes: the kit marks what needs more than Python, so that a suite can leave it out with ``-m``:
``postgres`` on the PostgreSQL side of the ``store_url`` fixture, ``consumer`` on every test that
uses the ``consumer_python`` fixture. A test that reaches the PostgreSQL test server otherwise
(:func:`postgres_store_url`, :func:`postgres_base_url`) carries ``@pytest.mark.postgres`` itself:
only a test so marked sees the server (``SEDIMENT_TEST_DATABASE_URL``), and an unmarked one that
asks for it fails naming the mark, so the marks stay true. A deselected test is not a skip: it
never counts against ``sediment_ci_forbids_skips``.

Under CI: :func:`unavailable` and :func:`require_path` skip a test whose data or tool is
missing, naming it, and fail it instead under CI (``CI=true``), where everything must be
present. A suite that sets the ini option ``sediment_ci_forbids_skips = true`` also reports
every skipped or xfailed test as failed under CI, except the node ids its
``sediment_ci_allowed_skips`` lines name, each with the reason (``NODE_ID: reason``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from sediment.git.mirror_root import MirrorRoot
from sediment.git.mirror_writer import MirrorWriter
from sediment.model.facts import (
    CIOutcome,
    InferenceCall,
    InferenceMessage,
    RepositoryIdentity,
    TestCaseResult,
    TextPart,
    ToolCallPart,
)
from sediment.model.policy import ROLLOUT_IMPLEMENTATION_VERSION, DerivationPolicy, Provenance
from sediment.model.rollout import CommitRef, Rollout, segment_calls, tool_sets
from sediment.split import Split

if TYPE_CHECKING:
    from sediment.git.repositories import RepositoryContext
    from sediment.host.registry import PluginRegistry
    from sediment.validation import SchemaSet

ORG = "acme"
REPO = "owner/repo"
T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
POLICY = DerivationPolicy()
PROVENANCE = Provenance(policy_version=ROLLOUT_IMPLEMENTATION_VERSION, quarantine_revision=0,
                        policy_digest=POLICY.digest)


class GitRepo:
    """A real bare mirror in a mirror root, with commits made one by one."""

    def __init__(self, root: MirrorRoot, repo: str = REPO, org_id: str = ORG,
                 identity: RepositoryIdentity | None = None) -> None:
        """``identity``: the mirror of an identified repository (keyed by its identity)."""
        self.root = root
        self.repo = repo
        self.identity = identity
        self.path = root.mirror_path(org_id, repo, identity)
        self._writer = MirrorWriter(self.path)
        self._clock = 1_767_000_000

    def commit(self, files: dict[str, str | None], message: str = "change", *,
               parents: Sequence[str] | None = None, branch: str | None = None) -> str:
        """A commit one minute after the last; ``branch`` / ``parents`` as for
        :meth:`sediment.git.mirror_writer.MirrorWriter.commit` (another branch, explicit parents)."""
        self._clock += 60
        return self._writer.commit(files, message, when=self._clock, parents=parents, branch=branch)

    def note(self, sha: str, *sessions: str) -> None:
        """Write the ``refs/notes/sediment`` note of ``sha`` naming ``sessions`` (as an agent's hook
        would); :func:`sediment.ingest.git_notes.observe_notes` then stores the edges."""
        self._writer.add_note(sha, [{"tool": "codex", "session_id": s, "stamped_at": "2026-01-05T12:00:00Z"}
                                    for s in sessions])


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


def test_result(test_id: str, sha: str, outcome: str = "passed", *, run_id: str = "1", attempt: int = 1,
                repo: str = REPO, org_id: str = ORG, provider: str = "github_actions", **fields: Any) -> TestCaseResult:
    """A recorded pytest result of ``test_id`` on ``sha`` in one run attempt (ids and locators
    deterministic from the arguments)."""
    import hashlib

    base: dict[str, Any] = {"runner": "pytest", "name": test_id.rsplit("::", 1)[-1], "captured_at": T0,
                            "report_sha256": hashlib.sha256(f"{sha}{run_id}{attempt}".encode()).hexdigest(),
                            "locator": f"testsuites/testsuite[0]/testcase[{test_id}]"}
    base.update(fields)
    return TestCaseResult(
        test_result_id=f"tr-{sha[:7]}-{run_id}-{attempt}-{test_id}", org_id=org_id, provider=provider,
        run_id=run_id, run_attempt=attempt, repo=repo, commit_sha=sha, test_id=test_id, outcome=outcome, **base,
    )


test_result.__test__ = False  # type: ignore[attr-defined]  # a builder, not a pytest test


def rollout(session_id: str, *, calls: Sequence[InferenceCall] | None = None,
            commits: Sequence[str | CommitRef] = (), outcomes: Sequence[CIOutcome] = (),
            split: Split = "train", org_id: str = ORG, repo: str = REPO, **fields: Any) -> Rollout:
    """A Rollout built through real segmentation of ``calls`` (a two-call loop by default)."""
    calls = list(calls) if calls is not None else conversation(session_id, org_id=org_id)
    segments, _ = segment_calls(calls)
    refs = tuple(c if isinstance(c, CommitRef) else CommitRef(repo=repo, commit_sha=c) for c in commits)
    values: dict[str, Any] = {
        "org_id": org_id, "session_id": session_id, "segments": segments, "commits": refs,
        "attribution_source": "git_notes", "terminal_outcomes": tuple(outcomes),
        "provenance": PROVENANCE, "split": split, "tool_sets": tool_sets(calls),
    }
    values.update(fields)
    return Rollout(**values)


def plugin_registry(*plugins: tuple[str, object], builtins: bool = True) -> PluginRegistry:
    """A registry of Sediment's built-in plugins plus ``plugins``, each a ``(name, plugin)``
    pair: a module, class or object carrying ``@hookimpl`` functions. With ``builtins=False``
    only the built-in objectives (``rlvr``) stay: every target belongs to an objective.

    The registry is a fresh value: registering here changes nothing for other tests. Pass it
    to :func:`run_export` (or to the export functions' ``registry=``).
    """
    from sediment.host.discovery import (
        BUILTIN_OBJECTIVES,
        BUILTIN_PLUGINS,
        PluginOrigin,
        PluginSource,
        discover_entry_points,
    )
    from sediment.host.registry import load_registry

    sources = discover_entry_points(blocked=(), only=BUILTIN_PLUGINS if builtins else BUILTIN_OBJECTIVES)
    for name, plugin in plugins:
        sources.append(PluginSource(plugin, PluginOrigin(name, "inline (test)", "0", repr(plugin)[:60])))
    return load_registry(sources)


def _schemas(schemas: SchemaSet | PluginRegistry | None) -> SchemaSet:
    from sediment.host.registry import PluginRegistry, load_registry

    if schemas is None:
        return load_registry().schemas
    return schemas.schemas if isinstance(schemas, PluginRegistry) else schemas


def read_rows(path: Path, schemas: SchemaSet | PluginRegistry | None = None) -> list[dict[str, Any]]:
    """Parse a JSONL file and assert every row validates against the schema its ``schema_id``
    names, among ``schemas`` (a registry's, by default the installed plugins')."""
    checker = _schemas(schemas)
    rows = []
    with path.open("r", encoding="ascii") as handle:
        for number, line in enumerate(handle, start=1):
            row = json.loads(line)
            errors = checker.errors(row)
            assert not errors, f"{path.name}:{number} violates its schema: {errors}"
            rows.append(row)
    return rows


def export_target(rollouts: Sequence[Rollout], mirrors: MirrorRoot | None, out_dir: Path, target: str, *,
                  split: bool = False, commands: Any = None, repositories: RepositoryContext | None = None,
                  ) -> dict[str, Any]:
    """Export ``rollouts`` through ``target`` with the installed plugins and no operator
    configuration (``commands``: a ``VerifierCommands``); the summary. ``repositories`` is the
    repository context identified CI resolves with (without one, only legacy CI resolves)."""
    from sediment.evidence.verifier_commands import VerifierCommands
    from sediment.export.pipeline import export_through_target

    return export_through_target(rollouts, mirrors, out_dir, target=target, split_enabled=split,
                                     verifier_commands=commands or VerifierCommands.empty(),
                                     repositories=repositories)


@dataclass
class ExportResult:
    """What :func:`run_export` produced: the summary, the directory and every published file's
    rows (file name → rows; ``data`` files of a profile export are read without a schema)."""

    summary: dict[str, Any]
    out_dir: Path
    rows: dict[str, list[dict[str, Any]]]


def run_export(rollouts: Sequence[Rollout], out_dir: Path, *, target: str, profile: str | None = None,
               registry: PluginRegistry | None = None, mirrors: MirrorRoot | None = None,
               split_enabled: bool = False, settings: dict[str, dict[str, Any]] | None = None,
               repositories: RepositoryContext | None = None) -> ExportResult:
    """Export ``rollouts`` through ``target`` (and ``profile``) into ``out_dir`` and read back
    every published JSONL file, validating each row that names a schema.

    :param settings: plugin settings, ``{plugin name: {field: value}}`` (as a ``--config``
        file's ``[plugins.NAME]`` tables would give them).
    :param repositories: the repository context identified CI resolves with, e.g.
        ``RepositoryContext.build(ORG, outcomes)`` (without one, only legacy CI resolves).
    """
    from sediment.evidence.verifier_commands import VerifierCommands
    from sediment.export.pipeline import export_through_target
    from sediment.host.registry import load_registry
    from sediment.settings import SettingsSources

    registry = registry or load_registry()
    summary = export_through_target(
        rollouts, mirrors, out_dir, target=target, profile=profile, split_enabled=split_enabled,
        registry=registry, settings=SettingsSources(config=settings or {}, config_path="test settings"),
        verifier_commands=VerifierCommands.empty(), repositories=repositories,
    )
    rows: dict[str, list[dict[str, Any]]] = {}
    for written in summary["written"]:
        path = Path(written)
        if profile is not None and path.name.startswith("data"):
            rows[path.name] = [json.loads(line) for line in path.read_text(encoding="ascii").splitlines()]
        else:
            rows[path.name] = read_rows(path, registry)
    return ExportResult(summary, Path(out_dir), rows)


def run_objective(rollouts: Sequence[Rollout], out_dir: Path, *, objective: str, recipe: str | None = None,
                  registry: PluginRegistry | None = None, mirrors: MirrorRoot | None = None,
                  split_enabled: bool = False, settings: dict[str, dict[str, Any]] | None = None) -> ExportResult:
    """Export ``rollouts`` as ``objective`` (one without targets) into ``out_dir`` and read back
    every published JSONL file, validating each row against the schema it names.

    :param settings: plugin settings, ``{plugin name: {field: value}}``.
    """
    from sediment.evidence.verifier_commands import VerifierCommands
    from sediment.export.pipeline import Evidence, export_objective
    from sediment.host.registry import load_registry
    from sediment.settings import SettingsSources

    registry = registry or load_registry()
    summary = export_objective(
        Evidence(list(rollouts), split_enabled, mirrors), out_dir, objective=objective, recipe=recipe,
        registry=registry, settings=SettingsSources(config=settings or {}, config_path="test settings"),
        verifier_commands=VerifierCommands.empty(),
    )
    rows = {Path(written).name: read_rows(Path(written), registry) for written in summary["written"]}
    return ExportResult(summary, Path(out_dir), rows)


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


@pytest.fixture
def commit_history(git_repo: GitRepo) -> dict[str, str]:
    """A real history in ``git_repo``: root → c1 (fixes add) → c2 (adds a test, renames a file)
    → c3 (an unverified later change). Names → SHAs."""
    root = git_repo.commit({"calc.py": "def add(a, b):\n    return a - b\n", "old.txt": "x\n" * 20})
    c1 = git_repo.commit({"calc.py": "def add(a, b):\n    return a + b\n"})
    c2 = git_repo.commit({"test_calc.py": "def test_add():\n    assert True\n",
                          "old.txt": None, "renamed.txt": "x\n" * 20})
    c3 = git_repo.commit({"later.py": "print('later')\n"})
    return {"root": root, "c1": c1, "c2": c2, "c3": c3}




@pytest.fixture
def consumer_python(request: pytest.FixtureRequest) -> Callable[[str], Path]:
    """``consumer_python("verifiers")``: the interpreter of a consumer venv that
    ``scripts/consumer-venv`` built under ``<rootdir>/.venv-consumers/<name>``. A missing venv
    skips the test with the reason, and fails it under CI (``CI=true``), where it must exist.
    Every test using it is marked ``consumer``."""

    def find(name: str) -> Path:
        python = request.config.rootpath / ".venv-consumers" / name / "bin" / "python"
        return require_path(python, f"the consumer venv .venv-consumers/{name}",
                            hint=f"scripts/consumer-venv {name} builds it")

    return find


def run_consumer(python: Path, script: Path, *args: str | Path, home: Path, timeout: int = 600) -> list[Any]:
    """Run a check script in a consumer venv (offline: no hub) and parse its JSON output lines."""
    import subprocess

    environment = dict(os.environ, HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=str(home),
                       PYTHONWARNINGS="ignore")
    process = subprocess.run([str(python), str(script), *map(str, args)], capture_output=True, text=True,
                             env=environment, timeout=timeout, check=False)
    assert process.returncode == 0, f"{script.name} failed:\n{process.stderr[-4000:]}"
    return [json.loads(line) for line in process.stdout.splitlines() if line.startswith("{")]


def under_ci(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the tests run under CI: ``CI`` is ``true`` or ``1`` (any case), as CI services set it."""
    value = (os.environ if environ is None else environ).get("CI", "")
    return value.strip().lower() in ("true", "1")


def unavailable(reason: str, *, environ: Mapping[str, str] | None = None) -> NoReturn:
    """Skip the running test because what it needs is missing (``reason`` names it); under CI
    fail it instead, since there everything a test needs must be present."""
    if under_ci(environ):
        pytest.fail(f"{reason}; under CI (CI=true) it must be present and the test must run", pytrace=False)
    pytest.skip(reason)


def require_path(path: Path, what: str, *, hint: str = "", environ: Mapping[str, str] | None = None) -> Path:
    """``path`` when it exists; else the test skips naming ``what`` and where it was looked for
    (and ``hint``, how to get it), and fails under CI (see :func:`unavailable`)."""
    if not path.exists():
        unavailable(f"{what} not found at {path}" + (f" ({hint})" if hint else ""), environ=environ)
    return path


def optional_path(path: Path, what: str, *, hint: str = "", environ: Mapping[str, str] | None = None) -> Path | None:
    """``path`` when it exists, else ``None`` (a test that adds real data when present goes on
    without it); under CI its absence fails the test, since there it must be present."""
    if path.exists():
        return path
    if under_ci(environ):
        require_path(path, what, hint=hint, environ=environ)
    return None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("sediment_ci_forbids_skips", "under CI (CI=true) report every skipped or xfailed test as failed",
                  type="bool", default=False)
    parser.addini("sediment_ci_allowed_skips", "node ids that may skip under CI, one a line: 'NODE_ID: reason'",
                  type="linelist", default=[])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sediment_installed_plugins: discover every installed Sediment plugin, not only the built-ins"
    )
    config.addinivalue_line("markers", "postgres: needs the PostgreSQL test server (SEDIMENT_TEST_DATABASE_URL)")
    config.addinivalue_line("markers", "consumer: loads rows in a consumer venv (the consumer_python fixture)")
    _allowed_skips(config)  # a malformed allow-list is a usage error at start-up


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses ``consumer_python`` ``consumer`` (before ``-m`` deselects)."""
    for item in items:
        if "consumer_python" in getattr(item, "fixturenames", ()):
            item.add_marker("consumer")


def _allowed_skips(config: pytest.Config) -> dict[str, str]:
    """``sediment_ci_allowed_skips``: node id (without parameters, or with) → reason."""
    allowed = {}
    for line in config.getini("sediment_ci_allowed_skips"):
        node, _, reason = line.partition(": ")
        if not node.strip() or not reason.strip():
            raise pytest.UsageError(f"sediment_ci_allowed_skips: {line!r} is not 'NODE_ID: reason'")
        allowed[node.strip()] = reason.strip()
    return allowed


def _skip_is_a_failure(config: pytest.Config, nodeid: str) -> bool:
    if not (config.getini("sediment_ci_forbids_skips") and under_ci()):
        return False
    allowed = _allowed_skips(config)
    return nodeid not in allowed and nodeid.split("[", 1)[0] not in allowed


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    if hasattr(report, "wasxfail"):
        return f"xfail: {report.wasxfail}" if report.wasxfail else "xfail"
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


_CI_SKIP = ("{reason} -- under CI (CI=true) no test may skip or xfail: provide what it needs, or allow it "
            "with its reason in sediment_ci_allowed_skips")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Under CI with ``sediment_ci_forbids_skips``: a skipped or xfailed (or xpassed) phase fails."""
    report = yield
    if (report.skipped or hasattr(report, "wasxfail")) and _skip_is_a_failure(item.config, item.nodeid):
        reason = _skip_reason(report)
        if hasattr(report, "wasxfail"):
            del report.wasxfail
        report.outcome = "failed"
        report.longrepr = _CI_SKIP.format(reason=reason)
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, pytest.CollectReport,
                                                                          pytest.CollectReport]:
    """Under CI with ``sediment_ci_forbids_skips``: a module or class that skips while collected fails."""
    report = yield
    if report.skipped and _skip_is_a_failure(collector.config, report.nodeid):
        reason = _skip_reason(report)
        report.outcome = "failed"
        report.longrepr = _CI_SKIP.format(reason=reason)
    return report


TEST_DATABASE_ENV_VAR = "SEDIMENT_TEST_DATABASE_URL"
_unmarked_test: str | None = None
"""The running test's node id when it is not marked ``postgres`` (it may not use the server)."""


@pytest.fixture(autouse=True)
def _clean_sediment_environment(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[None]:
    """No operator configuration leaks into tests, and discovery sees only the built-in plugins
    (unless the test is marked ``sediment_installed_plugins``). Only a test marked ``postgres``
    sees the PostgreSQL test server's URL."""
    from sediment.host.discovery import BUILTIN_PLUGINS, LOAD_ENV_VAR

    global _unmarked_test
    marked = request.node.get_closest_marker("postgres") is not None
    for name in [n for n in os.environ if n.startswith("SEDIMENT_") and (n != TEST_DATABASE_ENV_VAR or not marked)]:
        monkeypatch.delenv(name, raising=False)
    if request.node.get_closest_marker("sediment_installed_plugins") is None:
        monkeypatch.setenv(LOAD_ENV_VAR, ",".join(BUILTIN_PLUGINS))
    _unmarked_test = None if marked else request.node.nodeid
    try:
        yield
    finally:
        _unmarked_test = None


def _postgres_database(base_url: str) -> str:
    """A fresh, uniquely named database on the test server; its URL."""
    import secrets

    import psycopg

    name = f"sediment_test_{secrets.token_hex(6)}"
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return base_url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh fact store URL on each backend. PostgreSQL needs SEDIMENT_TEST_DATABASE_URL
    (``./run test`` starts a server); under CI its absence is a failure, not a skip. The
    PostgreSQL side is marked ``postgres``."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'facts.db'}"
    return _postgres_database(postgres_base_url())


def postgres_store_url() -> str:
    """A fresh database on the PostgreSQL test server (skips without one, fails under CI); a
    test calling it carries ``@pytest.mark.postgres``."""
    return _postgres_database(postgres_base_url())


def postgres_base_url() -> str:
    """The PostgreSQL test server's URL (``SEDIMENT_TEST_DATABASE_URL``, which ``./run test``
    sets); without it the test skips, and fails under CI."""
    if _unmarked_test is not None:
        pytest.fail(f"{_unmarked_test} uses the PostgreSQL test server but is not marked postgres: add "
                    "@pytest.mark.postgres (./run test --fast leaves such tests out)", pytrace=False)
    base = os.environ.get(TEST_DATABASE_ENV_VAR)
    if not base:
        unavailable("no PostgreSQL test server: SEDIMENT_TEST_DATABASE_URL is not set (./run test starts one)")
    return base
