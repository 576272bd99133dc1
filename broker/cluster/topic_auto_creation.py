"""Topic auto-creation on Metadata requests (`auto.create.topics.enable`).

As in classic Kafka, any broker may create a topic for a Metadata request by writing its
znodes; the controller then notices the new topic and elects its leaders.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from broker.coordinator.group.offsets import OFFSETS_TOPIC
from controller.errors import TOPIC_ALREADY_EXISTS, ApiError
from controller.topic_creation import NewTopic, plan_new_topic
from zk.errors import TopicExistsError
from zk.znodes import new_kafka_uuid

if TYPE_CHECKING:
    from broker.services import HandlerServices

log = logging.getLogger(__name__)


async def auto_create_topic(services: HandlerServices, topic: str) -> ErrorCode:
    """Create `topic` with the broker defaults; return the error to report for it now."""
    if topic == OFFSETS_TOPIC:
        # Created with its own layout (partition count, compaction), as Kafka does.
        await services.group_coordinator.create_offsets_topic()
        return ErrorCode.leader_not_available
    cache = services.metadata_cache
    live = cache.live_brokers()
    try:
        plan = plan_new_topic(
            NewTopic(topic),
            existing_topics=cache.topic_names(),
            topics_queued_for_deletion=(),
            live_brokers=list(live),
            config=services.controller_config,
            broker_racks={broker: registration.rack for broker, registration in live.items()},
        )
    except ApiError as error:
        if error.error_code == TOPIC_ALREADY_EXISTS:
            return ErrorCode.leader_not_available  # created meanwhile; leaders on their way
        log.info("not auto-creating topic %r: %r", topic, error.message)
        return error.error_code
    try:
        await services.kafka_zk.create_topic(topic, plan.assignment, plan.configs, new_kafka_uuid())
        log.info("auto-created topic %s with assignment %s", topic, plan.assignment)
    except TopicExistsError:
        pass  # another broker created it first; its leaders are on their way
    return ErrorCode.leader_not_available
