"""DeleteRecords on a partition leader (Kafka's `Partition.deleteRecordsOnLeader` and
`DelayedDeleteRecords`).

The leader moves its log start offset at once (never backwards, never past the high
watermark; offset -1 means the high watermark). Followers learn the new start from the Fetch
response's `log_start_offset` and move theirs; their next fetch reports it back. The answer's
low watermark is the smallest log start offset over the leader and the followers on live
brokers; the request waits (up to its timeout) until that reaches the requested offset, as
Kafka's delayed operation does, and answers `REQUEST_TIMED_OUT` if it does not.

Segments wholly below the new log start offset are taken out of the leader's log on the event
loop and their files deleted on a worker thread; followers drop theirs at the next retention
check, as Kafka's brokers do for both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

from kio.schema.errors import ErrorCode

from broker.log.log import Log
from broker.log.manager import LogManager
from broker.replication.partition import Partition
from broker.replication.purgatory import TooManyWaitersError
from broker.replication.replica_manager import ReplicaManager

HIGH_WATERMARK_OFFSET = -1  # DeleteRecordsRequest.HIGH_WATERMARK
INVALID_LOW_WATERMARK = -1  # DeleteRecordsResponse.INVALID_LOW_WATERMARK
# A follower's broker dying changes the low watermark without any fetch to wake the waiting
# request, so a waiting request also looks again at this interval.
LOW_WATERMARK_RECHECK_S = 0.5

TopicPartition = tuple[str, int]
IsAlive = Callable[[int], bool]


@dataclass(frozen=True, slots=True)
class DeleteRecordsResult:
    error_code: ErrorCode
    low_watermark: int = INVALID_LOW_WATERMARK
    # The offset the low watermark must reach (the high watermark for -1).
    required_offset: int = -1

    @property
    def complete(self) -> bool:
        return self.error_code != ErrorCode.none or self.low_watermark >= self.required_offset


def delete_on_leader(
    replica_manager: ReplicaManager, key: TopicPartition, offset: int, alive: IsAlive
) -> DeleteRecordsResult:
    """Move the leader's log start offset to `offset`; the result says what to wait for."""
    current, error = replica_manager.leader_partition(*key)
    if current is None:
        return DeleteRecordsResult(error)
    if not current.log.config.delete:
        return DeleteRecordsResult(ErrorCode.policy_violation)
    required = current.high_watermark if offset == HIGH_WATERMARK_OFFSET else offset
    if required < 0 or required > current.high_watermark:
        return DeleteRecordsResult(ErrorCode.offset_out_of_range)
    current.log.increment_log_start_offset(required)
    current.waiters.on_log_start_offset()
    return DeleteRecordsResult(ErrorCode.none, current.low_watermark(alive), required)


def _check(
    replica_manager: ReplicaManager, key: TopicPartition, required: int, alive: IsAlive
) -> DeleteRecordsResult:
    current, error = replica_manager.leader_partition(*key)
    if current is None:
        return DeleteRecordsResult(error)
    return DeleteRecordsResult(ErrorCode.none, current.low_watermark(alive), required)


async def wait_for_low_watermarks(
    replica_manager: ReplicaManager,
    results: Mapping[TopicPartition, DeleteRecordsResult],
    alive: Callable[[], IsAlive],
    timeout_s: float,
) -> dict[TopicPartition, DeleteRecordsResult]:
    """Wait until every pending partition's low watermark reaches its required offset, or
    the timeout; a partition still short then answers REQUEST_TIMED_OUT."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    final = dict(results)
    while True:
        is_alive = alive()
        for key, result in final.items():
            if not result.complete:
                final[key] = _check(replica_manager, key, result.required_offset, is_alive)
        pending = [key for key, result in final.items() if not result.complete]
        remaining_s = deadline - loop.time()
        if not pending or remaining_s <= 0:
            break
        await _wait_for_change(replica_manager, pending, min(remaining_s, LOW_WATERMARK_RECHECK_S))
    return {
        key: result
        if result.complete
        else DeleteRecordsResult(
            ErrorCode.request_timed_out, result.low_watermark, result.required_offset
        )
        for key, result in final.items()
    }


async def _wait_for_change(
    replica_manager: ReplicaManager, keys: list[TopicPartition], timeout_s: float
) -> None:
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    watched: list[Partition] = []
    for key in keys:
        current = replica_manager.get(*key)
        if current is None:
            continue
        try:
            current.waiters.watch_low_watermark(future)
        except TooManyWaitersError:
            break  # look again after the timeout rather than park more
        watched.append(current)
    try:
        await asyncio.wait_for(asyncio.shield(future), timeout_s)
    except TimeoutError:
        pass
    finally:
        for current in watched:
            current.waiters.unwatch(future)


async def release_deleted_records(log_manager: LogManager, logs: list[Log]) -> None:
    """Delete the files of segments now below the log start offset and checkpoint the new
    log start offsets, both on worker threads (Kafka checkpoints them only every
    log.flush.start.offset.checkpoint.interval.ms; writing at once costs one small file)."""
    for replica_log in logs:
        doomed = replica_log.detach_segments_below_log_start()
        if doomed:  # on the log's worker: after the file work queued on it before
            await replica_log.worker.run(partial(replica_log.release_replaced_segments, doomed))
    snapshot = log_manager.checkpoint_snapshot()
    await asyncio.to_thread(log_manager.write_checkpoints, snapshot)
