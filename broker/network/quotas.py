"""Connection limits: `max.connections` for the broker, `max.connections.per.ip` per client.

Each open connection holds a read buffer of up to `socket.request.max.bytes`, so these limits
bound the memory a crowd of clients can pin. Counting is pure bookkeeping (no sockets), so the
listener asks before serving and releases when the connection ends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping


def parse_per_ip_overrides(text: str) -> dict[str, int]:
    """`max.connections.per.ip.overrides`: "host:limit,host:limit" (Kafka's format)."""
    overrides: dict[str, int] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        host, separator, limit = entry.rpartition(":")
        if not separator or not host or not limit.strip().isdigit():
            raise ValueError(f"{entry!r} is not of the form host:limit")
        overrides[host.strip()] = int(limit)
    return overrides


class ConnectionQuotas:
    def __init__(
        self, max_connections: int, max_connections_per_ip: int, overrides: Mapping[str, int]
    ) -> None:
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self._overrides = dict(overrides)
        self._per_host: Counter[str] = Counter()
        self._total = 0

    @property
    def total(self) -> int:
        return self._total

    def limit_for(self, host: str) -> int:
        return self._overrides.get(host, self.max_connections_per_ip)

    def try_acquire(self, host: str) -> str | None:
        """Count a new connection from `host`; return why not if a limit is reached."""
        if self._total >= self.max_connections:
            return f"max.connections={self.max_connections} reached"
        limit = self.limit_for(host)
        if self._per_host[host] >= limit:
            return f"max.connections.per.ip={limit} reached for {host}"
        self._per_host[host] += 1
        self._total += 1
        return None

    def release(self, host: str) -> None:
        if self._per_host[host] <= 0:
            raise RuntimeError(f"released a connection from {host} that was never counted")
        self._per_host[host] -= 1
        if self._per_host[host] == 0:
            del self._per_host[host]
        self._total -= 1
