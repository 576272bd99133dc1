"""A TCP relay between brokers and ZooKeeper that cuts one broker off without root: while a
broker is cut, nothing it sends reaches ZooKeeper and nothing ZooKeeper sends reaches it, and
its connections stay open (what a blackhole route does, not a closed port). What was held
flows on at the heal, in order, as TCP delivers after a network heals.

The brokers all connect through the relay (zookeeper.connect names it); a cut names a broker
by its process id, and the relay finds that process's connections by their socket inodes
(/proc/net/tcp and /proc/PID/fd), so nothing in the brokers or the launcher has to change.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
from dataclasses import dataclass, field

HOLD_POLL_S = 0.05


@dataclass(eq=False)
class _Pair:
    client: socket.socket
    upstream: socket.socket
    client_port: int
    owner: int | None = None  # the client's process id, once a cut looked it up
    closed: bool = field(default=False)


class ZkRelay:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: list[_Pair] = []
        self._cut: set[int] = set()
        self._stopping = False
        threading.Thread(target=self._accept_loop, name="zk-relay", daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cut(self, pid: int) -> None:
        """Hold all traffic of process `pid` (its connections now and those it opens later)."""
        with self._lock:
            self._cut.add(pid)
            sockets = _socket_inodes(pid)
            table = _tcp_inodes(self.port)
            for pair in self._pairs:
                if table.get(pair.client_port) in sockets:
                    pair.owner = pid

    def heal(self, pid: int) -> None:
        with self._lock:
            self._cut.discard(pid)

    def close(self) -> None:
        self._stopping = True
        with contextlib.suppress(OSError):
            self._server.close()
        with self._lock:
            for pair in self._pairs:
                _close(pair)

    def _held(self, pair: _Pair) -> bool:
        with self._lock:
            return pair.owner is not None and pair.owner in self._cut

    def _accept_loop(self) -> None:
        while not self._stopping:
            try:
                client, peer = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._upstream, timeout=10)
            except OSError:
                client.close()
                continue
            pair = _Pair(client, upstream, int(peer[1]))
            with self._lock:
                self._pairs.append(pair)
                if self._cut:
                    # A cut broker's reconnections are held from their first byte.
                    port_inode = _tcp_inodes(self.port).get(pair.client_port)
                    for pid in self._cut:
                        if port_inode in _socket_inodes(pid):
                            pair.owner = pid
            threading.Thread(target=self._pump, args=(pair,), daemon=True).start()

    def _pump(self, pair: _Pair) -> None:
        peers = {pair.client: pair.upstream, pair.upstream: pair.client}
        try:
            while not pair.closed:
                if self._held(pair):
                    threading.Event().wait(HOLD_POLL_S)
                    continue
                readable, _, _ = select.select(list(peers), [], [], HOLD_POLL_S)
                for source in readable:
                    data = source.recv(65536)
                    if not data:
                        return
                    peers[source].sendall(data)
        except OSError:
            return
        finally:
            _close(pair)
            with self._lock, contextlib.suppress(ValueError):
                self._pairs.remove(pair)


def _close(pair: _Pair) -> None:
    pair.closed = True
    for sock in (pair.client, pair.upstream):
        with contextlib.suppress(OSError):
            sock.close()


def _tcp_inodes(relay_port: int) -> dict[int, int]:
    """Local port -> socket inode of the IPv4 TCP sockets on 127.0.0.1 connected to the relay.

    Only sockets whose peer is the relay: /proc/net/tcp also lists other sockets (TIME_WAIT
    ones with inode 0 among them) that may have the same local port, and a port mapped to one
    of those left a broker's connection unheld."""
    relay = f"0100007F:{relay_port:04X}"
    inodes: dict[int, int] = {}
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            fields = line.split()
            address, _, port = fields[1].partition(":")
            inode = int(fields[9])
            if address == "0100007F" and fields[2] == relay and inode:
                inodes[int(port, 16)] = inode
    return inodes


def _socket_inodes(pid: int) -> set[int]:
    inodes: set[int] = set()
    directory = f"/proc/{pid}/fd"
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            with contextlib.suppress(OSError):
                target = os.readlink(f"{directory}/{name}")
                if target.startswith("socket:["):
                    inodes.add(int(target[8:-1]))
    return inodes
