"""DescribeProducers v0: the producers a partition leader's producer state remembers, with
their open transaction's first offset (`kafka-transactions describe-producers` and
`find-hanging`). As in Kafka, any replica answers from its own log (a follower too: the tool's
--broker-id); a partition this broker does not host gets NOT_LEADER_OR_FOLLOWER, an unknown
one UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.log.producer_state import ActiveProducer
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class


async def handle(context: RequestContext, request: Any) -> Any:
    topics = [
        {
            "name": topic.name,
            "partitions": [
                _partition(context, topic.name, int(p)) for p in topic.partition_indexes
            ],
        }
        for topic in request.topics
    ]
    cls = response_class(ApiKey.DESCRIBE_PRODUCERS, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "topics": topics})


def _partition(context: RequestContext, topic: str, index: int) -> dict[str, Any]:
    partition, error = context.services.replica_manager.replica(topic, index)
    if partition is None or partition.log is None:
        code = error if error != ErrorCode.none else ErrorCode.not_leader_or_follower
        return {
            "partition_index": index,
            "error_code": code,
            "error_message": None,
            "active_producers": [],
        }
    producers = partition.log.producer_state.active_producers()
    return {
        "partition_index": index,
        "error_code": ErrorCode.none,
        "error_message": None,
        "active_producers": [_producer(p) for p in producers],
    }


def _producer(producer: ActiveProducer) -> dict[str, Any]:
    return {
        "producer_id": producer.producer_id,
        "producer_epoch": producer.producer_epoch,
        "last_sequence": producer.last_sequence,
        "last_timestamp": producer.last_timestamp,
        "coordinator_epoch": producer.coordinator_epoch,
        "current_txn_start_offset": producer.current_txn_start_offset,
    }
