"""Manifest plugin ``openenv``: the experimental ``environment.yaml`` beside Sediment task rows."""

from sediment_openenv.manifest import write_manifest

__all__ = ["write_manifest"]
