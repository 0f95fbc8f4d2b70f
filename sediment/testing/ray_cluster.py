"""A real local Ray cluster on loopback, for tests and the bench (``--engine ray``).

:func:`local_ray_cluster` starts a head node and ``nodes - 1`` worker node processes with
``ray start --block`` (one CPU each unless told), each in its own process group and on a
loopback address of its own (127.0.0.2, 127.0.0.3, …: Ray would swap 127.0.0.1 itself for the
machine's network address), waits a bounded time for every node to join, sets ``RAY_ADDRESS``
for the engine, and on exit stops every process it started (SIGTERM, then SIGKILL of each
group) and removes its temporary directory. Ray itself (the ``sediment[ray]`` extra) is imported
only by the caller's use of the cluster, never by this module.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

#: Seconds the whole cluster may take to come up.
START_TIMEOUT = 90
#: Seconds a node's processes get to stop after SIGTERM before SIGKILL.
STOP_GRACE = 5


class ClusterError(RuntimeError):
    """The local cluster did not come up in time (the nodes' log tail says why)."""


def ray_command() -> Path:
    """The ``ray`` command beside this interpreter (installed by the ``sediment[ray]`` extra)."""
    return Path(sys.executable).with_name("ray")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(host: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex((host, port)) == 0


def _start(args: list[str], node_ip: str, cpus: int, temp: Path, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    ports = ["--node-manager-port", str(_free_port()), "--object-manager-port", str(_free_port()),
             "--dashboard-agent-listen-port", str(_free_port()), "--dashboard-agent-grpc-port", str(_free_port()),
             "--metrics-export-port", str(_free_port()), "--runtime-env-agent-port", str(_free_port())]
    with log.open("ab") as out:
        return subprocess.Popen([str(ray_command()), "start", "--block", "--num-cpus", str(cpus), "--node-ip-address",
                                 node_ip, "--disable-usage-stats", *ports, *args],
                                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=temp)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """The node's whole process group (its raylet, object store and workers)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            time.sleep(1)  # the group's other processes after the node's own
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:] if log.exists() else ""


@contextmanager
def local_ray_cluster(nodes: int = 2, cpus_per_node: int = 1, *, connect: bool = True) -> Iterator[str]:
    """A head and ``nodes - 1`` worker nodes on loopback; yields the address (also in
    ``RAY_ADDRESS`` meanwhile). With ``connect`` this process is connected as a driver (and
    disconnected on exit). Raises :class:`ClusterError` when a node does not come up in time."""
    temp = Path(tempfile.mkdtemp(prefix="sray-", dir="/tmp"))  # short: Ray's socket paths must fit
    log = temp / "nodes.log"
    port = _free_port()
    address = f"127.0.0.2:{port}"
    started = [_start(["--head", "--port", str(port), "--include-dashboard=false", "--temp-dir", str(temp)],
                      "127.0.0.2", cpus_per_node, temp, log)]
    before = os.environ.get("RAY_ADDRESS")
    driver: Any = None
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _listening("127.0.0.2", port):
            if time.monotonic() > deadline or started[0].poll() is not None:
                raise ClusterError(f"the Ray head did not start:\n{_tail(log)}")
            time.sleep(0.5)
        for index in range(1, nodes):
            started.append(_start(["--address", address], f"127.0.0.{2 + index}", cpus_per_node, temp, log))
        os.environ["RAY_ADDRESS"] = address
        import ray

        driver = ray
        driver.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        while len([n for n in driver.nodes() if n["Alive"]]) < nodes:
            if time.monotonic() > deadline or any(p.poll() is not None for p in started):
                raise ClusterError(f"the Ray worker nodes did not join:\n{_tail(log)}")
            time.sleep(0.5)
        if not connect:
            driver.shutdown()
        yield address
    finally:
        if before is None:
            os.environ.pop("RAY_ADDRESS", None)
        else:
            os.environ["RAY_ADDRESS"] = before
        if driver is not None:
            driver.shutdown()
        for process in reversed(started):
            _stop(process)
        shutil.rmtree(temp, ignore_errors=True)
