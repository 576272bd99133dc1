"""Partition leadership changes: decide with `election.py`, write fenced, remember the result.

A partition is in one of these states (Kafka's PartitionStateMachine, kept implicit here):
- new: assigned but without a state znode -> `initialize_partitions` creates it once a replica
  is alive (leader = first live replica, ISR = live replicas, leader_epoch 0);
- online: its leader is a live broker;
- offline: leader -1 or a dead broker -> `reconcile` elects a leader when one qualifies.
Every write is conditional on the /controller_epoch zkVersion (a deposed controller gets
ControllerMovedError) and, for updates, on the partition state's zkVersion. A leader may have
changed the ISR meanwhile (BadVersionError): re-read the partition and decide again. One
that keeps changing beyond MAX_WRITE_ATTEMPTS is remembered and decided again on a timer (the
controller's `RetryUnsettledPartitions` event), never left for some later ZooKeeper change.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from controller.context import ControllerContext, TopicPartition
from controller.election import (
    NO_LEADER,
    LeaderAndIsr,
    initial_leader_and_isr,
    leader_and_isr_after_broker_change,
)
from controller.state_change_log import ChangeReason, partition_changed
from controller.stats import ControllerStats
from controller.zk_api import ControllerZk, PartitionState
from zk.errors import BadVersionError, ControllerMovedError, NoNodeError
from zk.loop_slice import TurnGate

log = logging.getLogger(__name__)
T = TypeVar("T")

# Writes in flight at once: enough to make a failover of thousands of partitions quick, few
# enough not to flood ZooKeeper's request queue.
MAX_WRITES_IN_FLIGHT = 256
# Partition states written in one fenced ZooKeeper multi. Each request costs the client and
# the server far more than one more op in it, so a failover writes thousands of states in a
# few requests (about 30 KB each, far below jute.maxbuffer's 1 MB).
MAX_STATES_PER_WRITE = 200
# Batches in flight at once. Each batch is prepared in one synchronous step (about 10 ms for
# 200 states), taken one per turn of the event loop; a few in flight keep ZooKeeper busy.
MAX_BATCHES_IN_FLIGHT = 8
# Decisions made between two yields to the event loop: deciding thousands of partitions in
# one go would keep requests waiting (about 0.1 ms each).
DECISIONS_PER_TURN = 100
# A partition whose state keeps changing under us is retried later, on a timer.
MAX_WRITE_ATTEMPTS = 3
# Partitions named in one log line.
MAX_LOGGED_PARTITIONS = 20

# A partition's new leader and ISR, from its state in the context (None: leave it as it is).
Decide = Callable[[TopicPartition], Awaitable[LeaderAndIsr | None]]


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    """What `decide_and_write` wrote (in the order written) and what kept changing."""

    written: dict[TopicPartition, LeaderAndIsr]
    unsettled: list[TopicPartition]


@dataclass(frozen=True, slots=True)
class _Retry:
    """How to decide an unsettled partition again: `decide` None is `reconcile`'s decision."""

    decide: Decide | None
    reason: ChangeReason


