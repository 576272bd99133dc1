"""Bring this broker's replicas in line with the cluster as ZooKeeper shows it.

Our brokers watch the topic, assignment and partition-state znodes (zk/cluster_watch.py) as well
as serving a controller's LeaderAndIsr and StopReplica. A change in the view queues the topics or
partitions it touches; one task applies them: roles from the partition states, logs of deleted
topics removed, replicas that a reassignment moved away stopped and deleted (what Kafka's
StopReplica(delete=true) does). A state the replica already holds, or an older one, changes
nothing (the newer-state rule, broker/replication/control_requests.py), so whichever source
speaks first wins and the other's copy of the same change is a no-op.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable

from broker.config.topic_overrides import TopicConfigs
from broker.log.log import LogConfig
from broker.log.manager import LogManager
from broker.replication.replica_manager import ReplicaManager
from broker.services import MetadataChanges
from zk.cluster_watch import ClusterWatch
from zk.kafka_zk import TopicAssignment
from zk.loop_slice import LoopSlice

log = logging.getLogger(__name__)

# A topic whose application failed is tried again this much later: nothing else may change to
# trigger another pass.
RECONCILE_RETRY_S = 1.0
# Partition states applied between two chances for requests to run.
APPLY_CHUNK = 8

# Topic -> the partitions to apply (None: the whole topic).
Pending = dict[str, set[int] | None]


def partition_in_view(cluster_watch: ClusterWatch, topic: str, partition: int) -> bool:
    """The view's assignment lists the partition."""
    assignment = cluster_watch.view.topics.get(topic)
    return assignment is not None and partition in assignment.partitions


