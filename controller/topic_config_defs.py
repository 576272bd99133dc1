"""Kafka's topic configs, each defined once: name, type, default, the broker config that
supplies the default, allowed values, and whether that broker config is dynamic here.

Everything else about topic configs is derived from `TOPIC_CONFIGS`: the controller's
validation of CreateTopics and AlterConfigs (controller/topic_configs.py), what a log applies
(broker/log/config.py: a config whose name with dots as underscores is a `LogConfig` field),
what DescribeConfigs reports (broker/config/entries.py), which broker-level defaults can be
changed dynamically (broker/config/dynamic.py), and the type, Kafka's default and the
start-up minimum of each broker config that supplies a default (broker/config/kafka_config.py).
Values are strings, as on the wire and in ZooKeeper; `parse_config_value` reads them as Kafka's
ConfigDef does.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_THROTTLED_REPLICA = re.compile(r"[0-9]+:[0-9]+")
_LONG_MAX_TEXT = str(_LONG_MAX)


class ConfigType(enum.Enum):
    """Kafka's ConfigDef.Type names (DescribeConfigs reports them as codes)."""

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
class TopicConfigDef:
    name: str
    config_type: ConfigType
    # Kafka's default as DescribeConfigs shows it; the broker config in `server_default`, when
    # there is one, supplies the value a topic without an override really gets.
    default: str
    # The broker-level config this one falls back to (Kafka's ServerTopicConfigSynonyms).
    server_default: str | None
    check: Check | None = None
    # Whether `server_default` can be changed with AlterConfigs on a broker resource here.
    dynamic: bool = True


def _number(value: ConfigValue) -> float:
    # Only INT, LONG and DOUBLE configs carry range checks; they always parse to numbers.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"a range check got {value!r}, not a number")
    return value


@dataclass(frozen=True, slots=True)
class AtLeast:
    """A range check whose minimum the broker also applies to the broker config supplying the
    default (broker/config/kafka_config.py)."""

    minimum: int

    def __call__(self, value: ConfigValue) -> str | None:
        return None if _number(value) >= self.minimum else f"Value must be at least {self.minimum}"


def _between(minimum: float, maximum: float) -> Check:
    def check(value: ConfigValue) -> str | None:
        number = _number(value)
        if number < minimum:
            return f"Value must be at least {minimum}"
        if number > maximum:
            return f"Value must be no more than {maximum}"
        return None

    return check


@dataclass(frozen=True, slots=True)
class OneOf:
    """The values allowed (each item of a LIST config), as Kafka's ValidString/ValidList."""

    allowed: tuple[str, ...]

    def __call__(self, value: ConfigValue) -> str | None:
        items = value if isinstance(value, list) else [str(value)]
        for item in items:
            if item not in self.allowed:
                return f"String must be one of: {', '.join(self.allowed)}"
        return None


def _one_of(*allowed: str) -> OneOf:
    return OneOf(allowed)


def _throttled_replicas(value: ConfigValue) -> str | None:
    items = value if isinstance(value, list) else [str(value)]
    if items == ["*"] or all(_THROTTLED_REPLICA.fullmatch(item) for item in items):
        return None
    return (
        "must be the wildcard (*) or a list of the form "
        "[PartitionId]:[BrokerId],[PartitionId]:[BrokerId],..."
    )


def _not_blank(value: ConfigValue) -> str | None:
    return None if str(value).strip() else "must not be empty"


