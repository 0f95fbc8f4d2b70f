"""The export framework: hookspecs, discovery, registry, pipeline, writer, profile publication.

Plugin authors import :mod:`sediment.plugin`, not these modules.
"""
