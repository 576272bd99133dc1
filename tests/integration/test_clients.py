"""Acceptance: every real client creates a 6-partition topic, produces thousands of keyed
records with headers under each compression codec, and reads every one back unchanged."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration import client_roundtrip as rt
from tests.integration.conftest import ClusterHandle, start_cluster

RECORD_COUNT = 3000
CODECS = ["gzip", "snappy", "lz4", "zstd"]
RoundTrip = Callable[
    [str, str, str, list[rt.Sent]], tuple[dict[int, tuple[int, int]], list[rt.Received]]
]
CLIENTS: dict[str, RoundTrip] = {
    "kafka-python": rt.roundtrip_kafka_python,
    "aiokafka": rt.roundtrip_aiokafka,
    "confluent-kafka": rt.roundtrip_confluent,
    "kcat": rt.roundtrip_kcat,
}


@pytest.fixture(scope="module")
def client_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    # num.partitions=6 so kcat's auto-created topics get 6 partitions like the others.
    directory = Path(tmp_path_factory.mktemp("clients")) / "cluster"
    handle = start_cluster(directory, overrides={"num.partitions": "6"})
    try:
        yield handle
    finally:
        with contextlib.suppress(Exception):
            handle.tear_down()


def _check_partitions_dense(received: list[rt.Received]) -> None:
    by_partition: dict[int, list[int]] = {}
    for record in received:
        by_partition.setdefault(record.partition, []).append(record.offset)
    assert set(by_partition) <= set(range(rt.PARTITIONS))
    assert len(by_partition) > 1, "keys should spread over several partitions"
    for partition, offsets in by_partition.items():
        assert offsets == list(range(len(offsets))), f"partition {partition} offsets not dense"


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", list(CLIENTS))
def test_client_roundtrip(client_cluster: ClusterHandle, client: str, codec: str) -> None:
    topic = f"rt-{client}-{codec}"
    records = rt.make_records(RECORD_COUNT, client)
    started_ms = int(time.time() * 1000)
    acked, received = CLIENTS[client](client_cluster.bootstrap, topic, codec, records)
    assert len(received) == RECORD_COUNT
    _check_partitions_dense(received)
    if client == "kcat":
        _check_kcat(records, received, started_ms)
        return
    at = {(r.partition, r.offset): r for r in received}
    for index, sent in enumerate(records):
        got = at[acked[index]]
        assert (got.key, got.value) == (sent.key, sent.value)
        assert got.headers == sent.headers
        assert got.timestamp_ms == sent.timestamp_ms


def _check_kcat(records: list[rt.Sent], received: list[rt.Received], started_ms: int) -> None:
    sent_pairs = sorted((r.key, r.value) for r in records)
    assert sorted((r.key or b"", r.value or b"") for r in received) == sent_pairs
    now_ms = int(time.time() * 1000)
    for record in received:
        assert record.headers == (("client", b"kcat"),)
        assert started_ms - 1000 <= record.timestamp_ms <= now_ms
    # Records with one key keep their produce order within their partition.
    by_key: dict[bytes, list[rt.Received]] = {}
    for record in sorted(received, key=lambda r: (r.partition, r.offset)):
        by_key.setdefault(record.key or b"", []).append(record)
    for key, group in by_key.items():
        assert len({r.partition for r in group}) == 1, f"key {key!r} split over partitions"
        sequence = [int(r.value.split(b"-")[2]) for r in group if r.value]
        assert sequence == sorted(sequence)
