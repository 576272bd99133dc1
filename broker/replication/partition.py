"""One partition replica hosted by this broker: its log, its role and the leader's view of
its followers (Kafka's `Partition`).

Only `make_leader`, `make_follower`, `apply_isr` and the follower-fetch update change the
role, epoch, ISR or positions, so every rule about them lives here. The high watermark is kept
on the log (it is checkpointed with it); this class decides when it moves. The leader's append
goes through `append_records_to_leader`, which refuses an acks=all produce while the ISR is
below min.insync.replicas, as Kafka's `Partition.appendRecordsToLeader` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from broker.log.control_records import EndTxnMarker
from broker.log.log import AppendInfo, Log
from broker.log.transaction_state import CompletedTxn
from broker.replication.purgatory import PartitionWaiters
from zk.znodes import PartitionState

UNKNOWN_OFFSET = -1


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower (Kafka's `Replica`)."""

    log_end_offset: int = UNKNOWN_OFFSET
    # The last time the follower had everything the leader had (replica.lag.time.max.ms).
    last_caught_up_time_ms: int = 0
    last_fetch_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    # The follower's log start offset, as its fetches report it (DeleteRecords' low watermark).
    log_start_offset: int = UNKNOWN_OFFSET


@dataclass(frozen=True, slots=True)
class PendingIsrChange:
    """An ISR change this leader sent the controller in AlterPartition and that is not
    settled yet (Kafka's PendingExpandIsr / PendingShrinkIsr). The partition keeps its
    committed ISR meanwhile and starts no other change."""

    isr: tuple[int, ...]  # the ISR asked for
    leader_epoch: int
    partition_epoch: int  # the state znode's zkVersion it was asked against
    is_expand: bool


class InvariantError(AssertionError):
    """A replication invariant broke; raised explicitly so `python -O` cannot strip it."""


class NotEnoughReplicasError(Exception):
    """An acks=all append refused before writing: the ISR is below min.insync.replicas."""


