"""OffsetFetch: v0-v9 (v0 derived in `protocol/legacy.py`; Kafka read v0 from ZooKeeper, we
read `__consumer_offsets` for every version); v8 asks for several groups at once (KIP-709).
v9 adds each group's member id and epoch for the new consumer protocol (KIP-848); classic
groups ignore them, as Kafka 3.9 in ZooKeeper mode does.

Null topics (v2+) return every committed offset of the group. A partition without a commit has
offset -1 and empty metadata, as in Kafka. With `require_stable` (v7+, KIP-447) a partition
whose offset a transaction committed but its marker has not yet resolved answers
UNSTABLE_OFFSET_COMMIT (offset -1), which consumers retry.
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
            {
                "group_id": group.group_id,
                **_group(context, group.group_id, group.topics, _require_stable(request)),
            }
            for group in request.groups
        ]
        return adapter.build(cls, {"throttle_time": 0, "groups": groups})
    found = _group(context, request.group_id, request.topics, _require_stable(request))
    if context.api_version < 2 and found["error_code"] != ErrorCode.none:
        # v0-v1 have no top-level error: it goes on every partition.
        for topic in found["topics"]:
            for partition in topic["partitions"]:
                partition["error_code"] = found["error_code"]
    return adapter.build(cls, {"throttle_time": 0, **found})


def _require_stable(request: Any) -> bool:
    return bool(getattr(request, "require_stable", False))


def _group(
    context: RequestContext, group_id: str, topics: Any, require_stable: bool
) -> dict[str, Any]:
    requested = (
        None if topics is None else [(t.name, int(p)) for t in topics for p in t.partition_indexes]
    )
    offsets = context.services.group_coordinator.offsets
    error = offsets.coordinator_error(group_id) if group_id else ErrorCode.invalid_group_id
    if error != ErrorCode.none:
        empty: dict[tuple[str, int], OffsetValue | None] = dict.fromkeys(requested or [])
        return {"error_code": error, "topics": _topics(empty)}
    found = offsets.fetch(group_id, requested)
    unstable = offsets.pending_partitions(group_id) if require_stable else set()
    return {"error_code": ErrorCode.none, "topics": _topics(found, unstable)}


def _topics(
    found: dict[tuple[str, int], OffsetValue | None],
    unstable: set[tuple[str, int]] | None = None,
) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), value in found.items():
        is_unstable = unstable is not None and (topic, partition) in unstable
        shown = None if is_unstable else value
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": NO_OFFSET if shown is None else shown.offset,
                "committed_leader_epoch": NO_LEADER_EPOCH if shown is None else shown.leader_epoch,
                "metadata": "" if shown is None else shown.metadata,
                "error_code": ErrorCode.unstable_offset_commit if is_unstable else ErrorCode.none,
            }
        )
    return [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()]
