"""Topics created or removed under /brokers/topics (Kafka's processTopicChange): the context
follows, new topics' partitions get their first leader and ISR, and their topic znodes are
watched for added partitions.
"""

from __future__ import annotations

from controller.context import ControllerContext, read_topics
from controller.partition_modification import TopicWatches
from controller.partition_state_machine import PartitionStateMachine
from controller.state_change_log import ChangeReason
from controller.zk_api import ControllerZk


async def on_topic_change(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    partitions: PartitionStateMachine,
    topic_watches: TopicWatches,
) -> None:
    topics = set(await kafka_zk.get_all_topics())
    for gone in set(context.assignments) - topics:
        context.remove_topic(gone)
        topic_watches.unwatch([gone])
    new_topics = topics - set(context.assignments)
    if not new_topics:
        return
    for topic, (assignment, states) in (await read_topics(kafka_zk, new_topics)).items():
        context.add_topic(topic, assignment, states)
    topic_watches.watch(new_topics)
    await partitions.initialize_partitions(context.partitions_without_state(new_topics))
    await partitions.reconcile(context.partitions_of(new_topics), ChangeReason.NEW_PARTITION)
