"""The bundle: written by derivation, read by exports (``write``, ``read``, ``format``, ``lines``,
and ``upstream`` for the upstream v4 layout).

The derived bundle: a reviewed, frozen set of Rollouts that ``export rlvr --from`` reads.

Format ``sediment-rollout-bundle`` version 4 (``docs/bundle.md``; version 3, which carries no
file attributions, stays readable): a directory with
``manifest.json`` (strict JSON, sorted keys), ``rollouts.jsonl``, one
``{"record_json": "<canonical record>"}`` line per Rollout in ``(org_id, session_id)``
order, and the repository population the Rollouts were qualified with
(``repository_identities.jsonl``, ``repository_renames.jsonl``: every repository reference of
the org's identity-capable Facts and every RepositoryRename), from which the reader rebuilds
the repository context exports resolve CI with. The canonical record is sorted-key, compact,
ASCII JSON in which ``NaN``, ``Infinity`` and escaped lone surrogates survive, so Facts stay
lossless. The reader checks everything (hashes, counts, order, split, provenance) before any
export starts.
"""
