"""Fetches on a plaintext listener send large record sets straight from the segment files
(sendfile): the frames stay exact (a second request on the same connection is answered
right), the records are the ones produced, a fetch cut at max_bytes or partition_max_bytes
ends on a batch boundary (or is the whole first batch when that alone is larger), reads go on
across segments, and old Fetch versions still answer down-converted message sets. Every batch
here is larger than the broker's zero-copy threshold (fetch.ZERO_COPY_MIN_BYTES)."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest

from broker.handlers.fetch import ZERO_COPY_MIN_BYTES
from broker.log.record_codec import SimpleRecord, build_batch, decode_records
from tests.integration.conftest import ClusterHandle
from tests.integration.requests import FETCH, HUGE, fetch_request, topic_spec
from tests.integration.wire import (
    WireClient,
    controller_address,
    create_topics,
    leader_address,
    produce,
)

RECORD_BYTES = 1000
RECORDS_PER_BATCH = 40  # ~40 KB a batch: each above the zero-copy threshold
BATCHES = 6
TIMESTAMP_MS = 1_700_000_000_000
NONE = 0


def _value(offset: int) -> bytes:
    return (b"%08d:" % offset) * (RECORD_BYTES // 9) + b"z"


def _batch(first: int) -> bytes:
    return build_batch(
        [SimpleRecord(None, _value(first + i), (), TIMESTAMP_MS) for i in range(RECORDS_PER_BATCH)]
    )


def _topic_with_batches(
    cluster: ClusterHandle, batches: int = BATCHES, configs: dict[str, str] | None = None
) -> tuple[str, str]:
    """A new 1-partition RF 1 topic holding `batches` batches; its name and leader address."""
    topic = f"zero-copy-{uuid.uuid4().hex[:8]}"
    with WireClient.to(controller_address(cluster)) as client:
        created = create_topics(client, [topic_spec(topic, 1, 1, configs)])
    assert int(created.topics[0].error_code) == NONE, created
    address = leader_address(cluster, topic)
    with WireClient.to(address) as client:
        for n in range(batches):
            result = produce(client, topic, 0, _batch(n * RECORDS_PER_BATCH))
            assert int(result.error_code) == NONE, result
    return topic, address


def _fetch(client: WireClient, topic: str, offset: int, version: int = 12, **limits: int) -> Any:
    response = client.request(FETCH, version, fetch_request(topic, 0, offset, **limits))
    assert int(getattr(response, "error_code", NONE)) == NONE  # v7+
    (partition,) = response.responses[0].partitions
    assert int(partition.error_code) == NONE
    return partition


def _offsets_and_values(records: bytes) -> list[tuple[int, bytes | None]]:
    return [(record.offset, record.value) for record in decode_records(records)]


def _expected(first: int, count: int) -> list[tuple[int, bytes | None]]:
    return [(offset, _value(offset)) for offset in range(first, first + count)]


def test_the_batches_are_large_enough_to_be_sent_from_the_file() -> None:
    assert len(_batch(0)) >= ZERO_COPY_MIN_BYTES


@pytest.mark.parametrize("version", [4, 7, 11, 12])
def test_a_fetch_answers_every_batch_and_the_frame_is_exact(
    cluster: ClusterHandle, version: int
) -> None:
    topic, address = _topic_with_batches(cluster)
    total = BATCHES * RECORDS_PER_BATCH
    with WireClient.to(address, timeout_s=30) as client:
        whole = _fetch(client, topic, 0, version)
        assert _offsets_and_values(whole.records) == _expected(0, total)
        # The same connection, right after: a frame one byte off would garble this answer.
        middle = _fetch(client, topic, 2 * RECORDS_PER_BATCH + 3, version)
        records = _offsets_and_values(middle.records)
        assert records == _expected(2 * RECORDS_PER_BATCH, total - 2 * RECORDS_PER_BATCH)
        assert int(middle.high_watermark) == total


def test_a_fetch_of_several_partitions_answers_each_whole(cluster: ClusterHandle) -> None:
    topic = f"zero-copy-{uuid.uuid4().hex[:8]}"
    partitions = 3
    with WireClient.to(controller_address(cluster)) as client:
        created = create_topics(client, [topic_spec(topic, partitions, 1)])
    assert int(created.topics[0].error_code) == NONE, created
    addresses = {p: leader_address(cluster, topic, p) for p in range(partitions)}
    for partition, address in addresses.items():
        with WireClient.to(address) as client:
            # Partition 1 gets one small batch: copied, between two sent from files.
            batch = build_batch([SimpleRecord(None, b"small", (), TIMESTAMP_MS)])
            for n in range(1 if partition == 1 else 3):
                data = batch if partition == 1 else _batch(n * RECORDS_PER_BATCH)
                assert int(produce(client, topic, partition, data).error_code) == NONE
    for address in set(addresses.values()):
        request = fetch_request(topic, 0, 0)
        request["topics"][0]["partitions"] = [
            {**request["topics"][0]["partitions"][0], "partition": p}
            for p, leader in addresses.items()
            if leader == address
        ]
        with WireClient.to(address, timeout_s=30) as client:
            response = client.request(FETCH, 12, request)
            for data in response.responses[0].partitions:
                index = int(data.partition_index)
                assert int(data.error_code) == NONE
                values = _offsets_and_values(data.records)
                if index == 1:
                    assert values == [(0, b"small")]
                else:
                    assert values == _expected(0, 3 * RECORDS_PER_BATCH)


@pytest.mark.parametrize("limit", ["max_bytes", "partition_max_bytes"])
def test_a_fetch_cut_at_a_byte_limit_ends_on_a_batch_boundary(
    cluster: ClusterHandle, limit: str
) -> None:
    topic, address = _topic_with_batches(cluster)
    batch_bytes = len(_batch(0))
    with WireClient.to(address, timeout_s=30) as client:
        for whole_batches in (2, 3):
            limit_bytes = whole_batches * batch_bytes + batch_bytes // 2
            cut = _fetch(client, topic, 0, **{limit: limit_bytes})
            assert len(cut.records) == whole_batches * batch_bytes
            assert _offsets_and_values(cut.records) == _expected(
                0, whole_batches * RECORDS_PER_BATCH
            )
        # The first batch alone is larger than the limit: it comes back whole (KIP-74).
        first = _fetch(client, topic, RECORDS_PER_BATCH, **{limit: 100})
        assert len(first.records) == batch_bytes
        assert _offsets_and_values(first.records) == _expected(RECORDS_PER_BATCH, RECORDS_PER_BATCH)


def test_reads_go_on_across_segments(cluster: ClusterHandle) -> None:
    batch_bytes = len(_batch(0))
    # Two batches fit a segment: ten batches make five segments.
    topic, address = _topic_with_batches(
        cluster, batches=10, configs={"segment.bytes": str(2 * batch_bytes + 100)}
    )
    total = 10 * RECORDS_PER_BATCH
    received: list[tuple[int, bytes | None]] = []
    reads = 0
    with WireClient.to(address, timeout_s=30) as client:
        while len(received) < total:
            data = _fetch(client, topic, len(received), max_bytes=HUGE)
            records = [r for r in _offsets_and_values(data.records) if r[0] >= len(received)]
            assert records, f"no progress at offset {len(received)}"
            # A read ends at its segment's end, as Kafka's does.
            assert len(data.records) <= 2 * batch_bytes
            received += records
            reads += 1
    assert received == _expected(0, total)
    assert reads == 5


def _legacy_messages(message_set: bytes) -> list[tuple[int, int, bytes | None]]:
    """(offset, magic, value) of each uncompressed message of a magic 0/1 message set."""
    messages = []
    position = 0
    while position + 12 <= len(message_set):
        offset, size = struct.unpack_from(">qi", message_set, position)
        body = position + 12
        if body + size > len(message_set):
            break  # a trailing partial message, as a size limit may leave
        magic = message_set[body + 4]
        cursor = body + 6 + (8 if magic == 1 else 0)
        (key_size,) = struct.unpack_from(">i", message_set, cursor)
        cursor += 4 + max(key_size, 0)
        (value_size,) = struct.unpack_from(">i", message_set, cursor)
        value = None if value_size < 0 else message_set[cursor + 4 : cursor + 4 + value_size]
        messages.append((offset, magic, value))
        position = body + size
    return messages


@pytest.mark.parametrize(("version", "magic"), [(0, 0), (2, 1), (3, 1)])
def test_old_fetch_versions_down_convert_large_record_sets(
    cluster: ClusterHandle, version: int, magic: int
) -> None:
    topic, address = _topic_with_batches(cluster, batches=3)
    with WireClient.to(address, timeout_s=30) as client:
        data = _fetch(client, topic, RECORDS_PER_BATCH, version)
        again = _fetch(client, topic, 0, version)  # the frame before was exact
    expected = [(offset, magic, value) for offset, value in _expected(40, 2 * RECORDS_PER_BATCH)]
    assert _legacy_messages(data.records) == expected
    assert len(_legacy_messages(again.records)) == 3 * RECORDS_PER_BATCH
