"""One partition replica hosted by this broker: its log, its role and who waits on it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from broker.log.log import Log


@dataclass(slots=True)
class Partition:
    topic: str
    partition: int
    log: Log
    replicas: list[int]
    leader_id: int = -1
    leader_epoch: int = -1
    isr: list[int] = field(default_factory=list)
    is_leader: bool = False
    _waiters: set[asyncio.Future[None]] = field(default_factory=set)

    @property
    def high_watermark(self) -> int:
        # Until follower replication lands, a leader's committed point is its log end
        # (acks=all behaves as acks=1; see DEVIATIONS.md).
        return self.log.log_end_offset

    def add_waiter(self, waiter: asyncio.Future[None]) -> None:
        self._waiters.add(waiter)

    def remove_waiter(self, waiter: asyncio.Future[None]) -> None:
        self._waiters.discard(waiter)

    def wake_waiters(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()
