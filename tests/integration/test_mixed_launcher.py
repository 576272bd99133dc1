"""`scripts/cluster up --impl kafka,ours,ours`: one cluster of an Apache Kafka 3.9 broker (1,
the controller, since a mixed `up` starts broker 1 first) and two of ours on one ZooKeeper;
`status` and cluster.json name each broker's implementation; a topic of replication factor 3
is written and read through every broker; then `kill --broker 1` and `start --broker 1 --impl
ours` migrate broker 1 to ours on the data directory Kafka wrote, and it serves those records.
The other way, in a cluster of its own (Kafka's broker 1 its controller), `start --broker 2
--impl kafka` moves our broker 2 to Kafka on the directory ours wrote.

Asserted here: with Kafka's controller, our brokers serve its UpdateMetadata and LeaderAndIsr
(no connection closed, nothing for it to retry). Our controller driving Kafka's brokers is
checked in test_our_controller_drives_kafka.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ElectionType
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kazoo.client import KazooClient

from tests.integration.conftest import (
    REPO_ROOT,
    ClusterFactory,
    ClusterHandle,
    wait_until,
    zk_session,
)

pytestmark = pytest.mark.reference

REFERENCE_LIB = REPO_ROOT / "reference" / "lib"
IMPLS = {1: "kafka", 2: "ours", 3: "ours"}
TOPIC = "mixed-launcher"
# Each broker the preferred leader of one partition, so every broker leads and follows.
ASSIGNMENT = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
RECORDS_PER_BROKER_AND_PARTITION = 5
TIMEOUT_S = 60.0
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    # Leadership moves only when the test elects, so broker 1 leads partition 0 when asked.
    "auto.leader.rebalance.enable": "false",
}
_STATUS_BROKER = re.compile(r"^broker (\d+) (.*)$")


def _broker_fields(status_text: str) -> dict[int, dict[str, str]]:
    found = {}
    for line in status_text.splitlines():
        match = _STATUS_BROKER.match(line)
        if match is not None:
            found[int(match[1])] = dict(item.split("=", 1) for item in match[2].split())
    return found


def _partition_state(zk: KazooClient, partition: int) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{TOPIC}/partitions/{partition}/state")
    state: dict[str, Any] = json.loads(data)
    return state


def _fully_replicated(zk: KazooClient) -> bool:
    try:
        return all(
            sorted(_partition_state(zk, p)["isr"]) == [1, 2, 3] for p in range(len(ASSIGNMENT))
        )
    except Exception:  # not created yet
        return False


def _value(broker_id: int, partition: int, index: int) -> bytes:
    return f"via-{broker_id}-p{partition}-{index}".encode()


def _expected(partition: int) -> list[bytes]:
    return [
        _value(broker_id, partition, index)
        for broker_id in IMPLS
        for index in range(RECORDS_PER_BROKER_AND_PARTITION)
    ]


def _read_all(bootstrap: str, partitions: list[int]) -> dict[int, list[bytes]]:
    """Every record of `partitions`, read with `bootstrap` as the only bootstrap server."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=int(TIMEOUT_S * 1000),
    )
    wanted = {p: len(_expected(p)) for p in partitions}
    read: dict[int, list[bytes]] = {p: [] for p in partitions}
    try:
        consumer.assign([TopicPartition(TOPIC, p) for p in partitions])
        for message in consumer:
            read[message.partition].append(message.value)
            if all(len(read[p]) >= wanted[p] for p in partitions):
                break
    finally:
        consumer.close()
    return read


def _broker_address(cluster: ClusterHandle, broker_id: int) -> str:
    return f"127.0.0.1:{cluster.broker_port(broker_id)}"


