"""`scripts/cluster up --impl kafka`: Apache Kafka 3.9 runs under our launcher, and the
contract's commands work on it as on our brokers."""

from __future__ import annotations

import shutil
import subprocess
import uuid

from kafka import KafkaConsumer, KafkaProducer

from tests.integration.conftest import ClusterHandle, wait_until

CLIENT_TIMEOUT_S = 60.0


def test_up_prints_the_contract_lines(kafka_cluster: ClusterHandle) -> None:
    assert kafka_cluster.up_stdout.splitlines() == [
        f"bootstrap.servers={kafka_cluster.bootstrap}",
        f"zookeeper.connect={kafka_cluster.zk_connect}",
    ]


def test_the_brokers_are_apache_kafka(kafka_cluster: ClusterHandle) -> None:
    command = (kafka_cluster.dir / "cluster.json").read_text()
    assert "kafka.Kafka" in command
    # Kafka logs its version once start-up is complete, which may be after it registered.
    wait_until(
        lambda: "Kafka version: 3.9." in kafka_cluster.broker_log(1).read_text(errors="replace"),
        CLIENT_TIMEOUT_S,
        "broker 1's log to name Kafka version 3.9",
    )


def test_kafka_python_produces_and_consumes(kafka_cluster: ClusterHandle) -> None:
    topic = f"reference-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap)
    try:
        for index in range(10):
            producer.send(topic, f"record-{index}".encode()).get(timeout=CLIENT_TIMEOUT_S)
    finally:
        producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=kafka_cluster.bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=int(CLIENT_TIMEOUT_S * 1000),
    )
    try:
        values = []
        for message in consumer:
            values.append(message.value)
            if len(values) == 10:
                break
    finally:
        consumer.close()
    assert values == [f"record-{index}".encode() for index in range(10)]


def test_kcat_produces_and_consumes(kafka_cluster: ClusterHandle) -> None:
    kcat = shutil.which("kcat")
    assert kcat is not None, "kcat is not installed (apt-get install kcat; .ci/run does)"
    topic = f"reference-kcat-{uuid.uuid4().hex[:8]}"
    produced = subprocess.run(
        [kcat, "-P", "-b", kafka_cluster.bootstrap, "-t", topic],
        input="one\ntwo\nthree\n",
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        check=False,
    )
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(
        [kcat, "-C", "-b", kafka_cluster.bootstrap, "-t", topic, "-o", "beginning", "-e"],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        check=False,
    )
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == ["one", "two", "three"]


def test_kill_start_and_events_work_on_kafka(kafka_cluster: ClusterHandle) -> None:
    victim = kafka_cluster.broker_count
    kafka_cluster.kill(victim, "KILL")
    wait_until(lambda: not kafka_cluster.broker_alive(victim), 30, "the killed broker to exit")
    kafka_cluster.start(victim)
    status = kafka_cluster.status()
    assert status.brokers[victim].alive and status.brokers[victim].registered
    assert status.controller_id in kafka_cluster.broker_ids
    timeline = kafka_cluster.run("events").stdout
    # Kafka's controller writes its decisions to state-change.log; the merged timeline shows
    # them under the broker that wrote them.
    assert "[Controller id=" in timeline, timeline[-2000:]
    assert any(line.split()[2].startswith("broker-") for line in timeline.splitlines())
