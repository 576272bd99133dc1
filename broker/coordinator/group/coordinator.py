"""The group coordinator's broker-facing side: where a group's coordinator is, the offsets
topic's creation, and reacting to leadership of its partitions.

`__consumer_offsets` is created on the first FindCoordinator for a group, with
`offsets.topic.num.partitions` partitions and `offsets.topic.replication.factor` replicas (see
`internal_topics`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from broker.coordinator.group.expiry import expired_offsets
from broker.coordinator.group.group import GroupSnapshot
from broker.coordinator.group.membership import GroupMembership
from broker.coordinator.group.membership_results import GroupConfig
from broker.coordinator.group.offsets import OFFSETS_TOPIC, OffsetsConfig, OffsetStore
from broker.coordinator.group.records import GroupValue
from broker.coordinator.group.state import GroupState
from broker.coordinator.internal_topics import CoordinatorAddress, InternalTopic, InternalTopics
from broker.replication.partition import Partition

if TYPE_CHECKING:
    from broker.cluster.metadata_cache import MetadataCache
    from broker.replication.replica_manager import ReplicaManager
    from broker.services import CurrentConfig, TopicSettings

log = logging.getLogger(__name__)


class GroupCoordinator:
    def __init__(
        self,
        current_config: CurrentConfig,
        broker_id: int,
        replica_manager: ReplicaManager,
        metadata_cache: MetadataCache,
        internal_topics: InternalTopics,
        topic_settings: TopicSettings,
    ) -> None:
        self._current_config = current_config
        self._broker_id = broker_id
        self._metadata_cache = metadata_cache
        self._internal_topics = internal_topics
        self._topic_settings = topic_settings
        config = current_config.value
        self.offsets_config = OffsetsConfig(
            partition_count=config["offsets.topic.num.partitions"],
            metadata_max_bytes=config["offset.metadata.max.bytes"],
            commit_timeout_ms=config["offsets.commit.timeout.ms"],
            retention_ms=config["offsets.retention.minutes"] * 60_000,
        )
        self.offsets = OffsetStore(
            replica_manager,
            self.offsets_config,
            self._offsets_min_insync_replicas,
            named_leader=self._named_offsets_leader,
        )
        self.membership = GroupMembership(
            self._persist,
            config=GroupConfig(
                min_session_timeout_ms=config["group.min.session.timeout.ms"],
                max_session_timeout_ms=config["group.max.session.timeout.ms"],
                initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
                max_size=config["group.max.size"],
            ),
            is_coordinator_for=self._is_coordinator_for,
            loading=self._is_loading,
        )
        self.offsets.on_group_loaded = self._on_group_loaded
        self.offsets.on_partition_unloaded = self._on_partition_unloaded
        replica_manager.leadership_listeners.append(self._on_leadership_change)

    def _named_offsets_leader(self, partition: int) -> bool:
        leader, _ = self._metadata_cache.leader_and_epoch(OFFSETS_TOPIC, partition)
        return leader == self._broker_id

    def _is_coordinator_for(self, group_id: str) -> bool:
        return self.offsets.coordinator_error(group_id) != ErrorCode.not_coordinator

    def _is_loading(self, group_id: str) -> bool:
        return self.offsets.coordinator_error(group_id) == ErrorCode.coordinator_load_in_progress

    async def _persist(self, snapshot: GroupSnapshot) -> ErrorCode:
        return await self.offsets.store_group(snapshot.group_id, to_group_value(snapshot))

    def _on_group_loaded(self, group_id: str, value: GroupValue) -> None:
        self.membership.load_group(from_group_value(group_id, value))

    def _on_partition_unloaded(self, partition: int) -> None:
        unloaded = self.membership.unload_groups(
            lambda group_id: self.offsets.partition_of(group_id) == partition
        )
        if unloaded:
            log.info("unloaded %d groups of %s-%d", unloaded, OFFSETS_TOPIC, partition)

    def _offsets_min_insync_replicas(self) -> int:
        return self._topic_settings.min_insync_replicas(OFFSETS_TOPIC)

    def _on_leadership_change(self, partition: Partition, is_leader: bool) -> None:
        if partition.topic == OFFSETS_TOPIC:
            self.offsets.on_leadership_change(partition.partition, is_leader)

    async def expire_offsets(self, now_ms: int) -> int:
        """Tombstone expired commits (offsets.retention.minutes); an Empty group left with no
        offsets is removed too. Returns how many offsets expired."""
        expired_count = 0
        for group_id, committed in self.offsets.committed_by_group().items():
            group = self.membership.get_group(group_id)
            empty_since = None
            if group is not None and group.state is GroupState.EMPTY:
                empty_since = group.current_state_timestamp_ms
            expired = expired_offsets(
                committed,
                has_members=group is not None and bool(group.members),
                empty_since_ms=empty_since,
                now_ms=now_ms,
                retention_ms=self.offsets_config.retention_ms,
            )
            if not expired:
                continue
            if await self.offsets.delete_offsets(group_id, expired) != ErrorCode.none:
                continue
            expired_count += len(expired)
            if not self.offsets.has_offsets(group_id) and self.membership.remove_group_if_empty(
                group_id
            ):
                await self.offsets.delete_group(group_id)
        if expired_count:
            log.info("expired %d committed offsets", expired_count)
        return expired_count

    async def find(self, group_id: str, listener_name: str) -> CoordinatorAddress:
        """The broker leading the group's offsets partition, creating the topic if needed."""
        wanted = self.offsets.partition_of(group_id)
        return await self._internal_topics.find_leader(self._offsets_topic(), wanted, listener_name)

    async def create_offsets_topic(self) -> None:
        await self._internal_topics.create(self._offsets_topic())

    def _offsets_topic(self) -> InternalTopic:
        config = self._current_config.value
        return InternalTopic(
            OFFSETS_TOPIC,
            self.offsets_config.partition_count,
            config["offsets.topic.replication.factor"],
            {
                "cleanup.policy": "compact",
                "compression.type": "producer",
                "segment.bytes": str(config["offsets.topic.segment.bytes"]),
            },
        )


def to_group_value(snapshot: GroupSnapshot) -> GroupValue:
    return GroupValue(
        protocol_type=snapshot.protocol_type,
        generation=snapshot.generation_id,
        protocol=snapshot.protocol_name,
        leader=snapshot.leader_id,
        current_state_timestamp_ms=snapshot.current_state_timestamp_ms,
        members=snapshot.members,
    )


def from_group_value(group_id: str, value: GroupValue) -> GroupSnapshot:
    return GroupSnapshot(
        group_id=group_id,
        protocol_type=value.protocol_type,
        generation_id=value.generation,
        protocol_name=value.protocol,
        leader_id=value.leader,
        current_state_timestamp_ms=value.current_state_timestamp_ms,
        members=value.members,
    )
