"""Redaction at capture: credentials by name, secrets inside content by shape."""
