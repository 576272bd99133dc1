"""A broker's live view of the cluster, kept current by ZooKeeper watches.

Watch callbacks only mark what is stale; one refresh task re-reads the stale parts, updates
`view` and reports what changed. Because every watch is re-armed before its callback runs and
the re-read happens after that, the view always converges on what ZooKeeper holds. After a
reconnection (same or new session) everything is re-read.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from zk.errors import ZkError
from zk.kafka_zk import KafkaZk
from zk.znodes import (
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerRegistration,
    ControllerZNode,
    PartitionState,
    TopicAssignment,
    TopicPartitionStateZNode,
    TopicsZNode,
    TopicZNode,
    ZnodeDecodeError,
)

log = logging.getLogger(__name__)

# After a failed refresh while still connected, try again after this long (a reconnection
# triggers a full refresh by itself).
_RETRY_DELAY_S = 1.0

TopicPartition = tuple[str, int]


@dataclass
class ClusterView:
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    broker_epochs: dict[int, int] = field(default_factory=dict)  # czxid of the registration
    controller_id: int | None = None
    topics: dict[str, TopicAssignment] = field(default_factory=dict)
    partition_states: dict[TopicPartition, tuple[PartitionState, int]] = field(default_factory=dict)
    # A new number, never used before, each time a topic's assignment or one of its partition
    # states changes here: what is derived from them (encoded Metadata) is kept until then.
    topic_versions: dict[str, int] = field(default_factory=dict)
    _version_numbers: itertools.count[int] = field(default_factory=itertools.count, repr=False)

    def touch(self, topic: str) -> None:
        self.topic_versions[topic] = next(self._version_numbers)


@dataclass(frozen=True)
class ClusterChange:
    brokers_changed: bool = False
    controller_changed: bool = False
    topics_added: frozenset[str] = frozenset()
    topics_deleted: frozenset[str] = frozenset()
    partitions_changed: frozenset[TopicPartition] = frozenset()
    # Existing topics whose assignment (replicas, partitions, topic id) changed.
    topics_changed: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(
            self.brokers_changed
            or self.controller_changed
            or self.topics_added
            or self.topics_deleted
            or self.partitions_changed
            or self.topics_changed
        )


@dataclass
class _Stale:
    brokers: bool = False
    controller: bool = False
    topic_list: bool = False
    topics: set[str] = field(default_factory=set)
    partitions: set[TopicPartition] = field(default_factory=set)

    def any(self) -> bool:
        return bool(
            self.brokers or self.controller or self.topic_list or self.topics or self.partitions
        )

    def take(self) -> _Stale:
        taken = _Stale(self.brokers, self.controller, self.topic_list, self.topics, self.partitions)
        self.brokers = self.controller = self.topic_list = False
        self.topics, self.partitions = set(), set()
        return taken

    def merge(self, other: _Stale) -> None:
        self.brokers |= other.brokers
        self.controller |= other.controller
        self.topic_list |= other.topic_list
        self.topics |= other.topics
        self.partitions |= other.partitions


# Partition states read and decoded in one turn of the loop.
_STATES_PER_READ = 500


@dataclass
class _Found:
    """What a refresh found changed in the view, gathered as it reads. A refresh cut short by
    an error has already changed the view for what it read, so its findings wait for the next
    refresh to announce them (that refresh reads the same znodes, sees no difference, and
    would otherwise announce nothing)."""

    brokers: bool = False
    controller: bool = False
    added: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    changed_topics: set[str] = field(default_factory=set)
    partitions: set[TopicPartition] = field(default_factory=set)

    def merge(self, other: _Found) -> None:
        self.brokers |= other.brokers
        self.controller |= other.controller
        self.added |= other.added
        self.deleted |= other.deleted
        self.changed_topics |= other.changed_topics
        self.partitions |= other.partitions

    def change(self, topics_now: Mapping[str, object]) -> ClusterChange:
        deleted = self.deleted - self.added
        return ClusterChange(
            brokers_changed=self.brokers,
            controller_changed=self.controller,
            topics_added=frozenset(t for t in self.added if t in topics_now),
            topics_deleted=frozenset(t for t in deleted if t not in topics_now),
            partitions_changed=frozenset(self.partitions),
            topics_changed=frozenset(self.changed_topics - self.added),
        )


class ClusterWatch:
    def __init__(self, kafka_zk: KafkaZk, on_change: Callable[[ClusterChange], None]) -> None:
        self.kafka_zk = kafka_zk
        self.client = kafka_zk.client
        self.on_change = on_change
        self.view = ClusterView()
        self._stale = _Stale()
        # Changes a failed refresh made to the view, for the next refresh to announce.
        self._unannounced = _Found()
        self._refresher: asyncio.Task[None] | None = None
        self._retry: asyncio.TimerHandle | None = None
        self._data_callbacks: dict[str, Callable[[], None]] = {}
        # /brokers/ids/<id> znodes watched, including ones whose registration does not decode.
        self._broker_paths: set[str] = set()
        self._started = False
        self._stopped = False
        self._lost_connection = False

    async def start(self) -> None:
        """Arm the watches and load the whole view (on_change is not called for this load)."""
        self._started = True
        self.client.on_session_event(self._on_session_event)
        self.client.watch_children(BrokerIdsZNode.path(), self._mark_brokers)
        self.client.watch_children(TopicsZNode.path(), self._mark_topic_list)
        self._watch_data(ControllerZNode.path(), self._mark_controller)
        full = _Stale(brokers=True, controller=True, topic_list=True)
        await self._refresh(full, notify=False)

    async def stop(self) -> None:
        self._stopped = True
        self.client.unwatch_children(BrokerIdsZNode.path(), self._mark_brokers)
        self.client.unwatch_children(TopicsZNode.path(), self._mark_topic_list)
        for path, callback in list(self._data_callbacks.items()):
            self.client.unwatch_data(path, callback)
        self._data_callbacks.clear()
        self._broker_paths.clear()
        if self._retry is not None:
            self._retry.cancel()
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher

    # ------------------------------------------------------------------ marking

    def _watch_data(
        self, path: str, callback: Callable[[], None], armed_by_reads: bool = False
    ) -> None:
        if path not in self._data_callbacks:
            self._data_callbacks[path] = callback
            self.client.watch_data(path, callback, armed_by_reads)

    def _unwatch_data(self, path: str) -> None:
        callback = self._data_callbacks.pop(path, None)
        if callback is not None:
            self.client.unwatch_data(path, callback)

    def _mark_brokers(self) -> None:
        self._stale.brokers = True
        self._schedule()

    def _mark_controller(self) -> None:
        self._stale.controller = True
        self._schedule()

    def _mark_topic_list(self) -> None:
        self._stale.topic_list = True
        self._schedule()

    def _mark_topic(self, topic: str) -> None:
        self._stale.topics.add(topic)
        self._schedule()

    def _mark_partition(self, partition: TopicPartition) -> None:
        self._stale.partitions.add(partition)
        self._schedule()

    def _on_session_event(self, event: str) -> None:
        if event in ("SUSPENDED", "LOST"):
            self._lost_connection = True
        elif event == "CONNECTED" and self._lost_connection:
            self._lost_connection = False
            self._stale.brokers = self._stale.controller = self._stale.topic_list = True
            self._stale.topics |= set(self.view.topics)
            self._stale.partitions |= set(self.view.partition_states)
            self._schedule()

    def _schedule(self) -> None:
        if not self._started or self._stopped:
            return
        if self._refresher is None or self._refresher.done():
            self._refresher = asyncio.get_running_loop().create_task(self._refresh_loop())

    async def _refresh_loop(self) -> None:
        while self._stale.any() and not self._stopped:
            stale = self._stale.take()
            try:
                await self._refresh(stale, notify=True)
            except ZkError as exc:
                # Put it back; a reconnection re-reads everything, otherwise retry shortly.
                log.warning("cluster view refresh failed, will retry: %s", exc)
                self._stale.merge(stale)
                if self.client.connected:
                    self._retry_later()
                break
            except Exception:
                # A bug, not ZooKeeper trouble (malformed znodes are skipped while reading).
                # Put the work back and retry: dropping it would leave the view silently
                # behind ZooKeeper for those znodes.
                log.exception("cluster view refresh failed, will retry")
                self._stale.merge(stale)
                self._retry_later()
                break

    def _retry_later(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
        self._retry = asyncio.get_running_loop().call_later(_RETRY_DELAY_S, self._schedule)

    # ------------------------------------------------------------------ reading

    async def _refresh(self, stale: _Stale, notify: bool) -> None:
        found = _Found()
        try:
            await self._read(stale, found)
        except BaseException:
            self._unannounced.merge(found)
            raise
        found.merge(self._unannounced)
        self._unannounced = _Found()
        change = found.change(self.view.topics)
        if notify and change:
            try:
                self.on_change(change)
            except Exception:
                log.exception("cluster change listener failed")

    async def _read(self, stale: _Stale, found: _Found) -> None:
        """Read what `stale` names into the view, noting in `found` what changed."""
        found.brokers = stale.brokers and await self._refresh_brokers()
        found.controller = stale.controller and await self._refresh_controller()
        topics_to_read = set(stale.topics)
        if stale.topic_list:
            names = set(await self.kafka_zk.get_all_topics())
            topics_to_read |= names - set(self.view.topics)
            gone = {topic for topic in self.view.topics if topic not in names}
            found.deleted |= gone
            topics_to_read |= gone  # confirm with a read (and drop its watches)
        partitions_to_read = set(stale.partitions)
        if topics_to_read:
            assignments = await self._read_topics(sorted(topics_to_read))
            for topic, assignment in assignments.items():
                outcome = self._apply_topic(topic, assignment, partitions_to_read)
                if outcome == "added":
                    found.added.add(topic)
                elif outcome == "deleted":
                    found.deleted.add(topic)
                elif outcome == "changed":
                    found.changed_topics.add(topic)
        await self._refresh_partitions(partitions_to_read, found.partitions)

    async def _refresh_brokers(self) -> bool:
        malformed: set[str] = set()
        brokers = await self.kafka_zk.get_brokers_with_epochs(
            on_malformed=functools.partial(_skip_malformed, malformed)
        )
        registrations = {broker_id: reg for broker_id, (reg, _) in brokers.items()}
        epochs = {broker_id: epoch for broker_id, (_, epoch) in brokers.items()}
        # A broker whose registration does not decode cannot be reached, so it is left out of
        # the view, but its znode stays watched: a corrected registration is picked up.
        watched = {BrokerIdZNode.path(broker_id) for broker_id in registrations} | malformed
        for path in self._broker_paths - watched:
            self._unwatch_data(path)
        for path in watched:
            self._watch_data(path, self._mark_brokers)
        self._broker_paths = watched
        changed = registrations != self.view.brokers or epochs != self.view.broker_epochs
        self.view.brokers, self.view.broker_epochs = registrations, epochs
        return changed

    async def _refresh_controller(self) -> bool:
        controller_id = await self.kafka_zk.get_controller_id()
        changed = controller_id != self.view.controller_id
        self.view.controller_id = controller_id
        return changed

    async def _read_topics(self, topics: list[str]) -> dict[str, TopicAssignment | None]:
        """Assignments of `topics`; a topic whose znode does not decode is left out (its view
        entry unchanged) but watched, so that a corrected znode is read again."""
        malformed: set[str] = set()
        assignments = await self.kafka_zk.get_topic_assignments(
            topics, on_malformed=functools.partial(_skip_malformed, malformed)
        )
        for topic in topics:
            path = TopicZNode.path(topic)
            if path in malformed:
                self._watch_data(path, functools.partial(self._mark_topic, topic))
        return assignments

    def _apply_topic(
        self,
        topic: str,
        assignment: TopicAssignment | None,
        partitions_to_read: set[TopicPartition],
    ) -> str | None:
        previous = self.view.topics.get(topic)
        if assignment is None:
            # Also drops the watch of a topic that never decoded (so never entered the view).
            self._unwatch_data(TopicZNode.path(topic))
            if previous is None:
                return None
            self._forget_topic(topic, previous)
            return "deleted"
        self._watch_data(TopicZNode.path(topic), functools.partial(self._mark_topic, topic))
        old_partitions = set(previous.partitions) if previous is not None else set()
        for partition in set(assignment.partitions) - old_partitions:
            key = (topic, partition)
            # Armed by the reads of the state (below, and after each change): a failover
            # changes thousands of states at once.
            self._watch_data(
                TopicPartitionStateZNode.path(topic, partition),
                functools.partial(self._mark_partition, key),
                armed_by_reads=True,
            )
            partitions_to_read.add(key)
        for partition in old_partitions - set(assignment.partitions):
            self._unwatch_data(TopicPartitionStateZNode.path(topic, partition))
            self.view.partition_states.pop((topic, partition), None)
        self.view.topics[topic] = assignment
        self.view.touch(topic)
        if previous is None:
            return "added"
        return "changed" if previous != assignment else None

    def _forget_topic(self, topic: str, previous: TopicAssignment) -> None:
        self._unwatch_data(TopicZNode.path(topic))
        for partition in previous.partitions:
            self._unwatch_data(TopicPartitionStateZNode.path(topic, partition))
            self.view.partition_states.pop((topic, partition), None)
        del self.view.topics[topic]
        self.view.topic_versions.pop(topic, None)

    async def _refresh_partitions(
        self, partitions: set[TopicPartition], changed: set[TopicPartition]
    ) -> None:
        """Read the states of `partitions` into the view, adding those that changed to
        `changed` as each slice is read."""
        # Only partitions of topics still in the view; a deleted topic's late events are noise.
        wanted = sorted(
            (topic, p)
            for topic, p in partitions
            if topic in self.view.topics and p in self.view.topics[topic].partitions
        )
        # In slices, each read and decoded in its own turn of the loop: decoding 5,000 states
        # at once would hold the loop for a few hundred milliseconds.
        for start in range(0, len(wanted), _STATES_PER_READ):
            read = await self._refresh_states(wanted[start : start + _STATES_PER_READ])
            changed |= read
            for topic in {topic for topic, _ in read}:
                self.view.touch(topic)

    async def _refresh_states(self, wanted: list[TopicPartition]) -> set[TopicPartition]:
        # A state that does not decode is skipped (its view entry kept); its watch stays armed.
        states = await self.kafka_zk.get_many_partition_states(
            wanted, on_malformed=functools.partial(_skip_malformed, set()), arm=True
        )
        changed: set[TopicPartition] = set()
        for key, state in states.items():
            if key[0] not in self.view.topics:
                continue  # deleted while we were reading
            if state is None:
                if self.view.partition_states.pop(key, None) is not None:
                    changed.add(key)
            elif self.view.partition_states.get(key) != state:
                self.view.partition_states[key] = state
                changed.add(key)
        return changed


def _skip_malformed(malformed_paths: set[str], path: str, error: ZnodeDecodeError) -> None:
    """Log and remember a znode that does not decode: one bad znode, written by a foreign or
    broken tool, must not stop the view from following the rest of the cluster."""
    log.warning("ignoring malformed znode %s: %s", path, error)
    malformed_paths.add(path)