@pytest.fixture(scope="module")
def mixed(make_cluster_module: ClusterFactory) -> ClusterHandle:
    """The mixed cluster, with TOPIC fully replicated and written through every broker."""
    if not any(REFERENCE_LIB.glob("kafka_2.13-*.jar")):
        pytest.fail(f"Apache Kafka 3.9's jars are not in {REFERENCE_LIB}: run `make reference`")
    cluster = make_cluster_module(impl=",".join(IMPLS.values()), overrides=OVERRIDES)
    admin = AdminClient({"bootstrap.servers": _broker_address(cluster, 1)})
    new = NewTopic(TOPIC, len(ASSIGNMENT), replica_assignment=ASSIGNMENT)
    admin.create_topics([new])[TOPIC].result(timeout=TIMEOUT_S)
    with zk_session(cluster) as zk:
        wait_until(lambda: _fully_replicated(zk), TIMEOUT_S, f"{TOPIC} in sync on 3 brokers")
    for broker_id in IMPLS:
        producer = KafkaProducer(bootstrap_servers=_broker_address(cluster, broker_id), acks="all")
        try:
            for partition in range(len(ASSIGNMENT)):
                for index in range(RECORDS_PER_BROKER_AND_PARTITION):
                    value = _value(broker_id, partition, index)
                    producer.send(TOPIC, value, partition=partition).get(timeout=TIMEOUT_S)
        finally:
            producer.close()
    return cluster


def test_status_and_cluster_json_name_each_brokers_implementation(mixed: ClusterHandle) -> None:
    status = mixed.status()
    brokers = _broker_fields(status.text)
    assert {i: fields["impl"] for i, fields in brokers.items()} == IMPLS, status.text
    assert all(s.alive and s.registered for s in status.brokers.values()), status.text
    # Ours serve Prometheus; Kafka's broker has JMX, so its line names no endpoint.
    assert [i for i, fields in brokers.items() if "metrics" in fields] == [2, 3], status.text
    assert status.controller_id == 1, status.text
    state = json.loads((mixed.dir / "cluster.json").read_text())
    processes = state["processes"]
    assert state["spec"]["impl"] == "kafka,ours,ours"
    assert {i: processes[f"broker-{i}"]["impl"] for i in IMPLS} == IMPLS
    assert "kafka.Kafka" in processes["broker-1"]["command"]
    assert all(processes[f"broker-{i}"]["command"][1:3] == ["-m", "broker"] for i in (2, 3))


def test_every_broker_serves_the_records_written_through_every_broker(
    mixed: ClusterHandle,
) -> None:
    partitions = list(range(len(ASSIGNMENT)))
    with zk_session(mixed) as zk:
        leaders = {p: _partition_state(zk, p)["leader"] for p in partitions}
        assert _fully_replicated(zk)
    # Both implementations lead a partition, so reads cross the implementations.
    assert {IMPLS[leader] for leader in leaders.values()} == {"kafka", "ours"}, leaders
    for broker_id in IMPLS:
        read = _read_all(_broker_address(mixed, broker_id), partitions)
        assert read == {p: _expected(p) for p in partitions}, f"through broker {broker_id}"


def test_the_kafka_controllers_requests_are_served_by_our_brokers(mixed: ClusterHandle) -> None:
    """No request of Kafka's controller makes our brokers close the connection, so it has
    nothing to retry (before broker 1 is migrated: it is the controller until then)."""
    for broker_id in (2, 3):
        log = mixed.broker_log(broker_id).read_text(errors="replace")
        assert "unknown API key" not in log, f"broker {broker_id}"
    kafka_log = mixed.broker_log(1).read_text(errors="replace")
    assert "fails to send request" not in kafka_log