class ReplicaReconciler:
    def __init__(
        self,
        broker_id: int,
        cluster_watch: ClusterWatch,
        topic_configs: TopicConfigs,
        replica_manager: ReplicaManager,
        log_manager: LogManager,
        metadata_changes: MetadataChanges,
        default_log_config: Callable[[], LogConfig],
    ) -> None:
        self._broker_id = broker_id
        self._cluster_watch = cluster_watch
        self._topic_configs = topic_configs
        self._replica_manager = replica_manager
        self._log_manager = log_manager
        self._metadata_changes = metadata_changes
        self._default_log_config = default_log_config
        self._needed = asyncio.Event()
        # What the next pass is to bring in line with the view; None means everything.
        self._pending: Pending | None = {}

    def mark_topics(self, topics: set[str] | frozenset[str] | None) -> None:
        """Queue whole topics for the next pass (None: every topic)."""
        self._queue(None if topics is None else dict.fromkeys(topics))

    def mark_partitions(self, keys: frozenset[tuple[str, int]]) -> None:
        """Queue partitions whose state changed: only they are applied (the delta)."""
        pending: Pending = {}
        for topic, partition in keys:
            partitions = pending.setdefault(topic, set())
            if partitions is not None:
                partitions.add(partition)
        self._queue(pending)

    def _queue(self, pending: Pending | None) -> None:
        if pending is None or self._pending is None:
            self._pending = None
        elif pending:
            for topic, partitions in pending.items():
                queued = self._pending.get(topic, set())
                if partitions is None or queued is None:
                    self._pending[topic] = None
                else:
                    self._pending[topic] = queued | partitions
        else:
            return
        self._needed.set()

    async def run(self) -> None:
        """Apply what is queued, pass after pass, until cancelled."""
        while True:
            await self._needed.wait()
            self._needed.clear()
            pending, self._pending = self._pending, {}
            failed = await self.reconcile(pending)
            if failed:
                asyncio.get_running_loop().call_later(RECONCILE_RETRY_S, self.mark_topics, failed)

    async def reconcile(self, pending: Pending | None = None) -> set[str]:
        """Make local replicas match the view for `pending` (default everything): roles from
        partition states, logs of deleted topics removed. Returns the topics that failed."""
        view = self._cluster_watch.view
        work: Pending = dict.fromkeys(view.topics) if pending is None else pending
        failed: set[str] = set()
        for topic in sorted(work):
            partitions = work[topic]
            assignment = view.topics.get(topic)
            try:
                if assignment is None:
                    await self._forget_topic(topic)
                elif partitions is not None or _hosts(assignment, self._broker_id):
                    await self._reconcile_topic(topic, assignment, partitions)
                else:
                    await self._delete_unassigned_replicas(topic)
            except Exception:
                # One topic's trouble (a bad config value, a disk error) must not keep
                # every other topic from getting its leaders.
                log.exception("applying metadata of topic %s failed; will retry", topic)
                failed.add(topic)
        if pending is None:
            hosted = {replica_log.topic for replica_log in self._log_manager.all_logs()}
            for topic in hosted - set(view.topics):
                await self._forget_topic(topic)
        self._metadata_changes.signal()
        return failed

    async def _forget_topic(self, topic: str) -> None:
        self._replica_manager.deleting_topics.pop(topic, None)
        if any(replica_log.topic == topic for replica_log in self._log_manager.all_logs()):
            await self._replica_manager.delete_topic(topic)
        self._topic_configs.forget(topic)

    async def _delete_unassigned_replicas(self, topic: str) -> None:
        """Replicas of `topic` hosted here that the assignment no longer lists (a
        reassignment moved them away) are stopped and their logs deleted, as Kafka's
        StopReplica(delete=true) does."""
        assignment = self._cluster_watch.view.topics.get(topic)
        if assignment is None:
            return  # the topic is gone: _forget_topic deletes everything
        hosted_before = [
            partition
            for partition, replicas in sorted(assignment.partitions.items())
            if self._broker_id not in replicas
            and (
                self._log_manager.get_log(topic, partition) is not None
                or self._replica_manager.get(topic, partition) is not None
            )
        ]
        for partition in hosted_before:
            # Checked right before each deletion: the view may change during the awaits.
            current = self._cluster_watch.view.topics.get(topic)
            if current is None:
                return
            if self._broker_id not in current.partitions.get(partition, ()):
                await self._replica_manager.delete_partition(topic, partition)

    async def _reconcile_topic(
        self, topic: str, assignment: TopicAssignment, partitions: set[int] | None
    ) -> None:
        """Apply the states of `partitions` (None: all) of the topic: those whose logs are
        ready at once, the others batch by batch as their logs open off the loop."""
        topic_id = assignment.topic_id or ""
        deleting = self._replica_manager.deleting_topics
        if deleting.get(topic) == topic_id:
            return  # its deletion removed the replicas here; its znodes go when it completes
        deleting.pop(topic, None)  # a topic of that name re-created under a new id
        configs = await self._topic_configs.get(topic, topic_id)
        log_config = self._default_log_config().with_overrides(configs)
        await self._replica_manager.ensure_topic_id(topic, topic_id)
        wanted = sorted(assignment.partitions if partitions is None else partitions)
        unready = [
            partition
            for partition in wanted
            if self._broker_id in assignment.partitions.get(partition, ())
            and not self._replica_manager.is_ready((topic, partition), topic_id)
        ]
        apply = functools.partial(self._apply_states, topic, topic_id, log_config)
        waiting = set(unready)
        ready = [partition for partition in wanted if partition not in waiting]
        loop_slice = LoopSlice()
        for start in range(0, len(ready), APPLY_CHUNK):
            # Requests get in between slices; each chunk reads the view anew.
            await loop_slice.pause_if_spent()
            apply(ready[start : start + APPLY_CHUNK])
        await self._replica_manager.prepare_logs(topic, topic_id, unready, apply)
        if partitions is None:
            await self._delete_unassigned_replicas(topic)

    def _apply_states(
        self, topic: str, topic_id: str, log_config: LogConfig, partitions: list[int]
    ) -> None:
        """Apply the current view's states of `partitions`, without awaiting (the view may
        have moved on during the caller's awaits: apply what is current). A state the replica
        already holds, or an older one, changes nothing: a Kafka controller's LeaderAndIsr
        may have applied it, or a newer one, first (broker/replication/control_requests.py)."""
        view = self._cluster_watch.view
        assignment = view.topics.get(topic)
        if assignment is None or (assignment.topic_id or "") != topic_id:
            return  # deleted or re-created meanwhile: a pass of its own follows
        for partition in partitions:
            replicas = assignment.partitions.get(partition)
            entry = view.partition_states.get((topic, partition))
            if replicas is None or entry is None:
                continue
            self._replica_manager.apply_state(
                topic,
                topic_id,
                partition,
                replicas,
                entry[0],
                log_config,
                entry[1],
                removing=assignment.removing_replicas.get(partition, ()),
            )


def _hosts(assignment: TopicAssignment, broker_id: int) -> bool:
    return any(broker_id in replicas for replicas in assignment.partitions.values())
