"""What a topic config is where its topic does not override it: the broker config the topic
config table names as its server default, as this broker runs with it.

Logs start from `default_log_config` and DescribeConfigs reports the same values
(broker/config/entries.py), so what is described is what logs apply.
"""

from __future__ import annotations

from typing import Any

from broker.config.kafka_config import KafkaConfig
from broker.log.config import TOPIC_CONFIG_FIELDS, LogConfig
from controller.topic_config_defs import TOPIC_CONFIGS


def broker_default(config: KafkaConfig, broker_name: str) -> Any:
    """A broker-level default as the broker applies it: retention, roll, roll jitter and flush
    interval fall back to their coarser synonyms."""
    if broker_name == "log.retention.ms":
        return config.log_retention_ms
    if broker_name == "log.roll.ms":
        return config.log_roll_ms
    if broker_name == "log.roll.jitter.ms" and config[broker_name] is None:
        return int(config["log.roll.jitter.hours"]) * 3600000
    if broker_name == "log.flush.interval.ms" and config[broker_name] is None:
        return config["log.flush.scheduler.interval.ms"]
    return config[broker_name]


def default_log_config(config: KafkaConfig) -> LogConfig:
    """The LogConfig of a topic without overrides: each field from its topic config's broker
    default, read as a topic override would be."""
    defaults: dict[str, str] = {}
    for name in TOPIC_CONFIG_FIELDS:
        server_default = TOPIC_CONFIGS[name].server_default
        if server_default is None:
            raise ValueError(f"topic config {name} has no broker default")
        defaults[name] = str(broker_default(config, server_default))
    base = LogConfig(max_decompressed_bytes=config["message.max.decompressed.bytes"])
    return base.with_overrides(defaults)
