"""Deleting topics marked under /admin/delete_topics.

For each marked topic the controller first takes every partition offline (leader -1, a fenced
write brokers see through their partition state watches), then removes the topic's znodes.
Brokers delete their logs when they see the topic vanish from /brokers/topics.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from controller.context import ControllerContext
from controller.partition_state_machine import PartitionStateMachine
from controller.zk_api import ControllerZk

log = logging.getLogger(__name__)


async def delete_marked_topics(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    partition_state_machine: PartitionStateMachine,
    marked_topics: Iterable[str],
) -> None:
    """Delete each marked topic; a marker for a topic that no longer exists is just removed."""
    for topic in sorted(marked_topics):
        await partition_state_machine.take_offline(context.partitions_of([topic]))
        await kafka_zk.delete_topic_znodes(context.epoch_zk_version, topic)
        context.remove_topic(topic)
        log.info("deleted topic %s", topic)
