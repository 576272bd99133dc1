"""Delayed operations of one partition: acks=all produces, long-polling fetches and
DeleteRecords waiting for every replica's log start offset.

Each waiter is woken only by the event that can complete it: a produce by the high watermark
reaching its offset, a consumer fetch by the high watermark moving, a follower fetch by an
append, a DeleteRecords by a follower reporting a new log start offset; a change of
leadership or leader epoch (or the replica going away) wakes everyone, because each may then
have to answer with an error. Completion itself is decided by the caller from the
partition's offsets after waking (a fetch by `broker.replication.delayed_fetch`, without
reading the log), so a spurious wake-up is harmless and cheap.

Incremental fetch sessions watch their partitions for as long as they hold them: every event
above, and a move of the leader's log start offset, marks the partition in each watching
session, which then reads only what was marked (see `broker.replication.fetch_session`).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

from broker.replication.fetch_session import FetchKey, SessionWatch

# Bounds the delayed operations one partition may hold (Kafka bounds them by its request
# queue); a request beyond it is answered at once rather than parked.
MAX_WAITERS_PER_PARTITION = 100_000

_sequence = itertools.count()


class TooManyWaitersError(Exception):
    """A partition already holds MAX_WAITERS_PER_PARTITION delayed operations."""


@dataclass(slots=True)
class PartitionWaiters:
    # (required high watermark, tie-breaker, future), smallest offset first.
    _produce: list[tuple[int, int, asyncio.Future[None]]] = field(default_factory=list)
    _high_watermark: set[asyncio.Future[None]] = field(default_factory=set)
    _log_end: set[asyncio.Future[None]] = field(default_factory=set)
    _low_watermark: set[asyncio.Future[None]] = field(default_factory=set)
    # Each watching fetch session, with its key for this partition.
    _sessions: dict[SessionWatch, FetchKey] = field(default_factory=dict)

    def __len__(self) -> int:
        return (
            len(self._produce)
            + len(self._high_watermark)
            + len(self._log_end)
            + len(self._low_watermark)
        )

    def wait_for_high_watermark(self, required_offset: int) -> asyncio.Future[None]:
        """A future done once the high watermark is at least `required_offset`."""
        self._check_room()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._produce, (required_offset, next(_sequence), future))
        return future

    def watch(self, future: asyncio.Future[None], follower: bool) -> None:
        """Wake `future` on the next append (followers) or high-watermark move (consumers)."""
        self._check_room()
        (self._log_end if follower else self._high_watermark).add(future)

    def watch_low_watermark(self, future: asyncio.Future[None]) -> None:
        """Wake `future` when a follower reports a new log start offset (DeleteRecords)."""
        self._check_room()
        self._low_watermark.add(future)

    def watch_session(self, watch: SessionWatch, key: FetchKey) -> None:
        self._sessions[watch] = key

    def unwatch_session(self, watch: SessionWatch) -> None:
        self._sessions.pop(watch, None)

    def on_log_start_offset(self) -> None:
        """The leader's log start offset moved (DeleteRecords): fetchers must be told."""
        self._mark_sessions()

    def unwatch(self, future: asyncio.Future[None]) -> None:
        self._log_end.discard(future)
        self._high_watermark.discard(future)
        self._low_watermark.discard(future)

    def on_low_watermark(self) -> None:
        _wake(self._low_watermark)
        self._low_watermark.clear()

    def on_append(self) -> None:
        self._mark_sessions()
        _wake(self._log_end)
        self._log_end.clear()

    def on_high_watermark(self, high_watermark: int) -> None:
        self._mark_sessions()
        _wake(self._high_watermark)
        self._high_watermark.clear()
        while self._produce and self._produce[0][0] <= high_watermark:
            _wake([heapq.heappop(self._produce)[2]])
        # Cancelled (timed-out) produces are dropped lazily; keep the heap from filling up.
        if len(self._produce) > 64 and self._produce[0][2].done():
            self._produce = [entry for entry in self._produce if not entry[2].done()]
            heapq.heapify(self._produce)

    def on_leadership_change(self) -> None:
        """Everyone answers again: with the new role's data or error."""
        self._mark_sessions()
        _wake(self._log_end)
        _wake(self._high_watermark)
        _wake(entry[2] for entry in self._produce)
        _wake(self._low_watermark)
        self._low_watermark.clear()
        self._log_end.clear()
        self._high_watermark.clear()
        self._produce.clear()

    def _mark_sessions(self) -> None:
        for watch, key in self._sessions.items():
            watch.mark(key)

    def _check_room(self) -> None:
        if len(self) >= MAX_WAITERS_PER_PARTITION:
            raise TooManyWaitersError(f"{len(self)} delayed operations already wait")


def _wake(futures: Iterable[asyncio.Future[None]]) -> None:
    for future in futures:
        if not future.done():
            future.set_result(None)
