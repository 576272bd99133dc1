"""Per-log settings, named after Kafka's topic-level configs."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from broker.log.compression import MAX_DECOMPRESSED_BYTES_DEFAULT
from controller.topic_config_defs import TOPIC_CONFIGS, ConfigType

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
COMPACT_POLICY = "compact"
DELETE_POLICY = "delete"
LONG_MAX = 2**63 - 1


def policy_items(policy: str) -> list[str]:
    """ "compact, delete" -> ["compact", "delete"] (Kafka's LIST type: comma separated)."""
    return [item.strip() for item in policy.split(",") if item.strip()]


def log_value(name: str, text: str) -> int | float | str:
    """A topic config's text as a LogConfig field holds it: integers, doubles, trimmed strings
    and lists as "a,b" (no range checks: validating values is the controller's job)."""
    config_type = TOPIC_CONFIGS[name].config_type
    if config_type in (ConfigType.INT, ConfigType.LONG):
        return int(text.strip())
    if config_type is ConfigType.DOUBLE:
        return float(text)
    if config_type is ConfigType.LIST:
        return ",".join(policy_items(text))
    if config_type is ConfigType.STRING:
        return text.strip()
    raise TypeError(f"no LogConfig field holds {config_type.value} config {name}")


def _int_default(name: str) -> int:
    value = log_value(name, TOPIC_CONFIGS[name].default)
    if not isinstance(value, int):
        raise TypeError(f"{name}'s default {value!r} is not an integer")
    return value


def _float_default(name: str) -> float:
    value = log_value(name, TOPIC_CONFIGS[name].default)
    if not isinstance(value, float):
        raise TypeError(f"{name}'s default {value!r} is not a double")
    return value


def _text_default(name: str) -> str:
    return str(log_value(name, TOPIC_CONFIGS[name].default))


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The topic configs a log applies, each field named after its topic config (dots as
    underscores); defaults are Kafka's (controller/topic_config_defs.py)."""

    segment_bytes: int = _int_default("segment.bytes")
    segment_ms: int = _int_default("segment.ms")
    index_interval_bytes: int = _int_default("index.interval.bytes")
    segment_index_bytes: int = _int_default("segment.index.bytes")
    max_message_bytes: int = _int_default("max.message.bytes")
    message_timestamp_type: str = _text_default("message.timestamp.type")
    retention_ms: int = _int_default("retention.ms")  # -1: unlimited
    retention_bytes: int = _int_default("retention.bytes")  # -1: unlimited
    # message.max.decompressed.bytes (broker only, not a Kafka key): the most a client's
    # compressed batch may expand to; bounds the memory a decompression bomb can take.
    max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES_DEFAULT
    # "delete", "compact" or "compact,delete".
    cleanup_policy: str = _text_default("cleanup.policy")
    # How long tombstones survive cleaning (from the last-modified time of the segment
    # holding them).
    delete_retention_ms: int = _int_default("delete.retention.ms")
    min_cleanable_dirty_ratio: float = _float_default("min.cleanable.dirty.ratio")
    min_compaction_lag_ms: int = _int_default("min.compaction.lag.ms")
    max_compaction_lag_ms: int = _int_default("max.compaction.lag.ms")
    # How long segments the cleaner replaced stay open (renamed `.deleted`), so reads that
    # already hold them can finish.
    file_delete_delay_ms: int = _int_default("file.delete.delay.ms")
    # KIP-937's before/after bounds and the deprecated difference.max.ms they fall back to
    # while left at their default: how far a CreateTime record's timestamp may lie behind or
    # ahead of the broker's clock.
    message_timestamp_difference_max_ms: int = _int_default("message.timestamp.difference.max.ms")
    message_timestamp_before_max_ms: int = _int_default("message.timestamp.before.max.ms")
    message_timestamp_after_max_ms: int = _int_default("message.timestamp.after.max.ms")

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

        Names no log applies are ignored here; validating them is the caller's job.
        """
        changes: dict[str, object] = {}
        for name, value in topic_configs.items():
            field_name = TOPIC_CONFIG_FIELDS.get(name)
            if field_name is not None:
                changes[field_name] = log_value(name, value)
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


# Kafka topic config name -> LogConfig field: the topic configs a log applies.
TOPIC_CONFIG_FIELDS: dict[str, str] = {
    name: field.name
    for name in TOPIC_CONFIGS
    for field in dataclasses.fields(LogConfig)
    if field.name == name.replace(".", "_")
}
