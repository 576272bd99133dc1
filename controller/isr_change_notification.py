"""ISR change notifications: a leader rewrote ISRs (a conditional write that bumped the state's
zkVersion) and created /isr_change_notification/isr_change_<seq>. The controller re-reads the
partitions named, so that its next write is conditional on the leader's zkVersion and decides
from the current ISR, then deletes the notifications (Kafka's processIsrChangeNotification and
updateLeaderAndIsrCache). Brokers learn the ISR from the state znode's watch, so there is no
UpdateMetadata to send.
"""

from __future__ import annotations

import logging

from controller.context import ControllerContext, TopicPartition
from controller.reassignment import Reassignments
from controller.zk_api import ControllerZk, PartitionState
from zk.znodes import ZnodeDecodeError

log = logging.getLogger(__name__)

# Notifications handled by one event: bounds its reads and deletes in flight (they pile up
# while there is no controller). Any beyond it are left for an event queued at once.
MAX_ISR_CHANGE_NOTIFICATIONS_PER_EVENT = 1000
# Partitions named in one log line about many.
MAX_LOGGED_PARTITIONS = 20


async def on_isr_change_notification(
    kafka_zk: ControllerZk, context: ControllerContext, reassignments: Reassignments | None
) -> bool:
    """Handle up to MAX_ISR_CHANGE_NOTIFICATIONS_PER_EVENT notifications; True when more wait
    (the caller queues another event for them)."""
    names = await kafka_zk.get_isr_change_notifications()
    if not names:
        return False
    batch = names[:MAX_ISR_CHANGE_NOTIFICATIONS_PER_EVENT]
    named = await kafka_zk.read_isr_change_notifications(batch)
    known = [tp for tp in named if context.has_partition(tp)]
    unknown = [tp for tp in named if not context.has_partition(tp)]
    if unknown:
        # A topic deleted (or not yet seen) since the leader wrote: nothing to refresh.
        log.info(
            "ISR change notifications name %d unknown partitions, ignored: %s%s",
            len(unknown),
            unknown[:MAX_LOGGED_PARTITIONS],
            " ..." if len(unknown) > MAX_LOGGED_PARTITIONS else "",
        )
    if known:
        states = await kafka_zk.get_many_partition_states(
            known, on_malformed=_log_malformed_partition_state
        )
        for tp, versioned in states.items():
            # A vanished state belongs to a topic being deleted: a TopicChange follows.
            if versioned is not None:
                _adopt_leader_state(context, tp, versioned)
        if reassignments is not None:
            await reassignments.maybe_complete(known)
    # Malformed and vanished notifications go too: nothing in them can be acted on.
    await kafka_zk.delete_isr_change_notifications(context.epoch_zk_version, batch)
    return len(names) > len(batch)


def _adopt_leader_state(
    context: ControllerContext,
    tp: TopicPartition,
    versioned: tuple[PartitionState, int],
) -> None:
    previous = context.partition_states.get(tp)
    context.partition_states[tp] = versioned
    if previous == versioned:
        return
    state, zk_version = versioned
    if previous is None:
        log.info("partition %s-%d: adopted %s (zkVersion %d)", *tp, state, zk_version)
        return
    old_state, old_version = previous
    log.info(
        "partition %s-%d: ISR %s -> %s, leader %d, zkVersion %d -> %d (leader's change)",
        *tp,
        old_state.isr,
        state.isr,
        state.leader,
        old_version,
        zk_version,
    )


def _log_malformed_partition_state(path: str, error: ZnodeDecodeError) -> None:
    # The context keeps what it had: a malformed state cannot be adopted, and dropping the
    # partition from the context would make the controller create its state again.
    log.warning("ignoring ISR change of %s, its state does not decode: %s", path, error)
