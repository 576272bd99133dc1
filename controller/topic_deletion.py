"""Deleting topics marked under /admin/delete_topics.

For each marked topic the controller first takes every partition offline (leader -1, a fenced
write brokers see through their partition state watches), then removes the topic's znodes.
Brokers delete their logs when they see the topic vanish from /brokers/topics. With
delete.topic.enable=false the markers are removed instead, as Kafka's controller does, rather
than re-read (and logged) on every event.
"""

from __future__ import annotations

import logging

from controller.context import ControllerContext
from controller.partition_state_machine import PartitionStateMachine
from controller.zk_api import ControllerZk

log = logging.getLogger(__name__)


async def on_topic_deletion(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    partitions: PartitionStateMachine,
    delete_topic_enable: bool,
) -> None:
    """The children of /admin/delete_topics changed: re-read them and act on them."""
    context.topics_queued_for_deletion = set(await kafka_zk.get_topics_pending_deletion())
    await delete_marked_topics(kafka_zk, context, partitions, delete_topic_enable)


async def delete_marked_topics(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    partitions: PartitionStateMachine,
    delete_topic_enable: bool,
) -> None:
    """Delete each topic queued for deletion; a marker for a topic that no longer exists is
    just removed."""
    if not context.topics_queued_for_deletion:
        return
    if not delete_topic_enable:
        topics = sorted(context.topics_queued_for_deletion)
        log.info("delete.topic.enable=false: removing deletion markers of %s", topics)
        await kafka_zk.delete_topic_deletion_markers(context.epoch_zk_version, topics)
        context.topics_queued_for_deletion.clear()
        return
    for topic in sorted(context.topics_queued_for_deletion):
        await partitions.take_offline(context.partitions_of([topic]))
        await kafka_zk.delete_topic_znodes(context.epoch_zk_version, topic)
        context.remove_topic(topic)
        log.info("deleted topic %s", topic)
