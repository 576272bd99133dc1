"""A fetch waiting for `min_bytes` (Kafka's DelayedFetch): whether it can complete is decided
from offsets and byte positions the log keeps in memory, so a wake-up reads no log; the handler
reads the logs once, when it completes.

For each partition the fetch parks on, the bytes available are those between the fetch
position and the end a fetcher may read to: the log end for a follower, the high watermark for
a consumer, the last stable offset for a read_committed consumer. As in Kafka, each partition
counts at most its `partition_max_bytes`, and the fetch completes once they add up to
`min_bytes`, or at once when a partition can only answer an error or must be read anew:

- the replica is gone from this broker, no longer leads, or leads anew (leadership moved
  away and back), or its log was swapped by AlterReplicaLogDirs;
- the request named a leader epoch that is no longer the current one (the read answers
  FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH); an epoch bump that keeps this broker leader
  does not complete a fetch that named no epoch, as in Kafka;
- the end is now below the fetch offset (the log was truncated, or a new leader's high
  watermark lags behind the consumer);
- the fetch position and the end lie in different segments (the log rolled, or the fetch is
  behind on an older segment): Kafka completes there too rather than add up segments.

Byte positions without reading: the log end's position is the active segment's size (exact);
another offset's is that of the offset index's entry at or below it, a lower bound at most
about `log.index.interval.bytes` plus one batch short. So a consumer whose high watermark lags
the log end sees counts off by up to that much (Kafka keeps the high watermark's exact
position); an end past the fetch offset always counts at least one byte, so `min_bytes=1`
completes as soon as anything new is readable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from kio.schema.errors import ErrorCode

from broker.log.log import Log
from broker.replication.partition import Partition
from broker.replication.read_checks import ReadResult
from zk.loop_slice import LoopSlice

TopicPartition = tuple[str, int]


class LogPosition(NamedTuple):
    segment_base_offset: int
    position_bytes: int


def position_of(log: Log, offset: int) -> LogPosition:
    """Where the batch holding `offset` starts (at the log end: where the next one will),
    from in-memory state only: exact at the log end, else the offset index's lower bound."""
    if offset >= log.log_end_offset:
        active = log.active_segment
        return LogPosition(active.base_offset, active.size_bytes)
    segment = log.segment_for(offset)
    _, position_bytes = segment.offset_index.lookup(offset)
    return LogPosition(segment.base_offset, position_bytes)


# Named tuples rather than frozen dataclasses: one of each is made per partition of a fetch
# session (thousands for a follower) every time a fetch parks.
class FetchRequestPosition(NamedTuple):
    """What the request asked of one partition."""

    key: TopicPartition
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1


class FetchPartitionStatus(NamedTuple):
    """One partition of a parked fetch, as it was when the fetch parked."""

    request: FetchRequestPosition
    # The replica parked on; another object (or none) later means it was stopped or re-created.
    partition: Partition | None
    log: Log | None
    leadership_generation: int
    leader_epoch: int
    fetch_position: LogPosition


