"""Broker membership: registrations and deaths under /brokers/ids (Kafka's
processBrokerChange). A broker whose registration changed between two reads restarted, and may
have lost what it had not flushed, so it is handled as a death followed by a start (Kafka's
bounced brokers).
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from controller.context import ControllerContext
from controller.partition_state_machine import PartitionStateMachine
from controller.state_change_log import ChangeReason, brokers_changed
from controller.zk_api import ControllerZk

log = logging.getLogger(__name__)


class BrokerChanges(NamedTuple):
    started: set[int]  # new or restarted
    failed: set[int]  # dead or restarted (a restart is a death, then a start)


async def on_broker_change(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    partitions: PartitionStateMachine,
    controller_id: int,
) -> BrokerChanges:
    """Elect, shrink ISRs or take partitions offline as brokers came and went; the brokers
    that started (for the reassignments and topic deletions waiting on them) and failed."""
    brokers = await kafka_zk.get_brokers_with_epochs()
    epochs = {broker_id: epoch for broker_id, (_, epoch) in brokers.items()}
    previous = context.broker_epochs
    # Also when no broker came or went: a registration rewritten in place (new endpoints).
    context.broker_registrations = {broker_id: reg for broker_id, (reg, _) in brokers.items()}
    dead = set(previous) - set(epochs)
    new = set(epochs) - set(previous)
    bounced = {b for b in set(epochs) & set(previous) if epochs[b] != previous[b]}
    if not dead and not new and not bounced:
        return BrokerChanges(set(), set())
    log.info(
        "brokers changed: new %s, dead %s, restarted %s",
        sorted(new),
        sorted(dead),
        sorted(bounced),
    )
    brokers_changed(controller_id, context.epoch, new, dead, bounced)
    # Gone or restarted: a controlled shutdown it asked for is over.
    context.shutting_down_brokers -= dead | bounced
    # A started broker wrote its offline replicas (if any) before registering.
    for broker_id in dead:
        context.offline_replicas.pop(broker_id, None)
    if new | bounced:
        started = await kafka_zk.get_offline_replicas(sorted(new | bounced))
        for broker_id, offline in started.items():
            if offline:
                context.offline_replicas[broker_id] = offline
            else:
                context.offline_replicas.pop(broker_id, None)
    if bounced:
        context.live_brokers = set(epochs) - bounced
        await partitions.reconcile(context.all_partitions(), ChangeReason.BROKER_FAILURE)
    context.live_brokers = set(epochs)
    all_topics = sorted(context.assignments)
    await partitions.initialize_partitions(context.partitions_without_state(all_topics))
    reason = ChangeReason.BROKER_FAILURE if dead else ChangeReason.BROKER_STARTUP
    await partitions.reconcile(context.all_partitions(), reason)
    # Recorded last: if a write above fails, the next read sees the same difference again.
    context.broker_epochs = epochs
    return BrokerChanges(new | bounced, dead | bounced)
