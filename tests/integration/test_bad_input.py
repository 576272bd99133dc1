"""Bad input gets Kafka's error code or a clean close, and the broker keeps serving."""

from __future__ import annotations

import contextlib
import random
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.log.record_codec import SimpleRecord, build_batch, decode_records
from broker.protocol.api_keys import ApiKey
from tests.integration.conftest import ClusterHandle
from tests.integration.requests import METADATA, PRODUCE, topic_spec
from tests.integration.wire import (
    WireClient,
    api_versions_ok,
    broker_address,
    controller_address,
    create_topics,
    delete_topics,
    fetch,
    first_broker,
    leader_address,
    metadata,
    produce,
)

TOPIC = "bad-input"
SMALL_TOPIC = "bad-input-small"
CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_TOPIC_EXCEPTION = 2, 10, 17
UNKNOWN_TOPIC_OR_PARTITION, RESOURCE_NOT_FOUND = 3, 91
SOCKET_REQUEST_MAX_BYTES = 1024 * 1024


@pytest.fixture(scope="module")
def leader(cluster: ClusterHandle) -> Iterator[str]:
    """Create the test topics (1 partition, RF 1) and return their leader's address."""
    controller = controller_address(cluster)
    specs = [topic_spec(TOPIC), topic_spec(SMALL_TOPIC, configs={"max.message.bytes": "1000"})]
    with WireClient.to(controller) as client:
        response = create_topics(client, specs, version=5)
        assert [int(t.error_code) for t in response.topics] == [0, 0]
    yield leader_address(cluster, TOPIC, via=controller)


def _produce(client: WireClient, topic: str, records: bytes) -> Any:
    return produce(client, topic, 0, records, acks=1, version=8)


def _fetch_all(address: str, topic: str) -> list[bytes | None]:
    with WireClient.to(address) as client:
        data = fetch(client, topic, 0, 0, version=11)
    assert int(data.error_code) == 0
    return [r.value for r in decode_records(data.records or b"")]


def _batch(value: bytes, count: int = 1) -> bytes:
    return build_batch([SimpleRecord(None, value, (), 1_700_000_000_000) for _ in range(count)])


def test_good_records_survive_every_bad_produce(leader: str) -> None:
    with WireClient.to(leader) as client:
        assert int(_produce(client, TOPIC, _batch(b"first")).error_code) == 0
        corrupt = bytearray(_batch(b"corrupted"))
        corrupt[-1] ^= 0xFF
        assert int(_produce(client, TOPIC, bytes(corrupt)).error_code) == CORRUPT_MESSAGE
        bad_magic = bytearray(_batch(b"magic"))
        bad_magic[16] = 1
        assert int(_produce(client, TOPIC, bytes(bad_magic)).error_code) == CORRUPT_MESSAGE
        truncated = _batch(b"truncated")[:-3]
        assert int(_produce(client, TOPIC, truncated).error_code) == CORRUPT_MESSAGE
        assert int(_produce(client, TOPIC, _batch(b"second")).error_code) == 0
    assert _fetch_all(leader, TOPIC)[:1] == [b"first"]
    assert b"second" in _fetch_all(leader, TOPIC)
    assert not {b"corrupted", b"magic", b"truncated"} & set(_fetch_all(leader, TOPIC))


def test_oversize_batch_gets_message_too_large(cluster: ClusterHandle) -> None:
    address = leader_address(cluster, SMALL_TOPIC)
    with WireClient.to(address) as client:
        result = _produce(client, SMALL_TOPIC, _batch(b"x" * 2000))
        assert int(result.error_code) == MESSAGE_TOO_LARGE
        assert int(_produce(client, SMALL_TOPIC, _batch(b"small")).error_code) == 0


@pytest.mark.parametrize("name", ["bad name!", "..", "x" * 250, "ünïcode"])
def test_invalid_topic_names_are_refused(cluster: ClusterHandle, name: str) -> None:
    with WireClient.to(first_broker(cluster)) as client:
        response = metadata(client, [name], auto_create=True)
        assert int(response.topics[0].error_code) == INVALID_TOPIC_EXCEPTION
    with WireClient.to(broker_address(cluster, response.controller_id)) as client:
        created = create_topics(client, [topic_spec(name)], version=5, timeout_ms=10000)
        assert int(created.topics[0].error_code) == INVALID_TOPIC_EXCEPTION


