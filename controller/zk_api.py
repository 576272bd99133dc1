"""What the controller needs from the ZooKeeper layer, as structural types.

`zk.kafka_zk.KafkaZk` satisfies `ControllerZk`; the unit tests pass an in-memory fake. Naming
the dependency here keeps the controller honest about which ZooKeeper operations it uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from zk.znodes import BrokerRegistration, PartitionState, TopicAssignment, ZnodeDecodeError

__all__ = [
    "BrokerRegistration",
    "ControllerZk",
    "MalformedHandler",
    "PartitionState",
    "TopicAssignment",
    "ZkWatches",
]

# Told (path, error) about a znode that does not decode, by reads that skip such znodes
# (`zk.kafka_zk.MalformedHandler`).
MalformedHandler = Callable[[str, ZnodeDecodeError], None]


class ZkWatches(Protocol):
    """The watch part of `zk.client.ZkClient`: callbacks run on the asyncio loop."""

    def watch_data(self, path: str, callback: Callable[[], None]) -> None: ...
    def watch_children(self, path: str, callback: Callable[[], None]) -> None: ...
    def unwatch_data(self, path: str, callback: Callable[[], None]) -> None: ...
    def unwatch_children(self, path: str, callback: Callable[[], None]) -> None: ...
    def on_session_event(self, callback: Callable[[str], None]) -> None: ...


class ControllerZk(Protocol):
    """The domain operations of `zk.kafka_zk.KafkaZk` the controller calls."""

    @property
    def client(self) -> ZkWatches: ...

    async def get_brokers_with_epochs(self) -> dict[int, tuple[BrokerRegistration, int]]: ...
    async def get_controller_id(self) -> int | None: ...
    async def try_elect_controller(self, broker_id: int) -> tuple[int, int] | None: ...
    async def resign_controller(self, broker_id: int) -> None: ...
    async def enable_feature_versioning(self, epoch_zk_version: int) -> None: ...
    async def get_all_topics(self) -> list[str]: ...
    async def get_topic_assignment(self, topic: str) -> TopicAssignment | None: ...
    async def create_topic(
        self,
        topic: str,
        assignment: dict[int, list[int]],
        configs: dict[str, str],
        topic_id: str,
    ) -> None: ...
    async def get_topic_configs(self, topic: str) -> dict[str, str]: ...
    async def get_partition_states(
        self, topic: str, partitions: Sequence[int]
    ) -> dict[int, tuple[PartitionState, int] | None]: ...
    async def get_many_partition_states(
        self,
        partitions: Sequence[tuple[str, int]],
        on_malformed: MalformedHandler | None = None,
        arm: bool = False,
    ) -> dict[tuple[str, int], tuple[PartitionState, int] | None]: ...
    async def mark_topic_for_deletion(self, topic: str) -> None: ...
    async def get_topics_pending_deletion(self) -> list[str]: ...
    async def create_partition_states(
        self, epoch_zk_version: int, topic: str, states: Mapping[int, PartitionState]
    ) -> dict[int, int | None]: ...
    async def update_partition_state(
        self,
        epoch_zk_version: int,
        topic: str,
        partition: int,
        state: PartitionState,
        expected_zk_version: int,
    ) -> int: ...
    async def update_partition_states(
        self,
        epoch_zk_version: int,
        writes: Sequence[tuple[tuple[str, int], PartitionState, int]],
    ) -> list[int]: ...
    async def get_isr_change_notifications(self) -> list[str]: ...
    async def read_isr_change_notifications(
        self, names: Sequence[str]
    ) -> list[tuple[str, int]]: ...
    async def delete_isr_change_notifications(
        self, epoch_zk_version: int, names: Iterable[str]
    ) -> None: ...
    # Failed log dirs (zk/kafka_zk_log_dirs.py).
    async def get_log_dir_event_notifications(self) -> list[str]: ...
    async def read_log_dir_event_brokers(self, names: Sequence[str]) -> list[int]: ...
    async def delete_log_dir_event_notifications(
        self, epoch_zk_version: int, names: Iterable[str]
    ) -> None: ...
    async def get_offline_replicas(
        self, broker_ids: Iterable[int]
    ) -> dict[int, frozenset[tuple[str, int]]]: ...
    async def get_preferred_replica_election(
        self,
    ) -> tuple[list[tuple[str, int]], int] | None: ...
    async def delete_preferred_replica_election(
        self, epoch_zk_version: int, version: int
    ) -> None: ...
    # Adding partitions and reassignment (zk/kafka_zk_reassignment.py).
    async def get_topic_assignment_and_version(
        self, topic: str
    ) -> tuple[TopicAssignment, int] | None: ...
    async def set_topic_assignment(
        self,
        epoch_zk_version: int,
        topic: str,
        assignment: TopicAssignment,
        expected_zk_version: int = -1,
    ) -> int: ...
    async def get_partition_reassignment(
        self,
    ) -> tuple[dict[tuple[str, int], list[int]], int] | None: ...
    async def set_partition_reassignment(
        self, epoch_zk_version: int, reassignment: Mapping[tuple[str, int], Sequence[int]]
    ) -> None: ...
    async def delete_partition_reassignment(self, epoch_zk_version: int) -> None: ...
    async def delete_topic_znodes(self, epoch_zk_version: int, topic: str) -> None: ...
    async def delete_topic_deletion_markers(
        self, epoch_zk_version: int, topics: Iterable[str]
    ) -> None: ...
    # AllocateProducerIds: the next block of /latest_producer_id_block, (first, last) id.
    async def allocate_producer_id_block(self, broker_id: int) -> tuple[int, int]: ...
