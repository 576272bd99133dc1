"""A rolling migration on the same disks, under load (issue 39's acceptance): an all-Kafka 3.9
cluster has each broker, in turn, stopped and started again as ours on its own
server.properties and data directory (`scripts/cluster start --broker N --impl ours`),
waiting for every ISR to be full before the next; then back to Kafka one by one. An
idempotent acks=all producer writes throughout.

When a step stops the controller's broker, whichever broker wins the /controller znode
next takes over, Kafka's or ours, so the controller may move between the implementations on
the way (the fixture records it after each step). At the end every acknowledged record is
read back exactly once, at the offset its acknowledgement named, and the replicas' `.log`
files are byte-identical across the three brokers once they are stopped (a clean shutdown
flushes everything). Needs Apache Kafka 3.9's jars (`make reference`).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from scripts._tools.chaos_replicas import compare_topic
from tests.integration.conftest import (
    REPO_ROOT,
    ClusterFactory,
    ClusterHandle,
    wait_until,
    zk_session,
)

pytestmark = pytest.mark.reference  # it starts Kafka's brokers

REFERENCE_LIB = REPO_ROOT / "reference" / "lib"
TOPIC = "rolling-migration"
BROKER_IDS = (1, 2, 3)
# Each broker the preferred leader of one partition, so every replacement moves a leader.
ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
# What the cluster runs after each step: Kafka -> ours one broker at a time, then back.
STEPS = [(broker_id, "ours") for broker_id in BROKER_IDS]
STEPS += [(broker_id, "kafka") for broker_id in BROKER_IDS]
RECORDS_PER_SECOND = 100
# Records acknowledged after a restarted broker is back in every ISR, before the next step:
# the producer kept writing through the step.
ACKED_BETWEEN_STEPS = 50
STEP_TIMEOUT_S = 180.0
READ_TIMEOUT_S = 120.0
SETTLE_TIMEOUT_S = 120.0
OVERRIDES = {
    # A broker that did not shut down cleanly is declared dead sooner.
    "zookeeper.session.timeout.ms": "10000",
    # Leadership stays where the replacements leave it; no election races the steps.
    "auto.leader.rebalance.enable": "false",
}
# An unhandled error, or a request the other implementation could not parse: either side.
TROUBLE = re.compile(r"Traceback|unknown API key|malformed request")


@dataclass
class AckLog:
    """What the producer's delivery reports said, filled in by librdkafka's callback."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: dict[bytes, tuple[int, int]] = field(default_factory=dict)  # value -> (p, offset)
    failed: list[str] = field(default_factory=list)
    sent: int = 0

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        value, partition, offset = message.value(), message.partition(), message.offset()
        assert value is not None
        with self.lock:
            if error is None:
                assert partition is not None and offset is not None
                self.acked[value] = (partition, offset)
            else:
                self.failed.append(f"{value!r}: {error}")

    def acked_count(self) -> int:
        with self.lock:
            return len(self.acked)


class LoadProducer:
    """An idempotent acks=all producer writing RECORDS_PER_SECOND unique values round-robin
    over the partitions, on a thread, until stopped."""

    def __init__(self, bootstrap: str) -> None:
        self.log = AckLog()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                # Longer than any step: a record is retried through it, not given up.
                "message.timeout.ms": 600_000,
            }
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-producer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        sequence = 0
        interval_s = 1 / RECORDS_PER_SECOND
        next_send = time.monotonic()
        while not self._stop.is_set():
            value = f"record-{sequence:09d}".encode()
            partition = sequence % len(ASSIGNMENT)
            try:
                self._producer.produce(
                    TOPIC, value, partition=partition, on_delivery=self.log.on_delivery
                )
            except BufferError:
                self._producer.poll(0.1)
                continue
            with self.log.lock:
                self.log.sent += 1
            sequence += 1
            next_send += interval_s
            self._producer.poll(max(0.0, next_send - time.monotonic()))

    def stop(self) -> int:
        """Stop producing; wait for every outstanding record's report. Returns how many had
        none in time."""
        self._stop.set()
        self._thread.join(timeout=30)
        return int(self._producer.flush(READ_TIMEOUT_S))


