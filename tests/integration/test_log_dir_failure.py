"""A failing log dir (KIP-112): broker 3, run directly with two log dirs beside a two-broker
cluster from scripts/cluster, loses one of them (the directory is replaced by a file, so its
next checkpoint write fails, as in Kafka's LogDirFailureTest). It takes that directory
offline: its replicas there answer KAFKA_STORAGE_ERROR and are listed in
/brokers/offline_replicas/3, a log dir event notification tells the controller, which moves
their leadership to other brokers and takes them out of ISRs; broker 3 keeps serving the
replicas in its other directory."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kazoo.client import KazooClient

from broker.log.records import SimpleRecord, build_batch
from scripts._cluster.ports import reserve_port
from tests.integration.conftest import REPO_ROOT, ClusterFactory, wait_until, zk_session
from tests.integration.wire import WireClient

BROKER_ID = 3
TOPIC = "disks"
PARTITIONS = 4
RECORDS_PER_PARTITION = 50
START_WAIT_S = 60.0
FAILOVER_WAIT_S = 60.0
STOP_WAIT_S = 60.0
CONSUME_WAIT_S = 60.0
KAFKA_STORAGE_ERROR = 56
PRODUCE, FETCH, DESCRIBE_LOG_DIRS = 0, 1, 35


@dataclass
class Setup:
    bootstrap: str
    zk: KazooClient
    port: int
    log_dirs: tuple[Path, Path]
    process: subprocess.Popen[bytes]
    log_path: Path

    def broker_log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]


def _write_properties(base: Path, zk_connect: str, port: int, log_dirs: tuple[Path, Path]) -> Path:
    properties = base / "server.properties"
    lines = {
        "broker.id": str(BROKER_ID),
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": ",".join(str(d) for d in log_dirs),
        "zookeeper.connect": zk_connect,
        # A failed directory shows at the next checkpoint: make that soon.
        "log.flush.offset.checkpoint.interval.ms": "500",
        "replica.high.watermark.checkpoint.interval.ms": "500",
        "offsets.topic.replication.factor": "2",
    }
    properties.write_text("".join(f"{key}={value}\n" for key, value in lines.items()))
    return properties


@pytest.fixture
def setup(make_cluster: ClusterFactory) -> Iterator[Setup]:
    cluster = make_cluster(brokers=2)
    base = Path(tempfile.mkdtemp(prefix="failing-disk-"))
    log_dirs = (base / "disk-a", base / "disk-b")
    reservation = reserve_port()
    port = reservation.base
    properties = _write_properties(base, cluster.zk_connect, port, log_dirs)
    log_path = base / "broker.log"
    with open(log_path, "wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "broker", str(properties)],
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=REPO_ROOT,
            env={**os.environ, "LOG_DIR": str(base)},
        )
    try:
        with zk_session(cluster) as zk:
            wait_until(
                lambda: zk.exists(f"/brokers/ids/{BROKER_ID}") is not None,
                START_WAIT_S,
                "broker 3 to register",
            )
            yield Setup(
                f"{cluster.bootstrap},127.0.0.1:{port}", zk, port, log_dirs, process, log_path
            )
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reservation.release()
        shutil.rmtree(base, ignore_errors=True)


def _state(zk: KazooClient, partition: int) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{TOPIC}/partitions/{partition}/state")
    return dict(json.loads(data))


def _create_topic(setup: Setup) -> None:
    # Broker 3 holds every partition and leads partitions 0 and 1.
    assignment = {0: [3, 1], 1: [3, 2], 2: [1, 3], 3: [2, 3]}
    admin = KafkaAdminClient(bootstrap_servers=setup.bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, replica_assignments=assignment)])
    finally:
        admin.close()
    wait_until(
        lambda: all(
            setup.zk.exists(f"/brokers/topics/{TOPIC}/partitions/{p}/state") is not None
            and len(_state(setup.zk, p)["isr"]) == 2
            for p in range(PARTITIONS)
        ),
        START_WAIT_S,
        "every partition with both replicas in its ISR",
    )


def _produce(bootstrap: str, label: bytes) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for partition in range(PARTITIONS):
        for index in range(RECORDS_PER_PARTITION):
            producer.produce(TOPIC, value=label + b"-%d" % index, partition=partition)
    assert producer.flush(60) == 0


def _dirs_of_partitions(setup: Setup) -> dict[int, Path]:
    found: dict[int, Path] = {}
    for log_dir in setup.log_dirs:
        for child in log_dir.glob(f"{TOPIC}-*"):
            found[int(child.name.rsplit("-", 1)[1])] = log_dir
    return found


def _consume(bootstrap: str, partition: int, count: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{partition}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition(TOPIC, partition, 0)])
        wait_until(
            lambda: _poll_into(consumer, values) >= count,
            CONSUME_WAIT_S,
            f"{count} records of {TOPIC}-{partition}",
        )
    finally:
        consumer.close()
    return values


def _poll_into(consumer: Consumer, values: list[bytes]) -> int:
    message = consumer.poll(0.5)
    if message is not None and message.error() is None:
        values.append(message.value())
    return len(values)


def test_failed_log_dir_goes_offline_and_its_leaders_move(setup: Setup) -> None:
    _create_topic(setup)
    _produce(setup.bootstrap, b"before")
    placed = _dirs_of_partitions(setup)
    disk_a, disk_b = setup.log_dirs
    assert sorted(placed) == list(range(PARTITIONS))
    # Least-loaded placement put two partitions in each directory.
    lost = sorted(p for p, d in placed.items() if d == disk_b)
    kept = sorted(p for p, d in placed.items() if d == disk_a)
    assert len(lost) == len(kept) == 2
    notifications_before = setup.zk.exists("/log_dir_event_notification").cversion

    disk_b.rename(disk_b.with_name("disk-b.failed"))
    disk_b.write_text("not a directory any more\n")

    offline_path = f"/brokers/offline_replicas/{BROKER_ID}"
    wait_until(lambda: setup.zk.exists(offline_path) is not None, FAILOVER_WAIT_S, offline_path)
    offline = json.loads(setup.zk.get(offline_path)[0])
    assert offline == {
        "version": 1,
        "partitions": [{"topic": TOPIC, "partition": p} for p in lost],
    }

    def moved() -> bool:
        states = {p: _state(setup.zk, p) for p in range(PARTITIONS)}
        return all(
            states[p]["leader"] not in (BROKER_ID, -1) and BROKER_ID not in states[p]["isr"]
            for p in lost
        )

    wait_until(moved, FAILOVER_WAIT_S, f"leaders of {lost} moved off broker 3")
    # The notification was created, then deleted by the controller.
    wait_until(
        lambda: not setup.zk.get_children("/log_dir_event_notification"),
        FAILOVER_WAIT_S,
        "the controller to delete the log dir event notification",
    )
    assert setup.zk.exists("/log_dir_event_notification").cversion >= notifications_before + 2
    for partition in kept:
        state = _state(setup.zk, partition)
        assert BROKER_ID in state["isr"], (partition, state)
    assert setup.process.poll() is None, setup.broker_log()

    with WireClient.to(f"127.0.0.1:{setup.port}") as client:
        described = client.request(DESCRIBE_LOG_DIRS, 2, {"topics": None})
        by_dir = {result.log_dir: result for result in described.results}
        assert int(by_dir[str(disk_b)].error_code) == KAFKA_STORAGE_ERROR
        assert list(by_dir[str(disk_b)].topics) == []
        assert int(by_dir[str(disk_a)].error_code) == 0
        served = {int(p.partition_index) for t in by_dir[str(disk_a)].topics for p in t.partitions}
        assert set(kept) <= served
        for partition in lost:
            batch = build_batch([SimpleRecord(None, b"refused", (), 1000)])
            answer = _produce_to(client, partition, batch)
            assert int(answer.error_code) == KAFKA_STORAGE_ERROR

    # Everything acknowledged before is still there, and every partition takes records.
    _produce(setup.bootstrap, b"after")
    for partition in range(PARTITIONS):
        values = _consume(setup.bootstrap, partition, 2 * RECORDS_PER_PARTITION)
        assert values[:RECORDS_PER_PARTITION] == [
            b"before-%d" % i for i in range(RECORDS_PER_PARTITION)
        ]
    # Broker 3 still leads the partitions in its healthy directory it led before.
    for partition in kept:
        if partition in (0, 1):
            assert _state(setup.zk, partition)["leader"] == BROKER_ID


def _produce_to(client: WireClient, partition: int, batch: bytes) -> Any:
    fields = {
        "transactional_id": None,
        "acks": 1,
        "timeout": 10000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": partition, "records": batch}]}],
    }
    response = client.request(PRODUCE, 9, fields)
    return response.responses[0].partition_responses[0]
