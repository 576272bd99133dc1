"""Owns this broker's partition replicas: role changes from ZooKeeper, appends and reads.

Role changes arrive from the cluster watch (partition state znodes); appends and reads come
from the Produce/Fetch/ListOffsets handlers. Nothing here awaits between checking a partition's
role and acting on it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from broker.log.log import AppendInfo, Log, LogConfig, OffsetOutOfRangeError
from broker.log.manager import LogManager
from broker.log.partition_metadata import read_topic_id, write_topic_id
from broker.log.records import RecordError
from broker.replication.partition import Partition
from zk.kafka_zk import PartitionState

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AppendResult:
    error_code: ErrorCode
    info: AppendInfo | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ReadResult:
    error_code: ErrorCode
    records: bytes = b""
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1


class ReplicaManager:
    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        partition_exists: Callable[[str, int], bool],
    ) -> None:
        self._broker_id = broker_id
        self._log_manager = log_manager
        # Whether cluster metadata knows the partition: a partition that exists but is not
        # hosted here is NOT_LEADER_OR_FOLLOWER (clients refresh metadata), not UNKNOWN.
        self._partition_exists = partition_exists
        self._partitions: dict[tuple[str, int], Partition] = {}
        self._topic_ids: dict[str, str] = {}

    def get(self, topic: str, partition: int) -> Partition | None:
        return self._partitions.get((topic, partition))

    def all_partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    # -- role changes -------------------------------------------------------------------

    def apply_state(
        self,
        topic: str,
        topic_id: str,
        partition: int,
        replicas: list[int],
        state: PartitionState,
        log_config: LogConfig,
    ) -> None:
        key = (topic, partition)
        if self._broker_id not in replicas:
            self._stop_replica(key)
            return
        current = self._partitions.get(key)
        if current is None:
            current = Partition(topic, partition, self._open_log(topic, topic_id, partition), [])
            self._partitions[key] = current
        if current.log.config != log_config:
            current.log.update_config(log_config)
        if state.leader_epoch < current.leader_epoch:
            return  # a stale notification; the newer state has already been applied
        current.replicas = list(replicas)
        current.isr = list(state.isr)
        was_leader = current.is_leader
        current.leader_id = state.leader
        current.leader_epoch = state.leader_epoch
        current.is_leader = state.leader == self._broker_id
        if current.is_leader != was_leader:
            role = "leader" if current.is_leader else "follower"
            log.info("%s-%d: now %s at epoch %d", topic, partition, role, state.leader_epoch)
        current.wake_waiters()

    def _open_log(self, topic: str, topic_id: str, partition: int) -> Log:
        """This partition's log, after dropping one left over from a deleted incarnation."""
        replica_log = self._log_manager.get_or_create_log(topic, partition)
        stored_id = read_topic_id(replica_log.directory)
        if topic_id and stored_id is not None and stored_id != topic_id:
            log.info(
                "%s-%d: log belongs to topic id %s, not %s: deleting it",
                topic,
                partition,
                stored_id,
                topic_id,
            )
            self._log_manager.delete_log(topic, partition)
            replica_log = self._log_manager.get_or_create_log(topic, partition)
            stored_id = None
        if topic_id and stored_id != topic_id:
            write_topic_id(replica_log.directory, topic_id)
        return replica_log

    def _stop_replica(self, key: tuple[str, int]) -> None:
        stopped = self._partitions.pop(key, None)
        if stopped is not None:
            stopped.wake_waiters()

    def ensure_topic_id(self, topic: str, topic_id: str) -> None:
        """A topic re-created under the same name must not reuse the old incarnation's logs;
        an id given to a topic that had none (older tools) is adopted, not a re-creation."""
        known = self._topic_ids.get(topic)
        if known and topic_id and known != topic_id:
            log.info("topic %s was re-created (id %s -> %s)", topic, known, topic_id)
            self.delete_topic(topic)
        self._topic_ids[topic] = topic_id

    def delete_topic(self, topic: str) -> None:
        self._topic_ids.pop(topic, None)
        for key in [k for k in self._partitions if k[0] == topic]:
            self._stop_replica(key)
        for replica_log in self._log_manager.all_logs():
            if replica_log.topic == topic:
                self._log_manager.delete_log(topic, replica_log.partition)
                log.info("deleted log %s-%d", topic, replica_log.partition)

    # -- data path ----------------------------------------------------------------------

    def _leader(
        self, topic: str, partition: int, current_leader_epoch: int = -1
    ) -> tuple[Partition | None, ErrorCode]:
        current = self._partitions.get((topic, partition))
        if current is None:
            if self._partition_exists(topic, partition):
                return None, ErrorCode.not_leader_or_follower
            return None, ErrorCode.unknown_topic_or_partition
        # As in Kafka, a known replica answers a stale or future epoch before its role, so the
        # client retries without refreshing metadata.
        epoch_error = _check_leader_epoch(current, current_leader_epoch)
        if epoch_error is not None:
            return None, epoch_error
        if not current.is_leader:
            return None, ErrorCode.not_leader_or_follower
        return current, ErrorCode.none

    def append(
        self, topic: str, partition: int, records: bytes, compressed_checked: bool = False
    ) -> AppendResult:
        current, error = self._leader(topic, partition)
        if current is None:
            return AppendResult(error)
        try:
            info = current.log.append_as_leader(
                bytearray(records),
                current.leader_epoch,
                int(time.time() * 1000),
                require_single_batch=True,
                compressed_checked=compressed_checked,
            )
        except RecordError as record_error:
            log.warning("rejected produce to %s-%d: %s", topic, partition, record_error)
            return AppendResult(ErrorCode(record_error.error_code), None, str(record_error))
        except OSError as error:
            log.error("write to %s-%d failed: %s", topic, partition, error)
            return AppendResult(ErrorCode.kafka_storage_error, None, str(error))
        current.wake_waiters()
        return AppendResult(ErrorCode.none, info)

    def read(
        self,
        topic: str,
        partition: int,
        fetch_offset: int,
        max_bytes: int,
        min_one_batch: bool,
        current_leader_epoch: int = -1,
    ) -> ReadResult:
        current, error = self._leader(topic, partition, current_leader_epoch)
        if current is None:
            return ReadResult(error)
        replica_log = current.log
        high_watermark = current.high_watermark
        try:
            records = replica_log.read(fetch_offset, max_bytes, high_watermark, min_one_batch)
        except OffsetOutOfRangeError:
            return _positions(ErrorCode.offset_out_of_range, current)
        return ReadResult(
            ErrorCode.none,
            records,
            high_watermark,
            replica_log.log_start_offset,
            replica_log.log_end_offset,
        )

    def leader_partition(
        self, topic: str, partition: int, current_leader_epoch: int = -1
    ) -> tuple[Partition | None, ErrorCode]:
        return self._leader(topic, partition, current_leader_epoch)

    async def wait_for_data(self, keys: Iterable[tuple[str, int]], timeout_s: float) -> None:
        """Return when any of these partitions changes (append or role), or at the timeout."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        watched = [p for key in keys if (p := self._partitions.get(key)) is not None]
        for current in watched:
            current.add_waiter(waiter)
        try:
            await asyncio.wait_for(waiter, timeout_s)
        except TimeoutError:
            pass
        finally:
            for current in watched:
                current.remove_waiter(waiter)


def _check_leader_epoch(current: Partition, requested_epoch: int) -> ErrorCode | None:
    if requested_epoch < 0 or requested_epoch == current.leader_epoch:
        return None
    if requested_epoch < current.leader_epoch:
        return ErrorCode.fenced_leader_epoch
    return ErrorCode.unknown_leader_epoch


def _positions(error: ErrorCode, current: Partition) -> ReadResult:
    replica_log: Log = current.log
    return ReadResult(
        error, b"", current.high_watermark, replica_log.log_start_offset, replica_log.log_end_offset
    )
