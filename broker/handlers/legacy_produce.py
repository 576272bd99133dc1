"""Produce v0-v2: message sets of magic 0 and 1 become one record batch v2 per partition
before the ordinary produce path sees them (see `broker.log.legacy_records`).

Kafka 3.x converts rather than refuses: it stores only v2. Produce v3+ must carry v2 batches;
the ordinary path refuses old magic there. Only partitions led here are converted, so routing
errors still come first; the conversion runs on a worker thread (it decompresses and
recompresses whole message sets).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from broker.log.errors import RecordError
from broker.log.legacy_records import is_legacy, to_record_batch
from broker.network.context import RequestContext

LAST_LEGACY_VERSION = 2

Key = tuple[str, int]


async def convert_request(
    context: RequestContext, request: Any
) -> tuple[Any, dict[Key, RecordError]]:
    """`request` with every old message set replaced by a v2 batch (a partition that fails to
    convert gets no records) and the conversion errors by partition."""
    if context.api_version > LAST_LEGACY_VERSION:
        return request, {}
    replica_manager = context.services.replica_manager
    pending = {
        (topic.name, data.index): data.records
        for topic in request.topic_data
        for data in topic.partition_data
        if data.records
        and is_legacy(data.records)
        and (current := replica_manager.get(topic.name, data.index)) is not None
        and current.is_leader
    }
    if not pending:
        return request, {}
    limit_bytes = context.services.config["message.max.decompressed.bytes"]
    converted, errors = await asyncio.to_thread(_convert_all, pending, limit_bytes)
    topics = tuple(
        dataclasses.replace(
            topic,
            partition_data=tuple(
                _with_records(data, converted, errors, (topic.name, data.index))
                for data in topic.partition_data
            ),
        )
        for topic in request.topic_data
    )
    return dataclasses.replace(request, topic_data=topics), errors


def _with_records(
    data: Any, converted: dict[Key, bytes], errors: dict[Key, RecordError], key: Key
) -> Any:
    if key in errors:
        return dataclasses.replace(data, records=None)
    if key in converted:
        return dataclasses.replace(data, records=converted[key])
    return data


def _convert_all(
    pending: dict[Key, bytes], limit_bytes: int
) -> tuple[dict[Key, bytes], dict[Key, RecordError]]:
    converted: dict[Key, bytes] = {}
    errors: dict[Key, RecordError] = {}
    for key, records in pending.items():
        try:
            converted[key] = to_record_batch(records, limit_bytes)
        except RecordError as error:
            errors[key] = error
    return converted, errors
