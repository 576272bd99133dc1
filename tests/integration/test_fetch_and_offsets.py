"""Fetch, Produce and ListOffsets on the wire: long polling, byte limits, offset errors,
leadership errors, offsets by timestamp, acks=0 and reading across rolled segments."""

from __future__ import annotations

import re
import select
import threading
import time
import uuid
from typing import Any

from broker.log.record_codec import DecodedRecord, SimpleRecord, build_batch, decode_records
from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import (
    FETCH,
    HUGE,
    PRODUCE,
    fetch_request,
    produce_request,
    topic_spec,
)
from tests.integration.wire import (
    WireClient,
    broker_address,
    controller_address,
    create_topics,
    first_broker,
    list_offsets,
    metadata,
    produce,
)

NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER = 0, 1, 3, 6
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
FETCH_VERSION = 12
BASE_TS = 1_700_000_000_000
TIMEOUT_S = 30


# -- helpers ------------------------------------------------------------------------------


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _partition_metadata(address: str, topic: str, partition: int = 0) -> Any | None:
    with WireClient.to(address) as client:
        topics = metadata(client, [topic]).topics
    if not topics or int(topics[0].error_code) != NONE:
        return None
    by_index = {int(p.partition_index): p for p in topics[0].partitions}
    return by_index.get(partition)


def _list_offsets(address: str, topic: str, timestamp: int) -> Any:
    with WireClient.to(address) as client:
        return list_offsets(client, topic, 0, timestamp)


def _create_topic(
    cluster: ClusterHandle,
    replication_factor: int = 1,
    configs: dict[str, str] | None = None,
    prefix: str = "fo",
) -> tuple[str, int]:
    """Create a 1-partition topic; return its name and leader id once the leader serves it."""
    name = _unique(prefix)
    spec = topic_spec(name, 1, replication_factor, configs)
    with WireClient.to(controller_address(cluster)) as client:
        response = create_topics(client, [spec], version=5)
    assert int(response.topics[0].error_code) == NONE, response
    leader: list[int] = []

    def leader_serves() -> bool:
        for broker_id in cluster.broker_ids:
            partition = _partition_metadata(broker_address(cluster, broker_id), name)
            if partition is None or int(partition.leader_id) < 0:
                return False
        partition = _partition_metadata(first_broker(cluster), name)
        assert partition is not None
        leader[:] = [int(partition.leader_id)]
        result = _list_offsets(broker_address(cluster, leader[0]), name, LATEST)
        return int(result.error_code) == NONE

    wait_until(leader_serves, TIMEOUT_S, f"a serving leader for {name}")
    return name, leader[0]


def _produce(address: str, topic: str, records: bytes, partition: int = 0) -> Any:
    with WireClient.to(address) as client:
        return produce(client, topic, partition, records, acks=1, version=9)


def _fetch(
    address: str, topic: str, offset: int, version: int = FETCH_VERSION, **limits: int
) -> Any:
    """One Fetch for one partition (top-level error checked); returns its partition data."""
    with WireClient.to(address, timeout_s=30) as client:
        response = client.request(FETCH, version, fetch_request(topic, 0, offset, **limits))
    assert int(response.error_code) == NONE
    return response.responses[0].partitions[0]


def _records(data: Any) -> list[DecodedRecord]:
    return decode_records(data.records or b"")


def _batch(values: list[bytes], timestamps: list[int] | None = None) -> bytes:
    stamps = timestamps or [BASE_TS] * len(values)
    return build_batch(
        [SimpleRecord(None, v, (), ts) for v, ts in zip(values, stamps, strict=True)]
    )


def _produce_ok(address: str, topic: str, records: bytes) -> int:
    result = _produce(address, topic, records)
    assert int(result.error_code) == NONE, result
    return int(result.base_offset)


# -- long polling -------------------------------------------------------------------------


