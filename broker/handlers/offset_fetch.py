"""OffsetFetch: v0-v8 (v0 derived in `protocol/legacy.py`; Kafka read v0 from ZooKeeper, we
read `__consumer_offsets` for every version); v8 asks for several groups at once (KIP-709).
v9 adds each group's member id and epoch for the new consumer protocol (KIP-848); classic
groups ignore them, as Kafka 3.9 in ZooKeeper mode does.

Null topics (v2+) return every committed offset of the group. A partition without a commit has
offset -1 and empty metadata, as in Kafka. `require_stable` (v7+) has nothing to wait for
without transactions.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.group.records import NO_LEADER_EPOCH, OffsetValue
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class

NO_OFFSET = -1


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.OFFSET_FETCH, context.api_version)
    if hasattr(request, "groups"):
        groups = [
            {"group_id": group.group_id, **_group(context, group.group_id, group.topics)}
            for group in request.groups
        ]
        return adapter.build(cls, {"throttle_time": 0, "groups": groups})
    found = _group(context, request.group_id, request.topics)
    if context.api_version < 2 and found["error_code"] != ErrorCode.none:
        # v0-v1 have no top-level error: it goes on every partition.
        for topic in found["topics"]:
            for partition in topic["partitions"]:
                partition["error_code"] = found["error_code"]
    return adapter.build(cls, {"throttle_time": 0, **found})


def _group(context: RequestContext, group_id: str, topics: Any) -> dict[str, Any]:
    requested = (
        None if topics is None else [(t.name, int(p)) for t in topics for p in t.partition_indexes]
    )
    offsets = context.server.group_coordinator.offsets
    error = offsets.coordinator_error(group_id) if group_id else ErrorCode.invalid_group_id
    if error != ErrorCode.none:
        empty: dict[tuple[str, int], OffsetValue | None] = dict.fromkeys(requested or [])
        return {"error_code": error, "topics": _topics(empty)}
    return {"error_code": ErrorCode.none, "topics": _topics(offsets.fetch(group_id, requested))}


def _topics(found: dict[tuple[str, int], OffsetValue | None]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), value in found.items():
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": NO_OFFSET if value is None else value.offset,
                "committed_leader_epoch": NO_LEADER_EPOCH if value is None else value.leader_epoch,
                "metadata": "" if value is None else value.metadata,
                "error_code": ErrorCode.none,
            }
        )
    return [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()]