@dataclass(slots=True)
class Partition:
    topic: str
    partition: int
    log: Log
    replicas: list[int]
    broker_id: int = -1
    leader_id: int = -1
    leader_epoch: int = -1
    # zkVersion of the partition state znode: the leader's ISR writes are conditional on it.
    zk_version: int = -1
    controller_epoch: int = -1
    isr: list[int] = field(default_factory=list)
    is_leader: bool = False
    # Offset at which this broker's leadership epoch started (the leader's log end then).
    leader_epoch_start_offset: int = UNKNOWN_OFFSET
    followers: dict[int, FollowerState] = field(default_factory=dict)
    # Counts starts and ends of this broker's leaderships: an acks=all produce waits only
    # within the leadership that appended it (epoch bumps by the controller do not end it).
    leadership_generation: int = 0
    # An ISR write to ZooKeeper is on its way; no other ISR change starts meanwhile.
    isr_write_in_flight: bool = False
    # An ISR change sent to the controller (AlterPartition), until answered or overtaken by a
    # newer state from the watch or a LeaderAndIsr.
    pending_isr: PendingIsrChange | None = None
    waiters: PartitionWaiters = field(default_factory=PartitionWaiters)

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def maximal_isr(self) -> list[int]:
        """The ISR the high watermark and acks=all answers count (KIP-497): while an expand is
        pending it already includes the new member (stricter, so safe whatever the answer);
        while a shrink is pending it is still the committed ISR (the shrink may be refused)."""
        pending = self.pending_isr
        if pending is not None and pending.is_expand:
            return list(pending.isr)
        return self.isr

    # -- the leader's append ------------------------------------------------------------------

    def append_records_to_leader(
        self,
        records: bytearray,
        required_acks: int,
        min_insync_replicas: int,
        now_ms: int,
        compressed_checked: bool,
        check_sequences: bool,
    ) -> AppendInfo:
        """Append a producer's batch as this partition's leader (the caller checked the role).
        Raises NotEnoughReplicasError for acks=all while the ISR is smaller than
        `min_insync_replicas`, else what `Log.append_as_leader` raises (RecordError, OSError);
        wakes the fetches parked on this partition once the batch is written."""
        if required_acks == -1 and len(self.isr) < min_insync_replicas:
            raise NotEnoughReplicasError
        info = self.log.append_as_leader(
            records,
            self.leader_epoch,
            now_ms,
            require_single_batch=True,
            compressed_checked=compressed_checked,
            check_sequences=check_sequences,
        )
        self.waiters.on_append()
        return info

    def append_marker_to_leader(
        self,
        producer_id: int,
        producer_epoch: int,
        marker: EndTxnMarker,
        min_insync_replicas: int,
        now_ms: int,
    ) -> CompletedTxn:
        """Write a transaction marker the coordinator sent (WriteTxnMarkers), as this
        partition's leader; markers are written with acks=all, as in Kafka. Raises
        NotEnoughReplicasError while the ISR is smaller than `min_insync_replicas`, else what
        `Log.append_marker_as_leader` raises."""
        if len(self.isr) < min_insync_replicas:
            raise NotEnoughReplicasError
        completed = self.log.append_marker_as_leader(
            producer_id, producer_epoch, marker, self.leader_epoch, now_ms
        )
        self.waiters.on_append()
        return completed

    # -- role changes -----------------------------------------------------------------------

    def is_newer(self, state: PartitionState, zk_version: int) -> bool:
        """Whether a state read from ZooKeeper is newer than what this replica applied."""
        if state.leader_epoch != self.leader_epoch:
            return state.leader_epoch > self.leader_epoch
        return zk_version > self.zk_version

    def make_leader(
        self, state: PartitionState, zk_version: int, replicas: list[int], now_ms: int
    ) -> bool:
        """Lead at `state.leader_epoch`; True if this broker was not leading before. An epoch
        bump of an ongoing leadership (the controller changed the ISR) keeps what the leader
        knows of its followers, as Kafka does; a new leadership starts followers as caught up
        if in the ISR, so none is dropped before it could fetch."""
        new_leader = not self.is_leader
        new_epoch = new_leader or state.leader_epoch != self.leader_epoch
        self._apply(state, zk_version, replicas)
        self.is_leader = True
        if new_leader:
            self.leadership_generation += 1
            self.followers = {}
        if new_epoch:
            self.leader_epoch_start_offset = self.log.log_end_offset
            self.log.leader_epoch_cache.assign(state.leader_epoch, self.log.log_end_offset)
        for replica in replicas:
            if replica != self.broker_id and replica not in self.followers:
                caught_up_ms = now_ms if replica in self.isr else 0
                self.followers[replica] = FollowerState(last_caught_up_time_ms=caught_up_ms)
        for gone in set(self.followers) - set(replicas):
            del self.followers[gone]
        self.maybe_increment_high_watermark()
        return new_leader

    def make_follower(self, state: PartitionState, zk_version: int, replicas: list[int]) -> bool:
        """Follow `state.leader`; True if the leader or its epoch changed (the fetcher must
        then truncate and restart)."""
        changed = (
            self.is_leader
            or state.leader != self.leader_id
            or state.leader_epoch != self.leader_epoch
        )
        if self.is_leader:
            self.leadership_generation += 1
        self._apply(state, zk_version, replicas)
        self.is_leader = False
        self.followers = {}
        self.leader_epoch_start_offset = UNKNOWN_OFFSET
        return changed

    def replace_log(self, log: Log) -> None:
        """AlterReplicaLogDirs swapped in the copy it built in another log dir: the same
        offsets, leader epochs and high watermark, so role and positions stay as they are."""
        if log.log_end_offset != self.log.log_end_offset:
            raise InvariantError(f"{self.topic}-{self.partition}: replacement log differs")
        self.log = log

    def update_replicas(self, replicas: list[int]) -> None:
        """The assignment changed without a newer partition state (a reassignment step): only
        the replica list follows now; the role and the ISR follow the next state."""
        self.replicas = list(replicas)

    def stop(self) -> bool:
        """This broker stops hosting the replica. True if that ends its leadership, which
        then counts as ended (acks=all waits only within one leadership)."""
        was_leader = self.is_leader
        if was_leader:
            self.leadership_generation += 1
        self.is_leader = False
        self.pending_isr = None
        return was_leader

    # -- the leader's ISR writes ----------------------------------------------------------------

    def begin_isr_write(self) -> bool:
        """Start an ISR write to ZooKeeper; False (nothing started) while another is on its
        way, or when this broker no longer leads."""
        if self.isr_write_in_flight or self.pending_isr is not None or not self.is_leader:
            return False
        self.isr_write_in_flight = True
        return True

    def end_isr_write(self) -> None:
        """The ISR write finished, whatever its outcome; the next one may start."""
        self.isr_write_in_flight = False

    def begin_isr_change(self, isr: list[int]) -> PendingIsrChange | None:
        """Ask for `isr` through the controller: the change is pending from now on. None
        (nothing started) while another change is pending, or when this broker does not lead."""
        if self.pending_isr is not None or self.isr_write_in_flight or not self.is_leader:
            return None
        self._check_isr(isr, self.replicas)
        self.pending_isr = PendingIsrChange(
            tuple(isr), self.leader_epoch, self.zk_version, is_expand=len(isr) > len(self.isr)
        )
        return self.pending_isr

    def commit_isr_change(
        self, change: PendingIsrChange, leader_epoch: int, isr: list[int], partition_epoch: int
    ) -> bool:
        """The controller answered `change` with the partition's state (Kafka's
        handleAlterPartitionUpdate): adopted unless the partition moved on meanwhile (another
        change pending, another leader epoch, or a newer version learned elsewhere), so an
        answer never takes a partition back. True if adopted; the ISR may then differ from the
        one asked for (the controller answers with the state it holds)."""
        if self.pending_isr is not change or not self.is_leader:
            return False
        if leader_epoch != self.leader_epoch or partition_epoch < self.zk_version:
            return False  # stays pending until the controller's newer state arrives
        if not set(isr) <= set(self.replicas):
            return False  # the assignment moved on too: so will the state this waits for
        self.pending_isr = None
        self.isr = list(isr)
        self.zk_version = partition_epoch
        self.maybe_increment_high_watermark()
        return True

    def abandon_isr_change(self, change: PendingIsrChange) -> bool:
        """The controller refused `change` without applying it (OPERATION_NOT_ATTEMPTED,
        INELIGIBLE_REPLICA): back to the committed ISR, so a later check may try again."""
        if self.pending_isr is not change:
            return False
        self.pending_isr = None
        return True

    def apply_isr(self, isr: list[int], zk_version: int) -> None:
        """The ISR this leader wrote (or re-read) at `zk_version`."""
        self._check_isr(isr, self.replicas)
        self.isr = list(isr)
        self.zk_version = zk_version
        self.maybe_increment_high_watermark()

    def _apply(self, state: PartitionState, zk_version: int, replicas: list[int]) -> None:
        if state.leader_epoch < self.leader_epoch:
            raise InvariantError(
                f"{self.topic}-{self.partition}: leader epoch {state.leader_epoch} is below"
                f" {self.leader_epoch}"
            )
        self.replicas = list(replicas)
        # A newer state from the controller settles whatever this leader had asked for.
        self.pending_isr = None
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.controller_epoch = state.controller_epoch
        self.zk_version = zk_version
        self.isr = list(state.isr)

    @staticmethod
    def _check_isr(isr: list[int], replicas: list[int]) -> None:
        if not set(isr) <= set(replicas):
            raise InvariantError(f"ISR {isr} is not within the replicas {replicas}")

    # -- the leader's view of followers --------------------------------------------------------

    def update_follower_fetch(
        self,
        replica_id: int,
        fetch_offset: int,
        now_ms: int,
        follower_log_start_offset: int = UNKNOWN_OFFSET,
    ) -> bool:
        """A follower fetched from `fetch_offset`, so it holds everything below it. Kafka's
        rule for "caught up": it reached the leader's log end as of now, or as of its previous
        fetch. Returns whether the high watermark moved."""
        follower = self.followers.get(replica_id)
        if follower is None:
            return False  # not (or no longer) a replica of this partition
        if follower_log_start_offset >= 0:
            follower.log_start_offset = follower_log_start_offset
        leader_end = self.log.log_end_offset
        if fetch_offset >= leader_end:
            follower.last_caught_up_time_ms = now_ms
        elif fetch_offset >= follower.last_fetch_leader_log_end_offset:
            follower.last_caught_up_time_ms = max(
                follower.last_caught_up_time_ms, follower.last_fetch_time_ms
            )
        follower.log_end_offset = min(fetch_offset, leader_end)
        follower.last_fetch_leader_log_end_offset = leader_end
        follower.last_fetch_time_ms = now_ms
        return self.maybe_increment_high_watermark()

    def maybe_increment_high_watermark(self) -> bool:
        """HW = the smallest log end over the ISR; it only moves forward."""
        if not self.is_leader:
            return False
        ends = [self.log.log_end_offset]
        for replica in self.maximal_isr:
            if replica == self.broker_id:
                continue
            follower = self.followers.get(replica)
            ends.append(follower.log_end_offset if follower is not None else UNKNOWN_OFFSET)
        candidate = min(ends)
        if candidate <= self.log.high_watermark:
            return False
        self.log.update_high_watermark(candidate)
        return True

    def low_watermark(self, alive: Callable[[int], bool]) -> int:
        """Kafka's `lowWatermarkIfLeader`: the smallest log start offset over this leader and
        the followers on live brokers (a follower that never fetched counts as unknown, -1)."""
        low_watermark = self.log.log_start_offset
        for replica, follower in self.followers.items():
            if alive(replica):
                low_watermark = min(low_watermark, follower.log_start_offset)
        return low_watermark

    def isr_after_shrink(self, now_ms: int, lag_time_max_ms: int) -> list[int] | None:
        """The ISR without followers that have not caught up for `lag_time_max_ms`; None if
        nobody lags. The leader itself always stays."""
        lagging = {
            replica
            for replica in self.isr
            if replica != self.broker_id
            and (follower := self.followers.get(replica)) is not None
            and now_ms - follower.last_caught_up_time_ms > lag_time_max_ms
        }
        if not lagging:
            return None
        return [replica for replica in self.isr if replica not in lagging]

    def isr_after_expand(self, replica_id: int) -> list[int] | None:
        """The ISR with `replica_id` added if it has reached the high watermark and this
        leadership's start offset (it holds everything committed); None otherwise."""
        follower = self.followers.get(replica_id)
        if follower is None or replica_id in self.isr or replica_id not in self.replicas:
            return None
        reached = follower.log_end_offset
        if reached < self.log.high_watermark or reached < self.leader_epoch_start_offset:
            return None
        return [*self.isr, replica_id]
