"""Topic-level config validation (CreateTopics configs, /config/topics/<t>).

The table below is Kafka's topic config definition as data: name, value type and allowed
range/values. Values arrive as strings (as on the wire and in ZooKeeper); a bad name, type or
range raises INVALID_CONFIG with a message in Kafka's ConfigException shape
("Invalid value X for configuration Y: why").
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from controller.errors import INVALID_CONFIG, INVALID_REQUEST, ApiError

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_THROTTLED_REPLICA = re.compile(r"[0-9]+:[0-9]+")


class ConfigType(enum.Enum):
    INT = "INT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    LIST = "LIST"


ConfigValue = int | float | bool | str | list[str]
# A check returns None when the parsed value is fine, else the reason it is not.
Check = Callable[[ConfigValue], str | None]


@dataclass(frozen=True, slots=True)
class ConfigKey:
    config_type: ConfigType
    check: Check | None = None


def _at_least(minimum: float) -> Check:
    def check(value: ConfigValue) -> str | None:
        assert isinstance(value, int | float)
        return None if value >= minimum else f"Value must be at least {minimum}"

    return check


def _between(minimum: float, maximum: float) -> Check:
    def check(value: ConfigValue) -> str | None:
        assert isinstance(value, int | float)
        if value < minimum:
            return f"Value must be at least {minimum}"
        if value > maximum:
            return f"Value must be no more than {maximum}"
        return None

    return check


def _one_of(*allowed: str) -> Check:
    def check(value: ConfigValue) -> str | None:
        items = value if isinstance(value, list) else [str(value)]
        for item in items:
            if item not in allowed:
                return f"String must be one of: {', '.join(allowed)}"
        return None

    return check


def _throttled_replicas(value: ConfigValue) -> str | None:
    assert isinstance(value, list)
    if value == ["*"] or all(_THROTTLED_REPLICA.fullmatch(item) for item in value):
        return None
    return (
        "must be the wildcard (*) or a list of the form "
        "[PartitionId]:[BrokerId],[PartitionId]:[BrokerId],..."
    )


def _not_blank(value: ConfigValue) -> str | None:
    return None if str(value).strip() else "must not be empty"


TOPIC_CONFIGS: dict[str, ConfigKey] = {
    "cleanup.policy": ConfigKey(ConfigType.LIST, _one_of("compact", "delete")),
    "compression.type": ConfigKey(
        ConfigType.STRING, _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
    ),
    "delete.retention.ms": ConfigKey(ConfigType.LONG, _at_least(0)),
    "file.delete.delay.ms": ConfigKey(ConfigType.LONG, _at_least(0)),
    "flush.messages": ConfigKey(ConfigType.LONG, _at_least(1)),
    "flush.ms": ConfigKey(ConfigType.LONG, _at_least(0)),
    "index.interval.bytes": ConfigKey(ConfigType.INT, _at_least(0)),
    "max.compaction.lag.ms": ConfigKey(ConfigType.LONG, _at_least(1)),
    "max.message.bytes": ConfigKey(ConfigType.INT, _at_least(0)),
    "message.downconversion.enable": ConfigKey(ConfigType.BOOLEAN),
    # Deprecated in Kafka 3.0 but still accepted (and ignored) by 2.8-3.x brokers.
    "message.format.version": ConfigKey(ConfigType.STRING, _not_blank),
    "message.timestamp.after.max.ms": ConfigKey(ConfigType.LONG, _at_least(0)),
    "message.timestamp.before.max.ms": ConfigKey(ConfigType.LONG, _at_least(0)),
    "message.timestamp.difference.max.ms": ConfigKey(ConfigType.LONG, _at_least(0)),
    "message.timestamp.type": ConfigKey(ConfigType.STRING, _one_of("CreateTime", "LogAppendTime")),
    "min.cleanable.dirty.ratio": ConfigKey(ConfigType.DOUBLE, _between(0, 1)),
    "min.compaction.lag.ms": ConfigKey(ConfigType.LONG, _at_least(0)),
    "min.insync.replicas": ConfigKey(ConfigType.INT, _at_least(1)),
    "preallocate": ConfigKey(ConfigType.BOOLEAN),
    "retention.bytes": ConfigKey(ConfigType.LONG),
    "retention.ms": ConfigKey(ConfigType.LONG, _at_least(-1)),
    # 14 bytes is the smallest legacy record: a segment must hold at least one.
    "segment.bytes": ConfigKey(ConfigType.INT, _at_least(14)),
    "segment.index.bytes": ConfigKey(ConfigType.INT, _at_least(4)),
    "segment.jitter.ms": ConfigKey(ConfigType.LONG, _at_least(0)),
    "segment.ms": ConfigKey(ConfigType.LONG, _at_least(1)),
    "unclean.leader.election.enable": ConfigKey(ConfigType.BOOLEAN),
    "leader.replication.throttled.replicas": ConfigKey(ConfigType.LIST, _throttled_replicas),
    "follower.replication.throttled.replicas": ConfigKey(ConfigType.LIST, _throttled_replicas),
}


def parse_config_value(config_type: ConfigType, text: str) -> ConfigValue:
    """Parse like Kafka's ConfigDef: trimmed text; raise ValueError with the type's reason."""
    trimmed = text.strip()
    if config_type is ConfigType.INT:
        return _parse_integer(trimmed, _INT_MIN, _INT_MAX, "INT")
    if config_type is ConfigType.LONG:
        return _parse_integer(trimmed, _LONG_MIN, _LONG_MAX, "LONG")
    if config_type is ConfigType.DOUBLE:
        try:
            return float(trimmed)
        except ValueError:
            raise ValueError("Not a number of type DOUBLE") from None
    if config_type is ConfigType.BOOLEAN:
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise ValueError("Expected value to be either true or false")
    if config_type is ConfigType.LIST:
        return [item.strip() for item in trimmed.split(",")] if trimmed else []
    return trimmed


def _parse_integer(text: str, minimum: int, maximum: int, type_name: str) -> int:
    if not _INTEGER_TEXT.fullmatch(text) or not minimum <= int(text) <= maximum:
        raise ValueError(f"Not a number of type {type_name}")
    return int(text)


def reject_null_values(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Kafka refuses null topic config values on create (INVALID_REQUEST), before any other
    config check."""
    null_names = [name for name, value in configs.items() if value is None]
    if null_names:
        raise ApiError(
            INVALID_REQUEST,
            f"Null value not supported for topic configs: {','.join(null_names)}",
        )
    return {name: value for name, value in configs.items() if value is not None}


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Validate topic configs and return them (without None values).

    Null values are INVALID_REQUEST; an unknown name, a value of the wrong type or out of range
    is INVALID_CONFIG.
    """
    validated = reject_null_values(configs)
    for name, value in validated.items():
        validate_topic_config(name, value)
    return validated


def validate_topic_config(name: str, value: str) -> None:
    key = TOPIC_CONFIGS.get(name)
    if key is None:
        raise ApiError(INVALID_CONFIG, f"Unknown topic config name: {name}")
    try:
        parsed = parse_config_value(key.config_type, value)
    except ValueError as error:
        raise ApiError(INVALID_CONFIG, _invalid_value(name, value, str(error))) from None
    reason = key.check(parsed) if key.check is not None else None
    if reason is not None:
        raise ApiError(INVALID_CONFIG, _invalid_value(name, value, reason))


def _invalid_value(name: str, value: str, reason: str) -> str:
    return f"Invalid value {value} for configuration {name}: {reason}"
