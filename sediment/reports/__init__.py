"""Reports: read-only diagnostics over the fact store (docs/reports.md).

:mod:`sediment.reports.dataset_diagnostics` describes the training datasets the installed
objectives would write (balance, Confidence, cross-split duplicates, bucket sparsity, floor
exclusions, near-duplicate prompt buckets, edit Fates, abandonment);
:mod:`sediment.reports.merge_retention` measures how much of each attributed agent edit
survives to its pull request's head and merge commit. Each computes a report dataclass and
never prints; ``sediment report NAME`` renders it (docs/reports.md).
"""