class PartitionStateMachine:
    def __init__(
        self,
        kafka_zk: ControllerZk,
        context: ControllerContext,
        unclean_default: bool,
        broker_id: int = -1,
        on_unsettled: Callable[[], None] = lambda: None,
        stats: ControllerStats | None = None,
    ) -> None:
        self._zk = kafka_zk
        self._stats = stats or ControllerStats()
        self._broker_id = broker_id  # the controller's, for the state-change log
        self._context = context
        self._unclean_default = unclean_default
        # Partitions whose writes kept losing races, by how to decide them again, for when
        # `on_unsettled` (the controller's retry timer) says so. Dicts as ordered sets.
        self._retries: dict[_Retry, dict[TopicPartition, None]] = {}
        self._on_unsettled = on_unsettled
        # The batches of a write prepare their requests one per turn of the event loop.
        self._batch_turns = TurnGate()

    async def initialize_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """Create state znodes for partitions that have none and at least one live replica
        (not for topics being deleted, as Kafka's triggerOnlinePartitionStateChange)."""
        by_topic: dict[str, dict[int, PartitionState]] = {}
        for topic, partition in partitions:
            if topic in self._context.topics_queued_for_deletion:
                continue
            decision = initial_leader_and_isr(
                self._context.replicas((topic, partition)), self._context.live_brokers
            )
            if decision is None:
                log.warning("no live replica for new partition %s-%d yet", topic, partition)
                continue
            state = PartitionState(
                leader=decision.leader,
                leader_epoch=0,
                isr=decision.isr,
                controller_epoch=self._context.epoch,
            )
            by_topic.setdefault(topic, {})[partition] = state
        await bounded_gather(
            [self._create_states(topic, states) for topic, states in by_topic.items()]
        )

    async def _create_states(self, topic: str, states: dict[int, PartitionState]) -> None:
        try:
            created = await self._zk.create_partition_states(
                self._context.epoch_zk_version, topic, states
            )
        except NoNodeError:
            log.info("topic %s vanished before its partition states were created", topic)
            return
        existing = [partition for partition, version in created.items() if version is None]
        for partition, version in created.items():
            if version is not None:
                self._context.partition_states[(topic, partition)] = (states[partition], version)
                self._log_change(
                    topic, partition, states[partition], version, ChangeReason.NEW_PARTITION
                )
        if existing:
            # A previous controller created these already: adopt what is there.
            await self._refresh(topic, existing)

    async def reconcile(
        self,
        partitions: Iterable[TopicPartition],
        reason: ChangeReason = ChangeReason.BROKER_FAILURE,
    ) -> None:
        """Bring leaders and ISRs in line with the live brokers (elect, shrink, go offline).
        `reason` is what the state-change log records for the writes this makes. Topics
        being deleted are left offline (Kafka elects no leader for them)."""
        unclean_by_topic: dict[str, bool] = {}

        async def decide(tp: TopicPartition) -> LeaderAndIsr | None:
            return await self._decide(tp, unclean_by_topic)

        deleting = self._context.topics_queued_for_deletion
        known = [
            tp
            for tp in partitions
            if tp in self._context.partition_states and tp[0] not in deleting
        ]
        outcome = await self.decide_and_write(known, decide, reason)
        self.retry_later(outcome.unsettled, None, reason)

    def retry_later(
        self, partitions: Sequence[TopicPartition], decide: Decide | None, reason: ChangeReason
    ) -> None:
        """Decide `partitions` again (with `decide`, or as `reconcile` does when None) once the
        controller's retry timer fires: their states kept changing under our writes."""
        if not partitions:
            return
        log.warning(
            "partition states kept changing, retried after a back-off: %s%s",
            list(partitions[:MAX_LOGGED_PARTITIONS]),
            " ..." if len(partitions) > MAX_LOGGED_PARTITIONS else "",
        )
        self._retries.setdefault(_Retry(decide, reason), {}).update(dict.fromkeys(partitions))
        self._on_unsettled()

    def has_unsettled(self) -> bool:
        return bool(self._retries)

    async def retry_unsettled(self) -> None:
        """Decide again what `retry_later` remembered; what still loses its races is
        remembered again. On an error everything taken is remembered again too (each decision
        looks at the partition's current state, so one that settled meanwhile changes little
        or nothing)."""
        retries, self._retries = self._retries, {}
        try:
            for retry, pending in retries.items():
                partitions = list(pending)
                if retry.decide is None:
                    await self.reconcile(partitions, retry.reason)
                else:
                    outcome = await self.decide_and_write(partitions, retry.decide, retry.reason)
                    self.retry_later(outcome.unsettled, retry.decide, retry.reason)
        except BaseException:
            for retry, pending in retries.items():
                self._retries.setdefault(retry, {}).update(pending)
            self._on_unsettled()
            raise

    async def decide_and_write(
        self, partitions: Sequence[TopicPartition], decide: Decide, reason: ChangeReason
    ) -> WriteOutcome:
        """Write what `decide` says for each partition (None: no write), conditionally on the
        state's zkVersion; a partition that changed meanwhile (a leader's ISR write) is re-read
        and decided again, up to MAX_WRITE_ATTEMPTS times. The state-change log records
        `reason`, or what the decision itself says happened (see `_reason_of`)."""
        written: dict[TopicPartition, LeaderAndIsr] = {}
        pending = list(partitions)
        for _attempt in range(MAX_WRITE_ATTEMPTS):
            decisions = []
            for index, tp in enumerate(pending):
                if index and index % DECISIONS_PER_TURN == 0:
                    await asyncio.sleep(0)
                decision = await decide(tp)
                if decision is not None:
                    decisions.append((tp, decision))
            # New leaders first, ISR-only changes after, as Kafka's controller elects leaders
            # before it takes a failed broker's replicas out of the ISRs: clients wait on the
            # former, nobody on the latter.
            decisions.sort(key=lambda item: not self._moves_leader(*item))
            outcomes = await self._write_all(decisions, reason)
            pending = []
            for (tp, decision), done in zip(decisions, outcomes, strict=True):
                if done:
                    written[tp] = decision
                else:
                    pending.append(tp)
            if not pending:
                break
        return WriteOutcome(written, pending)

    def _moves_leader(self, tp: TopicPartition, decision: LeaderAndIsr) -> bool:
        return self._context.partition_states[tp][0].leader != decision.leader

    def _reason_of(
        self, tp: TopicPartition, decision: LeaderAndIsr, reason: ChangeReason
    ) -> ChangeReason:
        if decision.unclean:
            return ChangeReason.UNCLEAN_ELECTION
        if reason is not ChangeReason.CONTROLLER_FAILOVER:
            return reason
        old_leader = self._context.partition_states[tp][0].leader
        if old_leader != NO_LEADER and old_leader not in self._context.live_brokers:
            # A new controller replacing a dead leader (often the old controller's broker):
            # the change is due to that broker's failure.
            return ChangeReason.BROKER_FAILURE
        return reason

    async def take_offline(self, partitions: Iterable[TopicPartition]) -> None:
        """Set leader -1 (e.g. before deleting a topic) so that no broker keeps serving it."""
        writes = []
        for tp in partitions:
            versioned = self._context.partition_states.get(tp)
            if versioned is not None and versioned[0].leader != NO_LEADER:
                offline = LeaderAndIsr(NO_LEADER, list(versioned[0].isr))
                writes.append(self._write(tp, offline, ChangeReason.TOPIC_DELETION))
        await bounded_gather(writes)

    async def _decide(
        self, tp: TopicPartition, unclean_by_topic: dict[str, bool]
    ) -> LeaderAndIsr | None:
        versioned = self._context.partition_states.get(tp)
        if versioned is None:
            return None  # re-read after a lost race: the topic is being deleted
        state = versioned[0]
        replicas = self._context.replicas(tp)
        live = self._context.live_replicas(tp)
        shutting_down = self._context.shutting_down_brokers
        decision = leader_and_isr_after_broker_change(
            state.leader, state.isr, replicas, live, False, shutting_down
        )
        leader_after = state.leader if decision is None else decision.leader
        stays_offline = leader_after == NO_LEADER or leader_after not in live
        could_elect_unclean = stays_offline and any(replica in live for replica in replicas)
        # Only read the topic's config when an unclean election could make a difference.
        if could_elect_unclean and await self._unclean_enabled(tp[0], unclean_by_topic):
            decision = leader_and_isr_after_broker_change(
                state.leader, state.isr, replicas, live, True, shutting_down
            )
            if decision is not None and decision.unclean:
                log.warning("unclean leader election for %s-%d: %s", *tp, decision)
                self._stats.unclean_leader_elections += 1
        return decision

    async def _unclean_enabled(self, topic: str, cache: dict[str, bool]) -> bool:
        if topic not in cache:
            configs = await self._zk.get_topic_configs(topic)
            value = configs.get("unclean.leader.election.enable")
            cache[topic] = self._unclean_default if value is None else value.lower() == "true"
        return cache[topic]

    async def _write_all(
        self, decisions: Sequence[tuple[TopicPartition, LeaderAndIsr]], reason: ChangeReason
    ) -> list[bool]:
        """Write every decision, in order, MAX_STATES_PER_WRITE to a request; whether each
        was written (False: it changed meanwhile, and was re-read)."""
        batches = [
            decisions[start : start + MAX_STATES_PER_WRITE]
            for start in range(0, len(decisions), MAX_STATES_PER_WRITE)
        ]
        outcomes = await bounded_gather(
            [self._write_batch(batch, reason) for batch in batches], MAX_BATCHES_IN_FLIGHT
        )
        return [done for batch_outcomes in outcomes for done in batch_outcomes]

    async def _write_batch(
        self, batch: Sequence[tuple[TopicPartition, LeaderAndIsr]], reason: ChangeReason
    ) -> list[bool]:
        """One fenced multi for the whole batch. ZooKeeper applies all or none of it: when one
        state changed or vanished meanwhile, each is written on its own instead, which tells
        them apart."""
        if len(batch) == 1:
            tp, decision = batch[0]
            return [await self._write(tp, decision, self._reason_of(tp, decision, reason))]
        await self._batch_turns.enter()
        writes = [(tp, self._next_state(tp, decision)) for tp, decision in batch]
        try:
            versions = await self._zk.update_partition_states(
                self._context.epoch_zk_version,
                [(tp, state, self._context.partition_states[tp][1]) for tp, state in writes],
            )
        except (BadVersionError, NoNodeError):
            return await bounded_gather(
                [self._write(tp, d, self._reason_of(tp, d, reason)) for tp, d in batch]
            )
        for (tp, decision), (_, new_state), version in zip(batch, writes, versions, strict=True):
            self._written(tp, new_state, version, self._reason_of(tp, decision, reason))
        return [True] * len(batch)

    def _next_state(self, tp: TopicPartition, decision: LeaderAndIsr) -> PartitionState:
        return PartitionState(
            leader=decision.leader,
            leader_epoch=self._context.partition_states[tp][0].leader_epoch + 1,
            isr=list(decision.isr),
            controller_epoch=self._context.epoch,
        )

    async def _write(
        self, tp: TopicPartition, decision: LeaderAndIsr, reason: ChangeReason
    ) -> bool:
        """Conditional write; False (after re-reading the partition) when it changed meanwhile."""
        topic, partition = tp
        zk_version = self._context.partition_states[tp][1]
        new_state = self._next_state(tp, decision)
        try:
            new_version = await self._zk.update_partition_state(
                self._context.epoch_zk_version, topic, partition, new_state, zk_version
            )
        except BadVersionError:
            await self._refresh(topic, [partition])
            return False
        except NoNodeError:
            # The topic is being deleted; forget the partition (a TopicChange follows).
            self._context.partition_states.pop(tp, None)
            return True
        self._written(tp, new_state, new_version, reason)
        return True

    def _written(
        self, tp: TopicPartition, new_state: PartitionState, version: int, reason: ChangeReason
    ) -> None:
        self._context.partition_states[tp] = (new_state, version)
        # At INFO in the state-change log (Kafka's line, from _log_change) only: one line per
        # partition is already thousands in a failover.
        log.debug("partition %s-%d: %s (%s)", *tp, new_state, reason)
        self._log_change(*tp, new_state, version, reason)

    def _log_change(
        self,
        topic: str,
        partition: int,
        state: PartitionState,
        zk_version: int,
        reason: ChangeReason,
    ) -> None:
        partition_changed(
            self._broker_id,
            self._context.epoch,
            topic,
            partition,
            state.leader,
            state.leader_epoch,
            state.isr,
            zk_version,
            reason,
        )

    async def _refresh(self, topic: str, partitions: Sequence[int]) -> None:
        states = await self._zk.get_partition_states(topic, partitions)
        for partition, versioned in states.items():
            if versioned is None:
                self._context.partition_states.pop((topic, partition), None)
            else:
                self._context.partition_states[(topic, partition)] = versioned


