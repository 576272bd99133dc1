"""Controlled shutdown, the controller's side (Kafka's KafkaController.doControlledShutdown).

A broker about to stop sends ControlledShutdown to the controller; the handler queues it here
and a `ControlledShutdownRequested` event carries it out on the controller's event task:

1. the broker is marked shutting down in the context: live (it keeps serving until it exits)
   but never elected, until it deregisters or re-registers;
2. each partition it leads (replication factor above 1, topic not being deleted) gets the first
   assigned replica that is live, in the ISR and not shutting down as leader, and an ISR
   without the shutting-down brokers (ControlledShutdownPartitionLeaderElectionStrategy);
3. each partition it follows loses it from the ISR, unless it is the last member (Kafka's
   OfflineReplica transition), so acks=all produce stops waiting for it;
4. the answer lists the partitions it still leads (no other replica qualified): the broker
   retries after `controlled.shutdown.retry.backoff.ms`.
Every write goes through the partition state machine with reason CONTROLLED_SHUTDOWN; steps 2
and 3 share one pipeline of writes, the moves first (Kafka finishes 2 before it starts 3).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from controller.context import ControllerContext, TopicPartition
from controller.election import LeaderAndIsr
from controller.errors import BROKER_NOT_AVAILABLE, NONE, STALE_BROKER_EPOCH
from controller.partition_state_machine import PartitionStateMachine
from controller.request_queue import RequestQueue
from controller.state_change_log import ChangeReason

log = logging.getLogger(__name__)

UNKNOWN_BROKER_EPOCH = -1  # ControlledShutdown v0-v1 cannot name the broker epoch
# Requests waiting for the controller's event task. Each broker sends one at a time, so this
# is far above any real cluster; beyond it a request is answered NOT_CONTROLLER at once.
MAX_PENDING_SHUTDOWN_REQUESTS = 10_000
# Partitions named in one log line.
MAX_LOGGED_PARTITIONS = 20


@dataclass(frozen=True, slots=True)
class ShutdownResult:
    """The answer: an error code and the partitions the broker still leads."""

    error_code: ErrorCode
    remaining_partitions: list[TopicPartition] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ShutdownRequest:
    """A ControlledShutdown request waiting in the controller's `RequestQueue`."""

    broker_id: int
    broker_epoch: int


def shutdown_requests() -> RequestQueue[ShutdownRequest, ShutdownResult]:
    return RequestQueue(MAX_PENDING_SHUTDOWN_REQUESTS, _error_result)


def _error_result(
    _request: ShutdownRequest, error_code: ErrorCode, _message: str | None
) -> ShutdownResult:
    return ShutdownResult(error_code)


# Decides one partition's new leader and ISR for a broker in controlled shutdown (None: no
# write).
_Decide = Callable[[ControllerContext, TopicPartition, int], LeaderAndIsr | None]


def leader_for_controlled_shutdown(
    assignment: list[int], isr: list[int], live_brokers: set[int], shutting_down: set[int]
) -> LeaderAndIsr | None:
    """The first assigned replica that is live, in the ISR and not shutting down leads; the
    ISR loses the shutting-down brokers. None when nobody qualifies (the leader stays)."""
    for replica in assignment:
        if replica in live_brokers and replica in isr and replica not in shutting_down:
            return LeaderAndIsr(replica, [m for m in isr if m not in shutting_down])
    return None


def isr_without_follower(leader: int, isr: list[int], broker_id: int) -> LeaderAndIsr | None:
    """The follower leaves the ISR; None when it is not in it or is its last member (an empty
    ISR would leave no replica a clean election could pick)."""
    if broker_id not in isr or len(isr) <= 1:
        return None
    return LeaderAndIsr(leader, [m for m in isr if m != broker_id])


