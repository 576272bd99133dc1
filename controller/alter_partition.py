"""AlterPartition, the controller's side (Kafka's KafkaController.processAlterPartition, ZooKeeper
mode): a partition leader asks the controller to change its ISR, instead of writing the state
znode itself (what Kafka brokers do from inter.broker.protocol.version 2.7 on).

The handler queues the request here and an `AlterPartitionReceived` event serves it on the
controller's event task:

1. the sender must be a registered broker with the broker epoch it sends, else the whole
   request is answered STALE_BROKER_EPOCH;
2. each partition is checked against the controller's context, in Kafka's order: unknown
   (UNKNOWN_TOPIC_ID for a topic id we do not know, UNKNOWN_TOPIC_OR_PARTITION otherwise); a
   leader or partition epoch ahead of ours (NOT_CONTROLLER: our view is stale, so we are
   probably no longer controller); an older leader epoch (FENCED_LEADER_EPOCH); a sender that
   is not the leader (NOT_LEADER_OR_FOLLOWER); the state already as asked (answered with the
   current state, before the partition epoch check, so a retried request is idempotent); an
   older partition epoch (INVALID_UPDATE_VERSION); a leader recovery state Kafka refuses
   (INVALID_REQUEST); a new ISR member that is not live, is shutting down, or is named with a
   broker epoch other than its registration's (INELIGIBLE_REPLICA; OPERATION_NOT_ATTEMPTED
   before v2, as Kafka answers). Kafka's ZooKeeper-mode brokers send broker epoch -1 (no
   check); the epoch check is KRaft's (KIP-903), kept for senders that name one;
3. the accepted ISRs are written to the state znodes, fenced by the controller epoch and
   conditional on the partition epoch (the znode's zkVersion), leader and leader epoch
   unchanged; a lost race is INVALID_UPDATE_VERSION. The context takes the written states,
   and each answer carries the new partition epoch.

The state znode's leader_recovery_state is not kept by our ZooKeeper layer: the current state is
taken as RECOVERED (what every state our controller writes is).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from controller.context import ControllerContext, TopicPartition
from controller.errors import (
    FENCED_LEADER_EPOCH,
    INELIGIBLE_REPLICA,
    INVALID_REQUEST,
    INVALID_UPDATE_VERSION,
    NONE,
    NOT_CONTROLLER,
    NOT_LEADER_OR_FOLLOWER,
    OPERATION_NOT_ATTEMPTED,
    STALE_BROKER_EPOCH,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from controller.partition_state_machine import bounded_gather
from controller.request_queue import RequestQueue
from controller.state_change_log import ChangeReason, partition_changed
from controller.zk_api import ControllerZk, PartitionState
from zk.errors import BadVersionError, NoNodeError

log = logging.getLogger(__name__)

RECOVERED = 0  # Kafka's LeaderRecoveryState
RECOVERING = 1
NO_BROKER_EPOCH = -1  # an ISR member named without its broker epoch: not checked
FIRST_VERSION_WITH_TOPIC_IDS = 2  # and with INELIGIBLE_REPLICA
# Requests waiting for the controller's event task: one in flight per broker in Kafka, so this
# is far above any real cluster; beyond it a request is answered NOT_CONTROLLER at once.
MAX_PENDING_ALTER_PARTITION_REQUESTS = 10_000


@dataclass(frozen=True, slots=True)
class IsrMember:
    broker_id: int
    broker_epoch: int = NO_BROKER_EPOCH


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """One partition of the request: the ISR its leader wants, and the epochs it saw."""

    partition: int
    leader_epoch: int
    new_isr: tuple[IsrMember, ...]
    partition_epoch: int
    leader_recovery_state: int = RECOVERED


@dataclass(frozen=True, slots=True)
class TopicChanges:
    """One topic of the request, named (v0-v1) or by topic id (v2+, Kafka's base64 form)."""

    name: str | None
    topic_id: str | None
    partitions: tuple[PartitionChange, ...]


@dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    broker_id: int
    broker_epoch: int
    version: int
    topics: tuple[TopicChanges, ...]


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """An error, or the partition's state after the request (leader, epochs, ISR). An error
    leaves the rest at Kafka's defaults (0), as its controller answers."""

    partition: int
    error_code: ErrorCode
    leader: int = 0
    leader_epoch: int = 0
    isr: tuple[int, ...] = ()
    partition_epoch: int = 0
    leader_recovery_state: int = RECOVERED


@dataclass(frozen=True, slots=True)
class TopicResult:
    name: str | None
    topic_id: str | None
    partitions: list[PartitionResult]


@dataclass(frozen=True, slots=True)
class AlterPartitionResult:
    error_code: ErrorCode
    topics: list[TopicResult] = field(default_factory=list)


def alter_partition_requests() -> RequestQueue[AlterPartitionRequest, AlterPartitionResult]:
    return RequestQueue(MAX_PENDING_ALTER_PARTITION_REQUESTS, _error_result)


def _error_result(
    _request: AlterPartitionRequest, error_code: ErrorCode, _message: str | None
) -> AlterPartitionResult:
    return AlterPartitionResult(error_code)


def broker_epoch_error(
    context: ControllerContext, broker_id: int, broker_epoch: int
) -> ErrorCode | None:
    """STALE_BROKER_EPOCH unless `broker_id` is registered with exactly `broker_epoch` (a
    broker that restarted sends its new epoch; one that lost its session, the old one)."""
    known = context.broker_epochs.get(broker_id)
    if broker_id not in context.live_brokers or known != broker_epoch:
        log.info(
            "ignoring a request of broker %d: broker epoch %d, registered %s",
            broker_id,
            broker_epoch,
            known,
        )
        return STALE_BROKER_EPOCH
    return None


async def alter_partition(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    controller_id: int,
    request: AlterPartitionRequest,
) -> AlterPartitionResult:
    """Steps 1-3 of the module docstring for one request."""
    refused = broker_epoch_error(context, request.broker_id, request.broker_epoch)
    if refused is not None:
        return AlterPartitionResult(refused)
    checked: list[tuple[TopicChanges, list[tuple[PartitionChange, TopicPartition | None]]]] = []
    accepted: dict[TopicPartition, PartitionState] = {}
    answers: dict[tuple[int, int], PartitionResult] = {}  # (topic index, partition) -> answer
    for topic_index, topic in enumerate(request.topics):
        name = _topic_name(context, topic)
        entries = []
        for change in topic.partitions:
            tp = None if name is None else (name, change.partition)
            entries.append((change, tp))
            if tp is None:
                answers[(topic_index, change.partition)] = PartitionResult(
                    change.partition, UNKNOWN_TOPIC_ID
                )
                continue
            outcome = _check(context, request, tp, change)
            if isinstance(outcome, PartitionState):
                accepted[tp] = outcome
            else:
                answers[(topic_index, change.partition)] = outcome
        checked.append((topic, entries))
    written = await _write(kafka_zk, context, controller_id, accepted, request)
    topics = []
    for topic_index, (topic, entries) in enumerate(checked):
        results = []
        for change, tp in entries:
            answer = answers.get((topic_index, change.partition))
            if answer is None and tp is not None:
                answer = written[tp]
            if answer is not None:
                results.append(answer)
        topics.append(TopicResult(topic.name, topic.topic_id, results))
    return AlterPartitionResult(NONE, topics)


def _topic_name(context: ControllerContext, topic: TopicChanges) -> str | None:
    if topic.topic_id is None:
        return topic.name
    for name, assignment in context.assignments.items():
        if assignment.topic_id == topic.topic_id:
            return name
    return None


def _check(
    context: ControllerContext,
    request: AlterPartitionRequest,
    tp: TopicPartition,
    change: PartitionChange,
) -> PartitionState | PartitionResult:
    """The state to write, or the answer without a write."""
    versioned = context.partition_states.get(tp)
    if versioned is None or not context.has_partition(tp):
        return PartitionResult(change.partition, UNKNOWN_TOPIC_OR_PARTITION)
    current, zk_version = versioned
    new_isr = [member.broker_id for member in change.new_isr]
    if change.partition_epoch > zk_version or change.leader_epoch > current.leader_epoch:
        return _refused(tp, request, change, NOT_CONTROLLER, "is ahead of the controller's")
    if change.leader_epoch < current.leader_epoch:
        return _refused(tp, request, change, FENCED_LEADER_EPOCH, "has an old leader epoch")
    if current.leader != request.broker_id:
        return _refused(tp, request, change, NOT_LEADER_OR_FOLLOWER, "is not from the leader")
    if new_isr == list(current.isr) and change.leader_recovery_state == RECOVERED:
        # Already so: answered with the current state, whatever partition epoch it names.
        return current_result(change.partition, current, zk_version)
    if change.partition_epoch < zk_version:
        return _refused(tp, request, change, INVALID_UPDATE_VERSION, "has an old partition epoch")
    if change.leader_recovery_state == RECOVERING and len(new_isr) > 1:
        return _refused(tp, request, change, INVALID_REQUEST, "is recovering with ISR > 1")
    if change.leader_recovery_state == RECOVERING:
        return _refused(tp, request, change, INVALID_REQUEST, "goes RECOVERED to RECOVERING")
    ineligible = _ineligible(context, change.new_isr)
    if ineligible:
        refusal = (
            INELIGIBLE_REPLICA
            if request.version >= FIRST_VERSION_WITH_TOPIC_IDS
            else OPERATION_NOT_ATTEMPTED
        )
        return _refused(tp, request, change, refusal, f"names ineligible replicas {ineligible}")
    return PartitionState(
        leader=request.broker_id,
        leader_epoch=current.leader_epoch,
        isr=new_isr,
        controller_epoch=context.epoch,
    )


def _ineligible(context: ControllerContext, new_isr: Sequence[IsrMember]) -> list[int]:
    """Members that may not be in an ISR: not registered, shutting down (Kafka's liveBrokerIds
    leaves them out), or named with another registration's broker epoch."""
    return [
        member.broker_id
        for member in new_isr
        if member.broker_id not in context.live_brokers
        or member.broker_id in context.shutting_down_brokers
        or (
            member.broker_epoch != NO_BROKER_EPOCH
            and member.broker_epoch != context.broker_epochs.get(member.broker_id)
        )
    ]


def _refused(
    tp: TopicPartition,
    request: AlterPartitionRequest,
    change: PartitionChange,
    error_code: ErrorCode,
    why: str,
) -> PartitionResult:
    log.info(
        "AlterPartition of %s-%d from broker %d refused (%s): ISR %s, leader epoch %d, "
        "partition epoch %d %s",
        *tp,
        request.broker_id,
        error_code.name,
        [member.broker_id for member in change.new_isr],
        change.leader_epoch,
        change.partition_epoch,
        why,
    )
    return PartitionResult(change.partition, error_code)


def current_result(partition: int, state: PartitionState, zk_version: int) -> PartitionResult:
    return PartitionResult(
        partition,
        NONE,
        leader=state.leader,
        leader_epoch=state.leader_epoch,
        isr=tuple(state.isr),
        partition_epoch=zk_version,
    )


async def _write(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    controller_id: int,
    accepted: dict[TopicPartition, PartitionState],
    request: AlterPartitionRequest,
) -> dict[TopicPartition, PartitionResult]:
    """Write each accepted state, fenced and conditional on the zkVersion the request named
    (the context's). ControllerMovedError propagates: the controller resigns and the request
    is answered NOT_CONTROLLER."""

    async def write_one(tp: TopicPartition, state: PartitionState) -> PartitionResult:
        old_state, zk_version = context.partition_states[tp]
        try:
            version = await kafka_zk.update_partition_state(
                context.epoch_zk_version, *tp, state, zk_version
            )
        except BadVersionError:
            # Only the controller writes states once leaders send AlterPartition; a leader of
            # ours writing its own ISR (inter.broker.protocol.version below 2.7) got there
            # first.
            return PartitionResult(tp[1], INVALID_UPDATE_VERSION)
        except NoNodeError:
            return PartitionResult(tp[1], UNKNOWN_TOPIC_OR_PARTITION)
        context.partition_states[tp] = (state, version)
        reason = (
            ChangeReason.ISR_SHRINK
            if set(state.isr) < set(old_state.isr)
            else ChangeReason.ISR_EXPAND
        )
        partition_changed(
            controller_id,
            context.epoch,
            *tp,
            state.leader,
            state.leader_epoch,
            list(state.isr),
            version,
            reason,
        )
        log.debug("AlterPartition of %s-%d from broker %d: %s", *tp, request.broker_id, state)
        return current_result(tp[1], state, version)

    items = list(accepted.items())
    results = await bounded_gather([write_one(tp, state) for tp, state in items])
    return {tp: result for (tp, _), result in zip(items, results, strict=True)}