INT, LONG, DOUBLE = ConfigType.INT, ConfigType.LONG, ConfigType.DOUBLE
BOOLEAN, STRING, LIST = ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.LIST
_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_DEFS = [
    TopicConfigDef(
        "cleanup.policy", LIST, "delete", "log.cleanup.policy", _one_of("compact", "delete")
    ),
    TopicConfigDef(
        "compression.type", STRING, "producer", "compression.type", _one_of(*_COMPRESSION_TYPES)
    ),
    TopicConfigDef(
        "delete.retention.ms", LONG, "86400000", "log.cleaner.delete.retention.ms", AtLeast(0)
    ),
    TopicConfigDef(
        "file.delete.delay.ms", LONG, "60000", "log.segment.delete.delay.ms", AtLeast(0)
    ),
    TopicConfigDef(
        "flush.messages", LONG, _LONG_MAX_TEXT, "log.flush.interval.messages", AtLeast(1)
    ),
    TopicConfigDef("flush.ms", LONG, _LONG_MAX_TEXT, "log.flush.interval.ms", AtLeast(0)),
    TopicConfigDef("index.interval.bytes", INT, "4096", "log.index.interval.bytes", AtLeast(0)),
    TopicConfigDef(
        "max.compaction.lag.ms",
        LONG,
        _LONG_MAX_TEXT,
        "log.cleaner.max.compaction.lag.ms",
        AtLeast(1),
    ),
    TopicConfigDef("max.message.bytes", INT, "1048588", "message.max.bytes", AtLeast(0)),
    TopicConfigDef(
        "message.downconversion.enable", BOOLEAN, "true", "log.message.downconversion.enable"
    ),
    # Deprecated in Kafka 3.0 but still accepted (and ignored) by 2.8-3.x brokers; Kafka's
    # DynamicLogConfig excludes its broker config from the dynamic ones.
    TopicConfigDef(
        "message.format.version",
        STRING,
        "3.0-IV1",
        "log.message.format.version",
        _not_blank,
        dynamic=False,
    ),
    TopicConfigDef(
        "message.timestamp.after.max.ms",
        LONG,
        _LONG_MAX_TEXT,
        "log.message.timestamp.after.max.ms",
        AtLeast(0),
    ),
    TopicConfigDef(
        "message.timestamp.before.max.ms",
        LONG,
        _LONG_MAX_TEXT,
        "log.message.timestamp.before.max.ms",
        AtLeast(0),
    ),
    TopicConfigDef(
        "message.timestamp.difference.max.ms",
        LONG,
        _LONG_MAX_TEXT,
        "log.message.timestamp.difference.max.ms",
        AtLeast(0),
    ),
    TopicConfigDef(
        "message.timestamp.type",
        STRING,
        "CreateTime",
        "log.message.timestamp.type",
        _one_of("CreateTime", "LogAppendTime"),
    ),
    TopicConfigDef(
        "min.cleanable.dirty.ratio",
        DOUBLE,
        "0.5",
        "log.cleaner.min.cleanable.ratio",
        _between(0, 1),
    ),
    TopicConfigDef(
        "min.compaction.lag.ms", LONG, "0", "log.cleaner.min.compaction.lag.ms", AtLeast(0)
    ),
    TopicConfigDef("min.insync.replicas", INT, "1", "min.insync.replicas", AtLeast(1)),
    TopicConfigDef("preallocate", BOOLEAN, "false", "log.preallocate"),
    TopicConfigDef("retention.bytes", LONG, "-1", "log.retention.bytes"),
    TopicConfigDef("retention.ms", LONG, "604800000", "log.retention.ms", AtLeast(-1)),
    # 14 bytes is the smallest legacy record: a segment must hold at least one.
    TopicConfigDef("segment.bytes", INT, "1073741824", "log.segment.bytes", AtLeast(14)),
    TopicConfigDef("segment.index.bytes", INT, "10485760", "log.index.size.max.bytes", AtLeast(4)),
    TopicConfigDef("segment.jitter.ms", LONG, "0", "log.roll.jitter.ms", AtLeast(0)),
    TopicConfigDef("segment.ms", LONG, "604800000", "log.roll.ms", AtLeast(1)),
    # The controller reads the topic's value at each election; the broker-level one is static
    # here (see DEVIATIONS.md).
    TopicConfigDef(
        "unclean.leader.election.enable",
        BOOLEAN,
        "false",
        "unclean.leader.election.enable",
        dynamic=False,
    ),
    TopicConfigDef("leader.replication.throttled.replicas", LIST, "", None, _throttled_replicas),
    TopicConfigDef("follower.replication.throttled.replicas", LIST, "", None, _throttled_replicas),
]
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {d.name: d for d in _DEFS}
# The broker configs supplying topic configs' defaults that AlterConfigs may change.
DYNAMIC_SERVER_DEFAULTS = frozenset(
    d.server_default for d in _DEFS if d.server_default is not None and d.dynamic
)


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
