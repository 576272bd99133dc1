"""CreateTopics and DeleteTopics as the active controller serves them.

They run outside the event queue (as Kafka's admin manager does): they read the controller's
context and write the request znodes (/brokers/topics/<t> with /config/topics/<t>, or
/admin/delete_topics/<t>); the rest happens when the controller's watches see those znodes.
"""

from __future__ import annotations

import logging
import random
from collections import Counter

from controller.config import ControllerConfig
from controller.context import ControllerContext
from controller.errors import (
    INVALID_PARTITIONS,
    INVALID_REQUEST,
    NONE,
    TOPIC_ALREADY_EXISTS,
    TOPIC_DELETION_DISABLED,
    UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_OR_PARTITION,
    ApiError,
    TopicError,
)
from controller.topic_creation import (
    USE_DEFAULT,
    NewTopic,
    plan_new_topic,
    topic_exists_message,
)
from controller.zk_api import ControllerZk
from zk.errors import NodeExistsError, TopicExistsError, ZkError
from zk.znodes import new_kafka_uuid

log = logging.getLogger(__name__)


async def create_topics(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    config: ControllerConfig,
    rng: random.Random,
    topics: list[NewTopic],
    validate_only: bool,
) -> dict[str, TopicError]:
    """Per-topic Kafka error code and message (NONE on success)."""
    counts = Counter(topic.name for topic in topics)
    results: dict[str, TopicError] = {
        name: TopicError(
            INVALID_REQUEST,
            f"Create topics request contains multiple entries for the topic {name}.",
        )
        for name, count in counts.items()
        if count > 1
    }
    partitions_left = config.create_topics_max_partitions
    for topic in topics:
        if topic.name in results:
            continue
        requested = _requested_partitions(topic, config)
        if requested > partitions_left:
            results[topic.name] = TopicError(
                INVALID_PARTITIONS,
                f"Excessively large number of partitions per request: more than"
                f" {config.create_topics_max_partitions} (create.topics.max.partitions)",
            )
            continue
        partitions_left -= max(requested, 0)
        results[topic.name] = await _create_topic(
            kafka_zk, context, config, rng, topic, validate_only
        )
    return results


def _requested_partitions(topic: NewTopic, config: ControllerConfig) -> int:
    if topic.assignments:
        return len(topic.assignments)
    if topic.num_partitions == USE_DEFAULT:
        return config.num_partitions
    return topic.num_partitions


async def _create_topic(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    config: ControllerConfig,
    rng: random.Random,
    topic: NewTopic,
    validate_only: bool,
) -> TopicError:
    try:
        plan = plan_new_topic(
            topic,
            existing_topics=context.assignments.keys(),
            topics_queued_for_deletion=context.topics_queued_for_deletion,
            live_brokers=context.live_brokers,
            config=config,
            rng=rng,
            broker_racks=context.live_broker_racks(),
        )
        if not validate_only:
            await kafka_zk.create_topic(topic.name, plan.assignment, plan.configs, new_kafka_uuid())
    except ApiError as error:
        return error.to_topic_error()
    except TopicExistsError:
        # Created by someone else after our context last saw the topic list.
        return TopicError(TOPIC_ALREADY_EXISTS, topic_exists_message(topic.name))
    except ZkError as error:
        log.warning("creating topic %s failed", topic.name, exc_info=True)
        return TopicError(UNKNOWN_SERVER_ERROR, str(error))
    return TopicError(NONE)


async def delete_topics(
    kafka_zk: ControllerZk,
    context: ControllerContext,
    config: ControllerConfig,
    names: list[str],
) -> dict[str, int]:
    """Mark each existing topic for deletion; a Kafka error code per topic."""
    if not config.delete_topic_enable:
        return dict.fromkeys(names, TOPIC_DELETION_DISABLED)
    return {name: await _mark_for_deletion(kafka_zk, context, name) for name in names}


async def _mark_for_deletion(kafka_zk: ControllerZk, context: ControllerContext, name: str) -> int:
    try:
        # The context may not have seen a topic created a moment ago: ask ZooKeeper.
        if name not in context.assignments and await kafka_zk.get_topic_assignment(name) is None:
            return UNKNOWN_TOPIC_OR_PARTITION
        await kafka_zk.mark_topic_for_deletion(name)
    except NodeExistsError:
        return NONE  # already marked: the deletion is under way
    except ZkError:
        log.warning("marking topic %s for deletion failed", name, exc_info=True)
        return UNKNOWN_SERVER_ERROR
    return NONE
