"""The numbers DescribeConfigs, AlterConfigs and IncrementalAlterConfigs carry, as Kafka's
admin client names them (kept apart so the command-line tools can use them without loading the
broker)."""

from __future__ import annotations

import enum


class ConfigResourceType(enum.IntEnum):
    """Kafka's ConfigResource.Type."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8


class ConfigSource(enum.IntEnum):
    """Kafka's ConfigEntry.ConfigSource (DescribeConfigs v1+)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class AlterConfigOp(enum.IntEnum):
    """Kafka's AlterConfigOp.OpType (IncrementalAlterConfigs)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3
