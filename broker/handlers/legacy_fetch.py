"""Fetch v0-v3: the record batches v2 read from the log, down-converted to the message format
the version knows (v0-v1 magic 0, v2-v3 magic 1), as Kafka 3.x does for old consumers.

A topic with `message.downconversion.enable=false` answers UNSUPPORTED_VERSION instead (only
for consumers: followers never fetch this old); a zstd batch cannot be expressed in an old
format (UNSUPPORTED_COMPRESSION_TYPE). The conversion decodes and re-encodes every record, so
it runs on a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses

from kio.schema.errors import ErrorCode

from broker.log.errors import RecordError
from broker.log.file_records import records_bytes
from broker.log.legacy_records import down_convert
from broker.network.context import RequestContext
from broker.replication.fetch_session import TopicPartition
from broker.replication.read_checks import ReadResult

LAST_LEGACY_VERSION = 3
LAST_MAGIC_0_VERSION = 1

Results = list[tuple[TopicPartition, ReadResult]]


def needs_conversion(api_version: int) -> bool:
    return api_version <= LAST_LEGACY_VERSION


async def convert(
    context: RequestContext, results: Results, fetch_offsets: dict[TopicPartition, int]
) -> Results:
    to_magic = 0 if context.api_version <= LAST_MAGIC_0_VERSION else 1
    enabled = {key: _down_conversion_enabled(context, key[0]) for key, _ in results}
    limit_bytes = context.services.config["message.max.decompressed.bytes"]
    return await asyncio.to_thread(
        _convert_all, results, enabled, fetch_offsets, to_magic, limit_bytes
    )


def _down_conversion_enabled(context: RequestContext, topic: str) -> bool:
    value = context.services.topic_configs.cached(topic).get("message.downconversion.enable")
    if value is None:
        return bool(context.services.config["log.message.downconversion.enable"])
    return str(value).lower() == "true"


def _convert_all(
    results: Results,
    enabled: dict[TopicPartition, bool],
    fetch_offsets: dict[TopicPartition, int],
    to_magic: int,
    limit_bytes: int,
) -> Results:
    converted: Results = []
    for key, result in results:
        if not enabled[key]:
            result = ReadResult(ErrorCode.unsupported_version)
        elif result.records:
            result = _converted(result, to_magic, fetch_offsets.get(key, 0), limit_bytes)
        converted.append((key, result))
    return converted


def _converted(
    result: ReadResult, to_magic: int, fetch_offset: int, limit_bytes: int
) -> ReadResult:
    try:
        records = down_convert(records_bytes(result.records), to_magic, fetch_offset, limit_bytes)
    except RecordError as error:
        return ReadResult(error.error_code)
    return dataclasses.replace(result, records=records)
