"""Our brokers follow an Apache Kafka 3.9 controller (issue 39, item 2): ZooKeeper and Kafka
broker 1 start first, so that it is the controller, then our brokers 2 and 3 join on the same
ZooKeeper, each started standalone from its own server.properties
(`python -m broker server.properties`, as in /work/shared/CLUSTER_CONTRACT.md).

Kafka's controller sends our brokers LeaderAndIsr, UpdateMetadata and StopReplica; they must
serve them (no closed connection, no retries on Kafka's side), follow its leadership decisions
and delete the replicas of a topic it deletes. Needs Apache Kafka 3.9's jars (`make
reference`).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scripts._cluster.ports import ClusterPorts, reserve_cluster_ports
from tests.integration.conftest import (
    REPO_ROOT,
    ClusterHandle,
    _remove_if_empty,
    _short_tmp_dir,
    run_cluster_command,
    wait_until,
    zk_session,
)
from tests.integration.requests import topic_spec
from tests.integration.wire import WireClient, create_topics, delete_topics, metadata

pytestmark = pytest.mark.own_cluster

REFERENCE_LIB = REPO_ROOT / "reference" / "lib"
KAFKA_BROKER_ID = 1
OUR_BROKER_IDS = (2, 3)
BROKER_IDS = (KAFKA_BROKER_ID, *OUR_BROKER_IDS)
TOPIC = "kafka-controller-mixed"
DELETED_TOPIC = "kafka-controller-deleted"
# Each broker the preferred leader of one partition.
ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
RECORDS_PER_PARTITION = 200
JOIN_TIMEOUT_S = 60.0
SETTLE_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
# What Kafka's controller logs when a broker closes its connection or does not answer
# (ControllerChannelManager's RequestSendThread, the NetworkClient), and what its
# state-change log says of an error in a LeaderAndIsr answer.
KAFKA_CHANNEL_TROUBLE = re.compile(
    r"fails to send request|Reconnecting to broker|"
    r"\[Controller id=\d+, targetBrokerId=\d+\] .*disconnected|"
    r"Received error .* in LeaderAndIsr response"
)
OUR_TROUBLE = re.compile(
    r"unknown API key|Traceback|malformed|"
    r"(LeaderAndIsr|StopReplica|UpdateMetadata) v\d+ from .* failed"
)


@dataclass
class MixedCluster:
    kafka: ClusterHandle  # ZooKeeper and Kafka broker 1, run by scripts/cluster
    ours: dict[int, subprocess.Popen[bytes]]
    ports: ClusterPorts

    def address(self, broker_id: int) -> str:
        return f"127.0.0.1:{self.ports.port_base + broker_id - 1}"

    @property
    def bootstrap(self) -> str:
        return ",".join(self.address(i) for i in BROKER_IDS)

    def broker_dir(self, broker_id: int) -> Path:
        return self.kafka.dir / f"broker-{broker_id}"

    def broker_log(self, broker_id: int) -> Path:
        return self.broker_dir(broker_id) / "broker.log"

    def state_change_log(self, broker_id: int) -> Path:
        return self.broker_dir(broker_id) / "state-change.log"


def _require_reference() -> None:
    if not any(REFERENCE_LIB.glob("kafka_2.13-*.jar")):
        pytest.fail(
            f"Apache Kafka 3.9's jars are not in {REFERENCE_LIB}: run `make reference` first"
        )


def _start_our_broker(cluster_dir: Path, ports: ClusterPorts, broker_id: int) -> Any:
    directory = cluster_dir / f"broker-{broker_id}"
    (directory / "data").mkdir(parents=True, exist_ok=True)
    properties = directory / "server.properties"
    properties.write_text(
        "\n".join(
            [
                f"broker.id={broker_id}",
                f"listeners=PLAINTEXT://127.0.0.1:{ports.port_base + broker_id - 1}",
                f"log.dirs={directory / 'data'}",
                f"zookeeper.connect=127.0.0.1:{ports.zk_port_base}",
                "group.initial.rebalance.delay.ms=0",
            ]
        )
        + "\n"
    )
    log_file = open(directory / "broker.log", "ab")  # noqa: SIM115 - the broker's for its life
    env = {**os.environ, "LOG_DIR": str(directory)}
    process = subprocess.Popen(
        [sys.executable, "-m", "broker", str(properties)],
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        env=env,
    )
    log_file.close()
    return process


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(STOP_TIMEOUT_S)


@pytest.fixture(scope="module")
def mixed() -> Iterator[MixedCluster]:
    _require_reference()
    ports = reserve_cluster_ports(len(BROKER_IDS), 1)
    directory = _short_tmp_dir("kafka-controller-") / "cluster"
    kafka = ClusterHandle(directory, 1, 1, ports.port_base, ports.zk_port_base, ports=ports)
    ours: dict[int, subprocess.Popen[bytes]] = {}
    cluster = MixedCluster(kafka, ours, ports)
    try:
        result = run_cluster_command(
            *("up", "--dir", str(directory), "--brokers", "1", "--zookeepers", "1"),
            *("--port-base", str(ports.port_base), "--zk-port-base", str(ports.zk_port_base)),
            *("--impl", "kafka", "--set", "group.initial.rebalance.delay.ms=0"),
        )
        if result.returncode != 0:
            pytest.fail(f"Kafka broker 1 did not start:\n{result.stderr}\n{kafka.log_tails()}")
        for broker_id in OUR_BROKER_IDS:
            ours[broker_id] = _start_our_broker(directory, ports, broker_id)
        with zk_session(kafka) as client:
            wait_until(
                lambda: {int(i) for i in client.get_children("/brokers/ids")} == set(BROKER_IDS),
                JOIN_TIMEOUT_S,
                lambda: f"brokers 1-3 registered ({_tails(cluster)})",
            )
        yield cluster
    finally:
        for process in ours.values():
            _stop(process)
        kafka.down()
        ports.release()
        _remove_if_empty(directory.parent)


def _tails(cluster: MixedCluster, line_count: int = 30) -> str:
    sections = []
    for broker_id in BROKER_IDS:
        path = cluster.broker_log(broker_id)
        if path.exists():
            lines = path.read_text(errors="replace").splitlines()[-line_count:]
            sections.append(f"----- broker {broker_id}\n" + "\n".join(lines))
    return "\n".join(sections)


def _leaders(address: str, topic: str) -> dict[int, tuple[int, tuple[int, ...]]]:
    """partition -> (leader, ISR) as the broker at `address` answers Metadata."""
    with WireClient.to(address) as client:
        response = metadata(client, [topic])
    found = {}
    for entry in response.topics:
        if entry.name != topic or int(entry.error_code) != 0:
            continue
        for partition in entry.partitions:
            isr = tuple(sorted(int(b) for b in partition.isr_nodes))
            found[int(partition.partition_index)] = (int(partition.leader_id), isr)
    return found


@pytest.fixture(scope="module")
def mixed_topic(mixed: MixedCluster) -> str:
    """TOPIC created through Kafka's controller, fully replicated, as every broker shows it."""
    with WireClient.to(mixed.address(KAFKA_BROKER_ID)) as client:
        created = create_topics(
            client, [topic_spec(TOPIC, -1, -1, {"min.insync.replicas": "2"}, ASSIGNMENT)]
        )
    assert [int(t.error_code) for t in created.topics] == [0], created
    wanted = {p: (replicas[0], tuple(sorted(replicas))) for p, replicas in ASSIGNMENT.items()}
    seen: dict[int, Any] = {}

    def every_broker_agrees() -> bool:
        for broker_id in BROKER_IDS:
            seen[broker_id] = _leaders(mixed.address(broker_id), TOPIC)
        return all(view == wanted for view in seen.values())

    wait_until(every_broker_agrees, SETTLE_TIMEOUT_S, lambda: f"leaders {wanted}, saw {seen}")
    return TOPIC


