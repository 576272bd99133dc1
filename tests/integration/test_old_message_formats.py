"""Old message formats (magic 0 and 1) with real old-protocol clients, as librdkafka's
0052_msg_timestamps test drives them: `api.version.request=false` with
`broker.version.fallback` 0.9.0 (Produce v0-v1 and Fetch v0-v1: magic 0, no timestamps) or
0.10.0 (Produce v2 and Fetch v2: magic 1, timestamps), with every codec old formats have.

The broker stores record batches v2 only: produce converts up, fetch converts down. A modern
client reading the same topic sees what was stored (CreateTime kept, -1 for magic 0; the
broker's time for LogAppendTime topics)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from broker.log.legacy_records import encode_message
from broker.log.record_codec import SimpleRecord, build_batch, decode_records
from tests.integration import wire
from tests.integration.conftest import ClusterHandle
from tests.integration.wire import WireClient, leader_address

TIMEOUT_S = 60
COUNT = 20
CREATE_TIME_MS = 1_234_567_890_000  # far from now: proves the producer's timestamp is kept
NO_TIMESTAMP = -1
FALLBACKS = {"0.9.0": 0, "0.10.0": 1}  # -> the magic it writes and reads
CODECS = ("none", "gzip", "snappy", "lz4")
LIST_OFFSETS = 2
DESCRIBE_CONFIGS = 32
TOPIC_RESOURCE = 2
UNSUPPORTED_VERSION = 35
CORRUPT_MESSAGE = 2
UNSUPPORTED_COMPRESSION_TYPE = 76


@pytest.fixture(scope="module")
def old_cluster(cluster: ClusterHandle) -> ClusterHandle:
    """The worker's shared cluster: each test's topic has a name of its own."""
    return cluster


def _create_topic(cluster: ClusterHandle, timestamp_type: str) -> str:
    topic = f"old-format-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new_topic = NewTopic(topic, 1, 1, config={"message.timestamp.type": timestamp_type})
    admin.create_topics([new_topic])[topic].result(timeout=TIMEOUT_S)
    return topic


def _old_config(cluster: ClusterHandle, fallback: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.bootstrap,
        "api.version.request": False,
        "broker.version.fallback": fallback,
    }


def _produce(config: dict[str, Any], topic: str, codec: str) -> list[int]:
    producer = Producer({**config, "compression.codec": codec, "linger.ms": 20, "acks": 1})
    offsets: list[int] = []
    errors: list[str] = []

    def report(error: Any, message: Any) -> None:
        if error is not None:
            errors.append(str(error))
        else:
            offsets.append(message.offset())

    for index in range(COUNT):
        producer.produce(
            topic,
            key=f"k{index}".encode(),
            value=f"value-{index}".encode() * 20,
            timestamp=CREATE_TIME_MS + index,
            on_delivery=report,
        )
    assert producer.flush(TIMEOUT_S) == 0 and not errors, errors[:3]
    return sorted(offsets)


def _consume(config: dict[str, Any], topic: str) -> list[Any]:
    consumer = Consumer({**config, "group.id": f"g-{topic}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    received: list[Any] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(received) < COUNT and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=100, timeout=0.5):
                assert message.error() is None, message.error()
                received.append(message)
    finally:
        consumer.close()
    assert len(received) == COUNT, f"read {len(received)} of {COUNT}"
    return received


def _modern(cluster: ClusterHandle) -> dict[str, Any]:
    return {"bootstrap.servers": cluster.bootstrap}


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("fallback", list(FALLBACKS))
def test_old_producer_and_consumer_on_a_create_time_topic(
    old_cluster: ClusterHandle, fallback: str, codec: str
) -> None:
    topic = _create_topic(old_cluster, "CreateTime")
    old = _old_config(old_cluster, fallback)
    assert _produce(old, topic, codec) == list(range(COUNT))
    magic = FALLBACKS[fallback]
    stored = _consume(_modern(old_cluster), topic)
    expected_ms = [CREATE_TIME_MS + i if magic else NO_TIMESTAMP for i in range(COUNT)]
    assert [m.timestamp()[1] for m in stored] == expected_ms
    assert [m.value() for m in stored] == [f"value-{i}".encode() * 20 for i in range(COUNT)]
    read = _consume(old, topic)
    assert [m.offset() for m in read] == list(range(COUNT))
    assert [m.key() for m in read] == [f"k{i}".encode() for i in range(COUNT)]
    if magic == 0:
        assert all(m.timestamp()[0] == TIMESTAMP_NOT_AVAILABLE for m in read)
    else:
        assert [m.timestamp() for m in read] == [(TIMESTAMP_CREATE_TIME, t) for t in expected_ms]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("fallback", list(FALLBACKS))
def test_old_producer_and_consumer_on_a_log_append_time_topic(
    old_cluster: ClusterHandle, fallback: str, codec: str
) -> None:
    topic = _create_topic(old_cluster, "LogAppendTime")
    old = _old_config(old_cluster, fallback)
    before_ms = int(time.time() * 1000)
    assert _produce(old, topic, codec) == list(range(COUNT))
    after_ms = int(time.time() * 1000)
    stored = _consume(_modern(old_cluster), topic)
    assert all(before_ms - 1000 <= m.timestamp()[1] <= after_ms + 1000 for m in stored)
    read = _consume(old, topic)
    assert [m.value() for m in read] == [f"value-{i}".encode() * 20 for i in range(COUNT)]
    if FALLBACKS[fallback] == 0:
        assert all(m.timestamp()[0] == TIMESTAMP_NOT_AVAILABLE for m in read)  # magic 0 has none
    else:
        assert [m.timestamp() for m in read] == [m.timestamp() for m in stored]
        assert all(m.timestamp()[0] == TIMESTAMP_LOG_APPEND_TIME for m in read)


def _list_offsets_v0(cluster: ClusterHandle, topic: str, timestamp: int, count: int) -> Any:
    with WireClient.to(leader_address(cluster, topic)) as leader:
        response = leader.request(
            LIST_OFFSETS,
            0,
            {
                "replica_id": -1,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "timestamp": timestamp,
                                "max_num_offsets": count,
                            }
                        ],
                    }
                ],
            },
        )
    return response.topics[0].partitions[0]


def test_list_offsets_v0_answers_segment_boundaries_newest_first(
    old_cluster: ClusterHandle,
) -> None:
    topic = _create_topic(old_cluster, "CreateTime")
    _produce(_modern(old_cluster), topic, "none")
    # One segment (base 0) plus the log end offset: latest lists both, newest first.
    latest = _list_offsets_v0(old_cluster, topic, -1, 10)
    assert (int(latest.error_code), list(latest.old_style_offsets)) == (0, [COUNT, 0])
    assert list(_list_offsets_v0(old_cluster, topic, -1, 1).old_style_offsets) == [COUNT]
    assert list(_list_offsets_v0(old_cluster, topic, -2, 10).old_style_offsets) == [0]
    future_ms = int(time.time() * 1000) + 3_600_000
    assert list(_list_offsets_v0(old_cluster, topic, future_ms, 10).old_style_offsets) == [
        COUNT,
        0,
    ]
    # Before the segment file was last written: nothing.
    assert list(_list_offsets_v0(old_cluster, topic, 1000, 10).old_style_offsets) == []
    # v0 knows only -1 and -2 among negative times.
    assert int(_list_offsets_v0(old_cluster, topic, -3, 10).error_code) == UNSUPPORTED_VERSION


@pytest.mark.parametrize("fallback", list(FALLBACKS))
def test_old_consumer_starts_from_the_beginning_and_the_end(
    old_cluster: ClusterHandle, fallback: str
) -> None:
    """The consumer resolves OFFSET_BEGINNING and OFFSET_END with ListOffsets v0."""
    topic = _create_topic(old_cluster, "CreateTime")
    old = _old_config(old_cluster, fallback)
    _produce(old, topic, "none")
    consumer = Consumer({**old, "group.id": f"g-{topic}", "enable.auto.commit": False})
    try:
        assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT_S) == (
            0,
            COUNT,
        )
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        first = _next_message(consumer)
        assert first.offset() == 0
        consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
        # The end is resolved asynchronously: produce until the consumer sees one of these,
        # which must come after everything produced before (never offset 0 again).
        producer = Producer({**old, "acks": 1})
        after = None
        deadline = time.monotonic() + TIMEOUT_S
        while after is None and time.monotonic() < deadline:
            producer.produce(topic, value=b"after-the-end")
            assert producer.flush(TIMEOUT_S) == 0
            after = consumer.poll(1.0)
        assert after is not None and after.error() is None
        assert after.offset() >= COUNT and after.value() == b"after-the-end"
    finally:
        consumer.close()


def _next_message(consumer: Any) -> Any:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None:
            assert message.error() is None, message.error()
            return message
    raise AssertionError("no message within the timeout")


def test_describe_configs_v0_answers_values_without_sources_or_synonyms(
    old_cluster: ClusterHandle,
) -> None:
    topic = _create_topic(old_cluster, "LogAppendTime")
    with WireClient.to(leader_address(old_cluster, topic)) as leader:
        response = leader.request(
            DESCRIBE_CONFIGS,
            0,
            {
                "resources": [
                    {
                        "resource_type": TOPIC_RESOURCE,
                        "resource_name": topic,
                        "configuration_keys": ["message.timestamp.type", "retention.ms"],
                    }
                ]
            },
        )
    (result,) = response.results
    assert int(result.error_code) == 0
    configs = {c.name: c for c in result.configs}
    assert configs["message.timestamp.type"].value == "LogAppendTime"
    assert configs["retention.ms"].value == "604800000"
    # Kafka 2.8-3.9 leave v0's is_default unset (false), whatever the source.
    assert not any(c.is_default for c in result.configs)


# kafka-python writes magic 0 lz4 only with the xxhash package (not installed).
KAFKA_PYTHON_CASES = [
    (api_version, codec)
    for api_version in ((0, 9), (0, 10))
    for codec in (None, "gzip", "snappy", "lz4")
    if (api_version, codec) != ((0, 9), "lz4")
]


@pytest.mark.parametrize(("api_version", "codec"), KAFKA_PYTHON_CASES)
def test_kafka_python_with_an_old_api_version_produces_and_consumes(
    old_cluster: ClusterHandle, api_version: tuple[int, int], codec: str | None
) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KafkaTopicPartition

    topic = _create_topic(old_cluster, "CreateTime")
    producer = KafkaProducer(
        bootstrap_servers=old_cluster.bootstrap,
        api_version=api_version,
        compression_type=codec,
        linger_ms=20,
    )
    futures = [
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, timestamp_ms=CREATE_TIME_MS + i)
        for i in range(COUNT)
    ]
    producer.flush(TIMEOUT_S)
    assert sorted(f.get(TIMEOUT_S).offset for f in futures) == list(range(COUNT))
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=old_cluster.bootstrap, api_version=api_version, group_id=None
    )
    partition = KafkaTopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)  # ListOffsets v0
    read: list[Any] = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(read) < COUNT and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            read.extend(batch)
    consumer.close()
    assert [(m.offset, m.key, m.value) for m in read] == [
        (i, b"k%d" % i, b"v%d" % i) for i in range(COUNT)
    ]
    if api_version == (0, 10):
        assert [m.timestamp for m in read] == [CREATE_TIME_MS + i for i in range(COUNT)]
    stored = _consume(_modern(old_cluster), topic)
    assert [m.timestamp()[1] for m in stored] == [
        CREATE_TIME_MS + i if api_version == (0, 10) else NO_TIMESTAMP for i in range(COUNT)
    ]


def _create_topic_with(cluster: ClusterHandle, config: dict[str, str]) -> str:
    topic = f"old-format-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(timeout=TIMEOUT_S)
    return topic


def test_old_message_sets_are_checked_and_down_conversion_can_be_refused(
    old_cluster: ClusterHandle,
) -> None:
    topic = _create_topic_with(old_cluster, {"message.downconversion.enable": "false"})
    message = encode_message(0, 1, 0, CREATE_TIME_MS, b"k", b"v")
    bad_crc = message[:-1] + bytes([message[-1] ^ 0xFF])
    with WireClient.to(leader_address(old_cluster, topic)) as leader:
        assert int(wire.produce(leader, topic, 0, message, version=2).error_code) == 0
        refused = wire.produce(leader, topic, 0, bad_crc, version=2)
        assert int(refused.error_code) == CORRUPT_MESSAGE
        # Produce v3+ carries record batches v2 only (see DEVIATIONS.md for the code).
        assert int(wire.produce(leader, topic, 0, message, version=3).error_code) == (
            CORRUPT_MESSAGE
        )
        assert int(wire.fetch(leader, topic, 0, 0, version=2).error_code) == UNSUPPORTED_VERSION
        stored = wire.fetch(leader, topic, 0, 0, version=4)
        assert int(stored.error_code) == 0
        assert [(r.offset, r.key, r.timestamp_ms) for r in decode_records(stored.records)] == [
            (0, b"k", CREATE_TIME_MS)
        ]


def test_zstd_batches_cannot_be_fetched_in_old_formats(old_cluster: ClusterHandle) -> None:
    topic = _create_topic(old_cluster, "CreateTime")
    batch = build_batch([SimpleRecord(b"k", b"v", (), CREATE_TIME_MS)], compression_type=4)
    with WireClient.to(leader_address(old_cluster, topic)) as leader:
        assert int(wire.produce(leader, topic, 0, batch).error_code) == 0
        for version in (0, 3):
            answered = wire.fetch(leader, topic, 0, 0, version=version)
            assert int(answered.error_code) == UNSUPPORTED_COMPRESSION_TYPE
