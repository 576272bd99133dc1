"""Log dir event notifications: a broker's log dir failed (KIP-112). The broker created
`/log_dir_event_notification/log_dir_event_<seq>`; the controller reads which brokers the
notifications name and, as Kafka's onBrokerLogDirFailure does, sends each of them LeaderAndIsr
for every replica it hosts: the answer names the replicas it lost with KAFKA_STORAGE_ERROR
(controller/broker_answers.py marks them offline, elects new leaders for the partitions they
led and drops them from ISRs). That is how an Apache Kafka 3.9 broker tells it. Our brokers
also write the replicas they lost to `/brokers/offline_replicas/<id>` before the notification
(and before each registration), which the controller acts on at once; they answer the same
LeaderAndIsr with KAFKA_STORAGE_ERROR for the same replicas. Offline replicas are remembered
until the broker registers again. The notifications are then deleted; the brokers keep
serving their other replicas.
"""

from __future__ import annotations

import logging

from controller.broker_requests import ExtraRequests
from controller.context import ControllerContext
from controller.partition_state_machine import PartitionStateMachine
from controller.state_change_log import ChangeReason
from controller.topic_deletion import TopicDeletionManager
from controller.zk_api import ControllerZk

log = logging.getLogger(__name__)

# Notifications handled by one event: bounds its reads and deletes in flight. Any beyond it
# are left for an event queued at once.
MAX_LOG_DIR_EVENTS_PER_EVENT = 1000


async def on_log_dir_event_notification(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    partitions: PartitionStateMachine,
    extra_requests: ExtraRequests,
    deletion: TopicDeletionManager | None = None,
) -> bool:
    """Handle up to MAX_LOG_DIR_EVENTS_PER_EVENT notifications; True when more wait (the
    caller queues another event for them)."""
    names = await kafka_zk.get_log_dir_event_notifications()
    if not names:
        return False
    batch = names[:MAX_LOG_DIR_EVENTS_PER_EVENT]
    brokers = await kafka_zk.read_log_dir_event_brokers(batch)
    live = sorted(b for b in brokers if b in context.live_brokers)
    if live:
        log.info("handling log dir failures of brokers %s", live)
        found = await kafka_zk.get_offline_replicas(live)
        newly_offline: list[tuple[str, int, int]] = []
        for broker_id, offline in found.items():
            previous = context.offline_replicas.get(broker_id, frozenset())
            if offline - previous:
                # A log dir does not come back while the broker runs: only more go offline.
                context.offline_replicas[broker_id] = previous | offline
                newly_offline.extend((*tp, broker_id) for tp in sorted(offline - previous))
            log.info("broker %d lists %d replicas in failed log dirs", broker_id, len(offline))
        affected = sorted({tp for b in live for tp in context.partitions_on_broker(b)})
        await partitions.reconcile(affected, ChangeReason.LOG_DIR_FAILURE)
        if deletion is not None and newly_offline:
            await deletion.on_replicas_offline(newly_offline)
        extra_requests.leader_and_isr_to.update(live)
    # A dead broker's replicas are all offline anyway: its notification only goes.
    await kafka_zk.delete_log_dir_event_notifications(context.epoch_zk_version, batch)
    return len(names) > len(batch)
