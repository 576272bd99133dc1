"""Partition reassignment (KIP-455), as Kafka's ZooKeeper-mode controller runs it.

RS = current replicas, ORS = original, TRS = target, AR = adding (TRS - ORS), RR = removing
(ORS - TRS). The topic znode is the only durable record of a reassignment in flight, so every
step is written there first and a new controller resumes from it.

- U (update): write RS = TRS + (ORS - TRS), AR, RR to /brokers/topics/<t>. Replicas a replaced
  reassignment no longer needs leave the ISR.
- A (TRS not all in the ISR): bump the leader epoch. Brokers of AR see themselves in the
  assignment, start as followers and catch up; the leader adds them to the ISR.
- B (TRS all in the ISR): one partition state write keeps the leader if it is in TRS and alive,
  else elects the first replica of TRS that is alive and in the ISR (reason REASSIGNMENT), and
  removes RR from the ISR; then RS = TRS is written without AR/RR. Brokers no longer assigned
  stop their replica and delete its log when they see that write.

Completion is checked when a reassigning partition's state znode changes (Kafka's
PartitionReassignmentIsrChangeHandler), on ISR change notifications and when a target broker
starts. Requests come from AlterPartitionReassignments and from /admin/reassign_partitions,
whose entries are removed as they complete (the znode is deleted when none is left).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from kio.schema.errors import ErrorCode

from controller.context import ControllerContext, TopicPartition
from controller.election import NO_LEADER, LeaderAndIsr
from controller.errors import (
    INVALID_REPLICA_ASSIGNMENT,
    NO_REASSIGNMENT_IN_PROGRESS,
    NONE,
    NOT_CONTROLLER,
    UNKNOWN_TOPIC_OR_PARTITION,
    TopicError,
)
from controller.partition_state_machine import MAX_WRITE_ATTEMPTS, PartitionStateMachine
from controller.state_change_log import ChangeReason
from controller.zk_api import ControllerZk, PartitionState
from zk.errors import BadVersionError
from zk.znodes import TopicAssignment, TopicPartitionStateZNode

log = logging.getLogger(__name__)

# Target replicas per partition: a list to move to, or None to cancel the reassignment.
Request = Mapping[TopicPartition, Sequence[int] | None]


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """One partition's replicas with the reassignment in flight (Kafka's ReplicaAssignment)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def origin(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """Target first in its order, then the original replicas it drops."""
        origin = self.origin
        full = tuple(dict.fromkeys([*target, *origin]))
        return ReplicaAssignment(
            full,
            tuple(r for r in full if r not in origin),
            tuple(r for r in full if r not in target),
        )


def replica_assignment(context: ControllerContext, tp: TopicPartition) -> ReplicaAssignment:
    """The partition's assignment as the context knows it (empty when unknown)."""
    topic, partition = tp
    assignment = context.assignments.get(topic)
    if assignment is None or partition not in assignment.partitions:
        return ReplicaAssignment(())
    return ReplicaAssignment(
        tuple(assignment.partitions[partition]),
        tuple(assignment.adding_replicas.get(partition, ())),
        tuple(assignment.removing_replicas.get(partition, ())),
    )


def partitions_being_reassigned(context: ControllerContext) -> list[TopicPartition]:
    return [
        tp for tp in context.all_partitions() if replica_assignment(context, tp).is_being_reassigned
    ]


def validate_target(
    current: ReplicaAssignment, target: Sequence[int], live_brokers: Iterable[int]
) -> TopicError | None:
    """Kafka's validateReplicas: the error for a bad target list, None when it is acceptable."""
    if not target:
        return TopicError(
            INVALID_REPLICA_ASSIGNMENT, "Empty replica list specified in partition reassignment."
        )
    if len(set(target)) != len(target):
        return TopicError(
            INVALID_REPLICA_ASSIGNMENT,
            f"Duplicate replica ids in partition reassignment replica list: {list(target)}",
        )
    if any(replica < 0 for replica in target):
        return TopicError(
            INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in replica list: {list(target)}"
        )
    adding = current.reassign_to(target).adding
    live = set(live_brokers)
    if not set(adding) <= live:
        return TopicError(
            INVALID_REPLICA_ASSIGNMENT,
            f"Replica assignment has brokers that are not alive. Replica list: {list(adding)}, "
            f"live broker list: {sorted(live)}",
        )
    return None


def completion_decision(
    reassignment: ReplicaAssignment, state: PartitionState, live_brokers: Iterable[int]
) -> LeaderAndIsr | None:
    """Phase B's partition state: a leader from TRS (the current one if it is in TRS and alive)
    and the ISR without RR; None when no target replica can lead. (The caller has checked that
    every target replica is in the ISR, or that the reassignment was cancelled.)"""
    target = reassignment.target
    live = set(live_brokers)
    leader = state.leader
    if leader not in target or leader not in live:
        candidates = [r for r in target if r in live and r in state.isr]
        if not candidates:
            return None
        leader = candidates[0]
    isr = [r for r in state.isr if r not in reassignment.removing]
    return LeaderAndIsr(leader, isr)


def without_replicas(
    state: PartitionState,
    removed: Iterable[int],
    replicas: Sequence[int],
    live_brokers: Iterable[int],
) -> LeaderAndIsr:
    """Replicas leave the ISR (Kafka's OfflineReplica); a removed leader hands over to the
    first remaining replica alive and in the ISR (or none). The ISR never becomes empty."""
    gone = set(removed)
    isr = [r for r in state.isr if r not in gone] or list(state.isr)
    leader = state.leader
    if leader in gone:
        live = set(live_brokers)
        leader = next((r for r in replicas if r in isr and r in live and r not in gone), NO_LEADER)
    return LeaderAndIsr(leader, isr)


class Reassignments:
    """The active controller's reassignment steps (one instance per controller term)."""

    def __init__(
        self,
        kafka_zk: ControllerZk,
        context: ControllerContext,
        partitions: PartitionStateMachine,
        on_state_change: Callable[[], None],
    ) -> None:
        self._zk = kafka_zk
        self._context = context
        self._partitions = partitions
        self._on_state_change = on_state_change  # enqueues a completion check
        self._watched: set[TopicPartition] = set()
        # czxid of the /admin/reassign_partitions znode already acted on: Kafka acts when the
        # znode is created, not when the controller itself rewrites it.
        self._zk_request_czxid: int | None = None

    # ------------------------------------------------------------------ entry points

    async def initialize(self) -> None:
        """At failover: requests made through ZooKeeper meanwhile, then resume the others."""
        resumed = await self.process_zk_request()
        for tp in partitions_being_reassigned(self._context):
            if tp not in resumed:
                await self.on_partition_reassignment(tp, replica_assignment(self._context, tp))

    async def alter(self, request: Request) -> dict[TopicPartition, TopicError]:
        """AlterPartitionReassignments (Kafka's processApiPartitionReassignment)."""
        results: dict[TopicPartition, TopicError] = {}
        to_start: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in request.items():
            current = replica_assignment(self._context, tp)
            error = (
                None
                if target is None
                else validate_target(current, target, self._context.live_brokers)
            )
            if error is not None:
                results[tp] = error
                continue
            built = self._build(current, target)
            if built is None:
                results[tp] = TopicError(NO_REASSIGNMENT_IN_PROGRESS)
            else:
                to_start[tp] = built
        # The latest request wins over one made through ZooKeeper for the same partition.
        await self._remove_from_zk_request(lambda tp, _replicas: tp in to_start)
        results.update(await self._trigger(to_start))
        return results

    async def process_zk_request(self) -> set[TopicPartition]:
        """Start what a newly created /admin/reassign_partitions asks; failed entries are
        removed from it. Returns the partitions started."""
        found = await self._zk.get_partition_reassignment()
        if found is None:
            self._zk_request_czxid = None
            return set()
        requested, czxid = found
        if czxid == self._zk_request_czxid:
            return set()  # our own rewrite of a request already acted on
        self._zk_request_czxid = czxid
        to_start: dict[TopicPartition, ReplicaAssignment] = {}
        failed: set[TopicPartition] = set()
        for tp, target in requested.items():
            built = self._build(replica_assignment(self._context, tp), target)
            if built is None:
                failed.add(tp)
            else:
                to_start[tp] = built
        results = await self._trigger(to_start)
        failed |= {tp for tp, error in results.items() if error.error_code != NONE}
        if failed:
            log.warning("failed reassignments through ZooKeeper: %s", sorted(failed))
        # Also drops entries that completed at once (a move to the current replicas).
        await self._remove_from_zk_request(
            lambda tp, replicas: tp in failed or self._is_done(tp, replicas)
        )
        return set(to_start) - failed

    def ongoing(
        self, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        """ListPartitionReassignments: the partitions (default all) being reassigned."""
        wanted = partitions_being_reassigned(self._context) if partitions is None else partitions
        found = {tp: replica_assignment(self._context, tp) for tp in wanted}
        return {
            tp: assignment for tp, assignment in found.items() if assignment.is_being_reassigned
        }

    async def maybe_complete(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Finish the reassignments (default all) whose target replicas are all in the ISR."""
        candidates = (
            partitions_being_reassigned(self._context) if partitions is None else partitions
        )
        for tp in candidates:
            reassignment = replica_assignment(self._context, tp)
            if not reassignment.is_being_reassigned:
                continue
            state = await self._read_state(tp)
            if state is not None and set(reassignment.target) <= set(state.isr):
                log.info("target replicas %s of %s-%d are all in the ISR", reassignment.target, *tp)
                await self.on_partition_reassignment(tp, reassignment)

    async def on_brokers_started(self, brokers: Iterable[int]) -> None:
        """A target broker came (back): carry on with its partitions (Kafka's onBrokerStartup)."""
        started = set(brokers)
        for tp in partitions_being_reassigned(self._context):
            reassignment = replica_assignment(self._context, tp)
            if started & set(reassignment.target):
                await self.on_partition_reassignment(tp, reassignment)

    def stop(self) -> None:
        """Drop the state znode watches (the controller resigns)."""
        for tp in list(self._watched):
            self._unwatch_state(tp)

    # ------------------------------------------------------------------ the phases

    async def on_partition_reassignment(
        self, tp: TopicPartition, reassignment: ReplicaAssignment
    ) -> None:
        current = replica_assignment(self._context, tp)
        if current != reassignment:
            await self._write_assignment(tp, reassignment)  # U
            unneeded = [r for r in current.replicas if r not in reassignment.replicas]
            if unneeded:

                def remove_unneeded(s: PartitionState) -> LeaderAndIsr | None:
                    if replica_assignment(self._context, tp) != reassignment:
                        return None  # a retry after a newer reassignment: it decides
                    live = self._context.live_brokers
                    return without_replicas(s, unneeded, reassignment.replicas, live)

                await self._change_state(tp, remove_unneeded)
        if reassignment.is_being_reassigned:
            self._watch_state(tp)
        state = await self._read_state(tp)
        if state is None:
            return  # no state yet (the partition never had a live replica): resumed later
        if reassignment.is_being_reassigned and not set(reassignment.target) <= set(state.isr):
            await self._change_state(tp, lambda s: LeaderAndIsr(s.leader, list(s.isr)))  # A
            return
        # Not retried on the timer: the assignment write must follow it. The races lost were
        # changes of the state znode, which fire the watch set above, and so a completion check.
        written = await self._change_state(
            tp,
            lambda s: completion_decision(reassignment, s, self._context.live_replicas(tp)),
            retry_unsettled=False,
        )
        if not written:
            log.info("reassignment of %s-%d cannot complete yet (no target replica can lead)", *tp)
            return
        completed = ReplicaAssignment(reassignment.target)
        if replica_assignment(self._context, tp) != completed:
            await self._write_assignment(tp, completed)  # B
        self._unwatch_state(tp)
        await self._remove_from_zk_request(
            lambda key, replicas: key == tp and tuple(replicas) == completed.replicas
        )
        log.info("reassignment of %s-%d completed: replicas %s", *tp, list(completed.replicas))

    # ------------------------------------------------------------------ helpers

    def _build(
        self, current: ReplicaAssignment, target: Sequence[int] | None
    ) -> ReplicaAssignment | None:
        """Kafka's maybeBuildReassignment: cancelling goes back to the original replicas."""
        if target is None:
            return current.reassign_to(current.origin) if current.is_being_reassigned else None
        return current.reassign_to(target)

    async def _trigger(
        self, reassignments: Mapping[TopicPartition, ReplicaAssignment]
    ) -> dict[TopicPartition, TopicError]:
        results: dict[TopicPartition, TopicError] = {}
        for tp, reassignment in reassignments.items():
            if tp[0] in self._context.topics_queued_for_deletion or not self._context.has_partition(
                tp
            ):
                results[tp] = TopicError(
                    UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
                )
                continue
            await self.on_partition_reassignment(tp, reassignment)
            results[tp] = TopicError(NONE)
        return results

    def _is_done(self, tp: TopicPartition, replicas: Sequence[int]) -> bool:
        current = replica_assignment(self._context, tp)
        return not current.is_being_reassigned and current.replicas == tuple(replicas)

    async def _write_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        """Rewrite one partition's entry of the topic znode, keeping the rest as ZooKeeper has
        it (a partition added meanwhile is not lost), then the context's entry."""
        topic, partition = tp
        for _attempt in range(MAX_WRITE_ATTEMPTS):
            found = await self._zk.get_topic_assignment_and_version(topic)
            if found is None:
                return  # deleted meanwhile; a TopicChange follows
            stored, zk_version = found
            updated = _with_partition(stored, partition, assignment)
            try:
                await self._zk.set_topic_assignment(
                    self._context.epoch_zk_version, topic, updated, zk_version
                )
            except BadVersionError:
                continue
            known = self._context.assignments.get(topic)
            if known is not None:
                self._context.assignments[topic] = _with_partition(known, partition, assignment)
            return
        raise RuntimeError(f"topic znode of {topic} kept changing during a reassignment step")

    async def _read_state(self, tp: TopicPartition) -> PartitionState | None:
        """Kafka reads ZooKeeper here: the leader may have changed the ISR since the context
        last heard of it. The context adopts what it reads (the next write is conditional)."""
        found = (await self._zk.get_partition_states(tp[0], [tp[1]]))[tp[1]]
        if found is None:
            return None
        self._context.partition_states[tp] = found
        return found[0]

    async def _change_state(
        self,
        tp: TopicPartition,
        decide: Callable[[PartitionState], LeaderAndIsr | None],
        retry_unsettled: bool = True,
    ) -> bool:
        """Write `decide(current state)` (epoch bumped), deciding again after losing a race
        with the leader's own ISR write. False when `decide` says no or the races go on; then
        the write is retried on the controller's timer, unless `retry_unsettled` is False (a
        step that must not run alone)."""

        async def decide_current(tp: TopicPartition) -> LeaderAndIsr | None:
            versioned = self._context.partition_states.get(tp)
            return None if versioned is None else decide(versioned[0])

        outcome = await self._partitions.decide_and_write(
            [tp], decide_current, ChangeReason.REASSIGNMENT
        )
        if retry_unsettled:
            self._partitions.retry_later(
                outcome.unsettled, decide_current, ChangeReason.REASSIGNMENT
            )
        return tp in outcome.written

    async def _remove_from_zk_request(
        self, done: Callable[[TopicPartition, Sequence[int]], bool]
    ) -> None:
        """Kafka's maybeRemoveFromZkReassignment: drop entries from /admin/reassign_partitions,
        deleting it when none is left."""
        found = await self._zk.get_partition_reassignment()
        if found is None:
            return
        requested, _czxid = found
        remaining = {tp: replicas for tp, replicas in requested.items() if not done(tp, replicas)}
        if len(remaining) == len(requested) and requested:
            return
        if remaining:
            await self._zk.set_partition_reassignment(self._context.epoch_zk_version, remaining)
        else:
            log.info("no more partitions to reassign: deleting /admin/reassign_partitions")
            await self._zk.delete_partition_reassignment(self._context.epoch_zk_version)
            self._zk_request_czxid = None

    def _watch_state(self, tp: TopicPartition) -> None:
        if tp not in self._watched:
            self._watched.add(tp)
            self._zk.client.watch_data(TopicPartitionStateZNode.path(*tp), self._on_state_change)

    def _unwatch_state(self, tp: TopicPartition) -> None:
        if tp in self._watched:
            self._watched.discard(tp)
            self._zk.client.unwatch_data(TopicPartitionStateZNode.path(*tp), self._on_state_change)


def _with_partition(
    stored: TopicAssignment, partition: int, assignment: ReplicaAssignment
) -> TopicAssignment:
    adding = dict(stored.adding_replicas)
    removing = dict(stored.removing_replicas)
    adding.pop(partition, None)
    removing.pop(partition, None)
    if assignment.adding:
        adding[partition] = list(assignment.adding)
    if assignment.removing:
        removing[partition] = list(assignment.removing)
    return replace(
        stored,
        partitions={**stored.partitions, partition: list(assignment.replicas)},
        adding_replicas=adding,
        removing_replicas=removing,
    )


class PendingAlters:
    """AlterPartitionReassignments requests waiting for the controller's event task. Events of
    one kind are coalesced, so requests queue here and one event handles all that wait."""

    def __init__(self) -> None:
        self._waiting: list[
            tuple[Request, asyncio.Future[dict[TopicPartition, TopicError] | int]]
        ] = []

    def add(self, request: Request) -> asyncio.Future[dict[TopicPartition, TopicError] | int]:
        future: asyncio.Future[dict[TopicPartition, TopicError] | int] = (
            asyncio.get_running_loop().create_future()
        )
        self._waiting.append((request, future))
        return future

    def take(self) -> list[tuple[Request, asyncio.Future[dict[TopicPartition, TopicError] | int]]]:
        taken, self._waiting = self._waiting, []
        return [(request, future) for request, future in taken if not future.done()]

    async def run_all(self, reassignments: Reassignments) -> None:
        """Serve every waiting request in order; if one fails (e.g. the controller moved),
        it and those after it get a top-level error and the failure propagates."""
        waiting = self.take()
        try:
            while waiting:
                request, future = waiting[0]
                result = await reassignments.alter(request)
                waiting.pop(0)
                if not future.done():
                    future.set_result(result)
        except BaseException:
            for _request, future in waiting:
                if not future.done():
                    future.set_result(NOT_CONTROLLER)
            raise

    def fail_all(self, error_code: ErrorCode) -> None:
        """Answer every waiting request with a top-level error (the controller resigned)."""
        for _request, future in self.take():
            future.set_result(error_code)
