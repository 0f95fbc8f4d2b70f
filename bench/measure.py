"""Run one ``sediment`` command in this process and record its peak RSS.

    python bench/measure.py RESULT.json ARGS...

RESULT.json gets the peak RSS (MiB) of this process and of its largest child (workers).
This process's peak is its own memory's high-water mark (``VmHWM``): ``ru_maxrss`` would also
count the memory of the process that started it, which Linux carries across exec.
"""

import json
import resource
import sys

from sediment.cli import main


def _record(path: str) -> None:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    own = int(line.split()[1]) / 1024
    except OSError:
        pass
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    with open(path, "w", encoding="ascii") as handle:
        json.dump({"self_mb": own, "children_mb": children}, handle)


if __name__ == "__main__":
    result = sys.argv[1]
    sys.argv = ["sediment", *sys.argv[2:]]
    try:
        main()
    except SystemExit as exc:
        _record(result)
        raise SystemExit(exc.code) from None
    _record(result)
