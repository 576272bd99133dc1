"""Incremental fetch sessions, the leader's side (KIP-227; Kafka's FetchSession and cache).

A session remembers, per partition, what the fetcher last asked for and what the leader last
answered. An incremental request then names only the partitions whose fetch position moved
(and those to forget), and the response holds only partitions with something new: records, a
moved high watermark or log start offset, or an error. Every partition of the session is still
read on every request, so a follower's position keeps counting for the ISR.

Fetch v13+ names topics by id: a session made by such a request keys its partitions by topic
id, and only requests of v13+ may use it (older ones only sessions keyed by name).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from kio.schema.errors import ErrorCode

if TYPE_CHECKING:  # partition -> purgatory -> this module
    from broker.replication.partition import Partition

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 0x7FFFFFFF
# Kafka's FetchSessionCache: a session unused this long may give its slot to a new one.
SESSION_EVICTION_MS = 120_000
UNKNOWN_HIGH_WATERMARK = -1

TopicPartition = tuple[str, int]
# A session's partition: by topic name (Fetch v0-v12) or topic id (v13+).
FetchKey = tuple[str | uuid.UUID, int]


class FetchPosition(NamedTuple):
    """One partition of a fetch request: where to read and how much. A tuple: the fetcher
    compares thousands of them with what it sent last, on every request."""

    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    # The epoch of the last batch the fetcher holds (Fetch v12+; -1: none given). A leader
    # whose epochs part from the fetcher's below `fetch_offset` answers a diverging epoch.
    last_fetched_epoch: int = -1


class SessionWatch:
    """The partitions of one session that changed since they were read, and the wake-up of
    the request parked on them. Partitions hold it (`PartitionWaiters.watch_session`) for as
    long as they are in the session."""

    __slots__ = ("_waiter", "dirty")

    def __init__(self) -> None:
        self.dirty: set[FetchKey] = set()
        self._waiter: asyncio.Future[None] | None = None

    def mark(self, key: FetchKey) -> None:
        self.dirty.add(key)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, timeout_s: float) -> None:
        """Until a partition is marked (at once if one is), or `timeout_s`."""
        if self.dirty or timeout_s <= 0:
            return
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(self._waiter, timeout_s)
        except TimeoutError:
            pass
        finally:
            self._waiter = None


@dataclass(slots=True)
class CachedPartition:
    position: FetchPosition
    high_watermark: int = UNKNOWN_HIGH_WATERMARK
    log_start_offset: int = -1
    # The replica whose events mark this partition in the session's watch.
    watched: Partition | None = None

    def must_respond(self, error: ErrorCode, records_bytes: int, hw: int, start: int) -> bool:
        """Kafka's rule; also remembers what this response tells the fetcher."""
        changed = records_bytes > 0 or hw != self.high_watermark or start != self.log_start_offset
        self.high_watermark = hw
        self.log_start_offset = start
        if error != ErrorCode.none:
            # Re-sent once the error clears, whatever the high watermark is then.
            self.high_watermark = UNKNOWN_HIGH_WATERMARK
            return True
        return changed


