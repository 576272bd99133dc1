"""Topic auto-creation on Metadata requests (`auto.create.topics.enable`).

As in classic Kafka, any broker may create a topic for a Metadata request by writing its
znodes; the controller then notices the new topic and elects its leaders.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from controller.assignment import assign_replicas_to_brokers, validate_topic_name
from controller.errors import ApiError
from zk.errors import TopicExistsError
from zk.znodes import new_kafka_uuid

if TYPE_CHECKING:
    from broker.server import KafkaServer

log = logging.getLogger(__name__)


async def auto_create_topic(server: KafkaServer, topic: str) -> ErrorCode:
    """Create `topic` with the broker defaults; return the error to report for it now."""
    try:
        validate_topic_name(topic)
        assignment = assign_replicas_to_brokers(
            list(server.metadata_cache.live_brokers()),
            server.config["num.partitions"],
            server.config["default.replication.factor"],
        )
    except ApiError as error:
        log.info("not auto-creating topic %r: %s", topic, error.message)
        return ErrorCode(error.error_code)
    try:
        await server.kafka_zk.create_topic(topic, assignment, {}, new_kafka_uuid())
        log.info("auto-created topic %s with assignment %s", topic, assignment)
    except TopicExistsError:
        pass  # another broker created it first; its leaders are on their way
    return ErrorCode.leader_not_available
