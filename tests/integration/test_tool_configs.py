"""`kafka-configs` and `kafka-delete-records` as subprocesses, with Kafka's output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kazoo.client import KazooClient

from tests.integration.conftest import REPO_ROOT, ClusterHandle, wait_until
from tests.integration.requests import topic_spec
from tests.integration.wire import WireClient, controller_address, create_topics

# kafka-configs changes the brokers' default and per-broker configs here.
pytestmark = pytest.mark.own_cluster

TOOL_TIMEOUT_S = 60.0
WAIT_S = 30.0


def _tool(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REPO_ROOT / ".venv" / "bin" / name), *args],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        check=False,
    )


def _configs(cluster: ClusterHandle, *args: str) -> list[str]:
    result = _tool("kafka-configs", "--bootstrap-server", cluster.bootstrap, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def _create(cluster: ClusterHandle, topic: str) -> None:
    spec = topic_spec(topic, assignments={0: [1, 2]})
    spec["num_partitions"] = spec["replication_factor"] = -1
    with WireClient.to(controller_address(cluster)) as client:
        assert int(create_topics(client, [spec]).topics[0].error_code) == 0


def test_broker_configs_alter_and_describe(cluster: ClusterHandle, zk: KazooClient) -> None:
    brokers = ["--entity-type", "brokers"]
    assert _configs(
        cluster, *brokers, "--entity-default", "--alter",
        "--add-config", "log.retention.ms=7200000,log.cleanup.policy=[delete,compact]",
    ) == ["Completed updating default config for brokers in the cluster."]  # fmt: skip
    assert json.loads(zk.get("/config/brokers/<default>")[0])["config"] == {
        "log.retention.ms": "7200000",
        "log.cleanup.policy": "delete,compact",
    }
    assert _configs(
        cluster, *brokers, "--entity-name", "2", "--alter", "--add-config", "log.retention.ms=1000"
    ) == ["Completed updating config for broker 2."]

    def described() -> list[str]:
        return _configs(cluster, *brokers, "--entity-name", "2", "--describe")

    expected = [
        "Dynamic configs for broker 2 are:",
        "  log.retention.ms=1000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
        "log.retention.ms=1000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000,"
        " DEFAULT_CONFIG:log.retention.hours=168}",
    ]
    wait_until(lambda: described() == expected, WAIT_S, "broker 2 to apply its configs")
    assert _configs(cluster, *brokers, "--entity-default", "--describe") == [
        "Default configs for brokers in the cluster are:",
        "  log.cleanup.policy=delete,compact sensitive=false"
        " synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleanup.policy=delete,compact}",
        "  log.retention.ms=7200000 sensitive=false"
        " synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000}",
    ]
    everything = _configs(cluster, *brokers, "--entity-name", "1", "--describe", "--all")
    assert everything[0] == "All configs for broker 1 are:"
    assert (
        f"  zookeeper.connect={cluster.zk_connect} sensitive=false"
        f" synonyms={{STATIC_BROKER_CONFIG:zookeeper.connect={cluster.zk_connect}}}"
    ) in everything

    assert _configs(
        cluster, *brokers, "--entity-name", "2", "--alter", "--delete-config", "log.retention.ms"
    ) == ["Completed updating config for broker 2."]
    assert json.loads(zk.get("/config/brokers/2")[0])["config"] == {}
    assert _configs(
        cluster, *brokers, "--entity-default", "--alter",
        "--delete-config", "log.retention.ms,log.cleanup.policy",
    ) == ["Completed updating default config for brokers in the cluster."]  # fmt: skip
    wait_until(
        lambda: len(_configs(cluster, *brokers, "--entity-default", "--describe")) == 1,
        WAIT_S,
        "the cluster default cleared",
    )

    refused = _tool(
        "kafka-configs", "--bootstrap-server", cluster.bootstrap, *brokers, "--entity-name", "1",
        "--alter", "--add-config", "broker.id=5",
    )  # fmt: skip
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "Error: Invalid config value for resource ConfigResource(type=BROKER, name='1'):"
        " Cannot update these configs dynamically: Set(broker.id)"
    )


def test_topic_configs_alter_and_describe(cluster: ClusterHandle) -> None:
    topic = "tool-configs"
    _create(cluster, topic)
    assert _configs(
        cluster, "--entity-type", "topics", "--entity-name", topic, "--alter",
        "--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]",
    ) == [f"Completed updating config for topic {topic}."]  # fmt: skip
    lines = _configs(cluster, "--topic", topic, "--describe")
    assert lines[0] == f"Dynamic configs for topic {topic} are:"
    assert sorted(lines[1:]) == [
        "  cleanup.policy=compact,delete sensitive=false"
        " synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete,"
        " DEFAULT_CONFIG:log.cleanup.policy=delete}",
        # As Kafka: log.retention.ms has no default (log.retention.hours has), so no
        # broker layer follows the override.
        "  retention.ms=60000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000}",
    ]
    missing = _tool(
        "kafka-configs", "--bootstrap-server", cluster.bootstrap, "--topic", topic,
        "--alter", "--delete-config", "segment.ms",
    )  # fmt: skip
    assert (missing.returncode, missing.stderr.strip()) == (
        1,
        "Error: Invalid config(s): segment.ms",
    )


def test_delete_records_tool(cluster: ClusterHandle, tmp_path: Path) -> None:
    topic = "tool-delete-records"
    _create(cluster, topic)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for index in range(10):
        producer.produce(topic, value=f"v{index}".encode(), partition=0)
    assert producer.flush(60) == 0
    offsets = tmp_path / "offsets.json"
    offsets.write_text(
        json.dumps(
            {
                "partitions": [
                    {"topic": topic, "partition": 0, "offset": 3},
                    {"topic": "no-such-topic", "partition": 0, "offset": 1},
                ],
                "version": 1,
            }
        )
    )
    result = _tool(
        "kafka-delete-records", "--bootstrap-server", cluster.bootstrap,
        "--offset-json-file", str(offsets),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        "Executing records delete operation",
        "Records delete operation completed:",
        f"partition: {topic}-0\tlow_watermark: 3",
    ]
    assert lines[3].startswith("partition: no-such-topic-0\terror: ")
    assert len(lines) == 4

    offsets.write_text('{"partitions": [], "version": 2}')
    bad = _tool(
        "kafka-delete-records", "--bootstrap-server", cluster.bootstrap,
        "--offset-json-file", str(offsets),
    )  # fmt: skip
    assert (bad.returncode, bad.stderr.strip()) == (1, "Error: Not supported version field value 2")
