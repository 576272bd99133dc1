"""What a topic config is where its topic does not override it: the broker config the topic
config table names as its server default, as this broker runs with it.

Logs start from `default_log_config` and DescribeConfigs reports the same values
(broker/config/entries.py), so what is described is what logs apply.
"""

from __future__ import annotations

from broker.config.kafka_config import KafkaConfig
from broker.log.config import TOPIC_CONFIG_FIELDS, LogConfig
from controller.topic_config_defs import TOPIC_CONFIGS


def default_log_config(config: KafkaConfig) -> LogConfig:
    """The LogConfig of a topic without overrides: each field from its topic config's broker
    default, read as a topic override would be."""
    defaults: dict[str, str] = {}
    for name in TOPIC_CONFIG_FIELDS:
        server_default = TOPIC_CONFIGS[name].server_default
        if server_default is None:
            raise ValueError(f"topic config {name} has no broker default")
        defaults[name] = str(config.with_synonyms(server_default))
    base = LogConfig(max_decompressed_bytes=config["message.max.decompressed.bytes"])
    return base.with_overrides(defaults)
