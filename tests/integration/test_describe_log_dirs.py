"""DescribeLogDirs through kafka-python's admin client and the wire, `kafka-log-dirs` as a
subprocess, and the Kafka release kafka-python infers from our ApiVersions."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka import KafkaAdminClient
from kafka.net.compat import KafkaNetClient

from tests.integration.conftest import REPO_ROOT, ClusterHandle
from tests.integration.requests import topic_spec
from tests.integration.wire import WireClient, controller_address, create_topics

DESCRIBE_LOG_DIRS = 35
TOPIC = "log-dirs"
RECORD_COUNT = 20
TOOL_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def topic(cluster: ClusterHandle) -> Iterator[str]:
    spec = topic_spec(TOPIC, assignments={0: [1, 2], 1: [2, 3]})
    spec["num_partitions"] = spec["replication_factor"] = -1
    with WireClient.to(controller_address(cluster)) as client:
        assert int(create_topics(client, [spec]).topics[0].error_code) == 0
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for index in range(RECORD_COUNT):
        producer.produce(TOPIC, value=b"v" * 100, partition=index % 2)
    assert producer.flush(60) == 0
    yield TOPIC


def _data_dir(cluster: ClusterHandle, broker_id: int) -> str:
    return str((cluster.dir / f"broker-{broker_id}" / "data").absolute())


def _size_on_disk(cluster: ClusterHandle, broker_id: int, partition: int) -> int:
    directory = Path(_data_dir(cluster, broker_id)) / f"{TOPIC}-{partition}"
    return sum(path.stat().st_size for path in directory.glob("*.log"))


def test_kafka_python_describe_log_dirs(cluster: ClusterHandle, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        described = admin.describe_log_dirs([topic], brokers=[2])
    finally:
        admin.close()
    ((broker,),) = [[entry for entry in described if entry["broker"] == 2]]
    (log_dir,) = broker["log_dirs"]
    assert log_dir["error_code"] == 0
    assert log_dir["log_dir"] == _data_dir(cluster, 2)
    (found,) = [t for t in log_dir["topics"] if t["name"] == topic]
    partitions = {p["partition_index"]: p for p in found["partitions"]}
    assert set(partitions) == {0, 1}
    for index, partition in partitions.items():
        assert partition["partition_size"] == _size_on_disk(cluster, 2, index) > 0
        assert partition["offset_lag"] == 0
        assert partition["is_future_key"] is False


def test_null_topic_list_describes_every_partition_at_v0(
    cluster: ClusterHandle, topic: str
) -> None:
    with WireClient.to(f"127.0.0.1:{cluster.broker_port(3)}") as client:
        response = client.request(DESCRIBE_LOG_DIRS, 0, {"topics": None})
    (result,) = response.results
    assert result.log_dir == _data_dir(cluster, 3)
    by_topic = {t.name: [int(p.partition_index) for p in t.partitions] for t in result.topics}
    assert by_topic[topic] == [1]


def test_kafka_python_infers_kafka_3_9(cluster: ClusterHandle) -> None:
    # kafka-python infers 3.9 from Fetch v17 (topic ids, KIP-951 and KRaft directory ids).
    client = KafkaNetClient(bootstrap_servers=cluster.bootstrap)
    try:
        assert client.check_version() == (3, 9)
    finally:
        client.close()


def _tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REPO_ROOT / ".venv" / "bin" / "kafka-log-dirs"), *args],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        check=False,
    )


def test_kafka_log_dirs_tool(cluster: ClusterHandle, topic: str) -> None:
    result = _tool(
        "--bootstrap-server", cluster.bootstrap, "--describe", "--broker-list", "1,3",
        "--topic-list", topic,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 1,3",
    ]
    assert len(lines) == 3
    document = json.loads(lines[2])
    assert lines[2] == json.dumps(document, separators=(",", ":"))
    assert document["version"] == 1
    assert [b["broker"] for b in document["brokers"]] == [1, 3]
    broker_1 = document["brokers"][0]["logDirs"][0]
    assert broker_1["logDir"] == _data_dir(cluster, 1)
    assert broker_1["error"] is None
    assert broker_1["partitions"] == [
        {
            "partition": f"{topic}-0",
            "size": _size_on_disk(cluster, 1, 0),
            "offsetLag": 0,
            "isFuture": False,
        }
    ]

    missing = _tool("--bootstrap-server", cluster.bootstrap, "--describe", "--broker-list", "9")
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        "Error: The given brokers do not exist from --broker-list: 9."
        " Current existent brokers: 1,2,3"
    )