class DelayedFetch:
    def __init__(
        self,
        statuses: Sequence[FetchPartitionStatus],
        min_bytes: int,
        follower: bool,
        read_committed: bool = False,
        any_replica: bool = False,
    ) -> None:
        self.statuses = tuple(statuses)
        self.min_bytes = min_bytes
        self.follower = follower
        self.read_committed = read_committed and not follower
        # A consumer that may read from a follower (KIP-392): a replica that does not lead is
        # waited on too, up to its own high watermark.
        self.any_replica = any_replica and not follower
        self.changed_since_read = False

    @classmethod
    async def park(
        cls,
        lookup: Callable[[TopicPartition], Partition | None],
        requested: Sequence[tuple[FetchRequestPosition, ReadResult]],
        min_bytes: int,
        follower: bool,
        read_committed: bool = False,
        any_replica: bool = False,
    ) -> DelayedFetch:
        """Record each partition's replica and fetch position, with the read that preceded
        (no error in any: a fetch with an error answers at once). A follower's session holds
        thousands of partitions, so this runs in slices of loop time; a partition that moved
        since its read (an append, a new leader or epoch during a pause) is noted in
        `changed_since_read`, and the fetch then completes without waiting."""
        statuses = []
        changed = False
        loop_slice = LoopSlice()
        for request, earlier in requested:
            await loop_slice.pause_if_spent()
            current = lookup(request.key)
            statuses.append(_status(request, current))
            changed = changed or not _reads_as(current, earlier, any_replica and not follower)
        delayed = cls(statuses, min_bytes, follower, read_committed, any_replica)
        delayed.changed_since_read = changed
        return delayed

    def status_by_key(self) -> dict[TopicPartition, FetchPartitionStatus]:
        return {status.request.key: status for status in self.statuses}

    @staticmethod
    def same_as_parked(
        status: FetchPartitionStatus, current: Partition | None, earlier: ReadResult
    ) -> bool:
        """Whether a read of the partition now would answer what `earlier`, the read just
        before parking, answered: no error then, the same replica, still leading in the same
        term and epoch, and none of the offsets it answered moved. Such a partition need not
        be read again when the fetch completes."""
        return (
            earlier.error_code == ErrorCode.none
            and current is not None
            and current is status.partition
            and current.log is status.log
            and current.is_leader
            and current.leadership_generation == status.leadership_generation
            and current.leader_epoch == status.leader_epoch
            and current.log.log_end_offset == earlier.log_end_offset
            and current.high_watermark == earlier.high_watermark
            and current.log.log_start_offset == earlier.log_start_offset
        )

    @property
    def keys(self) -> list[TopicPartition]:
        return [status.request.key for status in self.statuses]

    async def try_complete(self, lookup: Callable[[TopicPartition], Partition | None]) -> bool:
        """Whether the fetch can be answered now; reads no log. In slices of loop time: a
        change to a partition already looked at wakes the fetch's watches, which the caller
        sets before it looks."""
        accumulated_bytes = 0
        loop_slice = LoopSlice()
        for status in self.statuses:
            await loop_slice.pause_if_spent()
            available_bytes = self._available_bytes(status, lookup(status.request.key))
            if available_bytes is None:
                return True
            accumulated_bytes += min(available_bytes, status.request.max_bytes)
            if accumulated_bytes >= self.min_bytes > 0:
                # Enough already: a follower's session of thousands of partitions need not be
                # looked at to the end on every append.
                return True
        return accumulated_bytes >= self.min_bytes

    def _available_bytes(
        self, status: FetchPartitionStatus, current: Partition | None
    ) -> int | None:
        """Bytes readable past the fetch position, or None if the partition must be answered
        now (an error, or data that positions alone cannot measure)."""
        if (
            current is None
            or current is not status.partition
            or current.log is not status.log
            or not (current.is_leader or self.any_replica)
            or current.leadership_generation != status.leadership_generation
        ):
            return None
        requested_epoch = status.request.current_leader_epoch
        if requested_epoch >= 0 and requested_epoch != current.leader_epoch:
            return None
        end_offset = current.log.log_end_offset if self.follower else current.high_watermark
        if self.read_committed:
            end_offset = current.log.last_stable_offset
        fetch_offset = status.request.fetch_offset
        if end_offset < fetch_offset:
            return None
        if end_offset == fetch_offset:
            return 0
        end_position = position_of(current.log, end_offset)
        if end_position.segment_base_offset != status.fetch_position.segment_base_offset:
            return None
        # Something lies between: at least one batch, whatever the index's lower bounds say.
        return max(end_position.position_bytes - status.fetch_position.position_bytes, 1)


def _status(request: FetchRequestPosition, current: Partition | None) -> FetchPartitionStatus:
    if current is None:
        return FetchPartitionStatus(request, None, None, -1, -1, LogPosition(-1, -1))
    return FetchPartitionStatus(
        request,
        current,
        current.log,
        current.leadership_generation,
        current.leader_epoch,
        position_of(current.log, request.fetch_offset),
    )


def _reads_as(current: Partition | None, earlier: ReadResult, any_replica: bool) -> bool:
    """Whether the replica still shows the offsets its read answered, as leader (or, for a
    consumer that may read from a follower, in either role)."""
    return (
        current is not None
        and (current.is_leader or any_replica)
        and current.log.log_end_offset == earlier.log_end_offset
        and current.high_watermark == earlier.high_watermark
        and current.log.log_start_offset == earlier.log_start_offset
    )