def test_long_poll_fetch_returns_promptly_when_a_record_arrives(cluster: ClusterHandle) -> None:
    topic, leader = _create_topic(cluster)
    address = broker_address(cluster, leader)
    fields = fetch_request(topic, 0, 0, max_wait_ms=10_000, min_bytes=1)
    with WireClient.to(address, timeout_s=30) as waiting:
        started = time.monotonic()
        waiting.send(FETCH, FETCH_VERSION, fields)
        # Nothing to read yet: the broker must park the fetch rather than answer empty.
        readable, _, _ = select.select([waiting.sock], [], [], 0.5)
        assert not readable, "fetch at the log end with min_bytes=1 answered before any data"
        produced: list[Any] = []
        producer = threading.Thread(
            target=lambda: produced.append(_produce(address, topic, _batch([b"wake-up"])))
        )
        producer.start()
        response = waiting.read_response(FETCH, FETCH_VERSION)
        elapsed = time.monotonic() - started
        producer.join(TIMEOUT_S)
    assert int(produced[0].error_code) == NONE
    assert int(response.error_code) == NONE
    data = response.responses[0].partitions[0]
    assert int(data.error_code) == NONE
    assert [(r.offset, r.value) for r in _records(data)] == [(0, b"wake-up")]
    assert elapsed < 10.0, f"long poll answered only after {elapsed:.1f} s (max wait 10 s)"


def test_fetch_with_unmet_min_bytes_waits_for_max_wait(cluster: ClusterHandle) -> None:
    topic, leader = _create_topic(cluster)
    address = broker_address(cluster, leader)
    _produce_ok(address, topic, _batch([b"small"]))
    started = time.monotonic()
    data = _fetch(address, topic, 0, max_wait_ms=500, min_bytes=HUGE)
    elapsed = time.monotonic() - started
    assert elapsed >= 0.4, f"answered after {elapsed:.3f} s, before max_wait of 0.5 s"
    assert elapsed < 10.0
    assert int(data.error_code) == NONE
    # After the wait the broker answers with whatever it has (less than min_bytes).
    assert [r.value for r in _records(data)] == [b"small"]


# -- byte limits (KIP-74) -----------------------------------------------------------------


def _topic_with_five_batches(cluster: ClusterHandle) -> tuple[str, str, int]:
    """A new topic holding 5 batches of 3 records (200 x "A", then "B" ... "E"); returns its
    name, its leader's address and the size of one batch."""
    topic, leader = _create_topic(cluster)
    address = broker_address(cluster, leader)
    batches = [_batch([bytes([65 + n]) * 200 for _ in range(3)]) for n in range(5)]
    for batch in batches:
        _produce_ok(address, topic, batch)
    return topic, address, len(batches[0])


def test_small_partition_max_bytes_returns_exactly_the_first_whole_batch(
    cluster: ClusterHandle,
) -> None:
    topic, address, size = _topic_with_five_batches(cluster)
    data = _fetch(address, topic, 0, partition_max_bytes=10)
    assert int(data.error_code) == NONE
    assert len(data.records) == size
    assert [r.offset for r in _records(data)] == [0, 1, 2]
    assert {r.value for r in _records(data)} == {b"A" * 200}
    # The request-level max_bytes works the same way: the first batch always comes back.
    data = _fetch(address, topic, 0, max_bytes=10)
    assert len(data.records) == size
    assert [r.offset for r in _records(data)] == [0, 1, 2]
    # From the middle of the log the first batch at or after the offset is returned whole.
    data = _fetch(address, topic, 4, partition_max_bytes=1)
    assert [r.offset for r in _records(data)] == [3, 4, 5]


