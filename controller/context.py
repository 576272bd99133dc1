"""The active controller's picture of the cluster, and how it is loaded at failover.

Only the controller's event task reads and writes it, so it needs no locking. Partition states
keep the zkVersion they were read or written at: the next controller write to that znode is
conditional on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from controller.zk_api import BrokerRegistration, ControllerZk, PartitionState, TopicAssignment

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class ControllerContext:
    epoch: int
    epoch_zk_version: int
    live_brokers: set[int] = field(default_factory=set)
    # broker id -> broker epoch (czxid of its registration): a new epoch means it restarted.
    broker_epochs: dict[int, int] = field(default_factory=dict)
    # broker id -> its registration (endpoints, rack), which UpdateMetadata hands every broker.
    broker_registrations: dict[int, BrokerRegistration] = field(default_factory=dict)
    assignments: dict[str, TopicAssignment] = field(default_factory=dict)
    # (state, zkVersion of /brokers/topics/<t>/partitions/<p>/state)
    partition_states: dict[TopicPartition, tuple[PartitionState, int]] = field(default_factory=dict)
    topics_queued_for_deletion: set[str] = field(default_factory=set)
    # Brokers that asked for a controlled shutdown: still live (they serve until they exit),
    # but no election picks them. Forgotten when they deregister or re-register.
    shutting_down_brokers: set[int] = field(default_factory=set)
    # Per live broker, its replicas in failed log dirs (from its /brokers/offline_replicas
    # list): no election picks them, and they leave ISRs (Kafka's replicasOnOfflineDirs).
    offline_replicas: dict[int, frozenset[TopicPartition]] = field(default_factory=dict)

    def live_replicas(self, topic_partition: TopicPartition) -> set[int]:
        """The live brokers whose replica of the partition is online (Kafka's
        isReplicaOnline, for every broker at once)."""
        if not self.offline_replicas:
            return self.live_brokers
        return {
            broker
            for broker in self.live_brokers
            if topic_partition not in self.offline_replicas.get(broker, ())
        }

    def live_broker_racks(self) -> dict[int, str | None]:
        """broker.rack of each live broker (None: it has none), for replica placement."""
        racks: dict[int, str | None] = {}
        for broker in self.live_brokers:
            registration = self.broker_registrations.get(broker)
            racks[broker] = registration.rack if registration is not None else None
        return racks

    def replicas(self, topic_partition: TopicPartition) -> list[int]:
        topic, partition = topic_partition
        return list(self.assignments[topic].partitions[partition])

    def has_partition(self, topic_partition: TopicPartition) -> bool:
        """The partition belongs to a topic the controller knows."""
        topic, partition = topic_partition
        assignment = self.assignments.get(topic)
        return assignment is not None and partition in assignment.partitions

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        """Partitions with a replica assigned to `broker_id`, in topic then partition order."""
        return [tp for tp in self.all_partitions() if broker_id in self.replicas(tp)]

    def partitions_of(self, topics: Iterable[str]) -> list[TopicPartition]:
        return [
            (topic, partition)
            for topic in topics
            if topic in self.assignments
            for partition in sorted(self.assignments[topic].partitions)
        ]

    def all_partitions(self) -> list[TopicPartition]:
        return self.partitions_of(sorted(self.assignments))

    def partitions_without_state(self, topics: Iterable[str]) -> list[TopicPartition]:
        return [tp for tp in self.partitions_of(topics) if tp not in self.partition_states]

    def add_topic(
        self,
        topic: str,
        assignment: TopicAssignment,
        states: dict[int, tuple[PartitionState, int] | None],
    ) -> None:
        self.assignments[topic] = assignment
        for partition, versioned_state in states.items():
            if versioned_state is not None:
                self.partition_states[(topic, partition)] = versioned_state

    def remove_topic(self, topic: str) -> None:
        assignment = self.assignments.pop(topic, None)
        if assignment is not None:
            for partition in assignment.partitions:
                self.partition_states.pop((topic, partition), None)
        self.topics_queued_for_deletion.discard(topic)


async def read_topics(
    kafka_zk: ControllerZk, topics: Iterable[str]
) -> dict[str, tuple[TopicAssignment, dict[int, tuple[PartitionState, int] | None]]]:
    """Assignments then partition states of `topics`, each round issued concurrently so a
    failover costs two ZooKeeper round trips, not one per partition. Vanished topics are left
    out."""
    names = list(topics)
    assignments = await asyncio.gather(*(kafka_zk.get_topic_assignment(t) for t in names))
    present = [(name, a) for name, a in zip(names, assignments, strict=True) if a is not None]
    states = await asyncio.gather(
        *(kafka_zk.get_partition_states(name, sorted(a.partitions)) for name, a in present)
    )
    return {
        name: (assignment, topic_states)
        for (name, assignment), topic_states in zip(present, states, strict=True)
    }


async def load_context(
    kafka_zk: ControllerZk, epoch: int, epoch_zk_version: int
) -> ControllerContext:
    """Everything a new controller needs, read with batched (concurrent) requests."""
    brokers, topics, pending_deletion = await asyncio.gather(
        kafka_zk.get_brokers_with_epochs(),
        kafka_zk.get_all_topics(),
        kafka_zk.get_topics_pending_deletion(),
    )
    offline = await kafka_zk.get_offline_replicas(sorted(brokers))
    context = ControllerContext(
        epoch=epoch,
        epoch_zk_version=epoch_zk_version,
        live_brokers=set(brokers),
        broker_epochs={broker_id: epoch for broker_id, (_, epoch) in brokers.items()},
        broker_registrations={broker_id: reg for broker_id, (reg, _) in brokers.items()},
        topics_queued_for_deletion=set(pending_deletion),
        offline_replicas={broker: found for broker, found in offline.items() if found},
    )
    for topic, (assignment, states) in (await read_topics(kafka_zk, topics)).items():
        context.add_topic(topic, assignment, states)
    return context
