"""What the group and transaction coordinators share about their internal topics
(`__consumer_offsets`, `__transaction_state`): finding the broker that leads a key's
partition, and creating the topic on first use.

As in Kafka, the topic is created on the first FindCoordinator that needs it, with its
configured partition count and replication factor, and only once that many brokers are alive
(COORDINATOR_NOT_AVAILABLE meanwhile, which clients retry).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from controller.errors import ApiError
from controller.topic_creation import NewTopic, plan_new_topic
from zk.errors import TopicExistsError
from zk.znodes import new_kafka_uuid

if TYPE_CHECKING:
    from broker.cluster.metadata_cache import MetadataCache
    from controller.config import ControllerConfig
    from zk.kafka_zk import KafkaZk

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CoordinatorAddress:
    error: ErrorCode
    node_id: int = -1
    host: str = ""
    port: int = -1


@dataclass(frozen=True, slots=True)
class InternalTopic:
    name: str
    partition_count: int
    replication_factor: int
    configs: dict[str, str]


class InternalTopics:
    """Finds and creates the coordinators' internal topics, for both coordinators."""

    def __init__(
        self, metadata_cache: MetadataCache, kafka_zk: KafkaZk, controller_config: ControllerConfig
    ) -> None:
        self._metadata_cache = metadata_cache
        self._kafka_zk = kafka_zk
        self._controller_config = controller_config

    async def find_leader(
        self, topic: InternalTopic, partition: int, listener_name: str
    ) -> CoordinatorAddress:
        """The broker leading `partition` of `topic`, on `listener_name`; creates the topic
        when it does not exist yet."""
        cache = self._metadata_cache
        partitions = cache.partitions(topic.name)
        if partitions is None:
            await self.create(topic)
            return CoordinatorAddress(ErrorCode.coordinator_not_available)
        found = next((p for p in partitions if p.partition == partition), None)
        if found is None or not cache.is_leader_available(found):
            return CoordinatorAddress(ErrorCode.coordinator_not_available)
        registration = cache.live_brokers().get(found.leader_id)
        endpoint = None
        if registration is not None:
            prefix = f"{listener_name}://"
            endpoint = next((e for e in registration.endpoints if e.startswith(prefix)), None)
        if endpoint is None:
            return CoordinatorAddress(ErrorCode.coordinator_not_available)
        host, _, port = endpoint[len(listener_name) + 3 :].rpartition(":")
        return CoordinatorAddress(ErrorCode.none, found.leader_id, host, int(port))

    async def create(self, topic: InternalTopic) -> None:
        registrations = self._metadata_cache.live_brokers()
        live = list(registrations)
        if len(live) < topic.replication_factor:
            log.info(
                "not creating %s yet: %d live brokers, replication factor %d",
                topic.name,
                len(live),
                topic.replication_factor,
            )
            return
        new_topic = NewTopic(
            topic.name,
            num_partitions=topic.partition_count,
            replication_factor=topic.replication_factor,
            configs={name: value for name, value in topic.configs.items()},
        )
        try:
            racks = {broker: registration.rack for broker, registration in registrations.items()}
            plan = plan_new_topic(
                new_topic, [], (), live, self._controller_config, broker_racks=racks
            )
            await self._kafka_zk.create_topic(
                topic.name, plan.assignment, plan.configs, new_kafka_uuid()
            )
            log.info("created %s with %d partitions", topic.name, len(plan.assignment))
        except TopicExistsError:
            pass  # another broker created it first
        except ApiError as error:
            log.warning("cannot create %s: %s", topic.name, error.message)
