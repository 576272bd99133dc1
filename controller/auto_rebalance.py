"""Automatic leader rebalancing (auto.leader.rebalance.enable): Kafka's
checkAndTriggerAutoLeaderRebalance and the timer that runs it.

Every leader.imbalance.check.interval.seconds the controller groups partitions by their
preferred replica (the first assigned one). For each such broker, the imbalance ratio is the
share of its partitions that another broker leads; above
leader.imbalance.per.broker.percentage, a preferred election runs for those of them whose
preferred replica is alive and in the ISR. The first check runs 5 s after failover, as Kafka's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from controller.context import ControllerContext, TopicPartition
from controller.election import elect_preferred_leader
from controller.partition_state_machine import PartitionStateMachine
from controller.preferred_election import ElectionTrigger, ElectionType, elect_leaders
from controller.zk_api import ControllerZk

log = logging.getLogger(__name__)

# Kafka schedules the first check this long after a controller takes over.
FIRST_CHECK_DELAY_S = 5.0


async def check_leader_balance(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    machine: PartitionStateMachine,
    imbalance_percentage: int,
) -> None:
    """One check: elect the preferred replicas of every broker over the imbalance threshold."""
    candidates = partitions_to_rebalance(context, imbalance_percentage)
    if candidates:
        await elect_leaders(
            kafka_zk, context, machine, candidates, ElectionType.PREFERRED, ElectionTrigger.AUTO
        )


def partitions_to_rebalance(
    context: ControllerContext, imbalance_percentage: int
) -> list[TopicPartition]:
    """The partitions a rebalance check moves back to their preferred replica: those of every
    broker whose imbalance ratio exceeds the percentage, where that replica can lead."""
    threshold = imbalance_percentage / 100
    candidates: list[TopicPartition] = []
    for broker, partitions in sorted(_by_preferred_broker(context).items()):
        not_led = _not_led_by(context, broker, partitions)
        ratio = len(not_led) / len(partitions)
        if ratio <= threshold:
            continue
        log.info("leader imbalance ratio of broker %d is %.2f", broker, ratio)
        candidates.extend(tp for tp in not_led if _preferred_can_lead(context, tp))
    return candidates


def _by_preferred_broker(context: ControllerContext) -> dict[int, list[TopicPartition]]:
    groups: dict[int, list[TopicPartition]] = {}
    for tp in context.all_partitions():
        replicas = context.replicas(tp)
        if replicas and tp[0] not in context.topics_queued_for_deletion:
            groups.setdefault(replicas[0], []).append(tp)
    return groups


def _not_led_by(
    context: ControllerContext, broker: int, partitions: list[TopicPartition]
) -> list[TopicPartition]:
    # A partition without a state yet is not counted, as Kafka counts only known leadership.
    return [
        tp
        for tp in partitions
        if tp in context.partition_states and context.partition_states[tp][0].leader != broker
    ]


def _preferred_can_lead(context: ControllerContext, tp: TopicPartition) -> bool:
    state = context.partition_states[tp][0]
    decision = elect_preferred_leader(
        context.replicas(tp), state.isr, context.live_replicas(tp), context.shutting_down_brokers
    )
    return decision is not None


class RebalanceTimer:
    """Enqueues the periodic check; re-armed by the controller after each check, so checks
    never overlap and a slow one delays the next (Kafka's one-shot rescheduling)."""

    def __init__(self, enqueue_check: Callable[[], None]) -> None:
        self._enqueue_check = enqueue_check
        self._handle: asyncio.TimerHandle | None = None

    def schedule(self, delay_s: float) -> None:
        self.cancel()
        self._handle = asyncio.get_running_loop().call_later(delay_s, self._fire)

    def cancel(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.cancel()

    def _fire(self) -> None:
        self._handle = None
        self._enqueue_check()