def _properties(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    pairs = [line.split("=", 1) for line in lines if line and not line.startswith("#")]
    return {key: value for key, value in pairs}


def test_broker_1_restarts_as_ours_on_the_data_kafka_wrote(mixed: ClusterHandle) -> None:
    broker_dir = mixed.dir / "broker-1"
    properties_before = _properties(broker_dir / "server.properties")
    mixed.kill(1)
    wait_until(lambda: not mixed.status().brokers[1].alive, TIMEOUT_S, "Kafka's broker 1 to exit")
    segment = broker_dir / "data" / f"{TOPIC}-0" / "00000000000000000000.log"
    written_by_kafka = segment.read_bytes()
    assert len(written_by_kafka) > 0

    started = mixed.run("start", "--broker", "1", "--impl", "ours")
    assert started.stdout.startswith("started broker-1 as ours"), started.stdout

    brokers = _broker_fields(mixed.status().text)
    assert brokers[1]["impl"] == "ours" and brokers[1]["alive"] == "yes", brokers
    assert brokers[1]["registered"] == "yes", brokers
    processes = json.loads((mixed.dir / "cluster.json").read_text())["processes"]
    assert processes["broker-1"]["impl"] == "ours"
    assert processes["broker-1"]["command"][1:3] == ["-m", "broker"]
    assert [impl for _, impl in processes["broker-1"]["impl_history"]] == ["kafka", "ours"]
    # The same config, plus the one key only ours knows.
    properties_after = _properties(broker_dir / "server.properties")
    metrics_key = "metrics.prometheus.listener"
    assert metrics_key in properties_after
    assert {k: v for k, v in properties_after.items() if k != metrics_key} == properties_before

    with zk_session(mixed) as zk:
        wait_until(lambda: _fully_replicated(zk), TIMEOUT_S, "broker 1 back in every ISR")
        admin = AdminClient({"bootstrap.servers": mixed.bootstrap})
        elected = admin.elect_leaders(ElectionType.PREFERRED, [ConfluentPartition(TOPIC, 0)])
        elected.result(timeout=TIMEOUT_S)
        wait_until(lambda: _partition_state(zk, 0)["leader"] == 1, TIMEOUT_S, "broker 1 leading p0")
    # Partition 0 is now served by broker 1 (ours) from the segment Kafka wrote.
    assert segment.read_bytes().startswith(written_by_kafka)
    partitions = list(range(len(ASSIGNMENT)))
    read = _read_all(_broker_address(mixed, 1), partitions)
    assert read == {p: _expected(p) for p in partitions}


def test_events_name_the_implementation_that_wrote_each_line(mixed: ClusterHandle) -> None:
    """After the migration broker-1's state-change.log holds Kafka's lines and then ours."""
    lines = mixed.run("events").stdout.splitlines()
    sources = {" ".join(line.split()[2:4]) for line in lines}
    assert {"broker-1 (kafka)", "broker-1 (ours)", "broker-2 (ours)"} <= sources, sources
    first_ours = min(i for i, line in enumerate(lines) if " broker-1 (ours) " in line)
    assert all(" broker-1 (kafka) " not in line for line in lines[first_ours:])


def test_our_broker_restarts_as_kafka_on_the_data_ours_wrote(
    make_cluster: ClusterFactory,
) -> None:
    """The other way, under Kafka's controller: `start --broker 2 --impl kafka` on a
    directory our broker wrote; Kafka's broker rejoins the ISR and serves the records."""
    if not any(REFERENCE_LIB.glob("kafka_2.13-*.jar")):
        pytest.fail(f"Apache Kafka 3.9's jars are not in {REFERENCE_LIB}: run `make reference`")
    cluster = make_cluster(brokers=2, impl="kafka,ours", overrides=OVERRIDES)
    topic = "mixed-launcher-back"
    admin = AdminClient({"bootstrap.servers": _broker_address(cluster, 1)})
    new = NewTopic(topic, 1, replica_assignment=[[2, 1]])
    admin.create_topics([new])[topic].result(timeout=TIMEOUT_S)
    values = [f"written-by-ours-{index}".encode() for index in range(10)]
    producer = KafkaProducer(bootstrap_servers=_broker_address(cluster, 2), acks="all")
    try:
        for value in values:
            producer.send(topic, value).get(timeout=TIMEOUT_S)
    finally:
        producer.close()
    cluster.kill(2)
    wait_until(lambda: not cluster.status().brokers[2].alive, TIMEOUT_S, "our broker 2 to exit")

    cluster.run("start", "--broker", "2", "--impl", "kafka")

    brokers = _broker_fields(cluster.status().text)
    assert {i: fields["impl"] for i, fields in brokers.items()} == {1: "kafka", 2: "kafka"}
    with zk_session(cluster) as zk:

        def state() -> dict[str, Any]:
            data, _ = zk.get(f"/brokers/topics/{topic}/partitions/0/state")
            loaded: dict[str, Any] = json.loads(data)
            return loaded

        wait_until(lambda: sorted(state()["isr"]) == [1, 2], TIMEOUT_S, "broker 2 in the ISR")
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        elected = admin.elect_leaders(ElectionType.PREFERRED, [ConfluentPartition(topic, 0)])
        elected.result(timeout=TIMEOUT_S)
        wait_until(lambda: state()["leader"] == 2, TIMEOUT_S, "Kafka's broker 2 leading")
    consumer = KafkaConsumer(
        bootstrap_servers=_broker_address(cluster, 2),
        auto_offset_reset="earliest",
        consumer_timeout_ms=int(TIMEOUT_S * 1000),
    )
    read: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0)])
        for message in consumer:
            read.append(message.value)
            if len(read) == len(values):
                break
    finally:
        consumer.close()
    assert read == values
