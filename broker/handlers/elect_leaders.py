"""ElectLeaders: v0-v2 (KIP-183, KIP-460 added election_type in v1). Answered by the
controller; another broker answers NOT_CONTROLLER for every partition, as Kafka's does.

The controller elects in one of its events (preferred: the first assigned replica if alive and
in the ISR; unclean: any live replica when no ISR member is alive); the handler then waits,
like Kafka's DelayedElectLeader, until this broker's metadata shows each new leader. The wait
is bounded by the request's timeout_ms: what has not happened by then is REQUEST_TIMED_OUT.
A null topic list means every partition; the answer then leaves out those whose leader was
already right (ELECTION_NOT_NEEDED), as Kafka's does.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class
from controller.preferred_election import ElectionResult, ElectionType

TopicPartition = tuple[str, int]
_TIMED_OUT = ElectionResult(ErrorCode.request_timed_out)


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.ELECT_LEADERS, context.api_version)
    every_partition = request.topic_partitions is None
    partitions = _requested(context, request)
    election_type = int(getattr(request, "election_type", ElectionType.PREFERRED))
    top_error = ErrorCode.none
    if election_type not in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
        top_error = ErrorCode.invalid_request
        results = dict.fromkeys(partitions, ElectionResult(top_error, "unknown election type"))
    else:
        timeout_s = max(adapter.millis(request.timeout), 0) / 1000
        results = await _elect(context, partitions, ElectionType(election_type), timeout_s)
    if every_partition:
        not_needed = ErrorCode.election_not_needed
        results = {tp: r for tp, r in results.items() if r.error_code != not_needed}
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": top_error,
            "replica_election_results": _by_topic(results),
        },
    )


def _requested(context: RequestContext, request: Any) -> list[TopicPartition]:
    if request.topic_partitions is None:
        cache = context.services.metadata_cache
        return [
            (topic, metadata.partition)
            for topic in cache.topic_names()
            for metadata in cache.partitions(topic) or []
        ]
    requested = (
        (str(entry.topic), int(partition))
        for entry in request.topic_partitions
        for partition in entry.partitions
    )
    return list(dict.fromkeys(requested))


async def _elect(
    context: RequestContext,
    partitions: list[TopicPartition],
    election_type: ElectionType,
    timeout_s: float,
) -> dict[TopicPartition, ElectionResult]:
    services = context.services
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    try:
        results = await asyncio.wait_for(
            services.controller.elect_leaders(partitions, election_type), timeout_s
        )
    except TimeoutError:
        return dict.fromkeys(partitions, _TIMED_OUT)
    expected = {tp: r.leader for tp, r in results.items() if r.error_code == ErrorCode.none}
    if not expected:
        return results

    def pending() -> list[TopicPartition]:
        leaders = _leaders(context, {topic for topic, _ in expected})
        return [tp for tp, leader in expected.items() if leaders.get(tp) != leader]

    await services.metadata_changes.wait_for(lambda: not pending(), max(deadline - loop.time(), 0))
    results.update(dict.fromkeys(pending(), _TIMED_OUT))
    return results


def _leaders(context: RequestContext, topics: set[str]) -> dict[TopicPartition, int]:
    """The leader of every partition of `topics`, as this broker's metadata shows it."""
    cache = context.services.metadata_cache
    return {
        (topic, metadata.partition): metadata.leader_id
        for topic in topics
        for metadata in cache.partitions(topic) or []
    }


def _by_topic(results: dict[TopicPartition, ElectionResult]) -> list[dict[str, Any]]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), result in results.items():
        topics.setdefault(topic, []).append(
            {
                "partition_id": partition,
                "error_code": result.error_code,
                "error_message": result.message,
            }
        )
    return [{"topic": topic, "partition_result": entries} for topic, entries in topics.items()]
