"""Bundles for tests: :func:`write_bundle` writes one from Rollouts (the kit's org and policy by
default), :func:`read_bundle` opens it again (every line checked), and :func:`bundle_evidence`
is the evidence ``sediment export --bundle`` reads from it, for
:func:`sediment.testing.exports.export_evidence`; :func:`demo_evidence` that of a demo run's
output."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sediment.model.policy import DerivationPolicy
from sediment.model.rollout import Rollout
from sediment.testing.builders import ORG, POLICY

if TYPE_CHECKING:
    from sediment.bundle.format import Bundle
    from sediment.evidence.context import Evidence
    from sediment.git.mirror_root import MirrorRoot
    from sediment.settings import SettingsSources


def write_bundle(rollouts: Iterable[Rollout], destination: Path, *, org_id: str = ORG,
                 policy: DerivationPolicy = POLICY, quarantine_revision: int = 0, **options: Any) -> Path:
    """Write the bundle ``destination`` from ``rollouts`` as ``sediment derive`` does (atomically);
    its path. ``options``: the writer's ``fragmented``, ``skipped``, ``ordered`` and
    ``repositories``."""
    from sediment.bundle.write import write_bundle as write

    return write(rollouts, destination, org_id=org_id, policy=policy, quarantine_revision=quarantine_revision,
                 **options)


def read_bundle(path: Path, *, workers: int = 1) -> Bundle:
    """Open the bundle at ``path``, checking every line (a bad one raises ``BundleError`` naming
    file, line and field); an indexable sequence of its Rollouts with its ``manifest``."""
    from sediment.bundle.read import open_bundle

    return open_bundle(path, workers=workers)


def bundle_evidence(path: Path, mirrors: MirrorRoot | None = None) -> Evidence:
    """The evidence of an export from the bundle at ``path`` (its split and segmentation counts,
    and ``mirrors`` for exports that read the repository)."""
    from sediment.evidence.context import Evidence

    bundle = read_bundle(path)
    return Evidence(bundle, bundle.split_enabled, mirrors, bundle.manifest.fragmented)


def demo_evidence(demo: Path, *, shuffle: int | None = None) -> tuple[Evidence, SettingsSources]:
    """The evidence and settings of an export from a demo run's output (``run_demo(demo)``): its
    bundle, mirrors, repository context and settings file. With ``shuffle`` (a seed) the Rollouts
    are handed over in a shuffled order, as a list."""
    import random

    from sediment.evidence.context import Evidence
    from sediment.git.mirror_root import MirrorRoot
    from sediment.settings import SettingsSources

    bundle = read_bundle(demo / "bundle")
    rollouts: Any = bundle
    if shuffle is not None:
        rollouts = [bundle[i] for i in range(len(bundle))]
        random.Random(shuffle).shuffle(rollouts)
    evidence = Evidence(rollouts, bundle.split_enabled, MirrorRoot(demo / "home" / "mirrors"),
                        bundle.manifest.fragmented, repositories=bundle.repositories)
    return evidence, SettingsSources.load(config_file=demo / "inputs" / "settings.toml", environ={})
