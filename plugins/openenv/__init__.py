"""Manifest plugin ``openenv``: the experimental ``environment.yaml`` beside Sediment task rows."""

from .manifest import write_manifest

__all__ = ["write_manifest"]
