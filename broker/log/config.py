"""Per-log settings, named after Kafka's topic-level configs (broker-level names in comments)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from broker.log.compression import MAX_DECOMPRESSED_BYTES_DEFAULT

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
COMPACT_POLICY = "compact"
DELETE_POLICY = "delete"
LONG_MAX = 2**63 - 1


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
    # log.cleanup.policy / cleanup.policy: "delete", "compact" or "compact,delete".
    cleanup_policy: str = DELETE_POLICY
    # log.cleaner.delete.retention.ms / delete.retention.ms: how long tombstones survive
    # cleaning (from the last-modified time of the segment holding them).
    delete_retention_ms: int = 86400000
    # log.cleaner.min.cleanable.ratio / min.cleanable.dirty.ratio
    min_cleanable_dirty_ratio: float = 0.5
    # log.cleaner.min.compaction.lag.ms / min.compaction.lag.ms
    min_compaction_lag_ms: int = 0
    # log.cleaner.max.compaction.lag.ms / max.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX
    # log.segment.delete.delay.ms / file.delete.delay.ms: how long segments the cleaner
    # replaced stay open (renamed `.deleted`), so reads that already hold them can finish.
    file_delete_delay_ms: int = 60000
    # log.message.timestamp.before.max.ms / .after.max.ms (KIP-937) and the deprecated
    # log.message.timestamp.difference.max.ms they fall back to while left at their default:
    # how far a CreateTime record's timestamp may lie behind or ahead of the broker's clock.
    message_timestamp_difference_max_ms: int = LONG_MAX
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX

    @property
    def compact(self) -> bool:
        """Whether the log cleaner compacts this log (Kafka: "compact" in cleanup.policy)."""
        return COMPACT_POLICY in policy_items(self.cleanup_policy)

    @property
    def timestamp_bounds_ms(self) -> tuple[int, int] | None:
        """(before, after) bounds on CreateTime record timestamps, as Kafka resolves them;
        None when no record can be refused (LogAppendTime, or no bound set)."""
        if self.message_timestamp_type != CREATE_TIME:
            return None
        before, after = self.message_timestamp_before_max_ms, self.message_timestamp_after_max_ms
        if before == LONG_MAX:
            before = self.message_timestamp_difference_max_ms
        if after == LONG_MAX:
            after = self.message_timestamp_difference_max_ms
        return None if before == after == LONG_MAX else (before, after)

    @property
    def checks_records(self) -> bool:
        """Whether an append must look at each record (keys of a compacted log, timestamps
        against configured bounds); other logs keep batches opaque."""
        return self.compact or self.timestamp_bounds_ms is not None

    @property
    def delete(self) -> bool:
        """Whether retention.ms / retention.bytes apply (Kafka: "delete" in cleanup.policy)."""
        return DELETE_POLICY in policy_items(self.cleanup_policy)

    def with_overrides(self, topic_configs: Mapping[str, str]) -> LogConfig:
        """Apply topic-level overrides (Kafka's topic config names, string values).

        Unknown names are ignored here; validating them is the caller's job.
        """
        changes: dict[str, object] = {}
        for name, value in topic_configs.items():
            field_name = TOPIC_CONFIG_FIELDS.get(name)
            if field_name is None:
                continue
            changes[field_name] = _FIELD_PARSERS.get(field_name, int)(value)
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def policy_items(policy: str) -> list[str]:
    """ "compact, delete" -> ["compact", "delete"] (Kafka's LIST type: comma separated)."""
    return [item.strip() for item in policy.split(",") if item.strip()]


def _normalize_policy(policy: str) -> str:
    return ",".join(policy_items(policy))


# Fields that are not plain integers; the rest parse with int().
_FIELD_PARSERS: dict[str, Callable[[str], object]] = {
    "message_timestamp_type": str,
    "cleanup_policy": _normalize_policy,
    "min_cleanable_dirty_ratio": float,
}

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
    "cleanup.policy": "cleanup_policy",
    "delete.retention.ms": "delete_retention_ms",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "file.delete.delay.ms": "file_delete_delay_ms",
    "message.timestamp.difference.max.ms": "message_timestamp_difference_max_ms",
    "message.timestamp.before.max.ms": "message_timestamp_before_max_ms",
    "message.timestamp.after.max.ms": "message_timestamp_after_max_ms",
}
