"""An in-memory stand-in for `zk.kafka_zk.KafkaZk`, shared by several "brokers".

`FakeZkStore` is the ZooKeeper ensemble: znode data, zkVersions, ephemeral owners and watches.
Each `FakeKafkaZk` is one broker's session on it. The controller-relevant semantics are kept:
- election creates the ephemeral /controller and bumps /controller_epoch (its zkVersion too);
- controller writes check the /controller_epoch zkVersion (ControllerMovedError otherwise);
- partition state updates check the partition's zkVersion (BadVersionError otherwise);
- watch callbacks run on the asyncio loop, later (loop.call_soon), like the real client's;
- expiring a session deletes its ephemerals and tells its listeners "LOST";
- ISR change notifications are sequential children of /isr_change_notification holding
  Kafka's JSON, read and deleted like the real ones (creation and deletion fire the watch);
  log dir event notifications likewise, with each broker's offline replica list.
Faults: `FakeKafkaZk.fail_next` makes one session's next calls of a method raise (e.g. a
connection loss); `FakeZkStore.failing` makes a method fail for every session until removed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from zk.errors import (
    BadVersionError,
    ControllerMovedError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
    TopicExistsError,
)
from zk.kafka_zk import PRODUCER_ID_BLOCK_SIZE
from zk.znodes import (
    BrokerRegistration,
    IsrChangeNotificationSequenceZNode,
    PartitionState,
    PreferredReplicaElectionZNode,
    ProducerIdBlockZNode,
    TopicAssignment,
    ZnodeDecodeError,
)

CONTROLLER = "/controller"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
DELETE_TOPICS = "/admin/delete_topics"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"


def registration(broker_id: int) -> BrokerRegistration:
    port = 9091 + broker_id
    return BrokerRegistration.create(
        broker_id, [f"PLAINTEXT://127.0.0.1:{port}"], {"PLAINTEXT": "PLAINTEXT"}, 0
    )


@dataclass
class FakeZkStore:
    brokers: dict[int, tuple[BrokerRegistration, int]] = field(default_factory=dict)
    broker_epochs: dict[int, int] = field(default_factory=dict)  # czxid of the registration
    next_zxid: int = 100
    controller: tuple[int, int] | None = None  # (broker id, owner session)
    controller_epoch: int | None = None
    controller_epoch_zk_version: int = -1
    topics: dict[str, TopicAssignment] = field(default_factory=dict)
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    partition_states: dict[tuple[str, int], tuple[PartitionState, int]] = field(
        default_factory=dict
    )
    delete_markers: set[str] = field(default_factory=set)
    clients: list[FakeZkClient] = field(default_factory=list)
    fenced_writes: int = 0
    state_writes: list[tuple[str, int, PartitionState]] = field(default_factory=list)
    next_session_id: int = 1
    # /feature says "enabled" (written by a controller's failover)
    feature_versioning_enabled: bool = False
    # method name -> error raised by every session's calls of it (a persistent fault)
    failing: dict[str, Exception] = field(default_factory=dict)
    # child name (isr_change_<10-digit seq>) -> data, as /isr_change_notification holds them
    isr_change_notifications: dict[str, bytes] = field(default_factory=dict)
    next_isr_change_sequence: int = 0
    # log_dir_event_<10-digit seq> -> the broker named, and each broker's offline replicas
    log_dir_events: dict[str, int] = field(default_factory=dict)
    next_log_dir_event_sequence: int = 0
    offline_replicas: dict[int, frozenset[tuple[str, int]]] = field(default_factory=dict)
    # Conditional writes of a partition state refused for a stale zkVersion (BadVersionError).
    bad_version_writes: int = 0
    # Multis that wrote several partition states at once.
    batched_state_writes: int = 0
    # /admin/preferred_replica_election: (raw data, zkVersion), None when absent
    preferred_replica_election: tuple[bytes, int] | None = None
    # zkVersion of each /brokers/topics/<t> (0 when never rewritten)
    topic_versions: dict[str, int] = field(default_factory=dict)
    # /admin/reassign_partitions: (requested replicas, czxid), None when absent
    reassign_request: tuple[dict[tuple[str, int], list[int]], int] | None = None
    # /latest_producer_id_block: its data as Kafka writes it (None: empty) and its zkVersion
    producer_id_block: tuple[bytes | None, int] = (None, 0)

    def request_reassignment(self, request: dict[tuple[str, int], list[int]]) -> None:
        """What kafka-reassign-partitions with --zookeeper (or a person) writes."""
        self.reassign_request = (dict(request), self.next_zxid)
        self.next_zxid += 1
        self.fire("data", REASSIGN_PARTITIONS)

    def fire(self, kind: str, path: str) -> None:
        for client in self.clients:
            client.fire(kind, path)

    def check_epoch(self, epoch_zk_version: int) -> None:
        if epoch_zk_version != self.controller_epoch_zk_version:
            self.fenced_writes += 1
            raise ControllerMovedError("controller epoch zkVersion changed", path=CONTROLLER)

    def register_broker(self, broker_id: int, session_id: int = 0) -> None:
        if broker_id in self.brokers:
            raise NodeExistsError(path=f"{BROKER_IDS}/{broker_id}")
        self.brokers[broker_id] = (registration(broker_id), session_id)
        self.broker_epochs[broker_id] = self.next_zxid
        self.next_zxid += 1
        self.fire("children", BROKER_IDS)

    def bounce_broker(self, broker_id: int) -> None:
        """Death and re-registration between two reads of the controller: one watch event."""
        session_id = self.brokers[broker_id][1]
        del self.brokers[broker_id]
        self.register_broker(broker_id, session_id)

    def kill_broker(self, broker_id: int) -> None:
        """The broker's ephemeral registration disappears (crash, session expiry)."""
        del self.brokers[broker_id]
        self.offline_replicas.pop(broker_id, None)  # ephemeral too
        self.fire("children", BROKER_IDS)

    def delete_controller(self) -> None:
        self.controller = None
        self.fire("data", CONTROLLER)

    def expire_session(self, session_id: int) -> None:
        for broker_id, (_, owner) in list(self.brokers.items()):
            if owner == session_id:
                self.kill_broker(broker_id)
        if self.controller is not None and self.controller[1] == session_id:
            self.delete_controller()
        for client in self.clients:
            if client.session_id == session_id:
                client.session_event("LOST")

    def add_isr_change_notification(self, data: bytes) -> str:
        """A sequential child of /isr_change_notification with raw `data` (may be malformed)."""
        name = f"{IsrChangeNotificationSequenceZNode.SEQUENCE_PREFIX}"
        name += f"{self.next_isr_change_sequence:010d}"
        self.next_isr_change_sequence += 1
        self.isr_change_notifications[name] = data
        self.fire("children", ISR_CHANGE_NOTIFICATION)
        return name

    def fail_log_dir(self, broker_id: int, offline: Iterable[tuple[str, int]]) -> None:
        """What a broker whose log dir failed writes: its offline replicas, then the event."""
        self.offline_replicas[broker_id] = frozenset(offline)
        name = f"log_dir_event_{self.next_log_dir_event_sequence:010d}"
        self.next_log_dir_event_sequence += 1
        self.log_dir_events[name] = broker_id
        self.fire("children", LOG_DIR_EVENT_NOTIFICATION)

    def request_preferred_replica_election(self, data: bytes) -> None:
        """What an operator creating /admin/preferred_replica_election does."""
        version = (
            0 if self.preferred_replica_election is None else self.preferred_replica_election[1] + 1
        )
        self.preferred_replica_election = (data, version)
        self.fire("data", PREFERRED_REPLICA_ELECTION)

    def bump_controller_epoch(self) -> None:
        """What another broker winning an election does to /controller_epoch."""
        self.controller_epoch = (self.controller_epoch or 0) + 1
        self.controller_epoch_zk_version += 1


