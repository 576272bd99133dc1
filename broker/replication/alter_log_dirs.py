"""Moving replicas between this broker's log dirs (AlterReplicaLogDirs, KIP-113).

`alter` answers one partition of an AlterReplicaLogDirs request as Kafka's ReplicaManager
does: the destination must be one of `log.dirs` (else LOG_DIR_NOT_FOUND) and online (else
KAFKA_STORAGE_ERROR); a move to another destination than the one under way cancels that one;
the destination is remembered for a replica not hosted yet, which is then created there
(answering REPLICA_NOT_AVAILABLE, or UNKNOWN_TOPIC_OR_PARTITION for a partition the cluster
lacks); a replica already in the destination needs nothing; otherwise a future log
(`<t>-<p>.<uuid>-future`) is created in the destination.

One task then does the work of Kafka's ReplicaAlterLogDirsThread for every future log: it
copies batches from the replica's log into the future log, `replica.fetch.max.bytes` at a
time, following the replica's log as it grows, is truncated or loses its start (retention,
DeleteRecords), and, once the future log has everything, swaps it in (see
`LogManager.replace_current_with_future`) without an await between the check and the swap, so
no append can slip in between. Future logs found at start-up resume once their partition is
hosted again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from kio.schema.errors import ErrorCode

from broker.log.dir_names import future_dir_name
from broker.log.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_OFFSET
from broker.log.errors import LogCorruptError, RecordError, UnexpectedAppendOffsetError
from broker.log.log import Log
from broker.log.manager import KafkaStorageError, LogDirNotFoundError, LogManager
from broker.replication.partition import Partition

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# Longest file name most file systems allow (Kafka refuses topics whose future log's
# directory name would be longer: KAFKA-4893).
MAX_DIR_NAME_BYTES = 255
# How often an idle mover looks again at replicas that are not hosted or have nothing new:
# appends to a follower do not wake it.
IDLE_POLL_S = 0.1
# After a copy step failed unexpectedly, leave that partition alone this long.
FAILURE_BACKOFF_S = 1.0


class ReplicaAlterLogDirs:
    def __init__(
        self,
        log_manager: LogManager,
        hosted: Callable[[TopicPartition], Partition | None],
        is_offline: Callable[[TopicPartition], bool],
        partition_exists: Callable[[TopicPartition], bool],
        chunk_bytes: int,
        on_io_error: Callable[[Path, OSError], None] | None = None,
    ) -> None:
        self._log_manager = log_manager
        self._hosted = hosted
        self._is_offline = is_offline
        self._partition_exists = partition_exists
        self._chunk_bytes = chunk_bytes
        self._on_io_error = on_io_error
        self._moving: set[TopicPartition] = set()
        # Per moving partition: the replica log's truncation count the future log matches.
        self._truncations_seen: dict[TopicPartition, int] = {}
        self._backoff_until: dict[TopicPartition, float] = {}
        self._lock = asyncio.Lock()  # one change of future logs at a time (Kafka's lock)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._releases: set[asyncio.Task[None]] = set()

    # -- requests ---------------------------------------------------------------------------

    async def alter(self, key: TopicPartition, path: str) -> ErrorCode:
        """The error code AlterReplicaLogDirs answers for moving `key` to `path`."""
        if len(future_dir_name(*key).encode()) > MAX_DIR_NAME_BYTES:
            return ErrorCode.invalid_topic_exception
        try:
            log_dir = self._log_manager.resolve_log_dir(path)
        except LogDirNotFoundError:
            return ErrorCode.log_dir_not_found
        if not self._log_manager.is_log_dir_online(log_dir) or self._is_offline(key):
            return ErrorCode.kafka_storage_error
        async with self._lock:
            return await self._alter(key, log_dir)

    async def _alter(self, key: TopicPartition, log_dir: Path) -> ErrorCode:
        future = self._log_manager.get_future_log(*key)
        if future is not None and future.directory.parent != log_dir:
            log.info("%s-%d: moving to %s instead of %s", *key, log_dir, future.directory.parent)
            await self._cancel(key)
        self._log_manager.maybe_update_preferred_log_dir(key, log_dir)
        partition = self._hosted(key)
        if partition is None:
            if self._partition_exists(key):
                return ErrorCode.replica_not_available
            return ErrorCode.unknown_topic_or_partition
        if partition.log.directory.parent == log_dir:
            return ErrorCode.none
        if self._log_manager.get_future_log(*key) is not None:
            return ErrorCode.none  # already moving there
        try:
            await self._log_manager.create_future_log_off_loop(
                key[0], key[1], log_dir, partition.log.config
            )
        except KafkaStorageError:
            return ErrorCode.kafka_storage_error
        except OSError as error:
            self._report(log_dir, error)
            return ErrorCode.kafka_storage_error
        if self._hosted(key) is not partition:
            # Deleted, or taken offline, while the future log was being created.
            await self._log_manager.delete_future_log_off_loop(*key)
            return ErrorCode.replica_not_available
        log.info("%s-%d: moving from %s to %s", *key, partition.log.directory.parent, log_dir)
        self.resume([key])
        return ErrorCode.none

    async def _cancel(self, key: TopicPartition) -> None:
        self._forget(key)
        await self._log_manager.delete_future_log_off_loop(*key)

    def _forget(self, key: TopicPartition) -> None:
        self._moving.discard(key)
        self._truncations_seen.pop(key, None)
        self._backoff_until.pop(key, None)

    def resume(self, keys: Iterable[TopicPartition]) -> None:
        """Copy into the future logs of `keys` (new moves, or future logs found at start)."""
        self._moving.update(keys)
        self._wake.set()

    def forget_log_dir(self, log_dir: Path) -> list[TopicPartition]:
        """The log dir failed: stop the moves into or out of it; the partitions stopped."""
        stopped = []
        for key in sorted(self._moving):
            future = self._log_manager.get_future_log(*key)
            current = self._log_manager.get_log(*key)
            if any(
                found is not None and found.directory.parent == log_dir
                for found in (future, current)
            ):
                self._forget(key)
                stopped.append(key)
        return stopped

    @property
    def moving(self) -> frozenset[TopicPartition]:
        return frozenset(self._moving)

    # -- the copying task -------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="alter-log-dirs")

    async def stop(self) -> None:
        """Stop copying; wait for the deletions of replaced logs under way (short file work
        that must not overlap the log manager's shutdown)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await asyncio.gather(*self._releases, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            progressed = False
            for key in sorted(self._moving):
                progressed |= self.step(key)
                await asyncio.sleep(0)  # one chunk at a time: let requests in between
            if progressed:
                continue
            self._wake.clear()
            timeout_s = IDLE_POLL_S if self._moving else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout_s)

    def step(self, key: TopicPartition) -> bool:
        """One unit of work on `key`'s move (a chunk copied, or the swap); True if anything
        moved. A failure is logged and the partition left alone for a while."""
        loop_time = asyncio.get_running_loop().time()
        if self._backoff_until.get(key, 0.0) > loop_time:
            return False
        try:
            return self._move(key)
        except OSError as error:
            future = self._log_manager.get_future_log(*key)
            log.error("%s-%d: moving the replica failed: %s", *key, error)
            self._backoff_until[key] = loop_time + FAILURE_BACKOFF_S
            if future is not None:
                self._report(future.directory.parent, error)
        except (RecordError, LogCorruptError) as error:
            log.error("%s-%d: moving the replica failed: %s; will retry", *key, error)
            self._backoff_until[key] = loop_time + FAILURE_BACKOFF_S
        return False

    def _report(self, log_dir: Path, error: OSError) -> None:
        if self._on_io_error is not None:
            self._on_io_error(log_dir, error)

    def _move(self, key: TopicPartition) -> bool:
        """Copy one chunk, or swap the future log in; True if anything moved."""
        future = self._log_manager.get_future_log(*key)
        if future is None:
            self._forget(key)  # deleted with its partition, or cancelled
            return False
        partition = self._hosted(key)
        if partition is None:
            return False  # not hosted (yet): Kafka starts moving once it is
        current = partition.log
        self._follow_truncation(key, current, future)
        if future.log_end_offset < current.log_end_offset:
            return self._copy_chunk(current, future)
        self._swap(key, partition, current, future)
        return True

    def _follow_truncation(self, key: TopicPartition, current: Log, future: Log) -> None:
        """Keep the future log a prefix of the replica's log."""
        # First look (a new move, or a future log found at start-up) or a truncation since.
        if self._truncations_seen.get(key) != current.truncation_count:
            offset = _divergence_offset(current, future)
            if offset < future.log_end_offset:
                log.info("%s-%d: truncating the future log to %d", *key, offset)
                if offset <= future.log_start_offset:
                    future.truncate_fully_and_start_at(current.log_start_offset)
                else:
                    future.truncate_to(offset)
        self._truncations_seen[key] = current.truncation_count
        if current.log_start_offset > future.log_end_offset:
            # What the future log would copy next is gone (retention, DeleteRecords).
            future.truncate_fully_and_start_at(current.log_start_offset)
        elif current.log_start_offset > future.log_start_offset:
            future.increment_log_start_offset(current.log_start_offset)

    def _copy_chunk(self, current: Log, future: Log) -> bool:
        records = current.read(future.log_end_offset, self._chunk_bytes, None, True)
        if not records:
            return False
        try:
            future.append_as_follower(records)
        except UnexpectedAppendOffsetError as error:
            # The replica's log starts inside its first batch (DeleteRecords): like Kafka,
            # start the empty future log at that batch's base offset.
            empty = future.log_end_offset == future.log_start_offset
            if not (empty and error.first_offset < future.log_end_offset <= error.last_offset):
                raise
            future.truncate_fully_and_start_at(error.first_offset)
            future.append_as_follower(records)
            future.increment_log_start_offset(current.log_start_offset)
        future.update_high_watermark(min(current.high_watermark, future.log_end_offset))
        return True

    def _swap(self, key: TopicPartition, partition: Partition, current: Log, future: Log) -> None:
        if future.leader_epoch_cache.entries != current.leader_epoch_cache.entries:
            # Epochs a leader began without writing a batch exist only in the replica's log.
            future.leader_epoch_cache.set_entries(current.leader_epoch_cache.entries)
        old = self._log_manager.replace_current_with_future(*key)
        partition.replace_log(future)
        self._forget(key)
        log.info("%s-%d: replica moved to %s", *key, future.directory.parent)
        release = asyncio.get_running_loop().create_task(
            self._log_manager.release_replaced_log_off_loop(old, future),
            name=f"release-moved-log-{key[0]}-{key[1]}",
        )
        self._releases.add(release)
        release.add_done_callback(self._on_released)

    def _on_released(self, task: asyncio.Task[None]) -> None:
        self._releases.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("deleting a moved replica's old log failed: %s", task.exception())


def _divergence_offset(current: Log, future: Log) -> int:
    """Where the future log stops matching the replica's log after the replica's log was
    truncated: the end of the largest leader epoch both hold (Kafka's truncation rule); the
    future log's start when they share none."""
    epoch = future.leader_epoch_cache.latest_epoch
    if epoch == UNDEFINED_EPOCH:
        return future.log_start_offset
    current_epoch, current_end = current.leader_epoch_cache.end_offset_for(
        epoch, current.log_end_offset
    )
    if current_epoch == UNDEFINED_EPOCH or current_end == UNDEFINED_OFFSET:
        return future.log_start_offset
    if current_epoch == epoch:
        return min(current_end, future.log_end_offset)
    _, future_end = future.leader_epoch_cache.end_offset_for(current_epoch, future.log_end_offset)
    return min(current_end, future_end)