@dataclass
class Migration:
    cluster: ClusterHandle
    log: AckLog
    unreported: int
    # Per step: (broker, implementation, controller after the step, acked before and after).
    steps: list[tuple[int, str, int | None, int, int]]


def _partition_states(zk: Any) -> dict[int, dict[str, Any]]:
    states = {}
    for partition in ASSIGNMENT:
        data, _ = zk.get(f"/brokers/topics/{TOPIC}/partitions/{partition}/state")
        states[partition] = json.loads(data)
    return states


def _isr_full(zk: Any) -> bool:
    try:
        states = _partition_states(zk)
    except Exception:  # not created yet
        return False
    return all(sorted(state["isr"]) == list(BROKER_IDS) for state in states.values())


def _controller(zk: Any) -> int | None:
    try:
        data, _ = zk.get("/controller")
    except Exception:
        return None
    return int(json.loads(data)["brokerid"])


def _wait_exited(cluster: ClusterHandle, broker_id: int) -> None:
    wait_until(
        lambda: not cluster.broker_alive(broker_id),
        STEP_TIMEOUT_S,
        f"broker {broker_id} to exit",
    )


def _replace(
    cluster: ClusterHandle, zk: Any, producer: LoadProducer, broker_id: int, impl: str
) -> tuple[int, str, int | None, int, int]:
    """Stop `broker_id` cleanly, start it as `impl` on its own config and data, wait for a
    full ISR and for the producer's acknowledgements to go on."""
    acked_before = producer.log.acked_count()
    cluster.kill(broker_id)
    _wait_exited(cluster, broker_id)
    started = cluster.run("start", "--broker", str(broker_id), "--impl", impl)
    assert started.stdout.startswith(f"started broker-{broker_id} as {impl}"), started
    wait_until(
        lambda: _isr_full(zk),
        STEP_TIMEOUT_S,
        lambda: (
            f"a full ISR after broker {broker_id} came back as {impl}: "
            f"{_partition_states(zk)}, acked {producer.log.acked_count()}"
        ),
    )
    wait_until(
        lambda: producer.log.acked_count() >= acked_before + ACKED_BETWEEN_STEPS,
        STEP_TIMEOUT_S,
        lambda: (
            f"acknowledgements after broker {broker_id} came back as {impl} "
            f"(acked {producer.log.acked_count()}, failed {producer.log.failed[:3]})"
        ),
    )
    return broker_id, impl, _controller(zk), acked_before, producer.log.acked_count()


@pytest.fixture(scope="module")
def migration(make_cluster_module: ClusterFactory) -> Migration:
    if not any(REFERENCE_LIB.glob("kafka_2.13-*.jar")):
        pytest.fail(f"Apache Kafka 3.9's jars are not in {REFERENCE_LIB}: run `make reference`")
    cluster = make_cluster_module(impl="kafka", overrides=OVERRIDES)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    assignment = [ASSIGNMENT[p] for p in sorted(ASSIGNMENT)]
    config = {"min.insync.replicas": "2"}
    new = NewTopic(TOPIC, len(assignment), replica_assignment=assignment, config=config)
    admin.create_topics([new])[TOPIC].result(timeout=STEP_TIMEOUT_S)
    producer = LoadProducer(cluster.bootstrap)
    steps: list[tuple[int, str, int | None, int, int]] = []
    with zk_session(cluster) as zk:
        wait_until(lambda: _isr_full(zk), STEP_TIMEOUT_S, f"{TOPIC} in sync on 3 brokers")
        producer.start()
        wait_until(
            lambda: producer.log.acked_count() >= ACKED_BETWEEN_STEPS,
            STEP_TIMEOUT_S,
            "the producer's first acknowledgements",
        )
        for broker_id, impl in STEPS:
            steps.append(_replace(cluster, zk, producer, broker_id, impl))
    unreported = producer.stop()
    return Migration(cluster, producer.log, unreported, steps)