class FakeZkClient:
    """The watch part of ZkClient for one session."""

    def __init__(self, store: FakeZkStore, session_id: int) -> None:
        self.store = store
        self.session_id = session_id
        self.watches: dict[tuple[str, str], list[Callable[[], None]]] = {}
        self.session_listeners: list[Callable[[str], None]] = []
        store.clients.append(self)

    def watch_data(self, path: str, callback: Callable[[], None]) -> None:
        self.watches.setdefault(("data", path), []).append(callback)

    def watch_children(self, path: str, callback: Callable[[], None]) -> None:
        self.watches.setdefault(("children", path), []).append(callback)

    def unwatch_data(self, path: str, callback: Callable[[], None]) -> None:
        self._unwatch(("data", path), callback)

    def unwatch_children(self, path: str, callback: Callable[[], None]) -> None:
        self._unwatch(("children", path), callback)

    def _unwatch(self, key: tuple[str, str], callback: Callable[[], None]) -> None:
        callbacks = self.watches.get(key, [])
        if callback in callbacks:
            callbacks.remove(callback)

    def on_session_event(self, callback: Callable[[str], None]) -> None:
        self.session_listeners.append(callback)

    def fire(self, kind: str, path: str) -> None:
        loop = asyncio.get_running_loop()
        for callback in list(self.watches.get((kind, path), [])):
            loop.call_soon(callback)

    def session_event(self, state: str) -> None:
        loop = asyncio.get_running_loop()
        for listener in self.session_listeners:
            loop.call_soon(listener, state)