async def bounded_gather(
    awaitables: Sequence[Coroutine[Any, Any, T]], limit: int = MAX_WRITES_IN_FLIGHT
) -> list[T]:
    """Run coroutines with at most `limit` in flight, in order: as one finishes
    the next starts (a window, not chunks that each wait for their slowest write). The first
    error cancels those in flight and skips the rest: writes must not run on against a
    context the controller drops when it handles the error (e.g. resigning on
    ControllerMovedError)."""
    if len(awaitables) == 1:
        # A lone write (a reassignment step) is awaited as it is: no task, so no extra turn of
        # the event loop between the caller's steps.
        return [await awaitables[0]]
    results: list[T | None] = [None] * len(awaitables)
    queue = iter(enumerate(awaitables))

    async def run_in_turn() -> None:
        for index, coroutine in queue:
            results[index] = await coroutine

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(limit, len(awaitables))):
                group.create_task(run_in_turn())
    except BaseExceptionGroup as failed:
        # Callers catch plain errors (ControllerMovedError above all), not groups.
        raise _first_error(failed) from None
    finally:
        for _index, coroutine in queue:
            coroutine.close()  # never started: close so Python does not warn about it
    return cast(list[T], results)  # every index was filled, or an error was raised


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error callers handle, out of a TaskGroup's group: ControllerMovedError decides
    everything (the controller resigns), so it wins over any other failure."""
    errors: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        error = pending.pop(0)
        if isinstance(error, BaseExceptionGroup):
            pending.extend(error.exceptions)
        else:
            errors.append(error)
    moved = [error for error in errors if isinstance(error, ControllerMovedError)]
    return (moved or errors)[0]
