"""The broker's read-only view of cluster metadata, derived from the ZooKeeper watch.

Everything answers from the latest `ClusterView` snapshot; nothing here talks to ZooKeeper.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from broker.protocol.metadata_encoding import PartitionEncodings
from zk.cluster_watch import ClusterView
from zk.kafka_zk import BrokerRegistration
from zk.loop_slice import LoopSlice
from zk.znodes import PartitionState, kafka_string_to_uuid

ENCODINGS_PER_TOPIC = 4
# Partition entries encoded between two looks at the clock.
ROWS_PER_SLICE_CHECK = 128


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    partition: int
    leader_id: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]
    # False until this broker has read the partition's state znode (written by the controller
    # after the topic znode, when it elects the first leader).
    has_state: bool = True


def topic_id_to_uuid(topic_id: str | None) -> uuid.UUID | None:
    return kafka_string_to_uuid(topic_id) if topic_id else None


class MetadataCache:
    def __init__(self, view: ClusterView) -> None:
        self._view = view
        self._names_by_id: dict[uuid.UUID, str] = {}
        self._partition_encodings = PartitionEncodings()
        # (entry class, topic) -> the topic's version and broker map it was encoded from, and
        # its encoded partition entries.
        self._encoded_topics: dict[
            tuple[type, str], tuple[int, object, int | None, list[bytes]]
        ] = {}
        # This broker's id while it is fenced from ZooKeeper (broker.cluster.session_fence):
        # it then names itself leader of nothing, as Kafka names no leader where the leader
        # is not live.
        self.fenced_broker_id: int | None = None

    def update(self, view: ClusterView) -> None:
        self._view = view

    @property
    def partition_encodings(self) -> PartitionEncodings:
        """Encoded Metadata partition entries, kept for the topics that still exist."""
        encodings = self._partition_encodings
        if self._too_many_kept(len(encodings)):
            encodings.forget_other_topics(self._view.topics)
        return encodings

    def _too_many_kept(self, kept: int) -> bool:
        """Encodings are kept per response version and topic: a few versions in use per topic
        at most, so more than that means deleted topics' are still kept."""
        return kept > ENCODINGS_PER_TOPIC * (len(self._view.topics) + 1)

    async def encoded_partitions(self, cls: type, topic: str) -> list[bytes] | None:
        """The topic's Metadata partition entries as `cls` (see `partition_encodings`), or None
        until this broker has read every partition's state. Kept whole until the topic or the
        live brokers change: a topic of 5,000 partitions is then no work to answer again.
        After a change, what changed is encoded in slices of loop time (a broker lost changes
        every entry that names it): from the rows and brokers read before the first pause,
        so that the answer is one moment's view."""
        version = self._view.topic_versions.get(topic)
        brokers = self._view.brokers
        fenced = self.fenced_broker_id
        cached = self._encoded_topics.get((cls, topic))
        if (
            cached is not None
            and cached[0] == version
            and cached[1] is brokers
            and cached[2] == fenced
        ):
            return cached[3]
        rows = self.partition_rows(topic)
        if not rows:
            return None
        live = self.live_broker_ids()
        encodings = self.partition_encodings
        encoded: list[bytes] = []
        loop_slice = LoopSlice()
        for start in range(0, len(rows), ROWS_PER_SLICE_CHECK):
            await loop_slice.pause_if_spent()
            encoded += encodings.encode(
                cls, topic, rows[start : start + ROWS_PER_SLICE_CHECK], live
            )
        if version is not None:
            if self._too_many_kept(len(self._encoded_topics)):
                self._encoded_topics = {
                    key: value
                    for key, value in self._encoded_topics.items()
                    if key[1] in self._view.topics
                }
            self._encoded_topics[(cls, topic)] = (version, brokers, fenced, encoded)
        return encoded

    @property
    def controller_id(self) -> int:
        controller_id = self._view.controller_id
        return -1 if controller_id is None else controller_id

    def live_brokers(self) -> dict[int, BrokerRegistration]:
        """The registered brokers, less this one while it is fenced: its Metadata then names
        only the others, and clients (librdkafka, Java's) leave it for them to learn the new
        leaders from (they keep asking a broker they are connected to and that lists
        itself, and a fenced broker cannot know the new leaders)."""
        brokers = dict(self._view.brokers)
        if self.fenced_broker_id is not None:
            brokers.pop(self.fenced_broker_id, None)
        return brokers

    def topic_names(self) -> list[str]:
        return sorted(self._view.topics)

    def has_topic(self, topic: str) -> bool:
        return topic in self._view.topics

    def has_partition(self, topic: str, partition: int) -> bool:
        assignment = self._view.topics.get(topic)
        return assignment is not None and partition in assignment.partitions

    def topic_id(self, topic: str) -> uuid.UUID | None:
        assignment = self._view.topics.get(topic)
        return None if assignment is None else topic_id_to_uuid(assignment.topic_id)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The topic with this id (Fetch v13+ and Metadata v12 name topics by id)."""
        # The view changes in place, so a remembered name counts only while it still has this
        # id; a miss rebuilds the map (unknown ids are rare: deleted or mistyped topics).
        name = self._names_by_id.get(topic_id)
        if name is not None and self.topic_id(name) == topic_id:
            return name
        self._names_by_id = {
            topic_uuid: name
            for name, assignment in self._view.topics.items()
            if (topic_uuid := topic_id_to_uuid(assignment.topic_id)) is not None
        }
        return self._names_by_id.get(topic_id)

    def partitions(self, topic: str) -> list[PartitionMetadata] | None:
        assignment = self._view.topics.get(topic)
        if assignment is None:
            return None
        live = self._view.brokers
        result = []
        for partition, replicas in sorted(assignment.partitions.items()):
            entry = self._view.partition_states.get((topic, partition))
            state = entry[0] if entry is not None else None
            result.append(
                PartitionMetadata(
                    partition=partition,
                    leader_id=state.leader if state is not None else -1,
                    leader_epoch=state.leader_epoch if state is not None else -1,
                    replicas=list(replicas),
                    isr=list(state.isr) if state is not None else [],
                    offline_replicas=[r for r in replicas if r not in live],
                    has_state=state is not None,
                )
            )
        return result

    def partition_rows(
        self, topic: str
    ) -> list[tuple[int, list[int], tuple[PartitionState, int]]] | None:
        """The topic's partitions in order, each with its replicas and (state, zkVersion), once
        this broker has read every partition's state; None before that, or for no such topic."""
        assignment = self._view.topics.get(topic)
        if assignment is None:
            return None
        states = self._view.partition_states
        rows = []
        for partition, replicas in sorted(assignment.partitions.items()):
            entry = states.get((topic, partition))
            if entry is None:
                return None
            rows.append((partition, replicas, entry))
        return rows

    def live_broker_ids(self) -> frozenset[int]:
        """The brokers that can lead: the registered ones, less this one while fenced."""
        live = frozenset(self._view.brokers)
        return live if self.fenced_broker_id is None else live - {self.fenced_broker_id}

    def leader_and_epoch(self, topic: str, partition: int) -> tuple[int, int]:
        """The partition's leader id and leader epoch as ZooKeeper last said, or (-1, -1);
        leader -1 where that is this broker while it is fenced."""
        entry = self._view.partition_states.get((topic, partition))
        if entry is None:
            return -1, -1
        leader = entry[0].leader
        return (-1 if leader == self.fenced_broker_id else leader), entry[0].leader_epoch

    def live_broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id == self.fenced_broker_id:
            return None
        return self._view.brokers.get(broker_id)

    def is_leader_available(self, metadata: PartitionMetadata) -> bool:
        return metadata.leader_id >= 0 and metadata.leader_id in self.live_broker_ids()
