"""DescribeLogDirs: v0-v4 (v0 derived from kio's v1; v3 adds a top-level error code, v4 each
directory's total and usable bytes).

One result per configured log dir (its absolute path), in `log.dirs` order, listing the
requested partitions with a log there (current or future): each log's size, its
offset lag and whether it is a future log (AlterReplicaLogDirs' copy). The lag of a replica's
log is the high watermark minus its log end, never below 0; a future log's is how far it is
behind the replica's log; -1 when the replica is not hosted (Kafka's `getLogEndOffsetLag`). A
null topic list asks for every partition. A directory lists only the topics with a partition
asked for there (Kafka 3.9, KAFKA-16807; Kafka 3.0 also listed the others, with no
partitions). An offline directory answers `KAFKA_STORAGE_ERROR`, no topics and -1 bytes. The
total and usable bytes (v4+) are those of the directory's file system, as Java's FileStore
gives them: usable is what an unprivileged writer may still use.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from broker.log.log import Log
from broker.log.manager import LogManager
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.replication.replica_manager import ReplicaManager

INVALID_OFFSET_LAG = -1  # DescribeLogDirsResponse.INVALID_OFFSET_LAG
# The first version whose results carry the file system's total and usable bytes.
SPACE_VERSION = 4

TopicPartition = tuple[str, int]


async def handle(context: RequestContext, request: Any) -> Any:
    services = context.services
    log_manager: LogManager = services.log_manager
    wanted = _wanted(request.topics)
    with_space = context.api_version >= SPACE_VERSION
    results = [
        _describe_dir(log_dir, log_manager, wanted, services.replica_manager, with_space)
        for log_dir in log_manager.log_dirs
    ]
    cls = response_class(ApiKey.DESCRIBE_LOG_DIRS, context.api_version)
    return adapter.build(
        cls, {"throttle_time": 0, "error_code": ErrorCode.none, "results": results}
    )


def _wanted(topics: Any) -> set[TopicPartition] | None:
    """The partitions asked for; None for all of them."""
    if topics is None:
        return None
    return {(topic.topic, int(partition)) for topic in topics for partition in topic.partitions}


def _describe_dir(
    log_dir: Path,
    log_manager: LogManager,
    wanted: set[TopicPartition] | None,
    replica_manager: ReplicaManager,
    with_space: bool,
) -> dict[str, Any]:
    if not log_manager.is_log_dir_online(log_dir):
        return {"error_code": ErrorCode.kafka_storage_error, "log_dir": str(log_dir), "topics": []}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for replica_log in log_manager.logs_in_dir(log_dir):
        if wanted is None or (replica_log.topic, replica_log.partition) in wanted:
            partition = _partition(replica_log, replica_manager)
            by_topic.setdefault(replica_log.topic, []).append(partition)
    result: dict[str, Any] = {
        "error_code": ErrorCode.none,
        "log_dir": str(log_dir),
        "topics": [
            {"name": name, "partitions": sorted(parts, key=_partition_order)}
            for name, parts in sorted(by_topic.items())
        ],
    }
    if with_space:
        result.update(_space(log_dir))
    return result


def _partition_order(partition: dict[str, Any]) -> tuple[int, bool]:
    return partition["partition_index"], partition["is_future_key"]


def _space(log_dir: Path) -> dict[str, int]:
    """Kafka's FileStore total and usable space (what an unprivileged writer may use)."""
    stats = os.statvfs(log_dir)
    return {
        "total_bytes": stats.f_blocks * stats.f_frsize,
        "usable_bytes": stats.f_bavail * stats.f_frsize,
    }


def _partition(replica_log: Log, replica_manager: ReplicaManager) -> dict[str, Any]:
    hosted = replica_manager.get(replica_log.topic, replica_log.partition)
    if hosted is None:
        offset_lag = INVALID_OFFSET_LAG
    elif replica_log.is_future:
        offset_lag = hosted.log.log_end_offset - replica_log.log_end_offset
    else:
        offset_lag = max(replica_log.high_watermark - replica_log.log_end_offset, 0)
    return {
        "partition_index": replica_log.partition,
        "partition_size": replica_log.size_bytes,
        "offset_lag": offset_lag,
        "is_future_key": replica_log.is_future,
    }
