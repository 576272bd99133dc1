"""DeleteRecords: v0-v2 (Kafka 3.0's range).

Each partition goes to its leader (else NOT_LEADER_OR_FOLLOWER; an unknown one is
UNKNOWN_TOPIC_OR_PARTITION, an internal topic INVALID_TOPIC_EXCEPTION, a topic without
"delete" in cleanup.policy POLICY_VIOLATION). Offset -1 means the high watermark; one above it
is OFFSET_OUT_OF_RANGE. The leader's log start offset moves at once; the answer waits, up to
the request's timeout, until every live replica's log start offset got there (see
`broker.replication.delete_records`), and carries that low watermark.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers.metadata import INTERNAL_TOPICS
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from broker.replication.delete_records import (
    DeleteRecordsResult,
    IsAlive,
    TopicPartition,
    delete_on_leader,
    release_deleted_records,
    wait_for_low_watermarks,
)

log = logging.getLogger(__name__)
# Segment releases under way; held so the tasks are not garbage-collected mid-run.
_releases: set[asyncio.Task[None]] = set()


async def handle(context: RequestContext, request: Any) -> Any:
    services = context.services
    results: dict[TopicPartition, DeleteRecordsResult] = {}
    alive = _alive(context)
    for topic in request.topics:
        for partition in topic.partitions:
            key = (topic.name, int(partition.partition_index))
            if topic.name in INTERNAL_TOPICS:
                results[key] = DeleteRecordsResult(ErrorCode.invalid_topic_exception)
            else:
                results[key] = delete_on_leader(
                    services.replica_manager, key, int(partition.offset), alive
                )
    moved = [key for key, result in results.items() if result.error_code == ErrorCode.none]
    if moved:
        logs = [p.log for key in moved if (p := services.replica_manager.get(*key)) is not None]
        # Off the request path: the answer does not depend on the files being gone.
        release = asyncio.get_running_loop().create_task(
            release_deleted_records(services.log_manager, logs), name="delete-records-release"
        )
        _releases.add(release)
        release.add_done_callback(_on_released)
    if not all(result.complete for result in results.values()):
        timeout_s = max(adapter.millis(request.timeout), 0) / 1000
        results = await wait_for_low_watermarks(
            services.replica_manager, results, lambda: _alive(context), timeout_s
        )
    cls = response_class(ApiKey.DELETE_RECORDS, context.api_version)
    return adapter.build(cls, {"throttle_time": 0, "topics": _topics(results)})


def _alive(context: RequestContext) -> IsAlive:
    return context.services.metadata_cache.live_brokers().__contains__


def _on_released(task: asyncio.Task[None]) -> None:
    _releases.discard(task)
    if not task.cancelled() and task.exception() is not None:
        # The retention check deletes those segments later; the checkpoint is rewritten too.
        log.error("releasing deleted records failed", exc_info=task.exception())


def _topics(results: dict[TopicPartition, DeleteRecordsResult]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), result in results.items():
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "low_watermark": result.low_watermark,
                "error_code": result.error_code,
            }
        )
    return [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()]
