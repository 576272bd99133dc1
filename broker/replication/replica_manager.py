"""Owns this broker's partition replicas: role changes from ZooKeeper, appends and reads.

Role changes arrive from the cluster watch (partition state znodes) and, under an Apache Kafka
controller, from its LeaderAndIsr requests; both go through `apply_state`, which applies only a
state newer than the replica's (control_requests.py has the rule), and become `make_leader`
or `make_follower` on the partition, starting or stopping its fetcher. Appends and reads come
from the Produce/Fetch/ListOffsets handlers, replicated appends from the fetchers; a follower's
fetch moves the leader's view of it, which may move the high watermark (waking acks=all
produces and consumer fetches) or let it back into the ISR. Nothing here awaits between
checking a partition's role and acting on it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from broker.log.batch import walk_headers
from broker.log.control_records import EndTxnMarker
from broker.log.file_records import FileRecords
from broker.log.log import AppendInfo, Log, LogConfig, OffsetOutOfRangeError
from broker.log.manager import LogManager
from broker.log.partition_metadata import read_topic_id, write_topic_id
from broker.log.records import RecordError
from broker.replication.control_requests import (
    ControllerFence,
)
from broker.replication.delayed_fetch import DelayedFetch
from broker.replication.delayed_operations import DelayedOperations
from broker.replication.fetcher import ReplicaFetcherManager
from broker.replication.isr import IsrProposer
from broker.replication.partition import NotEnoughReplicasError, Partition
from broker.replication.read_checks import (
    ReadResult,
    check_leader_epoch,
    diverging_epoch,
    positions,
)
from broker.replication.replica_selector import ClientMetadata, preferred_read_replica
from controller.state_change_log import became_follower, became_leader
from zk.kafka_zk import PartitionState

log = logging.getLogger(__name__)

# Logs opened per worker-thread round trip, and round trips at once, when a reconcile pass
# prepares many partitions (a topic of thousands created, or a broker starting).
PREPARE_BATCH_SIZE = 64
PREPARE_BATCHES_IN_FLIGHT = 2


@dataclass(frozen=True, slots=True)
class AppendResult:
    error_code: ErrorCode
    info: AppendInfo | None = None
    error_message: str | None = None
    # (index in the batch, message) of each record a per-record check refused (KIP-467).
    record_errors: tuple[tuple[int, str], ...] = ()


def _end_of(records: bytes | FileRecords) -> int:
    """The offset after the last batch of `records` (0 for none): a read_committed fetch
    names the aborted transactions with data below it, as Kafka bounds the list."""
    if isinstance(records, FileRecords):
        return records.last_offset + 1
    batches, _ = walk_headers(records)
    return batches[-1][2] + 1 if batches else 0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class ReplicaManager:
    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        partition_exists: Callable[[str, int], bool],
        min_insync_replicas: Callable[[str], int],
        replica_lag_time_max_ms: int = 30_000,
    ) -> None:
        self._broker_id = broker_id
        self._log_manager = log_manager
        # Whether cluster metadata knows the partition: a partition that exists but is not
        # hosted here is NOT_LEADER_OR_FOLLOWER (clients refresh metadata), not UNKNOWN.
        self._partition_exists = partition_exists
        # A topic's effective min.insync.replicas (the server's TopicSettings).
        self._min_insync_replicas = min_insync_replicas
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self._partitions: dict[tuple[str, int], Partition] = {}
        self._topic_ids: dict[str, str] = {}
        # Logs opened (and topic-id checked) by `prepare_log`, with the topic id checked.
        self._prepared: dict[tuple[str, int], str] = {}
        # Replicas being removed by a reassignment, per partition: kept out of the ISR, so
        # that a removed replica still fetching cannot rejoin it just before the controller
        # writes the final assignment (Kafka's controller tells the leader RS = TRS first).
        self._removing: dict[tuple[str, int], frozenset[int]] = {}
        # Replicas whose log dir failed: not served (KAFKA_STORAGE_ERROR), never re-created.
        self._offline: set[tuple[str, int]] = set()
        # Wired by the server once the event loop runs; absent in unit tests of one broker.
        self.fetchers: ReplicaFetcherManager | None = None
        # The leaders' ISR changes: AlterPartition to the controller, or (inter-broker protocol
        # below 2.7) written to ZooKeeper.
        self.isr_writer: IsrProposer | None = None
        # replica.selector.class is set: leaders name consumers a preferred read replica.
        self.replica_selector_enabled = False
        # The live brokers' racks (broker.rack), which the replica selector matches against
        # the consumer's; wired by the server from its metadata.
        self.broker_racks: Callable[[], Mapping[int, str | None]] = dict
        # Told when this broker starts (True) or stops (False) leading a partition: the
        # group coordinator loads and unloads its offsets partitions this way.
        self.leadership_listeners: list[Callable[[Partition, bool], None]] = []
        # The controller epoch and broker epoch a controller's requests are fenced with.
        self.controller_fence = ControllerFence()
        # Topics whose replicas a controller's StopReplica deleted for a topic deletion
        # (leader epoch -2), with their topic id. Their znodes stay until every replica is
        # deleted, and the znode watch must not open their logs again meanwhile: Kafka's
        # controller sends no LeaderAndIsr for a topic being deleted.
        self.deleting_topics: dict[str, str] = {}
        # Fenced from ZooKeeper (broker.cluster.session_fence): no partition is led here.
        self.session_fenced = False
        # Bumped at each fence: acks=all waiters from before it answer NOT_LEADER_OR_FOLLOWER.
        self._fence_generation = 0
        # Kafka's fetch and produce purgatories.
        self._delayed = DelayedOperations(
            self._partitions, lambda: (self.session_fenced, self._fence_generation)
        )

    def get(self, topic: str, partition: int) -> Partition | None:
        return self._partitions.get((topic, partition))

    def is_offline(self, key: tuple[str, int]) -> bool:
        """The replica's log was in a log dir that failed (Kafka's HostedPartition.Offline)."""
        return key in self._offline

    def partition_exists(self, key: tuple[str, int]) -> bool:
        """Whether cluster metadata knows the partition (hosted here or not)."""
        return self._partition_exists(*key)

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
        zk_version: int = 0,
        removing: Sequence[int] = (),
    ) -> None:
        """`removing`: replicas a reassignment is taking away (the topic znode's
        removing_replicas); this broker, as leader, never takes them back into the ISR."""
        key = (topic, partition)
        if self._broker_id not in replicas:
            self.stop_replica(key)
            return
        if key in self._offline:
            return  # its log is in a failed log dir: never re-created elsewhere (Kafka's)
        if removing:
            self._removing[key] = frozenset(removing)
        else:
            self._removing.pop(key, None)
        current = self._partitions.get(key)
        if current is None:
            replica_log = self._take_prepared_log(key, topic_id)
            if replica_log is None:
                # Never opened here, on the loop: the caller prepares logs first.
                log.debug("%s-%d: state before its log is ready: not applied", *key)
                return
            current = Partition(topic, partition, replica_log, [], broker_id=self._broker_id)
            self._partitions[key] = current
        if current.log.config != log_config:
            current.log.update_config(log_config)
        if not current.is_newer(state, zk_version):
            current.update_replicas(replicas)
            return  # stale, or what this replica already applied
        if state.leader == self._broker_id:
            self._become_leader(current, state, zk_version, replicas)
        else:
            self._become_follower(current, state, zk_version, replicas)

    def _become_leader(
        self, current: Partition, state: PartitionState, zk_version: int, replicas: list[int]
    ) -> None:
        if self.fetchers is not None:
            self.fetchers.remove_partition(current.key)
        previous_epoch = current.leader_epoch
        pending = current.pending_isr
        new_leadership = current.make_leader(state, zk_version, replicas, _now_ms())
        if (
            pending is not None
            and not new_leadership
            and self.isr_writer is not None
            and state.leader_epoch == pending.leader_epoch
            and sorted(state.isr) == sorted(pending.isr)
        ):
            # The change this leader asked for arrived before the controller's answer.
            self.isr_writer.count_landed(pending)
        if new_leadership or state.leader_epoch != previous_epoch:
            became_leader(
                self._broker_id,
                *current.key,
                state.leader_epoch,
                current.leader_epoch_start_offset,
                current.high_watermark,
                list(state.isr),
                previous_epoch,
            )
        if new_leadership:
            # The state-change log has the change at INFO (became_leader, Kafka's line); this
            # repeats it with the log end, per partition: thousands of lines in a failover.
            log.debug(
                "%s-%d: leader at epoch %d, ISR %s, log end %d, high watermark %d",
                *current.key,
                state.leader_epoch,
                state.isr,
                current.log.log_end_offset,
                current.high_watermark,
            )
            current.waiters.on_leadership_change()
            self._notify_leadership(current, True)
        else:
            if state.leader_epoch != previous_epoch:
                log.debug(
                    "%s-%d: leader epoch %d, ISR %s", *current.key, state.leader_epoch, state.isr
                )
                # Fetches that named the old epoch must now answer FENCED_LEADER_EPOCH.
                current.waiters.on_leadership_change()
            else:
                current.waiters.on_high_watermark(current.high_watermark)

    def _become_follower(
        self, current: Partition, state: PartitionState, zk_version: int, replicas: list[int]
    ) -> None:
        was_leader = current.is_leader
        previous_epoch = current.leader_epoch
        if not current.make_follower(state, zk_version, replicas):
            return
        became_follower(
            self._broker_id,
            *current.key,
            state.leader,
            state.leader_epoch,
            current.log.log_end_offset,
            current.high_watermark,
            previous_epoch,
        )
        if was_leader:
            self._notify_leadership(current, False)
        log.debug(
            "%s-%d: follower of %d at epoch %d", *current.key, state.leader, state.leader_epoch
        )
        current.waiters.on_leadership_change()
        if self.fetchers is None:
            return
        if state.leader < 0:
            self.fetchers.remove_partition(current.key)
        else:
            self.fetchers.add_partition(current.key, state.leader, state.leader_epoch)

    def is_ready(self, key: tuple[str, int], topic_id: str) -> bool:
        """Whether `apply_state` can act on the partition now: hosted already, offline, or its
        log prepared for this topic id."""
        return (
            key in self._partitions or key in self._offline or self._prepared.get(key) == topic_id
        )

    async def prepare_logs(
        self,
        topic: str,
        topic_id: str,
        partitions: Sequence[int],
        on_ready: Callable[[list[int]], None],
    ) -> None:
        """Open the logs of `partitions` that are not ready (dropping any left over from a
        deleted incarnation) with the disk work on worker threads: PREPARE_BATCH_SIZE logs a
        round trip, PREPARE_BATCHES_IN_FLIGHT round trips at once. `on_ready` gets each
        batch's partitions once their logs are ready, so the first need not wait for the
        last."""
        todo = [p for p in partitions if not self.is_ready((topic, p), topic_id)]
        slots = asyncio.Semaphore(PREPARE_BATCHES_IN_FLIGHT)

        async def prepare(batch: list[int]) -> None:
            async with slots:
                ready = await self._prepare_batch(topic, topic_id, batch)
            if ready:
                on_ready(ready)

        await asyncio.gather(
            *(
                prepare(todo[start : start + PREPARE_BATCH_SIZE])
                for start in range(0, len(todo), PREPARE_BATCH_SIZE)
            )
        )

    async def _prepare_batch(self, topic: str, topic_id: str, partitions: list[int]) -> list[int]:
        keys = [(topic, partition) for partition in partitions]
        opened, _ = await self._log_manager.open_logs_off_loop(
            keys, functools.partial(_claim_log_dir, topic_id)
        )
        ready = []
        for key, (replica_log, claimed) in sorted(opened.items()):
            if not claimed:
                replaced = await self._replace_log(key, topic_id, replica_log)
                if replaced is None:
                    continue
                replica_log = replaced
            if key in self._offline or self._log_manager.get_log(*key) is not replica_log:
                continue  # its dir failed, or the log was deleted, meanwhile
            self._prepared[key] = topic_id
            ready.append(key[1])
        return ready

    async def _replace_log(self, key: tuple[str, int], topic_id: str, stale: Log) -> Log | None:
        """The log on disk belongs to a deleted incarnation of the topic (re-created while
        this broker was away): delete it and start an empty one."""
        log.info("%s-%d: log belongs to another topic id than %s: deleting it", *key, topic_id)
        if self._log_manager.get_log(*key) is stale:
            await self._log_manager.delete_log_off_loop(*key)
        opened, _ = await self._log_manager.open_logs_off_loop(
            [key], functools.partial(_claim_log_dir, topic_id)
        )
        replica_log, claimed = opened.get(key, (None, False))
        return replica_log if claimed else None

    def _notify_leadership(self, current: Partition, is_leader: bool) -> None:
        for listener in self.leadership_listeners:
            try:
                listener(current, is_leader)
            except Exception:
                log.exception("%s-%d: leadership listener failed", *current.key)

    def _take_prepared_log(self, key: tuple[str, int], topic_id: str) -> Log | None:
        if self._prepared.get(key) != topic_id:
            return None
        del self._prepared[key]
        return self._log_manager.get_log(*key)

    def take_offline(self, keys: Iterable[tuple[str, int]]) -> None:
        """These replicas' log dir failed: stop serving and following them (requests get
        KAFKA_STORAGE_ERROR) and never re-create them (Kafka's markPartitionOffline)."""
        for key in keys:
            self.stop_replica(key)
            self._prepared.pop(key, None)
            self._offline.add(key)

    @property
    def offline_replicas(self) -> frozenset[tuple[str, int]]:
        return frozenset(self._offline)

    def report_io_error(self, replica_log: Log, error: OSError) -> None:
        self._log_manager.report_failure(replica_log.directory.parent, error)

    def stop_replica(self, key: tuple[str, int]) -> None:
        stopped = self._partitions.pop(key, None)
        if stopped is not None:
            if stopped.stop():
                self._notify_leadership(stopped, False)
            stopped.waiters.on_leadership_change()
        if self.fetchers is not None:
            self.fetchers.remove_partition(key)

    async def delete_partition(
        self, topic: str, partition: int, reason: str = "no longer assigned to this broker"
    ) -> None:
        """This broker no longer hosts the partition: stop it at once, delete its log on a
        worker thread (Kafka's StopReplica with delete=true)."""
        key = (topic, partition)
        self.stop_replica(key)
        self._prepared.pop(key, None)
        self._removing.pop(key, None)
        self._offline.discard(key)  # its files stay on the failed disk; nothing to serve
        if self._log_manager.get_log(topic, partition) is not None:
            await self._log_manager.delete_log_off_loop(topic, partition)
            log.info("%s-%d: %s: log deleted", topic, partition, reason)

    async def ensure_topic_id(self, topic: str, topic_id: str) -> None:
        """A topic re-created under the same name must not reuse the old incarnation's logs;
        an id given to a topic that had none (older tools) is adopted, not a re-creation."""
        known = self._topic_ids.get(topic)
        if known and topic_id and known != topic_id:
            log.info("topic %s was re-created (id %s -> %s)", topic, known, topic_id)
            await self.delete_topic(topic)
        self._topic_ids[topic] = topic_id

    async def delete_topic(self, topic: str) -> None:
        """Stop the topic's replicas at once; delete their logs on worker threads."""
        self._topic_ids.pop(topic, None)
        for key in [k for k in self._partitions if k[0] == topic]:
            self.stop_replica(key)
        for key in [k for k in self._prepared if k[0] == topic]:
            del self._prepared[key]
        self._offline = {key for key in self._offline if key[0] != topic}
        keys = [
            (topic, replica_log.partition)
            for replica_log in self._log_manager.all_logs()
            if replica_log.topic == topic
        ]
        if keys:
            await self._log_manager.delete_logs_off_loop(keys)
            log.info("deleted the logs of %s: partitions %s", topic, sorted(p for _, p in keys))

    # -- leader data path ---------------------------------------------------------------

    def set_session_fenced(self, fenced: bool) -> None:
        """Fenced: every leader's request answers NOT_LEADER_OR_FOLLOWER (the clients refresh
        their metadata), as when leadership is lost; its waiters are woken to answer so."""
        if fenced == self.session_fenced:
            return
        self.session_fenced = fenced
        if not fenced:
            return
        self._fence_generation += 1
        for current in self._partitions.values():
            if current.is_leader:
                current.waiters.on_leadership_change()

    def replica(self, topic: str, partition: int) -> tuple[Partition | None, ErrorCode]:
        """This broker's replica, leader or follower (Kafka's getPartitionOrError)."""
        current = self._partitions.get((topic, partition))
        if current is not None:
            return current, ErrorCode.none
        if (topic, partition) in self._offline:
            return None, ErrorCode.kafka_storage_error
        if self._partition_exists(topic, partition):
            return None, ErrorCode.not_leader_or_follower
        return None, ErrorCode.unknown_topic_or_partition

    def _leader(
        self, topic: str, partition: int, current_leader_epoch: int = -1
    ) -> tuple[Partition | None, ErrorCode]:
        current, error = self.replica(topic, partition)
        if current is None:
            return None, error
        # As in Kafka, a known replica answers a stale or future epoch before its role, so the
        # client retries without refreshing metadata.
        epoch_error = check_leader_epoch(current, current_leader_epoch)
        if epoch_error is not None:
            return None, epoch_error
        if not current.is_leader or self.session_fenced:
            return None, ErrorCode.not_leader_or_follower
        return current, ErrorCode.none

    def _any_replica(
        self, topic: str, partition: int, current_leader_epoch: int = -1
    ) -> tuple[Partition | None, ErrorCode]:
        """The replica a consumer with client metadata may read, leader or follower (Kafka's
        localLogWithEpochOrThrow with fetchOnlyFromLeader false)."""
        current, error = self.replica(topic, partition)
        if current is None:
            return None, error
        epoch_error = check_leader_epoch(current, current_leader_epoch)
        if epoch_error is not None:
            return None, epoch_error
        if current.is_leader and self.session_fenced:
            return None, ErrorCode.not_leader_or_follower
        return current, ErrorCode.none

    def append_records(
        self,
        topic: str,
        partition: int,
        records: bytes,
        required_acks: int = 1,
        compressed_checked: bool = False,
        from_coordinator: bool = False,
    ) -> AppendResult:
        """A leader's append, through `Partition.append_records_to_leader` (Kafka's
        appendToLocalLog): the routing errors first, then, for `required_acks` -1 (acks=all),
        NOT_ENOUGH_REPLICAS while the ISR is below the topic's min.insync.replicas.
        `from_coordinator`: a coordinator's own write to its internal topic, whose producer
        sequences are not checked (Kafka's AppendOrigin.Coordinator); the coordinators wait
        for the ISR after their append instead."""
        current, error = self._leader(topic, partition)
        if current is None:
            return AppendResult(error)
        try:
            info = current.append_records_to_leader(
                bytearray(records),
                required_acks,
                self._min_insync_replicas(topic) if required_acks == -1 else 0,
                int(time.time() * 1000),
                compressed_checked=compressed_checked,
                check_sequences=not from_coordinator,
            )
        except NotEnoughReplicasError:
            return AppendResult(ErrorCode.not_enough_replicas)
        except RecordError as record_error:
            log.warning("rejected produce to %s-%d: %s", topic, partition, record_error)
            return AppendResult(
                ErrorCode(record_error.error_code),
                None,
                str(record_error),
                tuple(getattr(record_error, "record_errors", ())),
            )
        except OSError as error:
            log.error("write to %s-%d failed: %s", topic, partition, error)
            self.report_io_error(current.log, error)
            return AppendResult(ErrorCode.kafka_storage_error, None, str(error))
        self._after_high_watermark_check(current)
        return AppendResult(ErrorCode.none, info)

    def append_marker(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        marker: EndTxnMarker,
    ) -> tuple[ErrorCode, int | None]:
        """A transaction marker for the coordinator (WriteTxnMarkers), on the leader, through
        `Partition.append_marker_to_leader` (NOT_ENOUGH_REPLICAS below min.insync.replicas):
        the error, and the offset after the marker (what the high watermark must reach)."""
        current, error = self._leader(topic, partition)
        if current is None:
            return error, None
        try:
            completed = current.append_marker_to_leader(
                producer_id,
                producer_epoch,
                marker,
                self._min_insync_replicas(topic),
                int(time.time() * 1000),
            )
        except NotEnoughReplicasError:
            return ErrorCode.not_enough_replicas, None
        except RecordError as record_error:
            log.warning("rejected marker for %s-%d: %s", topic, partition, record_error)
            return ErrorCode(record_error.error_code), None
        except OSError as io_error:
            log.error("write to %s-%d failed: %s", topic, partition, io_error)
            self.report_io_error(current.log, io_error)
            return ErrorCode.kafka_storage_error, None
        self._after_high_watermark_check(current)
        return ErrorCode.none, completed.last_offset + 1

    def _after_high_watermark_check(self, current: Partition) -> None:
        if current.maybe_increment_high_watermark():
            current.waiters.on_high_watermark(current.high_watermark)

    def read(
        self,
        topic: str,
        partition: int,
        fetch_offset: int,
        max_bytes: int,
        min_one_batch: bool,
        current_leader_epoch: int = -1,
        replica_id: int = -1,
        follower_log_start_offset: int = -1,
        read_committed: bool = False,
        last_fetched_epoch: int = -1,
        client_metadata: ClientMetadata | None = None,
        zero_copy_min_bytes: int | None = None,
    ) -> ReadResult:
        """Consumers read below the high watermark (read_committed ones below the last stable
        offset, told which transactions there were aborted); a follower (`replica_id` >= 0)
        reads to the log end, and its fetch offset (and log start offset) tell the leader how
        far it has come. With `last_fetched_epoch`, a fetcher whose log parts from this one
        gets the diverging epoch and no records, and counts as not having come that far.
        A consumer with `client_metadata` (Fetch v11+) may read from a follower (up to the
        follower's high watermark), and a leader with a replica selector may answer it with a
        preferred read replica instead of records (KIP-392).
        With `zero_copy_min_bytes`, records of at least that size stay in their segment file
        (`FileRecords`, sent with sendfile)."""
        if client_metadata is not None and replica_id < 0:
            current, error = self._any_replica(topic, partition, current_leader_epoch)
        else:
            current, error = self._leader(topic, partition, current_leader_epoch)
        if current is None:
            return ReadResult(error)
        if (
            client_metadata is not None
            and client_metadata.rack_id  # without one, Kafka's selector keeps the leader
            and current.is_leader
            and self.replica_selector_enabled
        ):
            preferred = preferred_read_replica(
                current, client_metadata.rack_id, fetch_offset, _now_ms(), self.broker_racks()
            )
            if preferred is not None:
                # Kafka skips the read and answers the leader's offsets with the replica.
                return ReadResult(
                    ErrorCode.none,
                    b"",
                    current.high_watermark,
                    current.log.log_start_offset,
                    current.log.log_end_offset,
                    current.log.last_stable_offset,
                    preferred_read_replica=preferred,
                )
        if last_fetched_epoch >= 0:
            diverged = diverging_epoch(current, fetch_offset, last_fetched_epoch)
            if diverged is not None:
                return diverged
        if replica_id >= 0:
            self._on_follower_fetch(current, replica_id, fetch_offset, follower_log_start_offset)
        replica_log = current.log
        high_watermark = current.high_watermark
        last_stable_offset = replica_log.last_stable_offset
        read_committed = read_committed and replica_id < 0
        max_offset = None if replica_id >= 0 else high_watermark
        if read_committed:
            max_offset = last_stable_offset
        try:
            records = replica_log.read_records(
                fetch_offset, max_bytes, max_offset, min_one_batch, zero_copy_min_bytes
            )
        except OffsetOutOfRangeError:
            return positions(ErrorCode.offset_out_of_range, current)
        except OSError as error:
            self.report_io_error(replica_log, error)
            return ReadResult(ErrorCode.kafka_storage_error)
        aborted = None
        if read_committed:
            aborted = tuple(replica_log.aborted_transactions(fetch_offset, _end_of(records)))
        return ReadResult(
            ErrorCode.none,
            records,
            high_watermark,
            replica_log.log_start_offset,
            replica_log.log_end_offset,
            last_stable_offset,
            aborted,
        )

    def _on_follower_fetch(
        self, current: Partition, replica_id: int, fetch_offset: int, log_start_offset: int
    ) -> None:
        if fetch_offset > current.log.log_end_offset:
            return  # a diverged follower; it truncates after OFFSET_OUT_OF_RANGE
        follower = current.followers.get(replica_id)
        previous_start = follower.log_start_offset if follower is not None else log_start_offset
        if current.update_follower_fetch(replica_id, fetch_offset, _now_ms(), log_start_offset):
            current.waiters.on_high_watermark(current.high_watermark)
        if log_start_offset != previous_start:
            current.waiters.on_low_watermark()
        if replica_id in self._removing.get(current.key, ()):
            return
        expanded = current.isr_after_expand(replica_id)
        if expanded is not None and self.isr_writer is not None:
            self.isr_writer.propose(current, expanded)

    def leader_partition(
        self, topic: str, partition: int, current_leader_epoch: int = -1
    ) -> tuple[Partition | None, ErrorCode]:
        return self._leader(topic, partition, current_leader_epoch)

    @property
    def delayed_fetches(self) -> int:
        """Fetches parked in `wait_for_fetch` (for the request queue size metric)."""
        return self._delayed.delayed_fetches

    async def wait_for_fetch(self, delayed: DelayedFetch, timeout_s: float) -> None:
        """Return once `delayed` can complete or at the timeout (delayed_operations.py)."""
        await self._delayed.wait_for_fetch(delayed, timeout_s)

    async def wait_for_replication(
        self, topic: str, partition: int, required_offset: int, min_isr: int, timeout_s: float
    ) -> ErrorCode:
        """acks=all: wait until the high watermark reaches `required_offset`, then answer as
        Kafka's DelayedProduce does (delayed_operations.py)."""
        return await self._delayed.wait_for_replication(
            topic, partition, required_offset, min_isr, timeout_s
        )

    def get_by_key(self, key: tuple[str, int]) -> Partition | None:
        return self._partitions.get(key)

    @property
    def broker_id(self) -> int:
        return self._broker_id

    def topic_id(self, topic: str) -> str | None:
        """The topic's id as this broker knows it (its partition.metadata), if it does."""
        return self._topic_ids.get(topic)

    def prepared_log(self, key: tuple[str, int]) -> tuple[str, Log] | None:
        """A log opened for a replica whose partition state has not been applied yet, and
        its topic id."""
        topic_id = self._prepared.get(key)
        prepared = self._log_manager.get_log(*key)
        return None if topic_id is None or prepared is None else (topic_id, prepared)

    # -- follower data path -------------------------------------------------------------

    def follower(self, key: tuple[str, int], leader_epoch: int) -> Partition | None:
        current = self._partitions.get(key)
        if current is None or current.is_leader or current.leader_epoch != leader_epoch:
            return None
        return current

    def append_replicated(
        self, partition: Partition, records: bytes, high_watermark: int, log_start_offset: int
    ) -> None:
        if records:
            try:
                partition.log.append_as_follower(records)
            except OSError as error:
                self.report_io_error(partition.log, error)
                raise
        if log_start_offset > partition.log.log_start_offset:
            partition.log.increment_log_start_offset(log_start_offset)
        # A follower's high watermark never runs ahead of its own log.
        previous_high_watermark = partition.high_watermark
        partition.log.update_high_watermark(
            max(min(high_watermark, partition.log.log_end_offset), partition.high_watermark)
        )
        if partition.high_watermark != previous_high_watermark:
            # Consumers reading from this follower (KIP-392) wait on its high watermark.
            partition.waiters.on_high_watermark(partition.high_watermark)

    def truncate(self, partition: Partition, offset: int) -> None:
        partition.log.truncate_to(offset)

    def truncate_fully(self, partition: Partition, offset: int) -> None:
        partition.log.truncate_fully_and_start_at(offset)

    # -- ISR maintenance ------------------------------------------------------------------

    def maybe_shrink_isrs(self, now_ms: int | None = None) -> None:
        """Leaders drop followers that have not caught up for replica.lag.time.max.ms."""
        if self.isr_writer is None or self.session_fenced:
            return  # a fenced leader acts on no leadership, its ISR included
        now_ms = _now_ms() if now_ms is None else now_ms
        for current in list(self._partitions.values()):
            if not current.is_leader:
                continue
            shrunk = current.isr_after_shrink(now_ms, self.replica_lag_time_max_ms)
            if shrunk is not None:
                self.isr_writer.propose(current, shrunk)

    def on_isr_changed(self, current: Partition) -> None:
        """An ISR change landed (written, or answered by the controller): the high watermark
        may move (a shrink), and waiting acks=all produces must re-check the ISR size."""
        self._after_high_watermark_check(current)
        current.waiters.on_high_watermark(current.high_watermark)


def _claim_log_dir(topic_id: str, replica_log: Log) -> bool:
    """(A worker thread.) Record `topic_id` in the partition directory unless it holds
    another topic id's log: False then (the caller deletes it)."""
    if not topic_id:
        return True
    stored_id = read_topic_id(replica_log.directory)
    if stored_id is not None and stored_id != topic_id:
        return False
    if stored_id is None:
        write_topic_id(replica_log.directory, topic_id)
    return True
