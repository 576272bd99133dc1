"""Per-topic config overrides (/config/topics/<t>) and how they shape a partition's log."""

from __future__ import annotations

import dataclasses

from broker.log.log import LogConfig
from zk.kafka_zk import KafkaZk

# topic config name -> LogConfig field (broker-wide defaults come from server.properties)
_LOG_FIELDS: dict[str, str] = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "index.interval.bytes": "index_interval_bytes",
    "segment.index.bytes": "segment_index_bytes",
    "max.message.bytes": "max_message_bytes",
    "message.timestamp.type": "message_timestamp_type",
}


def log_config_for(default: LogConfig, topic_configs: dict[str, str]) -> LogConfig:
    changes: dict[str, object] = {}
    for name, field_name in _LOG_FIELDS.items():
        if name in topic_configs:
            text = topic_configs[name]
            changes[field_name] = text if name == "message.timestamp.type" else int(text)
    return dataclasses.replace(default, **changes)  # type: ignore[arg-type]


class TopicConfigs:
    """Caches each topic's overrides, keyed by topic id so a re-created topic is re-read."""

    def __init__(self, kafka_zk: KafkaZk) -> None:
        self._kafka_zk = kafka_zk
        self._cache: dict[str, tuple[str, dict[str, str]]] = {}

    async def get(self, topic: str, topic_id: str) -> dict[str, str]:
        cached = self._cache.get(topic)
        if cached is not None and cached[0] == topic_id:
            return cached[1]
        configs = await self._kafka_zk.get_topic_configs(topic)
        self._cache[topic] = (topic_id, configs)
        return configs

    def cached(self, topic: str) -> dict[str, str]:
        cached = self._cache.get(topic)
        return {} if cached is None else cached[1]

    def forget(self, topic: str) -> None:
        self._cache.pop(topic, None)
