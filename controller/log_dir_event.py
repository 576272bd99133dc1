"""Log dir event notifications: a broker's log dir failed (KIP-112). The broker wrote the
replicas it lost to `/brokers/offline_replicas/<id>`, then created
`/log_dir_event_notification/log_dir_event_<seq>`. The controller reads which brokers the
notifications name, takes their offline replicas into its context, and elects new leaders for
the partitions those replicas led and drops them from ISRs (as Kafka's onBrokerLogDirFailure
and onReplicasBecomeOffline do once LeaderAndIsr responses name them), then deletes the
notifications. The brokers keep serving their other replicas.
"""

from __future__ import annotations

import logging

from controller.context import ControllerContext
from controller.partition_state_machine import PartitionStateMachine
from controller.state_change_log import ChangeReason
from controller.zk_api import ControllerZk

log = logging.getLogger(__name__)

# Notifications handled by one event: bounds its reads and deletes in flight. Any beyond it
# are left for an event queued at once.
MAX_LOG_DIR_EVENTS_PER_EVENT = 1000


async def on_log_dir_event_notification(
    kafka_zk: ControllerZk, context: ControllerContext, partitions: PartitionStateMachine
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
        found = await kafka_zk.get_offline_replicas(live)
        for broker_id, offline in found.items():
            if offline:
                context.offline_replicas[broker_id] = offline
            else:
                context.offline_replicas.pop(broker_id, None)
            log.info("broker %d has %d replicas in failed log dirs", broker_id, len(offline))
        affected = sorted({tp for b in live for tp in context.partitions_on_broker(b)})
        await partitions.reconcile(affected, ChangeReason.LOG_DIR_FAILURE)
    # A dead broker's replicas are all offline anyway: its notification only goes.
    await kafka_zk.delete_log_dir_event_notifications(context.epoch_zk_version, batch)
    return len(names) > len(batch)
