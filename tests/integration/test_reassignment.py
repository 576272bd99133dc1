"""Partition reassignment on a live cluster: kafka-reassign-partitions (--generate, --execute,
--verify, --list), ListPartitionReassignments while a target broker is stopped, and the legacy
/admin/reassign_partitions znode. What ZooKeeper holds is read with kazoo; what is on disk is
read from each broker's log.dirs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kazoo.client import KazooClient

from tests.integration.conftest import ClusterHandle, wait_until

# Partitions move between brokers, and a broker is stopped, here.
pytestmark = pytest.mark.own_cluster

TOOL = Path(sys.executable).parent / "kafka-reassign-partitions"
TIMEOUT_S = 60
RECORD_COUNT = 200


def _run_tool(cluster: ClusterHandle, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOL), "--bootstrap-server", cluster.bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def _create_topic(cluster: ClusterHandle, topic: str, replicas: list[int]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics([NewTopic(topic, 1, replica_assignment=[replicas])])
    futures[topic].result(timeout=TIMEOUT_S)


def _produce(cluster: ClusterHandle, topic: str, count: int) -> list[bytes]:
    values = [f"record-{index}".encode() for index in range(count)]
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    return values


def _consume_all(cluster: ClusterHandle, topic: str, count: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"check-{topic}-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values


def _topic_znode(zk: KazooClient, topic: str) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{topic}")
    return dict(json.loads(data))


def _state_znode(zk: KazooClient, topic: str, partition: int = 0) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    return dict(json.loads(data))


def _partition_dir(cluster: ClusterHandle, broker_id: int, topic: str) -> Path:
    return cluster.dir / f"broker-{broker_id}" / "data" / f"{topic}-0"


def _log_files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.glob("*.log"))}


def _verify_until_completed(cluster: ClusterHandle, json_file: Path, topic: str) -> str:
    completed = f"Reassignment of partition {topic}-0 is completed."
    output = ""

    def done() -> bool:
        nonlocal output
        result = _run_tool(cluster, "--verify", "--reassignment-json-file", str(json_file))
        assert result.returncode == 0, result.stderr
        output = result.stdout
        return completed in output

    wait_until(done, TIMEOUT_S, f"--verify to report {completed!r}")
    return output


def test_reassignment_from_1_2_to_2_3_moves_the_data_byte_for_byte(
    cluster: ClusterHandle, zk: KazooClient, tmp_path: Path
) -> None:
    topic = "moved"
    _create_topic(cluster, topic, [1, 2])
    values = _produce(cluster, topic, RECORD_COUNT)
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"topics": [{"topic": topic}], "version": 1}))
    generated = _run_tool(
        cluster,
        "--generate",
        "--topics-to-move-json-file",
        str(topics_file),
        "--broker-list",
        "2,3",
    )
    assert generated.returncode == 0, generated.stderr
    current = (
        '{"version":1,"partitions":[{"topic":"moved","partition":0,"replicas":[1,2],'
        '"log_dirs":["any","any"]}]}'
    )
    assert generated.stdout.startswith(f"Current partition replica assignment\n{current}\n\n")
    proposed = generated.stdout.split("Proposed partition reassignment configuration\n")[1]
    assert sorted(json.loads(proposed)["partitions"][0]["replicas"]) == [2, 3]

    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [2, 3]}]}
        )
    )
    executed = _run_tool(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert executed.returncode == 0, executed.stderr
    assert executed.stdout.startswith(f"Current partition replica assignment\n\n{current}\n\n")
    assert (
        "Save this to use as the --reassignment-json-file option during rollback" in executed.stdout
    )
    assert executed.stdout.rstrip().endswith(
        f"Successfully started partition reassignment for {topic}-0"
    )

    verified = _verify_until_completed(cluster, plan, topic)
    assert verified.startswith("Status of partition reassignment:\n")
    znode = _topic_znode(zk, topic)
    assert znode["partitions"] == {"0": [2, 3]}
    assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
    state = _state_znode(zk, topic)
    assert sorted(state["isr"]) == [2, 3] and state["leader"] in (2, 3)

    wait_until(
        lambda: not _partition_dir(cluster, 1, topic).exists(),
        TIMEOUT_S,
        "broker 1 to delete its copy of the partition",
    )
    wait_until(
        lambda: (
            _log_files(_partition_dir(cluster, 2, topic))
            == _log_files(_partition_dir(cluster, 3, topic))
        ),
        TIMEOUT_S,
        "the logs of brokers 2 and 3 to be byte-identical",
    )
    logs = _log_files(_partition_dir(cluster, 3, topic))
    assert logs and all(logs.values())
    assert _consume_all(cluster, topic, RECORD_COUNT) == values
    listed = _run_tool(cluster, "--list")
    assert listed.stdout.strip() == "No partition reassignments found."


def test_list_reassignments_while_the_target_broker_is_stopped(
    cluster: ClusterHandle, zk: KazooClient, tmp_path: Path
) -> None:
    controller = int(json.loads(zk.get("/controller")[0])["brokerid"])
    # The stopped broker must not be the controller: the requests go there.
    stopped = next(b for b in (3, 2, 1) if b != controller)
    kept = [b for b in cluster.broker_ids if b != stopped]
    topic = "slow"
    _create_topic(cluster, topic, kept)
    _produce(cluster, topic, 20)
    target = [kept[1], stopped]
    bootstrap = ",".join(f"127.0.0.1:{cluster.broker_port(b)}" for b in kept)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_S * 1000)
    # kafka-python sends its controller look-up to any known broker, the stopped one included,
    # and fails on the timeout instead of retrying: look the controller up while all run.
    assert admin.list_partition_reassignments() == {}
    cluster.kill(stopped, "STOP")
    try:
        results = admin.alter_partition_reassignments({TopicPartition(topic, 0): target})
        assert results == {TopicPartition(topic, 0): None}
        ongoing = admin.list_partition_reassignments()
        assert ongoing[TopicPartition(topic, 0)] == {
            "replicas": [kept[1], stopped, kept[0]],
            "adding_replicas": [stopped],
            "removing_replicas": [kept[0]],
        }
        znode = _topic_znode(zk, topic)
        assert znode["adding_replicas"] == {"0": [stopped]}
        assert znode["removing_replicas"] == {"0": [kept[0]]}
        listed = subprocess.run(
            [str(TOOL), "--bootstrap-server", bootstrap, "--list"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        assert listed.stdout.splitlines() == [
            "Current partition reassignments:",
            f"{topic}-0: replicas: {kept[1]},{stopped},{kept[0]}. adding: {stopped}. "
            f"removing: {kept[0]}.",
        ], listed.stderr
    finally:
        cluster.kill(stopped, "CONT")
    wait_until(
        lambda: not admin.list_partition_reassignments(),
        TIMEOUT_S,
        "the reassignment to complete once the broker runs again",
    )
    admin.close()
    assert _topic_znode(zk, topic)["partitions"] == {"0": target}
    assert sorted(_state_znode(zk, topic)["isr"]) == sorted(target)


def test_admin_reassign_partitions_znode_is_carried_out_and_deleted(
    cluster: ClusterHandle, zk: KazooClient
) -> None:
    topic = "legacy"
    _create_topic(cluster, topic, [3, 1])
    _produce(cluster, topic, 10)
    request = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2]}]}
    zk.create("/admin/reassign_partitions", json.dumps(request).encode(), makepath=True)
    wait_until(
        lambda: zk.exists("/admin/reassign_partitions") is None,
        TIMEOUT_S,
        "the controller to delete /admin/reassign_partitions",
    )
    assert _topic_znode(zk, topic)["partitions"] == {"0": [1, 2]}
    assert _state_znode(zk, topic)["leader"] in (1, 2)
