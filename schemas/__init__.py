"""JSON Schema (draft 2020-12) files for every emitted row; installed as ``sediment.schemas``."""