async def shut_down_broker(
    context: ControllerContext,
    partitions: PartitionStateMachine,
    request: ShutdownRequest,
) -> ShutdownResult:
    """Steps 1-4 of the module docstring for one request."""
    broker_id, broker_epoch = request.broker_id, request.broker_epoch
    known_epoch = context.broker_epochs.get(broker_id)
    stale = known_epoch is not None and broker_epoch < known_epoch
    if broker_epoch != UNKNOWN_BROKER_EPOCH and stale:
        log.info(
            "controlled shutdown of broker %d refused: broker epoch %d is older than %s",
            broker_id,
            broker_epoch,
            known_epoch,
        )
        return ShutdownResult(STALE_BROKER_EPOCH)
    if broker_id not in context.live_brokers:
        log.info("controlled shutdown of broker %d refused: it is not registered", broker_id)
        return ShutdownResult(BROKER_NOT_AVAILABLE)
    context.shutting_down_brokers.add(broker_id)
    log.info(
        "shutting down broker %d; brokers shutting down: %s",
        broker_id,
        sorted(context.shutting_down_brokers),
    )
    candidates = _partitions_to_act_on(context, broker_id)
    led = [tp for tp in candidates if context.partition_states[tp][0].leader == broker_id]
    led_set = set(led)
    followed = [tp for tp in candidates if tp not in led_set]
    # One pipeline of writes, the moves first: the ISR removals need not wait for the last
    # move's batch to come back (3,333 of them behind 1,667 moves in a 5,000-partition cluster).
    await _write_until_settled(context, partitions, led + followed, broker_id, _move_or_leave)
    remaining = _partitions_led(context, broker_id)
    if remaining:
        log.info(
            "broker %d still leads %d partitions (no other replica qualifies): %s%s",
            broker_id,
            len(remaining),
            remaining[:MAX_LOGGED_PARTITIONS],
            " ..." if len(remaining) > MAX_LOGGED_PARTITIONS else "",
        )
    return ShutdownResult(NONE, remaining)


def _partitions_to_act_on(context: ControllerContext, broker_id: int) -> list[TopicPartition]:
    """Kafka acts only where another replica could take over and the topic stays."""
    return [
        tp
        for tp in context.partitions_on_broker(broker_id)
        if len(context.replicas(tp)) > 1
        and tp in context.partition_states
        and tp[0] not in context.topics_queued_for_deletion
    ]


def _partitions_led(context: ControllerContext, broker_id: int) -> list[TopicPartition]:
    """Kafka's partitionLeadersOnBroker: what the broker still leads that could move."""
    return [
        tp
        for tp in _partitions_to_act_on(context, broker_id)
        if context.partition_states[tp][0].leader == broker_id
    ]


def _move_leadership(
    context: ControllerContext, tp: TopicPartition, broker_id: int
) -> LeaderAndIsr | None:
    state, _ = context.partition_states[tp]
    if state.leader != broker_id:
        return None  # moved meanwhile (a re-read after a lost race)
    return leader_for_controlled_shutdown(
        context.replicas(tp),
        list(state.isr),
        context.live_replicas(tp),
        context.shutting_down_brokers,
    )


def _move_or_leave(
    context: ControllerContext, tp: TopicPartition, broker_id: int
) -> LeaderAndIsr | None:
    """Steps 2 and 3 for one partition, from its state when the decision is made."""
    state, _ = context.partition_states[tp]
    if state.leader == broker_id:
        return _move_leadership(context, tp, broker_id)
    return isr_without_follower(state.leader, list(state.isr), broker_id)


async def _write_until_settled(
    context: ControllerContext,
    partitions: PartitionStateMachine,
    pending: list[TopicPartition],
    broker_id: int,
    decide: _Decide,
) -> None:
    async def decide_one(tp: TopicPartition) -> LeaderAndIsr | None:
        if tp not in context.partition_states:
            return None  # the topic went away
        if broker_id not in context.shutting_down_brokers:
            return None  # a retry after the broker stopped or restarted: nothing to move
        return decide(context, tp, broker_id)

    outcome = await partitions.decide_and_write(
        pending, decide_one, ChangeReason.CONTROLLED_SHUTDOWN
    )
    # Kafka retries until the writes settle; here the retry runs on the controller's timer.
    # A leader still here is also in the answer, and the broker asks again after its back-off.
    partitions.retry_later(outcome.unsettled, decide_one, ChangeReason.CONTROLLED_SHUTDOWN)
