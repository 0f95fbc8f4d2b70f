"""How often the cyclic garbage collector runs in a ``sediment`` process.

A batch command (ingest, derive, export, a report) holds caches of millions of long-lived
objects (replayed histories, message models, hash lists) and makes almost no reference cycles.
At CPython's default thresholds (700, 10, 10) each full collection walks those caches again for
nothing: 7-15% of the time of ingest, derive and the exports on the bench's pilot-tenth. So
:func:`sediment.cli.main` raises them (:data:`BATCH`); collections still run, young ones every
100,000 allocations. ``serve``, which runs for days, puts the interpreter's own back
(:data:`INTERPRETER`).
"""

from __future__ import annotations

import gc
from typing import Final

#: The thresholds while a batch command runs.
BATCH: Final = (100_000, 50, 100)
#: The interpreter's own thresholds, as they were when this module was first imported.
INTERPRETER: Final = gc.get_threshold()


def for_batch_work() -> None:
    gc.set_threshold(*BATCH)


def as_the_interpreter() -> None:
    gc.set_threshold(*INTERPRETER)
