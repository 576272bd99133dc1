"""Per-log settings, named after Kafka's topic-level configs (broker-level names in comments)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from broker.log.compression import MAX_DECOMPRESSED_BYTES_DEFAULT

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1073741824  # log.segment.bytes / segment.bytes
    segment_ms: int = 604800000  # log.roll.ms / segment.ms
    index_interval_bytes: int = 4096  # log.index.interval.bytes / index.interval.bytes
    segment_index_bytes: int = 10485760  # log.index.size.max.bytes / segment.index.bytes
    max_message_bytes: int = 1048588  # message.max.bytes / max.message.bytes
    message_timestamp_type: str = CREATE_TIME  # log.message.timestamp.type
    retention_ms: int = 604800000  # log.retention.ms / retention.ms (-1: unlimited)
    retention_bytes: int = -1  # log.retention.bytes / retention.bytes (-1: unlimited)
    # message.max.decompressed.bytes (broker only, not a Kafka key): the most a client's
    # compressed batch may expand to; bounds the memory a decompression bomb can take.
    max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES_DEFAULT

    def with_overrides(self, topic_configs: Mapping[str, str]) -> LogConfig:
        """Apply topic-level overrides (Kafka's topic config names, string values).

        Unknown names are ignored here; validating them is the caller's job.
        """
        changes: dict[str, object] = {}
        for name, value in topic_configs.items():
            field_name = TOPIC_CONFIG_FIELDS.get(name)
            if field_name is None:
                continue
            changes[field_name] = value if field_name == "message_timestamp_type" else int(value)
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


# Kafka topic config name -> LogConfig field.
TOPIC_CONFIG_FIELDS = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "index.interval.bytes": "index_interval_bytes",
    "segment.index.bytes": "segment_index_bytes",
    "max.message.bytes": "max_message_bytes",
    "message.timestamp.type": "message_timestamp_type",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
}