def test_each_broker_leads_its_preferred_partition_and_all_agree(
    mixed: MixedCluster, mixed_topic: str
) -> None:
    views = {broker_id: _leaders(mixed.address(broker_id), mixed_topic) for broker_id in BROKER_IDS}
    leaders = {broker_id: {p: v[0] for p, v in view.items()} for broker_id, view in views.items()}
    assert leaders[KAFKA_BROKER_ID] == {0: 1, 1: 2, 2: 3}
    assert leaders[2] == leaders[3] == leaders[KAFKA_BROKER_ID]


def test_acks_all_writes_through_our_leaders_and_reads_back(
    mixed: MixedCluster, mixed_topic: str
) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=mixed.bootstrap, acks="all", linger_ms=5)
    sent = {
        (partition, f"{partition}-{n}".encode())
        for partition in ASSIGNMENT
        for n in range(RECORDS_PER_PARTITION)
    }
    futures = [producer.send(mixed_topic, value=value, partition=p) for p, value in sorted(sent)]
    producer.flush(timeout=60)
    offsets = [future.get(timeout=60) for future in futures]
    producer.close()
    assert {m.partition for m in offsets} == set(ASSIGNMENT)

    consumer = KafkaConsumer(
        bootstrap_servers=mixed.bootstrap, group_id=None, enable_auto_commit=False
    )
    consumer.assign([TopicPartition(mixed_topic, p) for p in ASSIGNMENT])
    consumer.seek_to_beginning()
    received: set[tuple[int, bytes]] = set()
    deadline = time.monotonic() + 60
    while len(received) < len(sent) and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            received.update((m.partition, m.value) for m in batch)
    consumer.close()
    assert received == sent


