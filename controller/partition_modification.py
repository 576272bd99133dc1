"""Adding partitions to a topic: CreatePartitions as the controller serves it, and the
controller's reaction when a topic znode gains partitions (Kafka's
PartitionModificationsHandler).

CreatePartitions runs outside the event queue, as Kafka's admin manager does: it validates,
places the new partitions with Kafka's algorithm continuing from the existing assignment
(AdminZkClient.createNewPartitionsAssignment), and rewrites /brokers/topics/<t> (fenced by the
controller epoch and conditional on the znode's zkVersion, so a concurrent rewrite is never
lost). The controller watches every topic znode's data; its event reads the topics that
changed, adds partitions it did not know to its context and creates their state znodes
(reason NEW_PARTITION). Brokers see the new partitions through their own topic watch.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from controller.assignment import assign_replicas_to_brokers, enforced_broker_racks
from controller.context import ControllerContext, TopicPartition
from controller.errors import (
    INVALID_PARTITIONS,
    INVALID_REPLICA_ASSIGNMENT,
    INVALID_REQUEST,
    INVALID_TOPIC_EXCEPTION,
    NONE,
    REASSIGNMENT_IN_PROGRESS,
    UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_OR_PARTITION,
    ApiError,
    TopicError,
)
from controller.partition_state_machine import PartitionStateMachine
from controller.state_change_log import ChangeReason
from controller.zk_api import ControllerZk, TopicAssignment, ZkWatches
from zk.errors import BadVersionError, NoNodeError, ZkError
from zk.znodes import TopicZNode

log = logging.getLogger(__name__)

# Conditional rewrites of one topic znode before giving up (someone keeps rewriting it).
MAX_ASSIGNMENT_WRITE_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class NewPartitions:
    """One topic of a CreatePartitions request."""

    topic: str
    count: int
    # Replicas of each new partition, in partition order; None: let Kafka's algorithm place them.
    assignments: list[list[int]] | None = None


def plan_new_partitions(
    request: NewPartitions,
    existing: TopicAssignment,
    broker_ids: Iterable[int],
    broker_racks: Mapping[int, str | None] | None = None,
) -> dict[int, list[int]]:
    """The replicas of each partition to add, or ApiError; checks in Kafka's order
    (ZkAdminManager.createPartitions, then AdminZkClient.createNewPartitionsAssignment)."""
    topic = request.topic
    if existing.adding_replicas or existing.removing_replicas:
        raise ApiError(
            REASSIGNMENT_IN_PROGRESS,
            f"A partition reassignment is in progress for the topic '{topic}'.",
        )
    if not existing.partitions:
        raise ApiError(UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist.")
    old_count = len(existing.partitions)
    if request.count < old_count:
        raise ApiError(
            INVALID_PARTITIONS,
            f"Topic currently has {old_count} partitions, which is higher than the requested "
            f"{request.count}.",
        )
    if request.count == old_count:
        raise ApiError(INVALID_PARTITIONS, f"Topic already has {old_count} partitions.")
    brokers = sorted(broker_ids)
    increment = request.count - old_count
    first_replicas = existing.partitions.get(0)
    if first_replicas is None:
        raise ApiError(
            UNKNOWN_SERVER_ERROR,
            f"Unexpected existing replica assignment for topic '{topic}', partition id 0 is "
            "missing.",
        )
    if request.assignments is not None:
        proposed = _given_assignment(request.assignments, brokers, increment, old_count)
        _validate_given(proposed, len(first_replicas))
        return proposed
    # Continue the round-robin from the broker that leads partition 0.
    start_index = next(
        (index for index, broker in enumerate(brokers) if broker >= first_replicas[0]), 0
    )
    return assign_replicas_to_brokers(
        brokers,
        increment,
        len(first_replicas),
        fixed_start_index=start_index,
        start_partition_id=old_count,
        racks=broker_racks,
    )


def _given_assignment(
    assignments: list[list[int]], brokers: Sequence[int], increment: int, old_count: int
) -> dict[int, list[int]]:
    unknown = sorted({b for replicas in assignments for b in replicas} - set(brokers))
    if unknown:
        raise ApiError(
            INVALID_REPLICA_ASSIGNMENT,
            f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.",
        )
    if len(assignments) != increment:
        raise ApiError(
            INVALID_REPLICA_ASSIGNMENT,
            f"Increasing the number of partitions by {increment} but {len(assignments)} "
            "assignments provided.",
        )
    return {old_count + index: list(replicas) for index, replicas in enumerate(assignments)}


def _validate_given(proposed: dict[int, list[int]], replication_factor: int) -> None:
    """AdminZkClient.validateReplicaAssignment (brokers are known by now)."""
    for partition, replicas in proposed.items():
        if not replicas:
            raise ApiError(
                INVALID_REPLICA_ASSIGNMENT,
                f"Cannot have replication factor of 0 for partition id {partition}.",
            )
        if len(set(replicas)) != len(replicas):
            raise ApiError(
                INVALID_REPLICA_ASSIGNMENT,
                "Duplicate brokers not allowed in replica assignment: "
                f"{', '.join(map(str, replicas))} for partition id {partition}.",
            )
    bad = sorted((p, len(r)) for p, r in proposed.items() if len(r) != replication_factor)
    if bad:
        raise ApiError(
            INVALID_REPLICA_ASSIGNMENT,
            "Inconsistent replication factor between partitions, partition 0 has "
            f"{replication_factor} while partitions [{', '.join(str(p) for p, _ in bad)}] have "
            f"replication factors [{', '.join(str(n) for _, n in bad)}], respectively.",
        )


async def create_partitions(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    requests: list[NewPartitions],
    validate_only: bool,
    max_partitions: int,
) -> dict[str, TopicError]:
    """CreatePartitions on the active controller: a Kafka error code per topic. At most
    `max_partitions` (create.topics.max.partitions) are added by one request, so a single
    request cannot make the controller place millions of replicas."""
    counts = Counter(request.topic for request in requests)
    results = {
        name: TopicError(INVALID_REQUEST, "Duplicate topic in request.")
        for name, count in counts.items()
        if count > 1
    }
    try:
        # Kafka reads the brokers in Enforced rack-aware mode before looking at any topic: a
        # mix of brokers with and without a rack fails the whole request.
        racks = enforced_broker_racks(context.live_broker_racks())
    except ApiError as error:
        return {request.topic: TopicError(error.error_code) for request in requests}
    partitions_left = max_partitions
    for request in requests:
        if request.topic in results:
            continue
        if request.topic in context.topics_queued_for_deletion:
            results[request.topic] = TopicError(
                INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion."
            )
            continue
        # The context may lag behind ZooKeeper; it errs towards counting more as added.
        known = context.assignments.get(request.topic)
        added = request.count - (len(known.partitions) if known is not None else 0)
        if added > partitions_left:
            results[request.topic] = TopicError(
                INVALID_PARTITIONS,
                f"Excessively large number of partitions per request: more than {max_partitions}"
                " (create.topics.max.partitions)",
            )
            continue
        result = await _add_partitions(kafka_zk, context, request, validate_only, racks)
        if result.error_code == NONE:
            partitions_left -= max(added, 0)
        results[request.topic] = result
    return results


async def _add_partitions(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    request: NewPartitions,
    validate_only: bool,
    racks: Mapping[int, str | None],
) -> TopicError:
    try:
        for _attempt in range(MAX_ASSIGNMENT_WRITE_ATTEMPTS):
            # Read ZooKeeper, not the context: it may not have seen a topic created a moment ago.
            found = await kafka_zk.get_topic_assignment_and_version(request.topic)
            if found is None:
                raise ApiError(
                    UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{request.topic}' does not exist."
                )
            existing, zk_version = found
            added = plan_new_partitions(request, existing, context.live_brokers, racks)
            if validate_only:
                return TopicError(NONE)
            combined = replace(existing, partitions={**existing.partitions, **added})
            try:
                await kafka_zk.set_topic_assignment(
                    context.epoch_zk_version, request.topic, combined, zk_version
                )
            except BadVersionError:
                continue  # rewritten meanwhile (e.g. a reassignment step): decide again
            log.info("topic %s: adding partitions %s", request.topic, added)
            return TopicError(NONE)
        return TopicError(UNKNOWN_SERVER_ERROR, "The topic assignment kept changing; try again.")
    except ApiError as error:
        return error.to_topic_error()
    except NoNodeError:
        return TopicError(
            UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{request.topic}' does not exist."
        )
    except ZkError as error:
        log.warning("adding partitions to %s failed", request.topic, exc_info=True)
        return TopicError(UNKNOWN_SERVER_ERROR, str(error))


class TopicWatches:
    """The active controller's watches on topic znodes, and what it does when one changes."""

    def __init__(self, kafka_zk: ControllerZk, enqueue: Callable[[], None]) -> None:
        self._zk = kafka_zk
        self._watches: ZkWatches = kafka_zk.client
        self._enqueue = enqueue
        self._callbacks: dict[str, Callable[[], None]] = {}
        self._changed: set[str] = set()

    def watch(self, topics: Iterable[str]) -> None:
        for topic in topics:
            if topic not in self._callbacks:
                callback = functools.partial(self._mark_changed, topic)
                self._callbacks[topic] = callback
                self._watches.watch_data(TopicZNode.path(topic), callback)

    def unwatch(self, topics: Iterable[str]) -> None:
        for topic in topics:
            callback = self._callbacks.pop(topic, None)
            if callback is not None:
                self._watches.unwatch_data(TopicZNode.path(topic), callback)
            self._changed.discard(topic)

    def unwatch_all(self) -> None:
        self.unwatch(list(self._callbacks))

    def _mark_changed(self, topic: str) -> None:
        self._changed.add(topic)
        self._enqueue()

    async def handle(self, context: ControllerContext, partitions: PartitionStateMachine) -> None:
        """Add the partitions that changed topics gained (Kafka's processPartitionModifications).
        Replica changes of known partitions are the controller's own (reassignment) or ignored,
        as Kafka ignores them."""
        topics, self._changed = sorted(self._changed), set()
        for topic in topics:
            try:
                await self._add_new_partitions(topic, context, partitions)
            except BaseException:
                self._changed.add(topic)  # seen again by the reconcile after the failure
                raise

    async def _add_new_partitions(
        self, topic: str, context: ControllerContext, partitions: PartitionStateMachine
    ) -> None:
        known = context.assignments.get(topic)
        if known is None:
            return  # a new topic (TopicChange handles it) or one being removed
        found = await self._zk.get_topic_assignment(topic)
        if found is None:
            return
        added = {p: r for p, r in found.partitions.items() if p not in known.partitions}
        if not added:
            return
        if topic in context.topics_queued_for_deletion:
            log.warning(
                "skipping adding partitions %s for topic %s since it is being deleted",
                sorted(added),
                topic,
            )
            return
        log.info("topic %s: new partitions %s", topic, added)
        context.assignments[topic] = replace(known, partitions={**known.partitions, **added})
        new: list[TopicPartition] = [(topic, partition) for partition in sorted(added)]
        await partitions.initialize_partitions(new)
        await partitions.reconcile(new, ChangeReason.NEW_PARTITION)