@pytest.mark.parametrize("name", ["..", ".", "a/b", "a\x00b", "x/.."])
def test_names_that_cannot_be_znodes_get_kafka_errors(cluster: ClusterHandle, name: str) -> None:
    """Names a client sends become znode names; one that breaks ZooKeeper's path rules names
    nothing that exists (a found seed of the fuzzer: DeleteTopics of "..")."""
    with WireClient.to(controller_address(cluster)) as client:
        deleted = delete_topics(client, [name], version=6, timeout_ms=5000)
        assert [int(r.error_code) for r in deleted.responses] == [UNKNOWN_TOPIC_OR_PARTITION]
        described = client.request(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": [{"name": name}]}
        )
        assert [int(r.error_code) for r in described.results] == [RESOURCE_NOT_FOUND]
    assert api_versions_ok(controller_address(cluster))


def test_oversize_frame_closes_connection(cluster: ClusterHandle) -> None:
    address = first_broker(cluster)
    with WireClient.to(address) as client:
        client.send_raw(struct.pack(">i", 200 * 1024 * 1024))
        assert client.is_closed_by_peer()
    assert api_versions_ok(address)


@pytest.mark.parametrize(
    "payload",
    [
        struct.pack(">hhih", 999, 0, 1, -1),  # unknown API key
        struct.pack(">hhih", METADATA, 99, 1, -1),  # unsupported version
        struct.pack(">hhih", METADATA, 9, 1, -1) + b"\xff" * 7,  # garbage body
        b"\x00",  # shorter than a header
    ],
    ids=["unknown-api-key", "unsupported-version", "garbage-body", "short-header"],
)
def test_unparseable_requests_close_the_connection(cluster: ClusterHandle, payload: bytes) -> None:
    address = first_broker(cluster)
    with WireClient.to(address) as client:
        client.send_frame(payload)
        assert client.is_closed_by_peer()
    assert api_versions_ok(address)


def test_api_versions_of_unknown_version_answers_v0_error(cluster: ClusterHandle) -> None:
    address = first_broker(cluster)
    with WireClient.to(address) as client:
        client.send_frame(struct.pack(">hhih", 18, 77, 1, -1) + b"\x00")
        frame = client.read_frame()
    assert frame is not None
    correlation_id, error_code = struct.unpack_from(">ih", frame, 0)
    assert (correlation_id, error_code) == (1, 35)


def _valid_frames() -> list[bytes]:
    header = struct.pack(">hhih", METADATA, 1, 7, 2) + b"fz"
    produce_header = struct.pack(">hhih", PRODUCE, 3, 8, 2) + b"fz"
    topic = TOPIC.encode()
    records = _batch(b"fuzz")
    produce_body = (
        struct.pack(">hhi", -1, 1, 1000)
        + struct.pack(">ih", 1, len(topic))
        + topic
        + struct.pack(">iii", 1, 0, len(records))
        + records
    )
    return [header + struct.pack(">i", -1), produce_header + produce_body]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_frames_never_hurt_the_broker(leader: str, data: st.DataObject) -> None:
    if data.draw(st.booleans()):
        payload = data.draw(st.binary(max_size=512))
    else:
        payload = bytearray(data.draw(st.sampled_from(_valid_frames())))
        rng = random.Random(data.draw(st.integers(0, 2**32)))
        for _ in range(data.draw(st.integers(1, 8))):
            payload[rng.randrange(len(payload))] = rng.randrange(256)
        payload = bytes(payload[: data.draw(st.integers(0, len(payload)))])
    with WireClient.to(leader, timeout_s=5) as client:
        client.send_frame(payload)
        with contextlib.suppress(TimeoutError):  # acks=0 mutations get no answer
            client.read_frame()
    assert api_versions_ok(leader)


def test_log_intact_after_fuzzing(leader: str) -> None:
    values = _fetch_all(leader, TOPIC)
    assert values[0] == b"first"
    assert all(v in (b"first", b"second", b"fuzz") for v in values)


# The request from issue 9: Metadata v9 whose compact topics array claims ~1.2e10 elements.
# kio's native parser used to reserve memory for that count and abort the whole process.
DEADLY_METADATA_V9 = bytes.fromhex("00000012 0003 0009 00000007 0002 6378 00 ffffffff2d")


def test_deadly_18_byte_metadata_request_closes_only_its_connection(
    cluster: ClusterHandle,
) -> None:
    for broker_id in cluster.broker_ids:
        address = broker_address(cluster, broker_id)
        with WireClient.to(address) as client:
            client.send_raw(DEADLY_METADATA_V9)
            assert client.is_closed_by_peer()
        assert api_versions_ok(address)
        log_text = cluster.broker_log(broker_id).read_text(errors="replace")
        assert "MetadataRequest.topics" in log_text, "the close is logged with the field"
    status = cluster.status()
    assert all(b.alive and b.registered for b in status.brokers.values()), status.text
