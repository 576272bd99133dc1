"""CreatePartitions: v0-v3 (Kafka 3.0's range). Answered only by the controller.

The controller validates, places the new partitions and rewrites the topic znode (see
controller/partition_modification.py); then, as Kafka's DelayedCreatePartitions does, we wait
up to the request's timeout until this broker's metadata shows a leader for every partition of
each changed topic (REQUEST_TIMED_OUT otherwise, and at once for a timeout <= 0), then
briefly for the other live brokers to show them (see metadata_propagation.py).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.cluster.metadata_propagation import wait_for_peers
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from controller.errors import TopicError
from controller.partition_modification import NewPartitions


async def handle(context: RequestContext, request: Any) -> Any:
    requests = [_new_partitions(topic) for topic in request.topics]
    validate_only = bool(request.validate_only)
    results = await context.services.controller.create_partitions(requests, validate_only)
    added = {r.topic: r.count for r in requests if results[r.topic].error_code == ErrorCode.none}
    timed_out: set[str] = set()
    if added and not validate_only:
        timeout_s = adapter.millis(request.timeout) / 1000
        timed_out = (
            set(added) if timeout_s <= 0 else await _wait_for_leaders(context, added, timeout_s)
        )
        shown = {topic: count for topic, count in added.items() if topic not in timed_out}
        await wait_for_peers(context.services.peers, shown, timeout_s)
    cls = response_class(ApiKey.CREATE_PARTITIONS, context.api_version)
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "results": [
                _result(name, results[name], name in timed_out) for name in dict.fromkeys(results)
            ],
        },
    )


def _new_partitions(topic: Any) -> NewPartitions:
    assignments = None
    if topic.assignments is not None:
        assignments = [[int(b) for b in a.broker_ids] for a in topic.assignments]
    return NewPartitions(topic=topic.name, count=int(topic.count), assignments=assignments)


async def _wait_for_leaders(
    context: RequestContext, counts: dict[str, int], timeout_s: float
) -> set[str]:
    cache = context.services.metadata_cache

    def pending() -> set[str]:
        waiting = set()
        for topic, count in counts.items():
            partitions = cache.partitions(topic)
            if (
                partitions is None
                or len(partitions) < count
                or not all(cache.is_leader_available(p) for p in partitions)
            ):
                waiting.add(topic)
        return waiting

    await context.services.metadata_changes.wait_for(lambda: not pending(), timeout_s)
    return pending()


def _result(name: str, result: TopicError, timed_out: bool) -> dict[str, Any]:
    if timed_out:
        return {"name": name, "error_code": ErrorCode.request_timed_out, "error_message": None}
    return {
        "name": name,
        "error_code": result.error_code,
        "error_message": result.message,
    }
