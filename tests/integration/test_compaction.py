"""Log compaction end to end: a topic with cleanup.policy=compact keeps only the latest value of
each key, at its original offset, keeps tombstones for delete.retention.ms, then drops them."""

from __future__ import annotations

import itertools
import time
import uuid
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.conftest import ClusterFactory, wait_until

TIMEOUT_S = 60
TOPIC = "compacted"
KEYS = 20
ROUNDS = 10
DELETED_KEYS = 5  # key-0 .. key-4 end with a tombstone
DELETE_RETENTION_MS = 1000
TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": "1024",  # a few records per segment, so most of them leave the active one
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": str(DELETE_RETENTION_MS),
}
Record = tuple[int, bytes | None, bytes | None]  # offset, key, value


def _create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(TOPIC, 1, 1, config=TOPIC_CONFIGS)])[TOPIC]
    future.result(timeout=TIMEOUT_S)


def _produce(bootstrap: str, records: list[tuple[bytes, bytes | None]]) -> dict[bytes, int]:
    """One record per batch, in order; returns each key's last acknowledged offset."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    offsets: dict[bytes, int] = {}
    errors: list[str] = []

    def report(error: Any, message: Any) -> None:
        if error is not None:
            errors.append(str(error))
        else:
            offsets[message.key()] = max(offsets.get(message.key(), -1), message.offset())

    for key, value in records:
        producer.produce(TOPIC, value, key, on_delivery=report)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0 and not errors, errors[:3]
    return offsets


def _filler(count: int) -> list[tuple[bytes, bytes | None]]:
    """Records under keys never used again: they stay, and push older data out of the active
    segment (only inactive segments are cleaned)."""
    return [(f"filler-{uuid.uuid4().hex}".encode(), b"f" * 60) for _ in range(count)]


def _read_all(bootstrap: str) -> list[Record]:
    """Every record below the high watermark, read from the beginning by a fresh consumer."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    records: list[Record] = []
    try:
        _, high_watermark = consumer.get_watermark_offsets(
            TopicPartition(TOPIC, 0), timeout=TIMEOUT_S
        )
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + TIMEOUT_S
        while not records or records[-1][0] < high_watermark - 1:
            assert time.monotonic() < deadline, f"reading {TOPIC} to {high_watermark} timed out"
            for message in consumer.consume(num_messages=1000, timeout=0.5):
                if message.error() is None:
                    records.append((message.offset(), message.key(), message.value()))
    finally:
        consumer.close()
    return records


def _user_records(records: list[Record]) -> list[Record]:
    return [r for r in records if r[1] is not None and r[1].startswith(b"key-")]


def test_compaction_keeps_latest_values_then_drops_expired_tombstones(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(brokers=1, overrides={"log.cleaner.backoff.ms": "200"})
    _create_topic(cluster.bootstrap)
    updates = [
        (f"key-{k}".encode(), f"round-{r}-of-key-{k}-".encode() * 2)
        for r, k in itertools.product(range(ROUNDS), range(KEYS))
    ]
    tombstones: list[tuple[bytes, bytes | None]] = [
        (f"key-{k}".encode(), None) for k in range(DELETED_KEYS)
    ]
    latest_offsets = _produce(cluster.bootstrap, updates + tombstones)
    _produce(cluster.bootstrap, _filler(30))
    expected = sorted(
        (latest_offsets[key], key, None if k < DELETED_KEYS else value)
        for k, (key, value) in enumerate(updates[-KEYS:])
    )

    def compacted() -> bool:
        return _user_records(_read_all(cluster.bootstrap)) == expected

    wait_until(compacted, TIMEOUT_S, "only each key's latest record, at its original offset")
    records = _read_all(cluster.bootstrap)
    assert [offset for offset, _, _ in records] == sorted({offset for offset, _, _ in records})
    assert len(records) < len(updates), "compaction left gaps in the offsets"

    # delete.retention.ms after the tombstones' segment was written, cleaning newer segments
    # moves the delete horizon past it; new filler keeps the log dirty enough to be cleaned.
    time.sleep(2 * DELETE_RETENTION_MS / 1000)

    def tombstones_gone() -> bool:
        _produce(cluster.bootstrap, _filler(15))
        return _user_records(_read_all(cluster.bootstrap)) == [
            record for record in expected if record[2] is not None
        ]

    wait_until(tombstones_gone, TIMEOUT_S, "the tombstones to be removed")


def _control_batches(cluster: Any, topic: str) -> int:
    """Control batches (transaction markers) in the topic's segment files on disk."""
    from tests.integration.tool_cli import run_tool

    directory = next(cluster.dir.glob(f"broker-1/*/{topic}-0"))
    files = ",".join(str(path) for path in sorted(directory.glob("*.log")))
    dumped = run_tool("kafka-dump-log", "--files", files)
    assert dumped.returncode == 0, dumped.stderr
    return dumped.stdout.count("isControl: true")


def _aborted_in_index(cluster: Any, topic: str) -> list[Any]:
    from broker.log.txn_index import TransactionIndex

    directory = next(cluster.dir.glob(f"broker-1/*/{topic}-0"))
    return [t for path in directory.glob("*.txnindex") for t in TransactionIndex(path).entries()]


def test_compaction_removes_aborted_data_and_markers_with_no_data_left(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(brokers=1, overrides={"log.cleaner.backoff.ms": "200"})
    _create_topic(cluster.bootstrap)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "compact-txn"})
    producer.init_transactions(TIMEOUT_S)
    for values, commit in (("v1", True), ("aborted", False), ("v2", True)):
        producer.begin_transaction()
        keys = 5 if values != "v2" else 3
        for k in range(keys):
            producer.produce(TOPIC, values.encode(), f"key-{k}".encode())
        producer.flush(TIMEOUT_S)
        if commit:
            producer.commit_transaction(TIMEOUT_S)
        else:
            producer.abort_transaction(TIMEOUT_S)
    _produce(cluster.bootstrap, _filler(30))
    expected = {(b"key-0", b"v2"), (b"key-1", b"v2"), (b"key-2", b"v2")}
    expected |= {(b"key-3", b"v1"), (b"key-4", b"v1")}

    def compacted() -> bool:
        user = _user_records(_read_all(cluster.bootstrap))  # read_uncommitted: all data
        return sorted((key, value) for _, key, value in user) == sorted(expected)

    wait_until(compacted, TIMEOUT_S, "the aborted and superseded records removed")
    assert _control_batches(cluster, TOPIC) == 3
    assert len(_aborted_in_index(cluster, TOPIC)) == 1  # kept while its marker stays
    # Past delete.retention.ms, the abort marker, whose transaction has no data left, goes;
    # both commit markers stay (key-0..2 hold v2, key-3 and key-4 v1).
    time.sleep(2 * DELETE_RETENTION_MS / 1000)

    def abort_marker_gone() -> bool:
        _produce(cluster.bootstrap, _filler(15))
        return _control_batches(cluster, TOPIC) == 2

    wait_until(abort_marker_gone, TIMEOUT_S, "the abort marker removed")
    assert _aborted_in_index(cluster, TOPIC) == []  # and out of the cleaned .txnindex
    # librdkafka reads read_committed by default: with the abort marker gone, its transaction
    # must be off the fetch's aborted list too, or the consumer would skip v2 waiting for it.
    assert sorted((k, v) for _, k, v in _user_records(_read_all(cluster.bootstrap))) == sorted(
        expected
    )
