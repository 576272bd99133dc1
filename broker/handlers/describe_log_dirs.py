"""DescribeLogDirs: v0-v2 (Kafka 3.0's range; v0 derived from kio's v1).

One result per configured log dir (its absolute path), listing every topic with a log there
and, per requested partition, the log's size, its offset lag (the high watermark minus the
log end, never below 0, as Kafka's `getLogEndOffsetLag`; -1 when the replica is not hosted
any more) and `is_future_key` false (there are no future logs: AlterReplicaLogDirs is not
implemented). A null topic list asks for every partition. Like Kafka, a topic with a log in a
directory is listed there even when none of its partitions was asked for (with no partitions).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from broker.log.log import Log
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.registry import response_class
from broker.replication.replica_manager import ReplicaManager

DESCRIBE_LOG_DIRS_KEY = 35
INVALID_OFFSET_LAG = -1  # DescribeLogDirsResponse.INVALID_OFFSET_LAG

TopicPartition = tuple[str, int]


async def handle(context: RequestContext, request: Any) -> Any:
    server = context.server
    logs = server.log_manager.all_logs()
    wanted = _wanted(request.topics, logs)
    results = [
        _describe_dir(log_dir, logs, wanted, server.replica_manager)
        for log_dir in server.config.log_dirs
    ]
    cls = response_class(DESCRIBE_LOG_DIRS_KEY, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "results": results})


def _wanted(topics: Any, logs: list[Log]) -> set[TopicPartition]:
    if topics is None:
        return {(replica_log.topic, replica_log.partition) for replica_log in logs}
    return {(topic.topic, int(partition)) for topic in topics for partition in topic.partitions}


def _describe_dir(
    log_dir: Path,
    logs: list[Log],
    wanted: set[TopicPartition],
    replica_manager: ReplicaManager,
) -> dict[str, Any]:
    absolute = log_dir.absolute()
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for replica_log in logs:
        if replica_log.directory.parent.absolute() != absolute:
            continue
        partitions = by_topic.setdefault(replica_log.topic, [])
        if (replica_log.topic, replica_log.partition) in wanted:
            partitions.append(_partition(replica_log, replica_manager))
    return {
        "error_code": ErrorCode.none,
        "log_dir": str(absolute),
        "topics": [{"name": name, "partitions": parts} for name, parts in sorted(by_topic.items())],
    }


def _partition(replica_log: Log, replica_manager: ReplicaManager) -> dict[str, Any]:
    hosted = replica_manager.get(replica_log.topic, replica_log.partition)
    if hosted is None:
        offset_lag = INVALID_OFFSET_LAG
    else:
        offset_lag = max(replica_log.high_watermark - replica_log.log_end_offset, 0)
    return {
        "partition_index": replica_log.partition,
        "partition_size": replica_log.size_bytes,
        "offset_lag": offset_lag,
        "is_future_key": False,
    }