def test_larger_byte_limits_return_more_batches_but_never_a_partial_one(
    cluster: ClusterHandle,
) -> None:
    topic, address, size = _topic_with_five_batches(cluster)
    for limit_name in ("partition_max_bytes", "max_bytes"):
        data = _fetch(address, topic, 0, **{limit_name: size * 2 + size // 2})
        assert int(data.error_code) == NONE
        assert len(data.records) == 2 * size, limit_name
        records = _records(data)
        assert [r.offset for r in records] == list(range(6))
        assert [r.value for r in records] == [b"A" * 200] * 3 + [b"B" * 200] * 3
    everything = _fetch(address, topic, 0)
    assert len(everything.records) == 5 * size
    assert [r.offset for r in _records(everything)] == list(range(15))


# -- offsets ------------------------------------------------------------------------------


def test_fetch_offsets_out_of_range_and_at_log_end(cluster: ClusterHandle) -> None:
    topic, leader = _create_topic(cluster)
    address = broker_address(cluster, leader)
    _produce_ok(address, topic, _batch([b"a", b"b", b"c"]))
    for bad_offset in (4, 1000, -1, -5):
        data = _fetch(address, topic, bad_offset)
        assert int(data.error_code) == OFFSET_OUT_OF_RANGE, bad_offset
        assert _records(data) == []
    at_end = _fetch(address, topic, 3)
    assert int(at_end.error_code) == NONE
    assert _records(at_end) == []
    assert int(at_end.high_watermark) == 3
    assert int(at_end.log_start_offset) == 0
    from_start = _fetch(address, topic, 0)
    assert int(from_start.error_code) == NONE
    assert [r.value for r in _records(from_start)] == [b"a", b"b", b"c"]
    assert int(from_start.high_watermark) == 3
    assert int(from_start.log_start_offset) == 0
    assert int(from_start.last_stable_offset) == 3


def test_fetch_and_produce_to_a_follower_get_not_leader_or_follower(
    cluster: ClusterHandle,
) -> None:
    topic, leader = _create_topic(cluster, replication_factor=3)
    follower = next(b for b in cluster.broker_ids if b != leader)
    follower_address = broker_address(cluster, follower)

    def follower_knows_leader() -> bool:
        partition = _partition_metadata(follower_address, topic)
        return partition is not None and int(partition.leader_id) == leader

    wait_until(follower_knows_leader, TIMEOUT_S, "the follower's metadata to show the leader")
    produced = _produce(follower_address, topic, _batch([b"to-follower"]))
    assert int(produced.error_code) == NOT_LEADER_OR_FOLLOWER
    # Fetch v10 carries no client metadata, so only the leader may serve it (KIP-392 lets
    # v11+ consumers read from followers, so v10 is the version where this is an error).
    data = _fetch(follower_address, topic, 0, version=10)
    assert int(data.error_code) == NOT_LEADER_OR_FOLLOWER
    assert _records(data) == []
    listed = _list_offsets(follower_address, topic, LATEST)
    assert int(listed.error_code) == NOT_LEADER_OR_FOLLOWER


def test_fetch_and_produce_to_a_broker_without_a_replica_get_not_leader_or_follower(
    cluster: ClusterHandle,
) -> None:
    # Kafka answers NOT_LEADER_OR_FOLLOWER, not UNKNOWN_TOPIC_OR_PARTITION, when the
    # partition exists in the broker's metadata but the broker holds no replica of it.
    topic, leader = _create_topic(cluster, replication_factor=1)
    other = next(b for b in cluster.broker_ids if b != leader)
    other_address = broker_address(cluster, other)
    wait_until(
        lambda: _partition_metadata(other_address, topic) is not None,
        TIMEOUT_S,
        "the other broker's metadata to show the topic",
    )
    produced = _produce(other_address, topic, _batch([b"nowhere"]))
    assert int(produced.error_code) == NOT_LEADER_OR_FOLLOWER
    data = _fetch(other_address, topic, 0, version=10)
    assert int(data.error_code) == NOT_LEADER_OR_FOLLOWER


def test_fetch_and_produce_to_an_unknown_topic_get_unknown_topic_or_partition(
    cluster: ClusterHandle,
) -> None:
    topic = _unique("never-created")
    for broker_id in cluster.broker_ids:
        address = broker_address(cluster, broker_id)
        produced = _produce(address, topic, _batch([b"lost"]))
        assert int(produced.error_code) == UNKNOWN_TOPIC_OR_PARTITION
        data = _fetch(address, topic, 0)
        assert int(data.error_code) == UNKNOWN_TOPIC_OR_PARTITION
        listed = _list_offsets(address, topic, LATEST)
        assert int(listed.error_code) == UNKNOWN_TOPIC_OR_PARTITION
    # An unknown partition of an existing topic is unknown too.
    existing, leader = _create_topic(cluster)
    produced = _produce(broker_address(cluster, leader), existing, _batch([b"x"]), partition=7)
    assert int(produced.error_code) == UNKNOWN_TOPIC_OR_PARTITION


# -- ListOffsets --------------------------------------------------------------------------


def test_list_offsets_earliest_latest_by_timestamp_and_max_timestamp(
    cluster: ClusterHandle,
) -> None:
    topic, leader = _create_topic(cluster)
    address = broker_address(cluster, leader)
    empty_latest = _list_offsets(address, topic, LATEST)
    assert (int(empty_latest.error_code), int(empty_latest.offset)) == (NONE, 0)
    assert int(_list_offsets(address, topic, EARLIEST).offset) == 0
    # offsets:           0       1        2        3         4        5          6        7
    # timestamps: BASE_TS+0   +10      +20      +30       +40     +100        +50      +60
    layout = [([0, 10], 0), ([20, 30], 2), ([40, 100], 4), ([50, 60], 6)]
    for deltas, expected_base in layout:
        batch = _batch([b"v%d" % d for d in deltas], [BASE_TS + d for d in deltas])
        assert _produce_ok(address, topic, batch) == expected_base

    def lookup(timestamp: int) -> tuple[int, int]:
        result = _list_offsets(address, topic, timestamp)
        assert int(result.error_code) == NONE
        return int(result.offset), int(result.timestamp)

    assert lookup(EARLIEST)[0] == 0
    assert lookup(LATEST)[0] == 8
    assert lookup(BASE_TS - 1000) == (0, BASE_TS)
    assert lookup(BASE_TS) == (0, BASE_TS)
    assert lookup(BASE_TS + 5) == (1, BASE_TS + 10)  # a record inside the first batch
    assert lookup(BASE_TS + 25) == (3, BASE_TS + 30)
    assert lookup(BASE_TS + 40) == (4, BASE_TS + 40)
    # The first offset whose timestamp is >= the target: offset 5 (+100) precedes 6 (+50).
    assert lookup(BASE_TS + 45) == (5, BASE_TS + 100)
    assert lookup(BASE_TS + 101)[0] == -1  # after every record
    assert lookup(MAX_TIMESTAMP) == (5, BASE_TS + 100)


# -- acks=0 -------------------------------------------------------------------------------


def test_acks_zero_produce_gets_no_response_but_records_land(cluster: ClusterHandle) -> None:
    topic, leader = _create_topic(cluster)
    address = broker_address(cluster, leader)
    with WireClient.to(address) as client:
        for n in range(3):
            client.send(PRODUCE, 9, produce_request(topic, 0, _batch([b"fire-%d" % n]), acks=0))
        # The next frame on this connection must be the Metadata answer (read_response checks
        # its correlation id), so no Produce response was sent in between.
        answer = metadata(client, [topic])
        assert answer.topics[0].name == topic
        readable, _, _ = select.select([client.sock], [], [], 0.3)
        assert not readable, "a response arrived for an acks=0 produce"

    def landed() -> bool:
        return len(_records(_fetch(address, topic, 0))) == 3

    wait_until(landed, TIMEOUT_S, "the acks=0 records to be readable")
    values = [r.value for r in _records(_fetch(address, topic, 0))]
    assert values == [b"fire-0", b"fire-1", b"fire-2"]


# -- segments -----------------------------------------------------------------------------


SEGMENT_FILE = re.compile(r"^(\d{20})\.(log|index|timeindex)$")


def test_small_segment_bytes_rolls_segments_and_reads_span_them(cluster: ClusterHandle) -> None:
    topic, leader = _create_topic(cluster, configs={"segment.bytes": "2000"})
    address = broker_address(cluster, leader)
    expected: list[bytes] = []
    for n in range(30):
        values = [b"%04d-" % (2 * n + i) + b"x" * 100 for i in range(2)]
        expected += values
        _produce_ok(address, topic, _batch(values))
    partition_dir = cluster.dir / f"broker-{leader}" / "data" / f"{topic}-0"
    by_kind: dict[str, list[int]] = {"log": [], "index": [], "timeindex": []}
    for path in partition_dir.iterdir():
        match = SEGMENT_FILE.match(path.name)
        if match:
            by_kind[match.group(2)].append(int(match.group(1)))
    bases = sorted(by_kind["log"])
    assert len(bases) >= 3, (
        f"expected several segments, found {sorted(p.name for p in partition_dir.iterdir())}"
    )
    assert bases[0] == 0
    assert sorted(by_kind["index"]) == bases
    assert sorted(by_kind["timeindex"]) == bases
    # ~ 2 x 130 bytes a batch: a 2000-byte segment holds only a handful of batches.
    assert all(b % 2 == 0 and b < len(expected) for b in bases)

    received: list[DecodedRecord] = []
    while len(received) < len(expected):
        data = _fetch(address, topic, len(received))
        assert int(data.error_code) == NONE
        batch = _records(data)
        assert batch, f"no progress at offset {len(received)}"
        received += [r for r in batch if r.offset >= len(received)]
    assert [r.offset for r in received] == list(range(len(expected)))
    assert [r.value for r in received] == expected
