"""Committed offsets and stored groups, kept in `__consumer_offsets` (Kafka's
GroupMetadataManager, offsets side).

A group lives on offsets partition `partition_for(group_id)`; the broker leading that partition
is its coordinator. On becoming leader the partition's log is read from the start (on a worker
thread) into memory, and until that finishes requests for its groups get
COORDINATOR_LOAD_IN_PROGRESS; on losing leadership the partition's state is dropped. A commit
is appended to the log like an acks=all produce and only then made visible.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from broker.coordinator.group.records import (
    GroupKey,
    GroupValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
    partition_for,
)
from broker.coordinator.internal_log import LoggedBatch, read_logged_batches
from broker.coordinator.record_io import RecordFormatError
from broker.log.errors import RecordError
from broker.log.record_codec import SimpleRecord, build_batch
from broker.replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
# A load that failed (a disk error, a log not open yet) is retried after this backoff,
# doubled on each failure up to the maximum.
LOAD_RETRY_BACKOFF_MS = 500
LOAD_RETRY_MAX_BACKOFF_MS = 10_000

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class OffsetsConfig:
    partition_count: int = 50
    metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    commit_timeout_ms: int = 5000  # offsets.commit.timeout.ms
    retention_ms: int = 7 * 24 * 3600 * 1000  # offsets.retention.minutes


# Offsets committed in a transaction, not yet resolved by its marker: per producer id, per
# group.
PendingOffsets = dict[int, dict[str, dict[TopicPartition, OffsetValue]]]


@dataclass(slots=True)
class _PartitionState:
    loaded: bool = False
    offsets: dict[str, dict[TopicPartition, OffsetValue]] = field(default_factory=dict)
    groups: dict[str, GroupValue] = field(default_factory=dict)
    pending: PendingOffsets = field(default_factory=dict)
    load_task: asyncio.Task[None] | None = None


class OffsetStore:
    def __init__(
        self,
        replica_manager: ReplicaManager,
        config: OffsetsConfig,
        min_insync_replicas: Callable[[], int],
        named_leader: Callable[[int], bool] = lambda partition: False,
    ) -> None:
        self._replica_manager = replica_manager
        # Whether the cluster's metadata names this broker leader of an offsets partition.
        self._named_leader = named_leader
        self._config = config
        self._min_insync_replicas = min_insync_replicas
        self._partitions: dict[int, _PartitionState] = {}
        # Called with each group restored from the log (membership rebuilds it).
        self.on_group_loaded: Callable[[str, GroupValue], None] = lambda group, value: None
        self.on_partition_unloaded: Callable[[int], None] = lambda partition: None

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self._config.partition_count)

    # -- leadership ------------------------------------------------------------------------

    def on_leadership_change(self, partition: int, is_leader: bool) -> None:
        """The broker became leader (load) or stopped being leader (unload) of a partition."""
        current = self._partitions.pop(partition, None)
        if current is not None:
            if current.load_task is not None:
                current.load_task.cancel()
            self.on_partition_unloaded(partition)
        if not is_leader:
            return
        state = _PartitionState()
        self._partitions[partition] = state
        state.load_task = asyncio.get_running_loop().create_task(
            self._load(partition, state), name=f"load-offsets-{partition}"
        )

    async def _load(self, partition: int, state: _PartitionState) -> None:
        """Read the partition into `state`; a failed read is retried with a growing backoff
        until it succeeds or leadership moves (which cancels this task), so the partition
        never stays loading for good."""
        started = time.monotonic()
        backoff_ms = LOAD_RETRY_BACKOFF_MS
        while (records := await self._read_partition(partition)) is None:
            log.warning("retrying the load of %s-%d in %d ms", OFFSETS_TOPIC, partition, backoff_ms)
            await asyncio.sleep(backoff_ms / 1000)
            backoff_ms = min(backoff_ms * 2, LOAD_RETRY_MAX_BACKOFF_MS)
        _replay(state, records)
        state.loaded = True
        for group, group_value in state.groups.items():
            self.on_group_loaded(group, group_value)
        log.info(
            "loaded %d groups and the offsets of %d groups from %s-%d in %d ms",
            len(state.groups),
            len(state.offsets),
            OFFSETS_TOPIC,
            partition,
            (time.monotonic() - started) * 1000,
        )

    async def _read_partition(self, partition: int) -> list[LoggedBatch] | None:
        """Every batch of the partition's log; None if it cannot be read now."""
        leader = self._replica_manager.get(OFFSETS_TOPIC, partition)
        if leader is None:
            log.warning("loading %s-%d: no local replica yet", OFFSETS_TOPIC, partition)
            return None
        try:
            return await read_logged_batches(leader.log)
        except (RecordError, OSError):
            log.exception("loading %s-%d failed", OFFSETS_TOPIC, partition)
            return None

    def coordinator_error(self, group_id: str) -> ErrorCode:
        """NONE if this broker coordinates `group_id` and has loaded it."""
        partition = self.partition_of(group_id)
        state = self._partitions.get(partition)
        if state is None:
            return _not_loaded_error(self._named_leader(partition))
        if not state.loaded:
            return ErrorCode.coordinator_load_in_progress
        return ErrorCode.none

    # -- offsets -----------------------------------------------------------------------------

    def fetch(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetValue | None]:
        state = self._partitions.get(self.partition_of(group_id))
        committed = state.offsets.get(group_id, {}) if state is not None else {}
        if partitions is None:
            return dict(committed)
        return {tp: committed.get(tp) for tp in partitions}

    async def commit(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetValue]
    ) -> dict[TopicPartition, ErrorCode]:
        """Append the commits and wait for the ISR; per-partition error codes."""
        errors = self._too_large(offsets)
        valid = {tp: value for tp, value in offsets.items() if tp not in errors}
        if not valid:
            return errors
        records = self._offset_records(group_id, valid)
        error = await self._append(group_id, records)
        if error == ErrorCode.none:
            state = self._partitions.get(self.partition_of(group_id))
            if state is not None:
                state.offsets.setdefault(group_id, {}).update(valid)
        errors.update(dict.fromkeys(valid, error))
        return errors

    def _too_large(
        self, offsets: Mapping[TopicPartition, OffsetValue]
    ) -> dict[TopicPartition, ErrorCode]:
        return {
            tp: ErrorCode.offset_metadata_too_large
            for tp, value in offsets.items()
            if len(value.metadata.encode("utf-8")) > self._config.metadata_max_bytes
        }

    @staticmethod
    def _offset_records(
        group_id: str, offsets: Mapping[TopicPartition, OffsetValue]
    ) -> list[SimpleRecord]:
        return [
            SimpleRecord(
                encode_offset_key(OffsetKey(group_id, topic, partition)),
                encode_offset_value(value),
                (),
                value.commit_timestamp_ms,
            )
            for (topic, partition), value in offsets.items()
        ]

    async def commit_transactional(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: Mapping[TopicPartition, OffsetValue],
    ) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: the commits are appended as part of the producer's transaction
        and stay pending, invisible to OffsetFetch, until its marker resolves them."""
        errors = self._too_large(offsets)
        valid = {tp: value for tp, value in offsets.items() if tp not in errors}
        if not valid:
            return errors
        batch = build_batch(
            self._offset_records(group_id, valid),
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            is_transactional=True,
        )
        error = await self._append_batch(group_id, batch)
        if error == ErrorCode.none:
            state = self._partitions.get(self.partition_of(group_id))
            if state is not None:
                by_group = state.pending.setdefault(producer_id, {})
                by_group.setdefault(group_id, {}).update(valid)
        errors.update(dict.fromkeys(valid, error))
        return errors

    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """The producer's marker reached offsets partition `partition`: its pending commits
        there become visible (commit) or are dropped (abort)."""
        state = self._partitions.get(partition)
        if state is None:
            return
        by_group = state.pending.pop(producer_id, {})
        if commit:
            for group_id, committed in by_group.items():
                state.offsets.setdefault(group_id, {}).update(committed)

    def pending_partitions(self, group_id: str) -> set[TopicPartition]:
        """The group's partitions with a transaction's commit still unresolved (OffsetFetch
        with require_stable answers UNSTABLE_OFFSET_COMMIT for them, KIP-447)."""
        state = self._partitions.get(self.partition_of(group_id))
        if state is None:
            return set()
        return {tp for by_group in state.pending.values() for tp in by_group.get(group_id, {})}

    # -- groups ------------------------------------------------------------------------------

    async def store_group(self, group_id: str, value: GroupValue) -> ErrorCode:
        key, encoded = encode_group_key(GroupKey(group_id)), encode_group_value(value)
        error = await self._append(group_id, [SimpleRecord(key, encoded, (), _now_ms())])
        state = self._partitions.get(self.partition_of(group_id))
        if error == ErrorCode.none and state is not None:
            state.groups[group_id] = value
        return error

    async def delete_group(self, group_id: str) -> ErrorCode:
        """Tombstones for the group and all of its offsets."""
        state = self._partitions.get(self.partition_of(group_id))
        committed = state.offsets.get(group_id, {}) if state is not None else {}
        records = [SimpleRecord(encode_group_key(GroupKey(group_id)), None, (), _now_ms())]
        records += [
            SimpleRecord(encode_offset_key(OffsetKey(group_id, t, p)), None, (), _now_ms())
            for t, p in committed
        ]
        error = await self._append(group_id, records)
        if error == ErrorCode.none and state is not None:
            state.groups.pop(group_id, None)
            state.offsets.pop(group_id, None)
        return error

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> ErrorCode:
        """Tombstones for some committed offsets of a group (OffsetDelete, expiry)."""
        now_ms = _now_ms()
        records = [
            SimpleRecord(encode_offset_key(OffsetKey(group_id, t, p)), None, (), now_ms)
            for t, p in partitions
        ]
        error = await self._append(group_id, records)
        state = self._partitions.get(self.partition_of(group_id))
        if error == ErrorCode.none and state is not None:
            committed = state.offsets.get(group_id, {})
            for tp in partitions:
                committed.pop(tp, None)
            if not committed:
                state.offsets.pop(group_id, None)
        return error

    def committed_by_group(self) -> dict[str, dict[TopicPartition, OffsetValue]]:
        """Every loaded group's committed offsets (a copy, for the expiry pass)."""
        return {
            group: dict(committed)
            for state in self._partitions.values()
            if state.loaded
            for group, committed in state.offsets.items()
        }

    def offset_count(self) -> int:
        """Committed offsets of every loaded group (Kafka's NumOffsets)."""
        return sum(
            len(committed)
            for state in self._partitions.values()
            if state.loaded
            for committed in state.offsets.values()
        )

    def has_offsets(self, group_id: str) -> bool:
        state = self._partitions.get(self.partition_of(group_id))
        return state is not None and bool(state.offsets.get(group_id))

    def groups(self) -> dict[str, GroupValue | None]:
        """Every loaded group with stored metadata or offsets (ListGroups)."""
        found: dict[str, GroupValue | None] = {}
        for state in self._partitions.values():
            for group in state.offsets:
                found.setdefault(group, None)
            found.update(state.groups)
        return found

    async def _append(self, group_id: str, records: list[SimpleRecord]) -> ErrorCode:
        return await self._append_batch(group_id, build_batch(records))

    async def _append_batch(self, group_id: str, batch: bytes) -> ErrorCode:
        partition = self.partition_of(group_id)
        result = self._replica_manager.append_records(
            OFFSETS_TOPIC, partition, batch, from_coordinator=True
        )
        if result.info is None:
            return _coordinator_error(result.error_code)
        outcome = await self._replica_manager.wait_for_replication(
            OFFSETS_TOPIC,
            partition,
            result.info.last_offset + 1,
            self._min_insync_replicas(),
            self._config.commit_timeout_ms / 1000,
        )
        return _coordinator_error(outcome)


