"""Sediment: recorded agent sessions plus CI outcomes, exported as auditable RLVR rows.

The public Python surface: :func:`export_objective` (any installed objective),
:func:`export_rlvr_from_rollouts`, :func:`export_rlvr_from_bundle`, the models, and the plugin
marker :data:`hookimpl`.
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
    """See :func:`sediment.export.pipeline.export_rlvr_from_rollouts`."""
    from sediment.export.pipeline import export_rlvr_from_rollouts as run

    return run(*args, **kwargs)


def export_rlvr_from_bundle(
    bundle: str | Path, mirrors: MirrorRoot | None, out_dir: str | Path, *, target: str, **kwargs: Any
) -> dict[str, Any]:
    """Validate a bundle and export it; the split follows the bundle policy's ``eval_fraction``."""
    from sediment.bundle.read import open_bundle
    from sediment.export.pipeline import export_rlvr_from_rollouts as run

    opened = open_bundle(bundle)
    return run(
        opened, mirrors, out_dir, target=target, split_enabled=opened.split_enabled,
        fragmented=opened.manifest.fragmented, **kwargs,
    )


__all__ = ["__version__", "export_objective", "export_rlvr_from_bundle", "export_rlvr_from_rollouts"]
