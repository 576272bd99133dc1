"""Controller events. Watch callbacks create these and nothing else; the event manager's one
consumer task handles them in order.

Every event means "something changed, re-read it", so two queued events of the same kind are
worth one: the event manager coalesces them (see `event_manager.py`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ControllerEvent:
    """Base class; the concrete class is the event's kind."""


@dataclass(frozen=True, slots=True)
class Startup(ControllerEvent):
    """The broker started: take part in the first election."""


@dataclass(frozen=True, slots=True)
class ControllerChange(ControllerEvent):
    """/controller was created, changed or deleted (or the session reconnected)."""


@dataclass(frozen=True, slots=True)
class BrokerChange(ControllerEvent):
    """The children of /brokers/ids changed: brokers registered or died."""


@dataclass(frozen=True, slots=True)
class TopicChange(ControllerEvent):
    """The children of /brokers/topics changed: topics created or removed."""


@dataclass(frozen=True, slots=True)
class TopicDeletion(ControllerEvent):
    """The children of /admin/delete_topics changed: topics marked for deletion."""


@dataclass(frozen=True, slots=True)
class IsrChangeNotification(ControllerEvent):
    """The children of /isr_change_notification changed: a partition leader rewrote an ISR
    (and so the state's zkVersion) and asks the controller to re-read those partitions."""


@dataclass(frozen=True, slots=True)
class LogDirEventNotification(ControllerEvent):
    """The children of /log_dir_event_notification changed: a broker's log dir failed and
    its replicas there went offline."""


@dataclass(frozen=True, slots=True)
class Resign(ControllerEvent):
    """The ZooKeeper session expired: our /controller is gone, stop acting as controller."""


@dataclass(frozen=True, slots=True)
class Reconcile(ControllerEvent):
    """An earlier event failed part-way (e.g. ZooKeeper connection loss): re-read the brokers
    and bring every partition in line, without waiting for another ZooKeeper change."""


@dataclass(frozen=True, slots=True)
class RetryUnsettledPartitions(ControllerEvent):
    """The back-off after partition writes that kept losing races to leaders' ISR writes
    ended: decide those partitions again (see `partition_state_machine.retry_later`)."""


@dataclass(frozen=True, slots=True)
class PreferredReplicaElection(ControllerEvent):
    """/admin/preferred_replica_election was created or deleted: elect what it names."""


@dataclass(frozen=True, slots=True)
class ElectLeadersRequested(ControllerEvent):
    """ElectLeaders requests are waiting (in the controller's election `RequestQueue`)."""


@dataclass(frozen=True, slots=True)
class AutoLeaderRebalance(ControllerEvent):
    """The leader.imbalance.check.interval.seconds timer fired: check leader balance."""


@dataclass(frozen=True, slots=True)
class ControlledShutdownRequested(ControllerEvent):
    """ControlledShutdown requests are waiting (in the controller's shutdown `RequestQueue`)."""


@dataclass(frozen=True, slots=True)
class PartitionModifications(ControllerEvent):
    """A topic znode's data changed: it may have gained partitions (see
    `partition_modification.PartitionModifications`, which remembers which topics)."""


@dataclass(frozen=True, slots=True)
class ZkPartitionReassignment(ControllerEvent):
    """/admin/reassign_partitions was created, changed or deleted."""


@dataclass(frozen=True, slots=True)
class PartitionReassignmentIsrChange(ControllerEvent):
    """The state znode of a partition being reassigned changed: it may be complete."""


@dataclass(frozen=True, slots=True)
class AlterReassignmentsRequested(ControllerEvent):
    """AlterPartitionReassignments requests are waiting (in `reassignment.PendingAlters`)."""


@dataclass(frozen=True, slots=True)
class AlterPartitionReceived(ControllerEvent):
    """AlterPartition requests are waiting (in the controller's AlterPartition `RequestQueue`)."""


@dataclass(frozen=True, slots=True)
class AllocateProducerIdsRequested(ControllerEvent):
    """AllocateProducerIds requests are waiting (in the controller's `RequestQueue` of them)."""


@dataclass(frozen=True, slots=True)
class BrokerAnswersReceived(ControllerEvent):
    """Brokers answered LeaderAndIsr or a topic deletion's StopReplica (the answers wait in
    the controller's queue of them): Kafka's LeaderAndIsrResponseReceived and
    TopicDeletionStopReplicaResponseReceived."""


# Kinds only the active controller handles; otherwise dropped (or their requests answered
# NOT_CONTROLLER).
ACTIVE_EVENTS: tuple[type[ControllerEvent], ...] = (
    BrokerChange,
    TopicChange,
    TopicDeletion,
    IsrChangeNotification,
    LogDirEventNotification,
    Reconcile,
    RetryUnsettledPartitions,
    PreferredReplicaElection,
    ElectLeadersRequested,
    AutoLeaderRebalance,
    ControlledShutdownRequested,
    PartitionModifications,
    ZkPartitionReassignment,
    PartitionReassignmentIsrChange,
    AlterReassignmentsRequested,
    AlterPartitionReceived,
    AllocateProducerIdsRequested,
    BrokerAnswersReceived,
)
