"""The plugin host: hookspecs, discovery, declarations, the registry and the hook docs."""