class FakeKafkaZk:
    """One broker's KafkaZk on the shared store."""

    def __init__(self, store: FakeZkStore) -> None:
        self.store = store
        self.session_id = store.next_session_id
        store.next_session_id += 1
        self.client = FakeZkClient(store, self.session_id)
        self.closed = False
        # Test hook: called before every controller (fenced) write.
        self.before_fenced_write: Callable[[], None] | None = None
        self._next_failures: dict[str, list[Exception]] = {}

    def fail_next(self, method: str, *errors: Exception) -> None:
        """The next calls of `method` on this session raise `errors`, one each, in order."""
        self._next_failures.setdefault(method, []).extend(errors)

    def _ensure_open(self, method: str) -> None:
        if self.closed:
            raise SessionExpiredError("closed")
        if method in self.store.failing:
            raise self.store.failing[method]
        queued = self._next_failures.get(method)
        if queued:
            raise queued.pop(0)

    def _fenced(self, epoch_zk_version: int, method: str) -> None:
        self._ensure_open(method)
        if self.before_fenced_write is not None:
            self.before_fenced_write()
        self.store.check_epoch(epoch_zk_version)

    async def get_brokers_with_epochs(self) -> dict[int, tuple[BrokerRegistration, int]]:
        self._ensure_open("get_brokers_with_epochs")
        return {
            broker_id: (reg, self.store.broker_epochs[broker_id])
            for broker_id, (reg, _) in sorted(self.store.brokers.items())
        }

    async def get_controller_id(self) -> int | None:
        self._ensure_open("get_controller_id")
        return None if self.store.controller is None else self.store.controller[0]

    async def get_controller_epoch(self) -> tuple[int, int] | None:
        if self.store.controller_epoch is None:
            return None
        return self.store.controller_epoch, self.store.controller_epoch_zk_version

    async def try_elect_controller(self, broker_id: int) -> tuple[int, int] | None:
        self._ensure_open("try_elect_controller")
        await asyncio.sleep(0)  # a round trip: lets competing brokers interleave
        if self.store.controller is not None:
            return None
        self.store.controller = (broker_id, self.session_id)
        self.store.bump_controller_epoch()
        self.store.fire("data", CONTROLLER)
        assert self.store.controller_epoch is not None
        return self.store.controller_epoch, self.store.controller_epoch_zk_version

    async def resign_controller(self, broker_id: int) -> None:
        self._ensure_open("resign_controller")
        if self.store.controller == (broker_id, self.session_id):
            self.store.delete_controller()

    async def enable_feature_versioning(self, epoch_zk_version: int) -> None:
        self._fenced(epoch_zk_version, "enable_feature_versioning")
        self.store.feature_versioning_enabled = True

    async def get_all_topics(self) -> list[str]:
        self._ensure_open("get_all_topics")
        return sorted(self.store.topics)

    async def get_topic_assignment(self, topic: str) -> TopicAssignment | None:
        self._ensure_open("get_topic_assignment")
        return self.store.topics.get(topic)

    async def create_topic(
        self,
        topic: str,
        assignment: dict[int, list[int]],
        configs: dict[str, str],
        topic_id: str,
    ) -> None:
        self._ensure_open("create_topic")
        if topic in self.store.topics:
            raise TopicExistsError(path=f"{TOPICS}/{topic}")
        self.store.topic_configs[topic] = dict(configs)
        self.store.topics[topic] = TopicAssignment(topic_id=topic_id, partitions=assignment)
        self.store.fire("children", TOPICS)

    async def get_topic_configs(self, topic: str) -> dict[str, str]:
        self._ensure_open("get_topic_configs")
        return dict(self.store.topic_configs.get(topic, {}))

    async def get_partition_states(
        self, topic: str, partitions: Sequence[int]
    ) -> dict[int, tuple[PartitionState, int] | None]:
        self._ensure_open("get_partition_states")
        return {p: self.store.partition_states.get((topic, p)) for p in partitions}

    async def mark_topic_for_deletion(self, topic: str) -> None:
        self._ensure_open("mark_topic_for_deletion")
        if topic in self.store.delete_markers:
            return  # already marked, as the real one
        self.store.delete_markers.add(topic)
        self.store.fire("children", DELETE_TOPICS)

    async def get_topics_pending_deletion(self) -> list[str]:
        self._ensure_open("get_topics_pending_deletion")
        return sorted(self.store.delete_markers)

    async def create_partition_states(
        self, epoch_zk_version: int, topic: str, states: Mapping[int, PartitionState]
    ) -> dict[int, int | None]:
        self._fenced(epoch_zk_version, "create_partition_states")
        if topic not in self.store.topics:
            raise NoNodeError(path=f"{TOPICS}/{topic}")
        created: dict[int, int | None] = {}
        for partition, state in states.items():
            if (topic, partition) in self.store.partition_states:
                created[partition] = None
                continue
            self.store.partition_states[(topic, partition)] = (state, 0)
            self.store.state_writes.append((topic, partition, state))
            created[partition] = 0
        return created

    async def update_partition_state(
        self,
        epoch_zk_version: int,
        topic: str,
        partition: int,
        state: PartitionState,
        expected_zk_version: int,
    ) -> int:
        self._fenced(epoch_zk_version, "update_partition_state")
        current = self.store.partition_states.get((topic, partition))
        if current is None:
            raise NoNodeError(path=f"{TOPICS}/{topic}/partitions/{partition}/state")
        if current[1] != expected_zk_version:
            self.store.bad_version_writes += 1
            raise BadVersionError(path=f"{TOPICS}/{topic}/partitions/{partition}/state")
        self.store.partition_states[(topic, partition)] = (state, current[1] + 1)
        self.store.state_writes.append((topic, partition, state))
        return current[1] + 1

    async def update_partition_states(
        self,
        epoch_zk_version: int,
        writes: Sequence[tuple[tuple[str, int], PartitionState, int]],
    ) -> list[int]:
        """All or none, as the real multi: every expected zkVersion is checked before any
        write is made (each then goes through update_partition_state, which tests override)."""
        self._fenced(epoch_zk_version, "update_partition_states")
        for index, ((topic, partition), _, expected) in enumerate(writes):
            current = self.store.partition_states.get((topic, partition))
            path = f"{TOPICS}/{topic}/partitions/{partition}/state"
            if current is None:
                raise NoNodeError(path=path, op_index=index)
            if current[1] != expected:
                # Not counted in bad_version_writes: the caller then writes each state on its
                # own, and the one that is stale is counted there.
                raise BadVersionError(path=path, op_index=index)
        self.store.batched_state_writes += 1
        return [
            await self.update_partition_state(epoch_zk_version, topic, partition, state, expected)
            for (topic, partition), state, expected in writes
        ]

    async def get_many_partition_states(
        self,
        partitions: Sequence[tuple[str, int]],
        on_malformed: Callable[[str, ZnodeDecodeError], None] | None = None,
        arm: bool = False,
    ) -> dict[tuple[str, int], tuple[PartitionState, int] | None]:
        self._ensure_open("get_many_partition_states")
        return {key: self.store.partition_states.get(key) for key in partitions}

    # ISR change propagation: the leader's two writes, and the controller's reads and deletes.

    async def conditional_update_partition_state_as_leader(
        self, topic: str, partition: int, state: PartitionState, expected_zk_version: int
    ) -> int:
        """Not fenced by the controller epoch, like the real leader-side write."""
        self._ensure_open("conditional_update_partition_state_as_leader")
        path = f"{TOPICS}/{topic}/partitions/{partition}/state"
        current = self.store.partition_states.get((topic, partition))
        if current is None:
            raise NoNodeError(path=path)
        if current[1] != expected_zk_version:
            self.store.bad_version_writes += 1
            raise BadVersionError(path=path)
        self.store.partition_states[(topic, partition)] = (state, current[1] + 1)
        return current[1] + 1

    async def create_isr_change_notification(self, partitions: Iterable[tuple[str, int]]) -> str:
        self._ensure_open("create_isr_change_notification")
        name = self.store.add_isr_change_notification(
            IsrChangeNotificationSequenceZNode.encode(partitions)
        )
        return f"{ISR_CHANGE_NOTIFICATION}/{name}"

    async def get_isr_change_notifications(self) -> list[str]:
        self._ensure_open("get_isr_change_notifications")
        return sorted(self.store.isr_change_notifications)

    async def read_isr_change_notifications(self, names: Sequence[str]) -> list[tuple[str, int]]:
        self._ensure_open("read_isr_change_notifications")
        partitions: dict[tuple[str, int], None] = {}
        for name in names:
            data = self.store.isr_change_notifications.get(name)
            if data is None:
                continue  # vanished: skipped, as the real one does
            try:
                partitions.update(dict.fromkeys(IsrChangeNotificationSequenceZNode.decode(data)))
            except ZnodeDecodeError:
                continue  # malformed: skipped, as the real one does
        return list(partitions)

    async def delete_isr_change_notifications(
        self, epoch_zk_version: int, names: Iterable[str]
    ) -> None:
        self._fenced(epoch_zk_version, "delete_isr_change_notifications")
        removed = [
            name
            for name in names
            if self.store.isr_change_notifications.pop(name, None) is not None
        ]
        if removed:
            self.store.fire("children", ISR_CHANGE_NOTIFICATION)

    async def get_log_dir_event_notifications(self) -> list[str]:
        self._ensure_open("get_log_dir_event_notifications")
        return sorted(self.store.log_dir_events)

    async def read_log_dir_event_brokers(self, names: Sequence[str]) -> list[int]:
        self._ensure_open("read_log_dir_event_brokers")
        found = [self.store.log_dir_events.get(name) for name in names]
        return list(dict.fromkeys(b for b in found if b is not None))

    async def delete_log_dir_event_notifications(
        self, epoch_zk_version: int, names: Iterable[str]
    ) -> None:
        self._fenced(epoch_zk_version, "delete_log_dir_event_notifications")
        removed = [n for n in names if self.store.log_dir_events.pop(n, None) is not None]
        if removed:
            self.store.fire("children", LOG_DIR_EVENT_NOTIFICATION)

    async def get_offline_replicas(
        self, broker_ids: Iterable[int]
    ) -> dict[int, frozenset[tuple[str, int]]]:
        self._ensure_open("get_offline_replicas")
        return {b: self.store.offline_replicas.get(b, frozenset()) for b in broker_ids}

    async def get_preferred_replica_election(self) -> tuple[list[tuple[str, int]], int] | None:
        self._ensure_open("get_preferred_replica_election")
        if self.store.preferred_replica_election is None:
            return None
        data, version = self.store.preferred_replica_election
        try:
            return PreferredReplicaElectionZNode.decode(data), version
        except ZnodeDecodeError:
            return [], version  # malformed: names nothing, as the real one

    async def delete_preferred_replica_election(self, epoch_zk_version: int, version: int) -> None:
        self._fenced(epoch_zk_version, "delete_preferred_replica_election")
        current = self.store.preferred_replica_election
        if current is not None and current[1] == version:
            self.store.preferred_replica_election = None
            self.store.fire("data", PREFERRED_REPLICA_ELECTION)

    async def delete_topic_znodes(self, epoch_zk_version: int, topic: str) -> None:
        self._fenced(epoch_zk_version, "delete_topic_znodes")
        self.store.topics.pop(topic, None)
        self.store.topic_configs.pop(topic, None)
        for key in [key for key in self.store.partition_states if key[0] == topic]:
            del self.store.partition_states[key]
        self.store.delete_markers.discard(topic)
        self.store.fire("children", TOPICS)
        self.store.fire("children", DELETE_TOPICS)

    async def delete_topic_deletion_markers(
        self, epoch_zk_version: int, topics: Iterable[str]
    ) -> None:
        self._fenced(epoch_zk_version, "delete_topic_deletion_markers")
        removed = self.store.delete_markers & set(topics)
        self.store.delete_markers -= removed
        if removed:
            self.store.fire("children", DELETE_TOPICS)

    # Adding partitions and reassignment (zk/kafka_zk_reassignment.py).

    async def get_topic_assignment_and_version(
        self, topic: str
    ) -> tuple[TopicAssignment, int] | None:
        self._ensure_open("get_topic_assignment_and_version")
        found = self.store.topics.get(topic)
        return None if found is None else (found, self.store.topic_versions.get(topic, 0))

    async def set_topic_assignment(
        self,
        epoch_zk_version: int,
        topic: str,
        assignment: TopicAssignment,
        expected_zk_version: int = -1,
    ) -> int:
        self._fenced(epoch_zk_version, "set_topic_assignment")
        if topic not in self.store.topics:
            raise NoNodeError(path=f"{TOPICS}/{topic}")
        version = self.store.topic_versions.get(topic, 0)
        if expected_zk_version not in (-1, version):
            raise BadVersionError(path=f"{TOPICS}/{topic}")
        self.store.topics[topic] = assignment
        self.store.topic_versions[topic] = version + 1
        self.store.fire("data", f"{TOPICS}/{topic}")
        return version + 1

    async def get_partition_reassignment(
        self,
    ) -> tuple[dict[tuple[str, int], list[int]], int] | None:
        self._ensure_open("get_partition_reassignment")
        found = self.store.reassign_request
        return None if found is None else (dict(found[0]), found[1])

    async def set_partition_reassignment(
        self, epoch_zk_version: int, reassignment: Mapping[tuple[str, int], Sequence[int]]
    ) -> None:
        self._fenced(epoch_zk_version, "set_partition_reassignment")
        if self.store.reassign_request is None:
            raise NoNodeError(path=REASSIGN_PARTITIONS)
        czxid = self.store.reassign_request[1]
        self.store.reassign_request = ({k: list(v) for k, v in reassignment.items()}, czxid)
        self.store.fire("data", REASSIGN_PARTITIONS)

    async def delete_partition_reassignment(self, epoch_zk_version: int) -> None:
        self._fenced(epoch_zk_version, "delete_partition_reassignment")
        if self.store.reassign_request is not None:
            self.store.reassign_request = None
            self.store.fire("data", REASSIGN_PARTITIONS)

    async def allocate_producer_id_block(self, broker_id: int) -> tuple[int, int]:
        # Unfenced and conditional on the znode's version, like the real one (and Kafka's).
        self._ensure_open("allocate_producer_id_block")
        data, version = self.store.producer_id_block
        start = ProducerIdBlockZNode.decode(data)[2] + 1 if data else 0
        end = start + PRODUCER_ID_BLOCK_SIZE - 1
        self.store.producer_id_block = (
            ProducerIdBlockZNode.encode(broker_id, start, end),
            version + 1,
        )
        return start, end

    # What a leader broker does (not the controller): an unfenced ISR change.
    def leader_changes_isr(self, topic: str, partition: int, isr: list[int]) -> None:
        state, version = self.store.partition_states[(topic, partition)]
        new_state = PartitionState(state.leader, state.leader_epoch, isr, state.controller_epoch)
        self.store.partition_states[(topic, partition)] = (new_state, version + 1)
