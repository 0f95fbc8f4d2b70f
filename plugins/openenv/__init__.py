"""Manifest plugin ``openenv``: the experimental ``environment.yaml`` beside Sediment task rows."""

from .manifest import describe_manifest, plugin_settings, write_manifest

__all__ = ["describe_manifest", "plugin_settings", "write_manifest"]