@dataclass(slots=True)
class FetchSession:
    session_id: int
    privileged: bool
    partitions: dict[FetchKey, CachedPartition]
    last_used_ms: int
    epoch: int = 1  # the epoch the next request must carry
    uses_topic_ids: bool = False
    watch: SessionWatch = field(default_factory=SessionWatch)
    # Read again by the next request whatever happens: named by a request, or their last read
    # left something to give.
    unsettled: set[FetchKey] = field(default_factory=set)
    # When every partition was last read; None: never (the next request sweeps).
    last_sweep_ms: int | None = None

    def update(
        self,
        changed: Iterable[tuple[FetchKey, FetchPosition]],
        forgotten: Iterable[FetchKey],
    ) -> None:
        for key, position in changed:
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = CachedPartition(position)
            else:
                cached.position = position
            self.unsettled.add(key)
        for key in forgotten:
            forgotten_partition = self.partitions.pop(key, None)
            if forgotten_partition is not None:
                self._unwatch(forgotten_partition)
            self.unsettled.discard(key)
            self.watch.dirty.discard(key)

    def keys_to_read(self, sweep: bool) -> list[FetchKey]:
        """The partitions the request reads (all of them on a sweep), in session order; they
        count as read."""
        keys = self._take(self.unsettled, self.watch.dirty)
        return list(self.partitions) if sweep else keys

    def take_changed(self) -> list[FetchKey]:
        """The partitions marked since they were read, in session order; they count as read."""
        return self._take(self.watch.dirty)

    def _take(self, *marked: set[FetchKey]) -> list[FetchKey]:
        """The partitions in any of the `marked` sets, in session order; the sets are emptied
        in place (the watch's waiter checks its own set)."""
        wanted = marked[0].union(*marked[1:])
        keys = [key for key in self.partitions if key in wanted] if wanted else []
        for keys_marked in marked:
            keys_marked.clear()
        return keys

    def watch_replica(self, key: FetchKey, replica: Partition | None) -> None:
        """Let `replica`'s events mark `key` (before it is read: a change after that read is
        then seen)."""
        cached = self.partitions.get(key)
        if cached is None or cached.watched is replica:
            return
        self._unwatch(cached)
        if replica is not None:
            replica.waiters.watch_session(self.watch, key)
        cached.watched = replica

    def close(self) -> None:
        for cached in self.partitions.values():
            self._unwatch(cached)

    def _unwatch(self, cached: CachedPartition) -> None:
        if cached.watched is not None:
            cached.watched.waiters.unwatch_session(self.watch)
            cached.watched = None

    def move_to_end(self, key: FetchKey) -> None:
        """Partitions that answered go last, so the next response's byte budget is fair."""
        cached = self.partitions.pop(key, None)
        if cached is not None:
            self.partitions[key] = cached


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= MAX_EPOCH else epoch + 1


@dataclass
class FetchSessionCache:
    """Bounded by `max.incremental.fetch.session.cache.slots`. When full, a new session takes
    the slot of the least recently used one if that one has been idle for
    SESSION_EVICTION_MS, or, for a follower, the slot of the least recently used consumer
    session; otherwise the fetcher goes on without a session."""

    max_slots: int
    random_id: Callable[[], int] = field(default=lambda: random.randint(1, 0x7FFFFFFF))
    _sessions: dict[int, FetchSession] = field(default_factory=dict)  # least recently used first

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int, now_ms: int) -> FetchSession | None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.last_used_ms = now_ms
            self._sessions[session_id] = session
        return session

    def remove(self, session_id: int) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.close()

    def create(
        self,
        privileged: bool,
        partitions: dict[FetchKey, CachedPartition],
        now_ms: int,
        uses_topic_ids: bool = False,
    ) -> int:
        """The new session's id, or INVALID_SESSION_ID when no slot can be had."""
        if self.max_slots <= 0:
            return INVALID_SESSION_ID
        if len(self._sessions) >= self.max_slots and not self._evict_one(privileged, now_ms):
            return INVALID_SESSION_ID
        session_id = self.random_id()
        while session_id == INVALID_SESSION_ID or session_id in self._sessions:
            session_id = self.random_id()
        self._sessions[session_id] = FetchSession(
            session_id, privileged, partitions, now_ms, uses_topic_ids=uses_topic_ids
        )
        return session_id

    def _evict_one(self, privileged: bool, now_ms: int) -> bool:
        oldest = next(iter(self._sessions.values()))
        if now_ms - oldest.last_used_ms >= SESSION_EVICTION_MS:
            self.remove(oldest.session_id)
            return True
        if privileged:
            consumer = next((s for s in self._sessions.values() if not s.privileged), None)
            if consumer is not None:
                self.remove(consumer.session_id)
                return True
        return False
