"""Deleting topics marked under /admin/delete_topics (Kafka's TopicDeletionManager).

A marked topic is queued for deletion. Once eligible, its deletion starts: its partitions go
offline (leader -1, a fenced write brokers see through their partition state watches), every
broker learns from UpdateMetadata that it is being deleted (leader -2), and each replica on a
live broker (whose log dir holds it) is sent StopReplica with delete (its replica deletion is
"started"). A replica on a dead broker, or in a failed log dir, is "ineligible", and so is its
topic: its deletion halts. Each StopReplica answer settles the replicas it names: no error,
"successful"; an error, "ineligible" (the topic halts). The topic's znodes go, in Kafka's order
(/brokers/topics/T with its partitions, /config/topics/T, /admin/delete_topics/T), only once
every replica's deletion succeeded. A halted topic resumes when a broker hosting one of its
replicas starts (or restarts): its ineligible replicas are sent StopReplica again.

The state is the controller's for its term: a new controller starts every queued topic's
deletion again from the markers, topics with replicas it cannot reach halted from the start,
as Kafka's does. With delete.topic.enable=false the markers are removed instead, rather than
re-read (and logged) on every event. A controller without a channel to the brokers (unit
tests) gets no answers: its started replica deletions count as successful at once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from enum import Enum

from controller.broker_requests import ExtraRequests
from controller.context import ControllerContext, TopicPartition
from controller.partition_state_machine import PartitionStateMachine
from controller.zk_api import ControllerZk

log = logging.getLogger(__name__)

# (topic, partition, broker id): one replica.
Replica = tuple[str, int, int]


class ReplicaDeletion(Enum):
    """Kafka's replica states of a topic being deleted; a replica without one is offline
    (not asked yet, or to be asked again)."""

    STARTED = "ReplicaDeletionStarted"
    SUCCESSFUL = "ReplicaDeletionSuccessful"
    INELIGIBLE = "ReplicaDeletionIneligible"


class TopicDeletionManager:
    """One per controller term; only the event task calls it."""

    def __init__(
        self,
        kafka_zk: ControllerZk,
        context: ControllerContext,
        partitions: PartitionStateMachine,
        extra_requests: ExtraRequests,
        delete_topic_enable: bool,
        answers_expected: bool = True,
    ) -> None:
        self._zk = kafka_zk
        self._context = context
        self._partitions = partitions
        self._extra = extra_requests
        self._enabled = delete_topic_enable
        self._answers_expected = answers_expected
        self._replicas: dict[Replica, ReplicaDeletion] = {}
        # Topics whose partitions were taken offline (Kafka's topicsWithDeletionStarted).
        self._started: set[str] = set()
        # Topics whose deletion halted until a broker of theirs starts.
        self._ineligible: set[str] = set()

    # ------------------------------------------------------------------ queries

    def state(self, replica: Replica) -> ReplicaDeletion | None:
        return self._replicas.get(replica)

    def is_halted(self, topic: str) -> bool:
        """The topic's deletion started and waits for a broker to come back (or restart)."""
        return topic in self._started and topic in self._ineligible

    def is_queued(self, topic: str) -> bool:
        return self._enabled and topic in self._context.topics_queued_for_deletion

    # ------------------------------------------------------------------ events

    async def initialize(self) -> None:
        """At failover (Kafka's fetchTopicDeletionsInProgress and init): markers of topics
        that do not exist go; topics with a replica that cannot be deleted now halt; the rest
        start (resume_deletions, which the caller runs after reconciling)."""
        context = self._context
        missing = sorted(
            t for t in context.topics_queued_for_deletion if t not in context.assignments
        )
        if missing:
            log.info("topics %s marked for deletion do not exist: removing their markers", missing)
            await self._zk.delete_topic_deletion_markers(context.epoch_zk_version, missing)
            context.topics_queued_for_deletion -= set(missing)
        if not self._enabled:
            await self._remove_markers_deletion_disabled()
            return
        self._ineligible = {
            topic
            for topic in context.topics_queued_for_deletion
            if any(not self._online(replica) for replica in self._replicas_of(topic))
        }
        if self._ineligible:
            log.info("deletion of topics %s halted: replicas offline", sorted(self._ineligible))

    async def on_markers_changed(self) -> None:
        """The children of /admin/delete_topics changed (Kafka's processTopicDeletion)."""
        context = self._context
        markers = set(await self._zk.get_topics_pending_deletion())
        missing = sorted(markers - set(context.assignments))
        if missing:
            log.info("topics %s marked for deletion do not exist: removing their markers", missing)
            await self._zk.delete_topic_deletion_markers(context.epoch_zk_version, missing)
        new = markers - set(missing) - context.topics_queued_for_deletion
        if not new:
            return
        context.topics_queued_for_deletion |= new
        if not self._enabled:
            await self._remove_markers_deletion_disabled()
            return
        log.info("starting deletion of topics %s", sorted(new))
        await self.resume_deletions()

    async def on_brokers_failed(self, broker_ids: Iterable[int]) -> None:
        """Replicas on brokers that died (or restarted) cannot answer: their deletion fails."""
        dead = set(broker_ids)
        await self.fail_replica_deletion(
            replica
            for topic in self._queued()
            for replica in self._replicas_of(topic)
            if replica[2] in dead
        )

    async def on_brokers_started(self, broker_ids: Iterable[int]) -> None:
        """Topics with a replica on a broker that started may go on (Kafka's onBrokerStartup:
        resumeDeletionForTopics)."""
        started = set(broker_ids)
        topics = {
            topic
            for topic in self._queued()
            if any(replica[2] in started for replica in self._replicas_of(topic))
        }
        if topics:
            log.info(
                "brokers %s host replicas of topics %s being deleted: resuming their deletion",
                sorted(started),
                sorted(topics),
            )
            self._ineligible -= topics
            await self.resume_deletions()

    async def on_replicas_offline(self, replicas: Iterable[Replica]) -> None:
        """Replicas whose log dir failed: their deletion cannot succeed there."""
        await self.fail_replica_deletion(replicas)

    async def on_stop_replica_answer(
        self, broker_id: int, partition_errors: Iterable[tuple[str, int, int]]
    ) -> None:
        """A StopReplica answer for replicas being deleted (Kafka's
        TopicDeletionStopReplicaResponseReceived)."""
        failed: list[Replica] = []
        deleted: list[Replica] = []
        for topic, partition, error in partition_errors:
            (failed if error else deleted).append((topic, partition, broker_id))
        if failed:
            log.info("broker %d failed to delete replicas %s", broker_id, failed)
            await self.fail_replica_deletion(failed)
        if deleted:
            await self.complete_replica_deletion(deleted)

    # ------------------------------------------------------------------ transitions

    async def fail_replica_deletion(self, replicas: Iterable[Replica]) -> None:
        # A replica already deleted stays so, even if its broker dies now.
        chosen = [
            r
            for r in replicas
            if self.is_queued(r[0]) and self._replicas.get(r) is not ReplicaDeletion.SUCCESSFUL
        ]
        if not chosen:
            return
        for replica in chosen:
            self._replicas[replica] = ReplicaDeletion.INELIGIBLE
        topics = {r[0] for r in chosen}
        log.info("deletion of topics %s halted: replica deletion failed", sorted(topics))
        self._ineligible |= topics
        await self.resume_deletions()

    async def complete_replica_deletion(self, replicas: Iterable[Replica]) -> None:
        chosen = [r for r in replicas if self.is_queued(r[0])]
        for replica in chosen:
            self._replicas[replica] = ReplicaDeletion.SUCCESSFUL
        if chosen:
            await self.resume_deletions()

    async def resume_deletions(self) -> None:
        """Complete the topics whose replicas are all deleted, retry the halted replicas of
        topics with none in flight, and start (again) every eligible topic (Kafka's
        resumeDeletions)."""
        if not self._enabled:
            return
        while await self._resume_pass():
            pass  # without answers, a started deletion is already complete

    async def _resume_pass(self) -> bool:
        eligible: list[str] = []
        for topic in sorted(self._queued()):
            states = [self._replicas.get(r) for r in self._replicas_of(topic)]
            if all(s is ReplicaDeletion.SUCCESSFUL for s in states):
                await self._complete_topic(topic)
                continue
            if ReplicaDeletion.STARTED not in states and ReplicaDeletion.INELIGIBLE in states:
                # Asked again once the topic is eligible (Kafka moves them to offline).
                for replica in self._replicas_of(topic):
                    if self._replicas.get(replica) is ReplicaDeletion.INELIGIBLE:
                        del self._replicas[replica]
            if topic not in self._ineligible and ReplicaDeletion.STARTED not in states:
                log.info("deletion of topic %s (re)started", topic)
                eligible.append(topic)
        if eligible:
            await self._start(eligible)
        return bool(eligible) and not self._answers_expected

    async def _start(self, topics: list[str]) -> None:
        """Kafka's onTopicDeletion and onPartitionDeletion."""
        unseen = [t for t in topics if t not in self._started]
        self._started.update(unseen)
        halted = set()
        for topic in topics:
            for replica in self._replicas_of(topic):
                if self._replicas.get(replica) is ReplicaDeletion.SUCCESSFUL:
                    continue
                if not self._online(replica):
                    self._replicas[replica] = ReplicaDeletion.INELIGIBLE
                    halted.add(topic)
                elif self._answers_expected:
                    self._replicas[replica] = ReplicaDeletion.STARTED
                    self._extra.stop_for_deletion(replica[2], replica[:2])
                else:
                    self._replicas[replica] = ReplicaDeletion.SUCCESSFUL
        if halted:
            log.info("deletion of topics %s halted: replicas offline", sorted(halted))
            self._ineligible |= halted
        # Last: these writes' watch wakes the DeleteTopics requests, which ask is_halted.
        if unseen:
            await self._partitions.take_offline(self._context.partitions_of(unseen))

    async def _complete_topic(self, topic: str) -> None:
        await self._zk.delete_topic_znodes(self._context.epoch_zk_version, topic)
        self._context.remove_topic(topic)
        self._forget(topic)
        log.info("deletion of topic %s completed", topic)

    # ------------------------------------------------------------------ helpers

    async def _remove_markers_deletion_disabled(self) -> None:
        context = self._context
        topics = sorted(context.topics_queued_for_deletion)
        if topics:
            log.info("delete.topic.enable=false: removing deletion markers of %s", topics)
            await self._zk.delete_topic_deletion_markers(context.epoch_zk_version, topics)
        context.topics_queued_for_deletion.clear()

    def _queued(self) -> set[str]:
        return self._context.topics_queued_for_deletion if self._enabled else set()

    def _replicas_of(self, topic: str) -> list[Replica]:
        assignment = self._context.assignments.get(topic)
        if assignment is None:
            return []
        return [
            (topic, partition, broker)
            for partition, replicas in sorted(assignment.partitions.items())
            for broker in replicas
        ]

    def _online(self, replica: Replica) -> bool:
        topic, partition, broker = replica
        key: TopicPartition = (topic, partition)
        return (
            broker in self._context.live_brokers
            and key not in self._context.offline_replicas.get(broker, ())
        )

    def _forget(self, topic: str) -> None:
        for replica in [r for r in self._replicas if r[0] == topic]:
            del self._replicas[replica]
        self._started.discard(topic)
        self._ineligible.discard(topic)