def test_every_broker_went_to_ours_and_back_to_kafka(migration: Migration) -> None:
    status = migration.cluster.status()
    assert all(s.alive and s.registered for s in status.brokers.values()), status.text
    state = json.loads((migration.cluster.dir / "cluster.json").read_text())
    for broker_id in BROKER_IDS:
        history = [impl for _, impl in state["processes"][f"broker-{broker_id}"]["impl_history"]]
        assert history == ["kafka", "ours", "kafka"], (broker_id, history)
    assert [(b, impl) for b, impl, *_ in migration.steps] == STEPS
    # The producer's acknowledgements went on through every step.
    assert all(after > before for *_, before, after in migration.steps), migration.steps


def _read_partition(bootstrap: str, partition: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every record of `partition`, up to its high watermark."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "rolling-migration-check",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        _, high = consumer.get_watermark_offsets(
            ConfluentPartition(TOPIC, partition), timeout=READ_TIMEOUT_S
        )
        consumer.assign([ConfluentPartition(TOPIC, partition, OFFSET_BEGINNING)])
        read: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while (not read or read[-1][0] < high - 1) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error() is not None:
                continue
            value, offset = message.value(), message.offset()
            assert value is not None and offset is not None
            read.append((offset, value))
        assert not read or read[-1][0] >= high - 1, f"partition {partition}: read to {read[-1]}"
        return read
    finally:
        consumer.close()


def test_every_acknowledged_record_is_read_back_once_where_acknowledged(
    migration: Migration,
) -> None:
    assert migration.unreported == 0
    acked = migration.log.acked
    assert len(acked) > ACKED_BETWEEN_STEPS * (len(STEPS) + 1)
    stored: dict[bytes, list[tuple[int, int]]] = {}
    for partition in ASSIGNMENT:
        for offset, value in _read_partition(migration.cluster.bootstrap, partition):
            stored.setdefault(value, []).append((partition, offset))
    lost = sorted(value for value in acked if value not in stored)
    duplicated = {value: places for value, places in stored.items() if len(places) > 1}
    misplaced = {v: (at, stored[v]) for v, at in acked.items() if v in stored and [at] != stored[v]}
    assert (lost[:5], len(lost)) == ([], 0)
    assert duplicated == {}
    assert misplaced == {}


def _log_dirs(cluster: ClusterHandle) -> Any:
    def log_dirs(broker_id: int) -> list[Path]:
        return [cluster.dir / f"broker-{broker_id}" / "data"]

    return log_dirs


def test_replicas_log_files_are_byte_identical(migration: Migration) -> None:
    """Compared while running until the followers caught up, then again with every broker
    stopped cleanly (which flushes and closes every segment)."""
    cluster = migration.cluster
    with zk_session(cluster) as zk:
        wait_until(lambda: _isr_full(zk), SETTLE_TIMEOUT_S, "a full ISR before comparing")
    found: list[Any] = []

    def replicas_agree() -> bool:
        found[:] = compare_topic(ASSIGNMENT, _log_dirs(cluster), TOPIC)
        return not found

    wait_until(replicas_agree, SETTLE_TIMEOUT_S, lambda: "; ".join(d.describe() for d in found))
    for broker_id in BROKER_IDS:
        cluster.kill(broker_id)
        _wait_exited(cluster, broker_id)
    divergent = compare_topic(ASSIGNMENT, _log_dirs(cluster), TOPIC)
    assert [d.describe() for d in divergent] == []
    for partition in ASSIGNMENT:
        segments = list((cluster.dir / "broker-1" / "data" / f"{TOPIC}-{partition}").glob("*.log"))
        assert sum(path.stat().st_size for path in segments) > 0, partition


def test_neither_implementation_logged_an_unhandled_error(migration: Migration) -> None:
    for broker_id in BROKER_IDS:
        lines = migration.cluster.broker_log(broker_id).read_text(errors="replace").splitlines()
        trouble = [line for line in lines if TROUBLE.search(line)]
        assert trouble == [], f"broker {broker_id}: {trouble[:5]}"
