"""Ports a run picks for itself (Baton's listeners, HAProxy's, the replicas' blocks), free when picked."""

from __future__ import annotations

import random
import socket

# Per-run ports come from blocks below the kernel's ephemeral range (32768-60999 here) and above Ray's worker ports
# (10002-19999): a port found free there stays free until we bind it, where an ephemeral one may be taken by any of
# the sockets Ray opens meanwhile.
REPLICA_PORT_RANGE = range(20000, 30000)
LISTENER_PORT_RANGE = range(30100, 31000)  # Baton's own listeners when chosen per run (tests, benchmarks)
HAPROXY_PORT_RANGE = range(31000, 32000)
REPLICA_GRPC_PORT_RANGE = range(32000, 32700)
REPLICA_PORTS = 32  # more than the orchestrator replicas one machine runs


def free_block(size: int, within: range = REPLICA_PORT_RANGE) -> tuple[int, int]:
    """The first and last of `size` consecutive ports inside `within`, all free now, at a random place."""
    starts = list(range(within.start, within.stop - size + 1, size))
    random.shuffle(starts)
    for first in starts:
        if all(is_free(port) for port in range(first, first + size)):
            return first, first + size - 1
    raise RuntimeError(f"no {size} consecutive free ports in {within.start}-{within.stop - 1}")


def free_ports_in(count: int, within: range) -> list[int]:
    """`count` ports of `within` free now, scanning from a random place."""
    start, found = random.randrange(len(within)), []
    for i in range(len(within)):
        port = within[(start + i) % len(within)]
        if is_free(port):
            found.append(port)
            if len(found) == count:
                return found
    raise RuntimeError(f"no {count} free ports in {within.start}-{within.stop - 1}")


def free_ports(count: int) -> list[int]:
    """`count` distinct ports for Baton's listeners (HTTP, metrics) chosen per run, as tests and benchmarks do."""
    return free_ports_in(count, LISTENER_PORT_RANGE)


def is_free(port: int) -> bool:
    """Free on every interface: HAProxy binds them all."""
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True