def _not_loaded_error(named_leader: bool) -> ErrorCode:
    """For a partition not (yet) loaded here. Named its leader, this broker is about to load
    it: COORDINATOR_LOAD_IN_PROGRESS, which clients retry, as Kafka answers from the moment
    its LeaderAndIsr arrives. NOT_COORDINATOR would send them looking again, and librdkafka
    then drops the committed-offset fetch of an assign()ed consumer for good."""
    return ErrorCode.coordinator_load_in_progress if named_leader else ErrorCode.not_coordinator


def _coordinator_error(error: ErrorCode) -> ErrorCode:
    """How Kafka maps a failed append to the offsets topic for group clients."""
    if error in (ErrorCode.none, ErrorCode.invalid_producer_epoch):
        return error  # the latter: a fenced transactional producer's TxnOffsetCommit
    if error in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if error in (ErrorCode.message_too_large, ErrorCode.record_list_too_large):
        return ErrorCode.invalid_commit_offset_size
    return ErrorCode.coordinator_not_available


def _replay(state: _PartitionState, batches: list[LoggedBatch]) -> None:
    """Apply the log in order: plain commits at once, a transaction's commits when its
    commit marker follows (dropped on an abort marker, pending while none has)."""
    open_transactions: dict[int, list[tuple[bytes, bytes | None]]] = {}
    for batch in batches:
        if batch.marker is not None:
            records = open_transactions.pop(batch.producer_id, [])
            if batch.marker.is_commit:
                for key, value in records:
                    _apply(state, key, value)
        elif batch.transactional:
            open_transactions.setdefault(batch.producer_id, []).extend(batch.records)
        else:
            for key, value in batch.records:
                _apply(state, key, value)
    for producer_id, records in open_transactions.items():
        for key, value in records:
            _apply_pending(state, producer_id, key, value)


def _apply_pending(
    state: _PartitionState, producer_id: int, key_bytes: bytes, value: bytes | None
) -> None:
    try:
        key = decode_key(key_bytes)
        if isinstance(key, OffsetKey) and value is not None:
            by_group = state.pending.setdefault(producer_id, {})
            by_group.setdefault(key.group, {})[(key.topic, key.partition)] = decode_offset_value(
                value
            )
    except RecordFormatError as error:
        log.warning("skipping an unreadable record in %s: %s", OFFSETS_TOPIC, error)


def _apply(state: _PartitionState, key_bytes: bytes, value: bytes | None) -> None:
    try:
        key = decode_key(key_bytes)
        if isinstance(key, OffsetKey):
            group_offsets = state.offsets.setdefault(key.group, {})
            if value is None:
                group_offsets.pop((key.topic, key.partition), None)
            else:
                group_offsets[(key.topic, key.partition)] = decode_offset_value(value)
        elif value is None:
            state.groups.pop(key.group, None)
        else:
            state.groups[key.group] = decode_group_value(value)
    except RecordFormatError as error:
        log.warning("skipping an unreadable record in %s: %s", OFFSETS_TOPIC, error)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
