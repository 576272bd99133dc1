"""The rules by which a broker takes a ZooKeeper-mode controller's requests (LeaderAndIsr,
StopReplica, UpdateMetadata), as pure functions and one small piece of state.

Our brokers learn leaders and ISRs from two sources: the partition state znodes they watch, and,
when the controller is an Apache Kafka broker, its LeaderAndIsr requests. Both carry the same
numbers, because Kafka's controller writes a partition's state znode before it sends the
request: the leader epoch and the znode's version (`partition_epoch` in the request). The rule
that decides between them is the one each already obeyed alone:

- Per partition, a state is applied only if it is newer than the one the replica holds, in the
  order (leader epoch, znode version) (`Partition.is_newer`). Whichever source delivers a state
  first applies it through the same become-leader/become-follower path
  (`ReplicaManager.apply_state`); the other then finds it already applied and does nothing.
  An older state from either source, a watch read that lags a request or a request that lags
  the watch, never replaces a newer one.
- Per request, the controller epoch fences a controller that lost its office: a request whose
  controller epoch is older than the newest this broker has seen in any controller request is
  refused whole with STALE_CONTROLLER_EPOCH (Kafka's ReplicaManager.controllerEpoch, which all
  three requests check and raise). The znode states need no such fence: a deposed controller's
  ZooKeeper writes fail on the controller epoch znode's version.
- The broker epoch fences requests meant for an earlier life of this broker: one older than
  this broker's current registration's epoch is refused whole with STALE_BROKER_EPOCH; -1
  (a version without the field) and a newer one (the controller saw the new registration
  before the broker's own create returned) pass, as in Kafka's isBrokerEpochStale.

Per-partition answers follow Kafka 3.9's ReplicaManager.becomeLeaderOrFollower and
stopReplicas, with one difference: a LeaderAndIsr state equal to the one applied (same leader
epoch and znode version) answers NONE, where Kafka answers STALE_CONTROLLER_EPOCH to an equal
leader epoch. A Kafka broker only ever learns the state from the request, so an equal epoch is
a duplicate there; here it is usually the watch having been faster, and the replica is in the
state the controller asked for. An equal leader epoch with an older znode version (this
leader's own ISR change landed since) still answers STALE_CONTROLLER_EPOCH, as in Kafka.

A leader's AlterPartition answer is a third source of the same states: its partition epoch is
the znode version the controller wrote, and it is adopted by the same order, only while the
change it answers is still pending (alter_partition_manager.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from broker.protocol.controller_apis import EPOCH_DURING_DELETE, NO_EPOCH, UNKNOWN_BROKER_EPOCH
from zk.znodes import PartitionState

# Kafka's KafkaController.InitialControllerEpoch: a fresh broker takes any controller.
INITIAL_CONTROLLER_EPOCH = 0

state_change_log = logging.getLogger("state.change.logger")


def is_broker_epoch_stale(request_broker_epoch: int, current_broker_epoch: int) -> bool:
    """Kafka's isBrokerEpochStale (ZooKeeper controller): older than this broker's current
    registration; -1 means the request version has no broker epoch."""
    if request_broker_epoch == UNKNOWN_BROKER_EPOCH:
        return False
    return request_broker_epoch < current_broker_epoch


class ControllerFence:
    """The newest controller epoch this broker has seen in a controller request, and this
    broker's own epoch (the czxid of its registration), against which requests are fenced."""

    def __init__(self) -> None:
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH
        # -1 until the broker has registered; the server sets it at each registration.
        self.broker_epoch = UNKNOWN_BROKER_EPOCH

    def broker_epoch_error(self, request_broker_epoch: int) -> ErrorCode:
        if is_broker_epoch_stale(request_broker_epoch, self.broker_epoch):
            return ErrorCode.stale_broker_epoch
        return ErrorCode.none

    def admit(self, request: Any) -> ErrorCode:
        """A controller request's fencing, in Kafka's order: its broker epoch (absent before
        the version that carries it: unknown), then its controller epoch."""
        error = self.broker_epoch_error(int(getattr(request, "broker_epoch", UNKNOWN_BROKER_EPOCH)))
        if error == ErrorCode.none:
            error = self.accept_controller_epoch(int(request.controller_epoch))
        return error

    def accept_controller_epoch(self, request_controller_epoch: int) -> ErrorCode:
        """STALE_CONTROLLER_EPOCH for a controller older than one already seen; otherwise the
        request's epoch becomes the newest seen."""
        if request_controller_epoch < self.controller_epoch:
            return ErrorCode.stale_controller_epoch
        self.controller_epoch = request_controller_epoch
        return ErrorCode.none


def admit_logged(
    fence: ControllerFence,
    request: Any,
    api_name: str,
    partition_count: int,
    broker_id: int,
    correlation_id: int,
) -> ErrorCode:
    """`fence.admit(request)`, with the state-change log line Kafka writes on receiving a
    LeaderAndIsr or StopReplica request (naming the refusal, if any)."""
    error = fence.admit(request)
    state_change_log.info(
        "[Broker id=%d] Handling %s request correlationId %d from controller %d"
        " epoch %d for %d partitions%s",
        broker_id,
        api_name,
        correlation_id,
        int(request.controller_id),
        int(request.controller_epoch),
        partition_count,
        "" if error == ErrorCode.none else f": refused with {error.name.upper()}",
    )
    return error


@dataclass(frozen=True, slots=True)
class RequestedState:
    """One partition state of a LeaderAndIsr request, in the znode's terms."""

    topic: str
    topic_id: str | None  # Kafka's string form; None where the request names none
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int  # the request's partition_epoch
    replicas: tuple[int, ...]
    removing: tuple[int, ...] = ()

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    @property
    def partition_state(self) -> PartitionState:
        return PartitionState(self.leader, self.leader_epoch, list(self.isr), self.controller_epoch)


@dataclass(frozen=True, slots=True)
class AppliedState:
    """What a hosted replica last applied, from either source."""

    leader_epoch: int
    zk_version: int


@dataclass(frozen=True, slots=True)
class Decision:
    error: ErrorCode
    apply: bool


APPLY = Decision(ErrorCode.none, True)
ALREADY_APPLIED = Decision(ErrorCode.none, False)
STALE = Decision(ErrorCode.stale_controller_epoch, False)


def leader_and_isr_decision(
    applied: AppliedState | None, leader_epoch: int, partition_epoch: int
) -> Decision:
    """One LeaderAndIsr partition state against the replica's (None: not hosted yet)."""
    if applied is None:
        return APPLY
    if leader_epoch != applied.leader_epoch:
        return APPLY if leader_epoch > applied.leader_epoch else STALE
    if partition_epoch > applied.zk_version:
        return APPLY
    return ALREADY_APPLIED if partition_epoch == applied.zk_version else STALE


def stop_replica_error(applied_leader_epoch: int | None, request_leader_epoch: int) -> ErrorCode:
    """One StopReplica partition against the replica's leader epoch (None: not hosted, so
    there is nothing to fence and any log left is deleted). Kafka's sentinels skip the check:
    -1 (a request version without epochs) and -2 (the topic is being deleted)."""
    if applied_leader_epoch is None or request_leader_epoch in (NO_EPOCH, EPOCH_DURING_DELETE):
        return ErrorCode.none
    if request_leader_epoch >= applied_leader_epoch:
        return ErrorCode.none
    return ErrorCode.fenced_leader_epoch


def has_consistent_topic_id(request_topic_id: str | None, known_topic_id: str | None) -> bool:
    """Kafka's hasConsistentTopicId: either side unknown, or both the same."""
    return not request_topic_id or not known_topic_id or request_topic_id == known_topic_id
