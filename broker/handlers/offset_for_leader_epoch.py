"""OffsetForLeaderEpoch: v0-v4 (v0-v1 derived in `protocol/legacy.py`).

For each partition: the largest epoch this leader knows that is <= the requested one, and the
offset where the next epoch starts (the log end for the latest epoch); UNDEFINED (-1, -1) when
the requested epoch is older than anything in the log. Followers call it before fetching to
find where their log diverges; clients call it after a leader change (KIP-320). Only the
leader answers; a `current_leader_epoch` is checked first (FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.epoch_end_offset_encoding import encode_response, encode_topic, entry_writer
from broker.protocol.registry import response_class
from zk.loop_slice import LoopSlice

UNDEFINED = -1


async def handle(context: RequestContext, request: Any) -> Any:
    cls = response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH, context.api_version)
    topic_cls = adapter.nested_class(cls, "topics")
    write = entry_writer(adapter.nested_class(topic_cls, "partitions"))
    # Each partition is answered from its own state when it is looked at: a request for
    # thousands is answered in slices of loop time.
    loop_slice = LoopSlice()
    topics = []
    for topic in request.topics:
        entries = []
        for partition in topic.partitions:
            await loop_slice.pause_if_spent()
            entries.append(write(*_end_offset(context, topic.topic, partition)))
        topics.append(encode_topic(topic_cls, topic.topic, entries))
    return encode_response(cls, topics)


def _end_offset(
    context: RequestContext, topic: str, request: Any
) -> tuple[ErrorCode, int, int, int]:
    """(error, partition, leader epoch, end offset) for one requested partition."""
    partition = int(request.partition)
    current, error = context.services.replica_manager.leader_partition(
        topic, partition, getattr(request, "current_leader_epoch", -1)
    )
    if current is None:
        return error, partition, UNDEFINED, UNDEFINED
    replica_log = current.log
    epoch, end_offset = replica_log.leader_epoch_cache.end_offset_for(
        request.leader_epoch, replica_log.log_end_offset
    )
    return ErrorCode.none, partition, epoch, end_offset
