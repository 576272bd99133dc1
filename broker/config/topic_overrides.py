"""Per-topic config overrides (/config/topics/<t>), cached per topic incarnation."""

from __future__ import annotations

from zk.kafka_zk import KafkaZk


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