def test_a_topic_deleted_by_kafkas_controller_is_deleted_on_our_brokers(
    mixed: MixedCluster,
) -> None:
    """Kafka's controller finishes a deletion only once every replica answered StopReplica
    (delete=true) without error; our brokers must delete their logs."""
    spec = topic_spec(DELETED_TOPIC, -1, -1, None, {0: [2, 3, 1]})
    with WireClient.to(mixed.address(KAFKA_BROKER_ID)) as client:
        created = create_topics(client, [spec])
        assert [int(t.error_code) for t in created.topics] == [0], created
    ours_logs = [mixed.broker_dir(b) / "data" / f"{DELETED_TOPIC}-0" for b in OUR_BROKER_IDS]
    wait_until(
        lambda: all(path.exists() for path in ours_logs), SETTLE_TIMEOUT_S, "replicas created"
    )
    with WireClient.to(mixed.address(KAFKA_BROKER_ID)) as client:
        deleted = delete_topics(client, [DELETED_TOPIC])
    assert [int(r.error_code) for r in deleted.responses] == [0], deleted
    with zk_session(mixed.kafka) as zk:
        wait_until(
            lambda: (
                zk.exists(f"/brokers/topics/{DELETED_TOPIC}") is None
                and zk.exists(f"/admin/delete_topics/{DELETED_TOPIC}") is None
            ),
            SETTLE_TIMEOUT_S,
            "Kafka's controller to finish the deletion",
        )
    wait_until(
        lambda: not any(path.exists() for path in ours_logs), SETTLE_TIMEOUT_S, "logs deleted"
    )
    for broker_id in OUR_BROKER_IDS:
        assert "Handling StopReplica request" in mixed.state_change_log(broker_id).read_text()


def test_neither_side_logs_trouble_with_the_controller_requests(
    mixed: MixedCluster, mixed_topic: str
) -> None:
    kafka_lines = mixed.broker_log(KAFKA_BROKER_ID).read_text(errors="replace").splitlines()
    kafka_lines += mixed.state_change_log(KAFKA_BROKER_ID).read_text(errors="replace").splitlines()
    assert [line for line in kafka_lines if KAFKA_CHANNEL_TROUBLE.search(line)] == []
    for broker_id in OUR_BROKER_IDS:
        text = mixed.broker_log(broker_id).read_text(errors="replace")
        assert [line for line in text.splitlines() if OUR_TROUBLE.search(line)] == []
        # They were served: Kafka's controller sent each of our brokers its requests.
        state_changes = mixed.state_change_log(broker_id).read_text(errors="replace")
        assert "Handling LeaderAndIsr request" in state_changes
