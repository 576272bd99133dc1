"""Retention: segments past retention.ms or beyond retention.bytes are deleted from the old end,
the log start offset moves up, and consumers see the new low watermark."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.conftest import ClusterFactory, wait_until

TIMEOUT_S = 60


def _create(bootstrap: str, topic: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(timeout=TIMEOUT_S)


def _produce(bootstrap: str, topic: str, count: int, timestamp_ms: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(count):
        producer.produce(topic, f"record-{i:04d}-".encode() * 4, timestamp=timestamp_ms)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0


def _watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()
    return int(low), int(high)


def test_time_and_size_retention_delete_old_segments(make_cluster: ClusterFactory) -> None:
    cluster = make_cluster(brokers=1, overrides={"log.retention.check.interval.ms": "300"})
    segments = {"segment.bytes": "1000"}
    _create(cluster.bootstrap, "by-time", {**segments, "retention.ms": "60000"})
    _create(cluster.bootstrap, "by-size", {**segments, "retention.bytes": "3000"})
    _create(cluster.bootstrap, "kept", segments)
    hour_ago_ms = int(time.time() * 1000) - 3_600_000
    for topic in ("by-time", "by-size", "kept"):
        _produce(cluster.bootstrap, topic, 200, hour_ago_ms)

    wait_until(
        lambda: _watermarks(cluster.bootstrap, "by-time")[0] > 0, TIMEOUT_S, "time retention"
    )
    wait_until(
        lambda: _watermarks(cluster.bootstrap, "by-size")[0] > 0, TIMEOUT_S, "size retention"
    )
    low, high = _watermarks(cluster.bootstrap, "by-time")
    assert high == 200 and 0 < low < 200, "the active segment is never deleted"
    data = cluster.dir / "broker-1" / "data"

    def size_bytes() -> int:
        return sum(p.stat().st_size for p in (data / "by-size-0").glob("*.log"))

    # Retention runs every 300 ms and may have first run while records were still arriving.
    wait_until(
        lambda: size_bytes() <= 3000 + 1000,
        TIMEOUT_S,
        "at most retention.bytes plus one segment to remain",
    )
    assert size_bytes() >= 3000 - 1000, "size retention must not delete more than it needs"
    assert len(list((data / "kept-0").glob("*.log"))) > 3
    assert _watermarks(cluster.bootstrap, "kept") == (0, 200), "default retention is 7 days"
