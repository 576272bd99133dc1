"""AlterReplicaLogDirs: v0-v2 (the range Kafka 3.0 to 3.9 advertise; v0 derived from kio's v1).

Moves this broker's replicas between its log dirs (see `broker.replication.alter_log_dirs`
for each partition's error code). A partition named under several directories goes to the
last one, as Kafka's request map keeps it. Results are grouped by topic, topics and
partitions in the order the request first names them. The answer comes once every future log
is created; the copying goes on afterwards (DescribeLogDirs shows its progress).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class

TopicPartition = tuple[str, int]


async def handle(context: RequestContext, request: Any) -> Any:
    mover = context.services.log_dir_mover
    wanted: dict[TopicPartition, str] = {}
    for log_dir in request.dirs:
        for topic in log_dir.topics:
            for partition in topic.partitions:
                wanted[(topic.name, int(partition))] = log_dir.path
    errors = {key: await mover.alter(key, path) for key, path in wanted.items()}
    cls = response_class(ApiKey.ALTER_REPLICA_LOG_DIRS, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "results": _by_topic(errors)})


def _by_topic(errors: dict[TopicPartition, ErrorCode]) -> list[dict[str, Any]]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), error in errors.items():
        topics.setdefault(topic, []).append({"partition_index": partition, "error_code": error})
    return [{"topic_name": topic, "partitions": parts} for topic, parts in topics.items()]
