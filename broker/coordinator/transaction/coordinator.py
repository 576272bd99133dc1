"""The transaction coordinator (KIP-98; Kafka's TransactionCoordinator and
TransactionStateManager, ZooKeeper mode).

A transactional id lives on partition `partition_for(id)` of `__transaction_state`, created on
the first FindCoordinator for a transaction (`transaction.state.log.*`, compacted); the broker
leading that partition coordinates the id. On becoming leader it reads the partition back
(COORDINATOR_LOAD_IN_PROGRESS meanwhile) and finishes every transaction it finds prepared but
not completed; on losing leadership it drops them (NOT_COORDINATOR). The partition's leader
epoch at load is the coordinator epoch the markers carry, so a stale coordinator's markers are
fenced by the partitions.

Every decision (`TxnMetadata`) is written to the partition like an acks=all produce and only
then applied. Ending a transaction writes PrepareCommit/PrepareAbort, answers the producer,
then has the markers written to every partition of the transaction (`TxnMarkerSender`) and
writes CompleteCommit/CompleteAbort.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from broker.coordinator.internal_log import read_keyed_records
from broker.coordinator.internal_topics import CoordinatorAddress, InternalTopic, InternalTopics
from broker.coordinator.record_io import RecordFormatError
from broker.coordinator.transaction.marker_sender import TxnEnd, TxnMarkerSender
from broker.coordinator.transaction.metadata import TxnMetadata, TxnRefused
from broker.coordinator.transaction.records import (
    TopicPartition,
    TxnLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from broker.coordinator.transaction.state import TxnState
from broker.log.errors import RecordError
from broker.log.record_codec import SimpleRecord, build_batch
from broker.replication.partition import Partition

if TYPE_CHECKING:
    from broker.cluster.metadata_cache import MetadataCache
    from broker.coordinator.transaction.producer_id_manager import ProducerIdManager
    from broker.replication.replica_manager import ReplicaManager
    from broker.services import CurrentConfig, TopicSettings

log = logging.getLogger(__name__)

TXN_TOPIC = "__transaction_state"
LOAD_RETRY_BACKOFF_S = 0.5


@dataclass(slots=True)
class _LoadedPartition:
    coordinator_epoch: int
    loaded: bool = False
    transactions: dict[str, TxnMetadata] = field(default_factory=dict)
    load_task: asyncio.Task[None] | None = None


@dataclass(frozen=True, slots=True)
class InitResult:
    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


class TransactionCoordinator:
    def __init__(
        self,
        current_config: CurrentConfig,
        broker_id: int,
        replica_manager: ReplicaManager,
        metadata_cache: MetadataCache,
        internal_topics: InternalTopics,
        topic_settings: TopicSettings,
        producer_ids: ProducerIdManager,
        markers: TxnMarkerSender,
    ) -> None:
        self._current_config = current_config
        self._broker_id = broker_id
        self._replica_manager = replica_manager
        self._metadata_cache = metadata_cache
        self._internal_topics = internal_topics
        self._topic_settings = topic_settings
        self._producer_ids = producer_ids
        config = current_config.value
        self.partition_count: int = config["transaction.state.log.num.partitions"]
        self.max_timeout_ms: int = config["transaction.max.timeout.ms"]
        self.expiration_ms: int = config["transactional.id.expiration.ms"]
        self._write_timeout_s = config["request.timeout.ms"] / 1000
        self._partitions: dict[int, _LoadedPartition] = {}
        self.markers = markers
        self._completions: set[asyncio.Task[None]] = set()
        replica_manager.leadership_listeners.append(self._on_leadership_change)

    # -- where ------------------------------------------------------------------------------

    async def find(self, transactional_id: str, listener_name: str) -> CoordinatorAddress:
        wanted = partition_for(transactional_id, self.partition_count)
        return await self._internal_topics.find_leader(self._topic(), wanted, listener_name)

    def _topic(self) -> InternalTopic:
        config = self._current_config.value
        return InternalTopic(
            TXN_TOPIC,
            self.partition_count,
            config["transaction.state.log.replication.factor"],
            {
                "cleanup.policy": "compact",
                "compression.type": "uncompressed",
                "min.insync.replicas": str(config["transaction.state.log.min.isr"]),
                "segment.bytes": str(config["transaction.state.log.segment.bytes"]),
                "unclean.leader.election.enable": "false",
            },
        )

    def _loaded(self, transactional_id: str) -> _LoadedPartition:
        """The id's partition, loaded here; TxnRefused otherwise."""
        partition = partition_for(transactional_id, self.partition_count)
        state = self._partitions.get(partition)
        if state is None:
            # Named leader but not loading yet: load in progress, as Kafka answers once its
            # LeaderAndIsr arrived (see the group coordinator's OffsetStore).
            leader, _ = self._metadata_cache.leader_and_epoch(TXN_TOPIC, partition)
            if leader == self._broker_id:
                raise TxnRefused(ErrorCode.coordinator_load_in_progress)
            raise TxnRefused(ErrorCode.not_coordinator)
        if not state.loaded:
            raise TxnRefused(ErrorCode.coordinator_load_in_progress)
        return state

    # -- requests ---------------------------------------------------------------------------

    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None
    ) -> InitResult:
        try:
            if not 0 < timeout_ms <= self.max_timeout_ms:
                raise TxnRefused(ErrorCode.invalid_transaction_timeout)
            state = self._loaded(transactional_id)
            metadata = state.transactions.get(transactional_id)
            if metadata is None:
                producer_id = await self._producer_ids.generate_producer_id()
                metadata = state.transactions.setdefault(
                    transactional_id, TxnMetadata(transactional_id, producer_id)
                )
            if metadata.state == TxnState.ONGOING and metadata.pending is None:
                await self._fence(state, metadata)
                raise TxnRefused(ErrorCode.concurrent_transactions, "aborting the open one")
            new_id = None
            if metadata.epoch_exhausted():
                new_id = await self._producer_ids.generate_producer_id()
            value = metadata.prepare_init(timeout_ms, _now_ms(), new_id, expected)
            await self._write(state, metadata, value)
            return InitResult(ErrorCode.none, metadata.producer_id, metadata.producer_epoch)
        except TxnRefused as refused:
            return InitResult(refused.error)

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> ErrorCode:
        try:
            state = self._loaded(transactional_id)
            metadata = self._existing(state, transactional_id)
            value = metadata.prepare_add_partitions(
                producer_id, producer_epoch, partitions, _now_ms()
            )
            if value is not None:
                await self._write(state, metadata, value)
            return ErrorCode.none
        except TxnRefused as refused:
            return refused.error

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> ErrorCode:
        """AddPartitionsToTxn v4+ with verify_only (KIP-890): whether the partitions are in
        the producer's open transaction (INVALID_TXN_STATE if not)."""
        try:
            metadata = self._existing(self._loaded(transactional_id), transactional_id)
            if (metadata.producer_id, metadata.producer_epoch) != (producer_id, producer_epoch):
                raise TxnRefused(ErrorCode.producer_fenced)
            in_transaction = metadata.state == TxnState.ONGOING and set(partitions) <= (
                metadata.partitions
            )
            return ErrorCode.none if in_transaction else ErrorCode.invalid_txn_state
        except TxnRefused as refused:
            return refused.error

    async def end_transaction(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> ErrorCode:
        try:
            state = self._loaded(transactional_id)
            metadata = self._existing(state, transactional_id)
            value = metadata.prepare_end(producer_id, producer_epoch, commit, _now_ms())
            if value is None:
                return ErrorCode.none  # a retry of an end that completed
            await self._write(state, metadata, value)
            self._complete_later(state, metadata)
            return ErrorCode.none
        except TxnRefused as refused:
            return refused.error

    @staticmethod
    def _existing(state: _LoadedPartition, transactional_id: str) -> TxnMetadata:
        metadata = state.transactions.get(transactional_id)
        if metadata is None:
            raise TxnRefused(ErrorCode.invalid_producer_id_mapping)
        return metadata

    async def abort_timed_out(self) -> None:
        """Abort, fencing their producers, the transactions open for longer than their
        `transaction.timeout.ms` (a producer that died mid-transaction would otherwise hold
        back read_committed readers of its partitions for good)."""
        now_ms = _now_ms()
        for state in list(self._partitions.values()):
            if not state.loaded:
                continue
            for metadata in list(state.transactions.values()):
                expired = metadata.start_timestamp_ms + metadata.transaction_timeout_ms < now_ms
                if metadata.state == TxnState.ONGOING and metadata.pending is None and expired:
                    log.info(
                        "aborting the transaction of %r (producer %d epoch %d): open for more"
                        " than %d ms",
                        metadata.transactional_id,
                        metadata.producer_id,
                        metadata.producer_epoch,
                        metadata.transaction_timeout_ms,
                    )
                    try:
                        await self._fence(state, metadata)
                    except TxnRefused as refused:
                        log.warning("aborting %r failed: %s", metadata.transactional_id, refused)

    async def remove_expired(self) -> None:
        """Forget the transactional ids idle for longer than `transactional.id.expiration.ms`:
        a tombstone each in `__transaction_state` (so the compacted log drops them too), then
        out of the cache. A later InitProducerId starts afresh, with a new producer id."""
        horizon_ms = _now_ms() - self.expiration_ms
        for partition, state in list(self._partitions.items()):
            if not state.loaded:
                continue
            expired = [m for m in state.transactions.values() if m.expired(horizon_ms)]
            if expired:
                await self._remove(partition, state, expired)

    async def _remove(
        self, partition: int, state: _LoadedPartition, expired: list[TxnMetadata]
    ) -> None:
        now_ms = _now_ms()
        dead = {m.transactional_id: m.prepare_dead(now_ms) for m in expired}
        tombstones = [
            SimpleRecord(encode_key(m.transactional_id), None, (), now_ms) for m in expired
        ]
        error = await self._append(partition, tombstones)
        for metadata in expired:
            if error == ErrorCode.none and metadata.pending is dead[metadata.transactional_id]:
                state.transactions.pop(metadata.transactional_id, None)
            metadata.pending = None
        if error != ErrorCode.none:
            log.warning("removing %d expired transactional ids failed: %s", len(expired), error)
            return
        log.info(
            "removed %d transactional ids from %s-%d, idle for more than %d ms",
            len(expired),
            TXN_TOPIC,
            partition,
            self.expiration_ms,
        )

    def describe(self, transactional_id: str) -> tuple[ErrorCode, TxnMetadata | None]:
        try:
            state = self._loaded(transactional_id)
        except TxnRefused as refused:
            return refused.error, None
        metadata = state.transactions.get(transactional_id)
        if metadata is None:
            return ErrorCode.transactional_id_not_found, None
        return ErrorCode.none, metadata

    def load_summary(self) -> tuple[int, int, int]:
        """(partitions loaded, partitions loading, transactional ids loaded), for metrics."""
        loaded = [state for state in self._partitions.values() if state.loaded]
        ids = sum(len(state.transactions) for state in loaded)
        return len(loaded), len(self._partitions) - len(loaded), ids

    def list_transactions(self) -> tuple[ErrorCode, list[TxnMetadata]]:
        """Every transactional id loaded here; COORDINATOR_LOAD_IN_PROGRESS with those
        loaded so far while a partition is still loading."""
        loading = any(not state.loaded for state in self._partitions.values())
        listed = [
            metadata
            for state in self._partitions.values()
            if state.loaded
            for metadata in state.transactions.values()
        ]
        error = ErrorCode.coordinator_load_in_progress if loading else ErrorCode.none
        return error, listed

    # -- ending -----------------------------------------------------------------------------

    async def _fence(self, state: _LoadedPartition, metadata: TxnMetadata) -> None:
        """A new instance initialised while a transaction is open: abort it, bumping the
        epoch, which fences the old instance's requests."""
        await self._write(state, metadata, metadata.prepare_fence(_now_ms()))
        self._complete_later(state, metadata)

    def _complete_later(self, state: _LoadedPartition, metadata: TxnMetadata) -> None:
        task = asyncio.get_running_loop().create_task(
            self._complete(state, metadata), name=f"txn-markers-{metadata.transactional_id}"
        )
        self._completions.add(task)
        task.add_done_callback(self._completions.discard)

    async def _complete(self, state: _LoadedPartition, metadata: TxnMetadata) -> None:
        """Markers to every partition of the prepared transaction, then Complete*."""
        commit = metadata.state == TxnState.PREPARE_COMMIT
        end = TxnEnd(metadata.producer_id, metadata.producer_epoch, commit, state.coordinator_epoch)
        delivered = await self.markers.send(
            end,
            sorted(metadata.partitions),
            still_coordinator=lambda: self._partitions.get(self._partition_of(metadata)) is state,
        )
        if not delivered:
            return  # no longer the coordinator: the next one finishes it after loading
        try:
            await self._write(state, metadata, metadata.prepare_complete(_now_ms()))
        except TxnRefused as refused:
            log.warning(
                "completing transaction of %r failed: %s", metadata.transactional_id, refused
            )

    def _partition_of(self, metadata: TxnMetadata) -> int:
        return partition_for(metadata.transactional_id, self.partition_count)

    # -- the log ----------------------------------------------------------------------------

    async def _write(
        self, state: _LoadedPartition, metadata: TxnMetadata, value: TxnLogValue
    ) -> None:
        """Append `value` and wait for the ISR; then apply it. TxnRefused on failure (the
        pending transit is dropped, so the producer may retry)."""
        partition = partition_for(metadata.transactional_id, self.partition_count)
        # The record's time is its write's, as Kafka's (the value's last-update time).
        record = SimpleRecord(
            encode_key(metadata.transactional_id),
            encode_value(value),
            (),
            value.last_update_timestamp_ms,
        )
        error = await self._append(partition, [record])
        if self._partitions.get(partition) is not state:
            metadata.pending = None
            raise TxnRefused(ErrorCode.not_coordinator)
        if error != ErrorCode.none:
            metadata.pending = None
            raise TxnRefused(_coordinator_error(error))
        metadata.apply(value)

    async def _append(self, partition: int, records: list[SimpleRecord]) -> ErrorCode:
        """Append to the partition and wait until the ISR (at least min.isr) has it."""
        replica_manager = self._replica_manager
        result = replica_manager.append_records(TXN_TOPIC, partition, build_batch(records))
        if result.info is None:
            return result.error_code
        min_isr = self._topic_settings.min_insync_replicas(TXN_TOPIC)
        return await replica_manager.wait_for_replication(
            TXN_TOPIC, partition, result.info.last_offset + 1, min_isr, self._write_timeout_s
        )

    # -- loading ----------------------------------------------------------------------------

    def _on_leadership_change(self, partition: Partition, is_leader: bool) -> None:
        if partition.topic != TXN_TOPIC:
            return
        current = self._partitions.pop(partition.partition, None)
        if current is not None and current.load_task is not None:
            current.load_task.cancel()
        if not is_leader:
            return
        state = _LoadedPartition(coordinator_epoch=partition.leader_epoch)
        self._partitions[partition.partition] = state
        state.load_task = asyncio.get_running_loop().create_task(
            self._load(partition.partition, state), name=f"load-transactions-{partition}"
        )

    async def _load(self, partition: int, state: _LoadedPartition) -> None:
        """Read the partition back (retried until it succeeds or leadership moves, which
        cancels this task), then finish the transactions left prepared."""
        while (records := await self._read(partition)) is None:
            await asyncio.sleep(LOAD_RETRY_BACKOFF_S)
        for key, value in records:
            _apply(state, key, value)
        state.loaded = True
        prepared = [
            m
            for m in state.transactions.values()
            if m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
        ]
        for metadata in prepared:
            self._complete_later(state, metadata)
        log.info(
            "loaded %d transactional ids from %s-%d (%d to complete)",
            len(state.transactions),
            TXN_TOPIC,
            partition,
            len(prepared),
        )

    async def _read(self, partition: int) -> list[tuple[bytes, bytes | None]] | None:
        leader = self._replica_manager.get(TXN_TOPIC, partition)
        if leader is None:
            return None
        try:
            return await read_keyed_records(leader.log)
        except (RecordError, OSError):
            log.exception("loading %s-%d failed", TXN_TOPIC, partition)
            return None

    async def stop(self) -> None:
        for task in list(self._completions):
            task.cancel()
        await asyncio.gather(*self._completions, return_exceptions=True)
        await self.markers.close()


def _apply(state: _LoadedPartition, key: bytes, value: bytes | None) -> None:
    try:
        transactional_id = decode_key(key)
        if value is None:
            state.transactions.pop(transactional_id, None)
            return
        decoded = decode_value(value)
    except RecordFormatError as error:
        log.warning("skipping an unreadable record in %s: %s", TXN_TOPIC, error)
        return
    state.transactions[transactional_id] = TxnMetadata.from_log(transactional_id, decoded)


def _coordinator_error(error: ErrorCode) -> ErrorCode:
    """How Kafka maps a failed append to the transaction log for producers."""
    if error in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if error in (ErrorCode.not_enough_replicas, ErrorCode.request_timed_out):
        return ErrorCode.coordinator_not_available
    if error == ErrorCode.unknown_topic_or_partition:
        return ErrorCode.not_coordinator
    return ErrorCode.unknown_server_error


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
