"""A corrupt checkpoint is rebuilt or fatal, never silently empty: a broker whose
log-start-offset-checkpoint is torn must not serve the records DeleteRecords removed (the log
start offset is not rebuildable from the segments). Ours, like Kafka, takes that log dir
offline, so a broker with one log dir refuses to start, saying which file is bad."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.conftest import ClusterFactory, ClusterHandle, wait_until

TIMEOUT_S = 60.0
TOPIC = "deleted-below"
RECORD_COUNT = 10
DELETED_BELOW = 6


def _produce(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=TIMEOUT_S)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for index in range(RECORD_COUNT):
        producer.produce(TOPIC, value=f"record-{index}".encode(), partition=0)
    assert producer.flush(TIMEOUT_S) == 0


def _delete_records(bootstrap: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(TOPIC, 0, DELETED_BELOW)])
    (future,) = futures.values()
    return int(future.result(timeout=TIMEOUT_S).low_watermark)


def _low_watermark(bootstrap: str) -> int | None:
    """The partition's log start offset as a client sees it; None while it is not served."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        low, _ = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=5)
        return int(low)
    except KafkaException:
        return None
    finally:
        consumer.close()


def _first_offset_read(bootstrap: str) -> int:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reader",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, 0, -2)])  # from the beginning
        first: list[int] = []

        def read_one() -> bool:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                first.append(int(message.offset()))
            return bool(first)

        wait_until(read_one, TIMEOUT_S, "a record read from the beginning")
        return first[0]
    finally:
        consumer.close()


def _tear(path: Path) -> None:
    """Keep the version and count lines, lose the entries: what a torn write leaves."""
    path.write_text("\n".join(path.read_text().splitlines()[:2]) + "\n")


def _stop(cluster: ClusterHandle) -> None:
    cluster.kill(1)  # SIGTERM: a clean shutdown, which writes every checkpoint
    wait_until(lambda: not cluster.broker_alive(1), TIMEOUT_S, "broker 1 stopped")


def test_torn_log_start_offset_checkpoint_never_serves_deleted_records(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(brokers=1)
    _produce(cluster.bootstrap)
    assert _delete_records(cluster.bootstrap) == DELETED_BELOW
    checkpoint = cluster.dir / "broker-1" / "data" / "log-start-offset-checkpoint"
    _stop(cluster)
    assert f"{TOPIC} 0 {DELETED_BELOW}" in checkpoint.read_text()
    _tear(checkpoint)

    started = cluster.run("start", "--broker", "1", check=False)

    if started.returncode != 0:  # refused to start: it must say which file is bad
        wait_until(lambda: not cluster.broker_alive(1), TIMEOUT_S, "broker 1 exited")
        log_text = cluster.broker_log(1).read_text(errors="replace")
        assert str(checkpoint) in log_text, "the broker's log names the unreadable file"
        return
    # Or it serves the partition, but from the right log start.
    wait_until(
        lambda: _low_watermark(cluster.bootstrap) is not None, TIMEOUT_S, "the partition served"
    )
    assert _low_watermark(cluster.bootstrap) == DELETED_BELOW
    assert _first_offset_read(cluster.bootstrap) == DELETED_BELOW
