"""Test kit for Sediment and for plugin authors, registered as a pytest plugin (``pytest11``
entry point ``sediment``): installing Sediment makes it available to every test suite. A
plugin's tests import this package, :mod:`sediment.plugin` and the plugin itself, nothing else
from Sediment; every name below is importable from ``sediment.testing``.

- Builders (:mod:`~sediment.testing.builders`): :func:`message`, :func:`call`,
  :func:`conversation`, :func:`outcome`, :func:`test_result`, :func:`rollout` (through real
  segmentation), the defaults ``ORG``, ``REPO``, ``T0``, ``POLICY``, ``PROVENANCE``, and the
  Fact and Rollout models a test builds by hand (``InferenceCall``, ``DeveloperDecision``,
  ``EditObservation``, ``RepositoryIdentity``, ``FactModel``, ``FileAttribution``,
  ``CommitRef``, ``DerivationPolicy``; ``segment_calls``, ``assign_split``).
- Mirrors (:mod:`~sediment.testing.mirrors`): :class:`GitRepo` (a real bare mirror, commits and
  git notes), fixtures ``mirror_root``, ``git_repo`` and ``commit_history``; ``MirrorRoot``,
  ``Mirror``, ``MirrorWriter``, ``RepositoryContext``.
- Bundles (:mod:`~sediment.testing.bundles`): :func:`write_bundle` from Rollouts,
  :func:`read_bundle`, :func:`bundle_evidence`.
- Store scenarios (:mod:`~sediment.testing.stores`): :func:`fact_store` (a ``FactStore`` with
  Facts written), :func:`store_notes` (git-note edges stored, as a refresh does),
  ``store_evidence`` (a direct export's evidence), ``derive_bundle``, ``StoreRollouts``,
  ``observe_notes``, ``derive_attributed_completions``.
- Exports (:mod:`~sediment.testing.exports`): :func:`plugin_registry` (plugins registered inline
  for one test), ``load_registry``; :func:`run_export` (target or profile), :func:`run_objective`
  and :func:`export_evidence` (any evidence: Rollouts, a bundle, a store) return an
  :class:`ExportResult` whose rows are validated against their schemas; :func:`read_rows`,
  :func:`snapshot`, :func:`settings_sources`, :func:`export_target`; the core's own entry points
  ``Evidence``, ``export_objective``, ``export_rlvr_from_rollouts``, ``VerifierCommands``,
  ``SettingsSources``; ``run_demo`` (the demo's inputs, store, bundle and exports).
- A local Ray cluster (:mod:`~sediment.testing.ray_cluster`, imported by name, the
  ``sediment[ray]`` extra): ``local_ray_cluster(nodes=2)`` starts a head and worker node
  processes on loopback for ``--engine ray`` and always stops them (tests mark themselves ``ray``).
- Errors the export raises, for ``pytest.raises``: ``SedimentError``, ``ConfigurationError``,
  ``ProfileError``, ``BundleError``, ``OutputDirectoryError``.

Isolation (:mod:`~sediment.testing.isolation`), opt-in: a suite whose ini sets
``sediment_isolate_environment = true`` (Sediment's own does) runs every test without
``SEDIMENT_*`` variables and with only Sediment's built-in plugins discovered
(``SEDIMENT_LOAD_PLUGINS``), unless a test is marked ``@pytest.mark.sediment_installed_plugins``.
It is off by default because the kit loads in every suite where Sediment is installed, and such
a suite may set ``SEDIMENT_*`` variables on purpose.

Lanes (:mod:`~sediment.testing.lanes`): the kit marks what needs more than Python, so that a
suite can leave it out with ``-m``: ``postgres`` on the PostgreSQL side of the ``store_url``
fixture, ``consumer`` on every test that uses the ``consumer_python`` fixture
(:func:`run_consumer` runs a check script there). A test that reaches the PostgreSQL test server
otherwise (:func:`postgres_store_url`, :func:`postgres_base_url`) carries
``@pytest.mark.postgres`` itself; an unmarked one that asks for it fails naming the mark, so the
marks stay true. A deselected test is not a skip: it never counts against
``sediment_ci_forbids_skips``.

Under CI (:mod:`~sediment.testing.ci`): :func:`unavailable` and :func:`require_path` skip a test
whose data or tool is missing, naming it, and fail it instead under CI (``CI=true``), where
everything must be present (:func:`optional_path`: go on without it). A suite that sets the ini
option ``sediment_ci_forbids_skips = true`` also reports every skipped or xfailed test as failed
under CI, except the node ids its ``sediment_ci_allowed_skips`` lines name, each with the reason
(``NODE_ID: reason``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from sediment.errors import BundleError, ConfigurationError, OutputDirectoryError, ProfileError, SedimentError
from sediment.model.facts import DeveloperDecision, EditObservation, FactModel, InferenceCall, RepositoryIdentity
from sediment.model.policy import DerivationPolicy
from sediment.model.rollout import CommitRef, FileAttribution, segment_calls
from sediment.split import assign_split
from sediment.testing.builders import (
    ORG,
    POLICY,
    PROVENANCE,
    REPO,
    T0,
    call,
    conversation,
    message,
    outcome,
    rollout,
    test_result,
)
from sediment.testing.bundles import bundle_evidence, read_bundle, write_bundle
from sediment.testing.ci import (
    optional_path,
    pytest_make_collect_report,
    pytest_runtest_makereport,
    require_path,
    unavailable,
    under_ci,
)
from sediment.testing.exports import (
    ExportResult,
    export_evidence,
    export_target,
    plugin_registry,
    read_rows,
    run_export,
    run_objective,
    settings_sources,
    snapshot,
)
from sediment.testing.hooks import pytest_addoption, pytest_configure
from sediment.testing.isolation import _clean_sediment_environment
from sediment.testing.lanes import (
    TEST_DATABASE_ENV_VAR,
    _postgres_lane,
    consumer_python,
    postgres_base_url,
    postgres_store_url,
    pytest_collection_modifyitems,
    run_consumer,
    store_url,
)
from sediment.testing.mirrors import (
    GitRepo,
    Mirror,
    MirrorRoot,
    MirrorWriter,
    RepositoryContext,
    commit_history,
    git_repo,
    mirror_root,
)

if TYPE_CHECKING:
    from sediment import export_rlvr_from_rollouts
    from sediment.demo import run_demo
    from sediment.derive.attributed_completions import derive_attributed_completions
    from sediment.evidence.context import Evidence
    from sediment.evidence.verifier_commands import VerifierCommands
    from sediment.export.pipeline import export_objective
    from sediment.host.registry import load_registry
    from sediment.settings import SettingsSources
    from sediment.testing.stores import (
        FactStore,
        StoreRollouts,
        derive_bundle,
        fact_store,
        observe_notes,
        store_evidence,
        store_notes,
    )

#: Names whose modules load on first use (the store, the derivation and the export pipeline are
#: heavy, and the kit loads in every pytest run where Sediment is installed).
_LAZY: dict[str, str] = {
    "run_demo": "sediment.demo",
    "derive_attributed_completions": "sediment.derive.attributed_completions",
    "Evidence": "sediment.evidence.context",
    "VerifierCommands": "sediment.evidence.verifier_commands",
    "export_objective": "sediment.export.pipeline",
    "export_rlvr_from_rollouts": "sediment",
    "load_registry": "sediment.host.registry",
    "SettingsSources": "sediment.settings",
    **dict.fromkeys(("FactStore", "StoreRollouts", "derive_bundle", "fact_store", "observe_notes", "store_evidence",
                     "store_notes"), "sediment.testing.stores"),
}

__all__ = [  # the names of _LAZY load on first use
    "ORG", "POLICY", "PROVENANCE", "REPO", "T0", "TEST_DATABASE_ENV_VAR", "BundleError", "CommitRef",
    "ConfigurationError", "DerivationPolicy", "DeveloperDecision", "EditObservation", "Evidence", "ExportResult",
    "FactModel", "FactStore", "FileAttribution", "GitRepo", "InferenceCall", "Mirror", "MirrorRoot", "MirrorWriter",
    "OutputDirectoryError", "ProfileError", "RepositoryContext", "RepositoryIdentity", "SedimentError",
    "SettingsSources", "StoreRollouts", "VerifierCommands", "_clean_sediment_environment", "_postgres_lane",
    "assign_split", "bundle_evidence", "call", "commit_history", "consumer_python", "conversation",
    "derive_attributed_completions", "derive_bundle", "export_evidence", "export_objective",
    "export_rlvr_from_rollouts", "export_target", "fact_store", "git_repo", "load_registry", "message",
    "mirror_root", "observe_notes", "optional_path", "outcome", "plugin_registry", "postgres_base_url",
    "postgres_store_url", "pytest_addoption", "pytest_collection_modifyitems", "pytest_configure",
    "pytest_make_collect_report", "pytest_runtest_makereport", "read_bundle", "read_rows", "require_path",
    "rollout", "run_consumer", "run_demo", "run_export", "run_objective", "segment_calls", "settings_sources",
    "snapshot", "store_evidence", "store_notes", "store_url", "test_result", "unavailable", "under_ci",
    "write_bundle",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sediment.testing' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value

