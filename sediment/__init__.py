"""Sediment: recorded agent sessions plus CI outcomes, exported as auditable training rows.

The public Python surface: :func:`export_objective` (any installed objective), and
:func:`export_rlvr_from_rollouts` and :func:`export_rlvr_from_bundle`, the seed's names for an
export through a target of the default objective (thin calls of
:func:`sediment.export.pipeline.export_through_target`, kept so the seed's callers keep working).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from sediment.git.mirror_root import MirrorRoot

    __version__: str


def __getattr__(name: str) -> str:
    """``__version__``, read from the installed metadata on first use (PEP 562): importing the
    package, which every ``sediment.*`` import does, stays cheap."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("sediment")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        found = "0.0.0"
    globals()["__version__"] = found
    return found


def export_objective(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """See :func:`sediment.export.pipeline.export_objective`."""
    from sediment.export.pipeline import export_objective as run

    return run(*args, **kwargs)


def export_rlvr_from_rollouts(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """The seed's name for exporting Rollouts through a target (of the default objective, unless
    the target names its own): :func:`sediment.export.pipeline.export_through_target`, unchanged."""
    from sediment.export.pipeline import export_through_target as run

    return run(*args, **kwargs)


def export_rlvr_from_bundle(
    bundle: str | Path, mirrors: MirrorRoot | None, out_dir: str | Path, *, target: str, **kwargs: Any
) -> dict[str, Any]:
    """The seed's name for exporting a bundle through a target (of the default objective, unless
    the target names its own): open and validate the bundle, then
    :func:`sediment.export.pipeline.export_through_target` with the split following the bundle
    policy's ``eval_fraction`` and the bundle's fragmentation counts."""
    from sediment.bundle.read import open_bundle
    from sediment.export.pipeline import export_through_target as run

    opened = open_bundle(bundle)
    return run(
        opened, mirrors, out_dir, target=target, split_enabled=opened.split_enabled,
        fragmented=opened.manifest.fragmented, **kwargs,
    )


__all__ = ["__version__", "export_objective", "export_rlvr_from_bundle", "export_rlvr_from_rollouts"]
