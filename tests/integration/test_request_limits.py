"""Per-request memory bounds on a live broker: decompression bombs and fetch.max.bytes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import zstandard

from broker.log.batch import CURRENT_MAGIC, HEADER_SIZE_BYTES, HEADER_STRUCT, compute_crc
from broker.log.compression import ZSTD
from broker.log.record_codec import SimpleRecord, build_batch, decode_records
from tests.integration.conftest import ClusterFactory, ClusterHandle
from tests.integration.requests import topic_spec
from tests.integration.wire import (
    WireClient,
    api_versions_ok,
    controller_address,
    create_topics,
    fetch,
    leader_address,
    produce,
)

TOPIC = "limits"
MESSAGE_TOO_LARGE = 10
FETCH_MAX_BYTES = 4096
BOMB_DECOMPRESSED_BYTES = 256 * 1024 * 1024  # four times message.max.decompressed.bytes


@pytest.fixture(scope="module")
def limited(make_cluster_module: ClusterFactory) -> Iterator[tuple[ClusterHandle, str]]:
    cluster = make_cluster_module(brokers=1, overrides={"fetch.max.bytes": str(FETCH_MAX_BYTES)})
    with WireClient.to(controller_address(cluster)) as client:
        response = create_topics(client, [topic_spec(TOPIC)], version=5)
        assert [int(t.error_code) for t in response.topics] == [0]
    yield cluster, leader_address(cluster, TOPIC)


def _zstd_bomb_batch() -> bytes:
    """A client batch whose zstd records section is a few KB but expands to 256 MiB."""
    compressor = zstandard.ZstdCompressor(level=19).compressobj()
    zeros = bytes(1024 * 1024)
    section = b"".join(compressor.compress(zeros) for _ in range(256)) + compressor.flush()
    batch = bytearray(HEADER_SIZE_BYTES + len(section))
    fields = (0, len(batch) - 12, -1, CURRENT_MAGIC, 0, ZSTD, 0, 1000, 1000, -1, -1, -1, 1)
    HEADER_STRUCT.pack_into(batch, 0, *fields)
    batch[HEADER_SIZE_BYTES:] = section
    HEADER_STRUCT.pack_into(batch, 0, *fields[:4], compute_crc(batch, 0, len(batch)), *fields[5:])
    return bytes(batch)


def _values(address: str, max_bytes: int = 1 << 30) -> list[bytes | None]:
    with WireClient.to(address) as client:
        data = fetch(client, TOPIC, 0, 0, max_bytes=max_bytes)
    return [record.value for record in decode_records(data.records or b"")]


def test_decompression_bomb_is_refused_and_nothing_is_stored(
    limited: tuple[ClusterHandle, str],
) -> None:
    _, address = limited
    bomb = _zstd_bomb_batch()
    assert len(bomb) < 64 * 1024, "the bomb itself is small"
    good = build_batch([SimpleRecord(None, b"kept", (), 1_700_000_000_000)], compression_type=ZSTD)
    with WireClient.to(address) as client:
        assert int(produce(client, TOPIC, 0, good).error_code) == 0
        assert int(produce(client, TOPIC, 0, bomb).error_code) == MESSAGE_TOO_LARGE
        assert int(produce(client, TOPIC, 0, good).error_code) == 0
    assert api_versions_ok(address)
    assert _values(address) == [b"kept", b"kept"]


def test_fetch_max_bytes_caps_what_the_client_asks_for(limited: tuple[ClusterHandle, str]) -> None:
    _, address = limited
    batches = [build_batch([SimpleRecord(None, bytes(1500), (), 1_700_000_000_000)])] * 6
    with WireClient.to(address) as client:
        for batch in batches:
            assert int(produce(client, TOPIC, 0, batch).error_code) == 0
        data = fetch(client, TOPIC, 0, 0, max_bytes=1 << 30)
    assert 0 < len(data.records) <= FETCH_MAX_BYTES
