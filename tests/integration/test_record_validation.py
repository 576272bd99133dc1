"""Per-record validation on append (KIP-467): a compacted topic refuses a batch holding
records without a key with INVALID_RECORD, names each keyless record in `record_errors`,
gives an error message, and appends nothing of the batch (librdkafka 0011_produce_batch's
test_message_single_partition_record_fail). A topic with timestamp bounds
(message.timestamp.before/after.max.ms, KIP-937, or the older difference.max.ms) refuses
CreateTime records stamped outside them the same way, with INVALID_TIMESTAMP."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker.log import compression
from broker.log.record_codec import SimpleRecord, build_batch
from tests.integration.conftest import ClusterHandle
from tests.integration.wire import LATEST, WireClient, leader_address, list_offsets, produce

CLIENT_TIMEOUT_S = 60.0
INVALID_RECORD = 87
INVALID_TIMESTAMP = 32
HOUR_MS = 3_600_000


def _topic(cluster: ClusterHandle, config: dict[str, str]) -> str:
    topic = f"checked-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new = NewTopic(topic, 1, 1, config=config)
    admin.create_topics([new])[topic].result(timeout=CLIENT_TIMEOUT_S)
    return topic


def _compacted_topic(cluster: ClusterHandle) -> str:
    return _topic(cluster, {"cleanup.policy": "compact"})


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _log_end(address: str, topic: str) -> int:
    with WireClient.to(address) as client:
        return int(list_offsets(client, topic, 0, LATEST).offset)


@pytest.mark.parametrize("codec", [compression.NONE, compression.LZ4])
def test_keyless_records_refuse_the_whole_batch_and_are_named(
    cluster: ClusterHandle, codec: int
) -> None:
    topic = _compacted_topic(cluster)
    address = leader_address(cluster, topic)
    keyed = [SimpleRecord(b"k0", b"v0"), SimpleRecord(b"k1", b"v1")]
    accepted = build_batch(keyed, compression_type=codec)
    mixed = [
        SimpleRecord(b"k2", b"v2"),
        SimpleRecord(None, b"no key"),
        SimpleRecord(b"k3", b"v3"),
        SimpleRecord(None, b"no key either"),
    ]
    refused = build_batch(mixed, compression_type=codec)
    with WireClient.to(address) as client:
        assert int(produce(client, topic, 0, accepted).error_code) == 0
        result = produce(client, topic, 0, refused)
    assert int(result.error_code) == INVALID_RECORD
    assert [int(e.batch_index) for e in result.record_errors] == [1, 3]
    assert all("key" in (e.batch_index_error_message or "") for e in result.record_errors)
    assert result.error_message
    assert _log_end(address, topic) == 2, "nothing of the refused batch may be appended"


def test_librdkafka_gets_invalid_record_for_every_message_of_the_batch(
    cluster: ClusterHandle,
) -> None:
    topic = _compacted_topic(cluster)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 100})
    outcomes: list[int | None] = []

    def report(error: KafkaError | None, _message: object) -> None:
        outcomes.append(None if error is None else error.code())

    producer.produce(topic, key=b"k", value=b"with key", partition=0, on_delivery=report)
    producer.produce(topic, value=b"without key", partition=0, on_delivery=report)
    producer.produce(topic, key=b"k2", value=b"with key", partition=0, on_delivery=report)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0
    assert outcomes == [KafkaError.INVALID_RECORD] * 3
    assert _log_end(leader_address(cluster, topic), topic) == 0


BOUNDED = {
    "message.timestamp.before.max.ms": str(HOUR_MS),
    "message.timestamp.after.max.ms": str(HOUR_MS),
}


@pytest.mark.parametrize("codec", [compression.NONE, compression.LZ4])
@pytest.mark.parametrize(
    "config",
    [BOUNDED, {"message.timestamp.difference.max.ms": str(HOUR_MS)}],
    ids=["before-after", "difference"],
)
def test_records_stamped_outside_the_bounds_refuse_the_batch_and_are_named(
    cluster: ClusterHandle, codec: int, config: dict[str, str]
) -> None:
    topic = _topic(cluster, config)
    address = leader_address(cluster, topic)
    now = _now_ms()
    in_bounds = [SimpleRecord(b"k", b"now", timestamp_ms=now - HOUR_MS // 2)]
    stamps = [now, now - 2 * HOUR_MS, now + 2 * HOUR_MS, now + HOUR_MS // 2]
    mixed = [SimpleRecord(b"k", b"v%d" % i, timestamp_ms=t) for i, t in enumerate(stamps)]
    with WireClient.to(address) as client:
        accepted = produce(client, topic, 0, build_batch(in_bounds, compression_type=codec))
        refused = produce(client, topic, 0, build_batch(mixed, compression_type=codec))
    assert int(accepted.error_code) == 0
    assert int(refused.error_code) == INVALID_TIMESTAMP
    assert [int(e.batch_index) for e in refused.record_errors] == [1, 2]
    assert all("timestamp" in (e.batch_index_error_message or "") for e in refused.record_errors)
    assert refused.error_message
    assert _log_end(address, topic) == 1, "nothing of the refused batch may be appended"


def test_log_append_time_topics_and_unbounded_topics_take_any_timestamp(
    cluster: ClusterHandle,
) -> None:
    old = [SimpleRecord(b"k", b"old", timestamp_ms=_now_ms() - 1000 * HOUR_MS)]
    for config in ({**BOUNDED, "message.timestamp.type": "LogAppendTime"}, {}):
        topic = _topic(cluster, config)
        address = leader_address(cluster, topic)
        with WireClient.to(address) as client:
            assert int(produce(client, topic, 0, build_batch(old)).error_code) == 0, config
        assert _log_end(address, topic) == 1


def test_librdkafka_gets_invalid_timestamp_for_a_record_stamped_a_day_ago(
    cluster: ClusterHandle,
) -> None:
    topic = _topic(cluster, BOUNDED)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    outcomes: list[int | None] = []

    def report(error: KafkaError | None, _message: object) -> None:
        outcomes.append(None if error is None else error.code())

    day_ago = _now_ms() - 24 * HOUR_MS
    producer.produce(topic, b"old", partition=0, timestamp=day_ago, on_delivery=report)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0
    producer.produce(topic, b"fresh", partition=0, on_delivery=report)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0
    assert outcomes == [KafkaError.INVALID_TIMESTAMP, None]
    assert _log_end(leader_address(cluster, topic), topic) == 1
