"""Per-record validation on append (KIP-467): a compacted topic refuses a batch holding
records without a key with INVALID_RECORD, names each keyless record in `record_errors`,
gives an error message, and appends nothing of the batch (librdkafka 0011_produce_batch's
test_message_single_partition_record_fail)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker.log import compression
from broker.log.record_codec import SimpleRecord, build_batch
from tests.integration.conftest import ClusterHandle
from tests.integration.wire import LATEST, WireClient, leader_address, list_offsets, produce

pytestmark = pytest.mark.integration

CLIENT_TIMEOUT_S = 60.0
INVALID_RECORD = 87


@pytest.fixture(scope="module")
def cluster(make_cluster_module: Callable[..., ClusterHandle]) -> ClusterHandle:
    return make_cluster_module(brokers=1)


def _compacted_topic(cluster: ClusterHandle) -> str:
    topic = f"compacted-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new = NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})
    admin.create_topics([new])[topic].result(timeout=CLIENT_TIMEOUT_S)
    return topic


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
