"""Ports for the clusters and servers that tests and tools start, reserved machine-wide.

A port that is free when picked can be taken by another process before the server it was
picked for binds it: with several xdist workers (or two test sessions) starting clusters at
once, brokers died with "Address already in use". So every cooperating process reserves its
ports here before handing them out: one lock file per block of `BLOCK_SIZE` ports under
`<tmp>/pykafka-ports/`, taken with a non-blocking `flock` and held as long as the ports are in
use. The kernel drops a flock when its holder exits, however it exits, so a crashed run leaves
nothing reserved. A port is also probed with a bind after it is reserved, for processes that
do not cooperate (a `make up` cluster, a port still in TIME_WAIT).

The ranges lie below Linux's ephemeral range (32768+), so outgoing connections cannot take
them: brokers at P.. (aligned to a block) with metrics at P+100.., ZooKeeper at Z.. with quorum
and election ports at Z+1000.. and Z+2000.. (scripts/_cluster/layout.py), single ports at S.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO

from .layout import ELECTION_PORT_OFFSET, METRICS_PORT_OFFSET, QUORUM_PORT_OFFSET

BLOCK_SIZE = 10
BROKER_PORT_RANGE = (10000, 19000)  # metrics up to 19100 + brokers
ZOOKEEPER_PORT_RANGE = (20000, 29000)  # election ports up to 31000 + servers
SINGLE_PORT_RANGE = (31100, 32700)  # below 32768, Linux's first ephemeral port
# A test run may point this elsewhere; all cooperating processes must agree on it.
LOCK_DIR = Path(
    os.environ.get("PYKAFKA_PORT_LOCK_DIR") or Path(tempfile.gettempdir()) / "pykafka-ports"
)


class NoFreePorts(RuntimeError):
    pass


class PortReservation:
    """Ports held for one user until `release` (or the process's exit)."""

    def __init__(self, ports: Sequence[int], locks: list[IO[bytes]]) -> None:
        self.ports = tuple(ports)
        self._locks = locks

    @property
    def base(self) -> int:
        return self.ports[0]

    def release(self) -> None:
        for lock in self._locks:
            lock.close()  # closing the only descriptor drops the flock
        self._locks = []

    def __enter__(self) -> PortReservation:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


class ClusterPorts:
    """The port bases of one `scripts/cluster up`, with every port it uses reserved."""

    def __init__(self, brokers: PortReservation, zookeepers: PortReservation) -> None:
        self.port_base = brokers.base
        self.zk_port_base = zookeepers.base
        self._reservations = (brokers, zookeepers)

    def release(self) -> None:
        for reservation in self._reservations:
            reservation.release()

    def __enter__(self) -> ClusterPorts:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


def _lock_block(block: int) -> IO[bytes] | None:
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    handle = open(LOCK_DIR / f"{block * BLOCK_SIZE}.lock", "ab")  # noqa: SIM115 (held open)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _try_base(base: int, offsets: Iterable[int]) -> PortReservation | None:
    ports = [base + offset for offset in offsets]
    locks: list[IO[bytes]] = []
    for block in sorted({port // BLOCK_SIZE for port in ports}):
        lock = _lock_block(block)
        if lock is None:
            break
        locks.append(lock)
    else:
        if all(_bindable(port) for port in ports):
            return PortReservation(ports, locks)
    for lock in locks:
        lock.close()
    return None


def reserve(offsets: Sequence[int], port_range: tuple[int, int]) -> PortReservation:
    """`base + offset` for every offset, reserved, for a block-aligned base in `port_range`
    chosen at random (so that parallel users rarely try the same one)."""
    first = -(-port_range[0] // BLOCK_SIZE) * BLOCK_SIZE
    bases = list(range(first, port_range[1], BLOCK_SIZE))
    random.shuffle(bases)
    for base in bases:
        reservation = _try_base(base, offsets)
        if reservation is not None:
            return reservation
    raise NoFreePorts(f"no free ports in {port_range} for offsets {list(offsets)}")


def reserve_port() -> PortReservation:
    """One port (`.base`) for a server started outside a cluster (a lab, an extra broker)."""
    return reserve([0], SINGLE_PORT_RANGE)


def cluster_port_offsets(broker_count: int, zookeeper_count: int) -> tuple[list[int], list[int]]:
    """The offsets from the broker and ZooKeeper port bases of every port `up` may bind."""
    broker_offsets = list(range(broker_count))
    broker_offsets += [METRICS_PORT_OFFSET + n for n in range(broker_count)]
    zookeeper_offsets = list(range(zookeeper_count))
    if zookeeper_count > 1:
        zookeeper_offsets += [QUORUM_PORT_OFFSET + n for n in range(zookeeper_count)]
        zookeeper_offsets += [ELECTION_PORT_OFFSET + n for n in range(zookeeper_count)]
    return broker_offsets, zookeeper_offsets


def reserve_cluster_ports(broker_count: int, zookeeper_count: int) -> ClusterPorts:
    """Port bases for `scripts/cluster up --port-base P --zk-port-base Z`, every port reserved."""
    broker_offsets, zookeeper_offsets = cluster_port_offsets(broker_count, zookeeper_count)
    if max(broker_count, zookeeper_count) > METRICS_PORT_OFFSET:
        raise ValueError("more servers than the port layout has room for")
    brokers = reserve(broker_offsets, BROKER_PORT_RANGE)
    try:
        zookeepers = reserve(zookeeper_offsets, ZOOKEEPER_PORT_RANGE)
    except BaseException:
        brokers.release()
        raise
    return ClusterPorts(brokers, zookeepers)
