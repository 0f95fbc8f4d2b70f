"""Sediment's built-in trajectory importers: one plugin module per source format.

Each module is registered under its format name in the ``sediment`` entry-point group and
imports only :mod:`sediment.plugin`. See ``docs/trajectories.md`` for the mappings.
"""
