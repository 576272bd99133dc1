"""Acceptance: what the cluster writes to ZooKeeper matches Kafka's znode formats."""

from __future__ import annotations

import json
import re
from typing import Any

from kazoo.client import KazooClient

from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import topic_spec
from tests.integration.wire import WireClient, controller_address, create_topics, delete_topics

TOPIC = "znode-format"
BASE64_UUID = re.compile(r"^[A-Za-z0-9_-]{22}$")


def _json(zk: KazooClient, path: str) -> Any:
    data, _stat = zk.get(path)
    return json.loads(data)


def _create_topic(cluster: ClusterHandle) -> None:
    spec = topic_spec(TOPIC, 6, 3, configs={"retention.ms": "3600000"})
    with WireClient.to(controller_address(cluster)) as client:
        response = create_topics(client, [spec])
    assert int(response.topics[0].error_code) == 0, response


def test_broker_registrations(cluster: ClusterHandle, zk: KazooClient) -> None:
    assert sorted(int(i) for i in zk.get_children("/brokers/ids")) == cluster.broker_ids
    for broker_id in cluster.broker_ids:
        data, stat = zk.get(f"/brokers/ids/{broker_id}")
        assert stat.ephemeralOwner != 0
        port = cluster.broker_port(broker_id)
        registration = json.loads(data)
        assert set(registration) == {
            "features",
            "listener_security_protocol_map",
            "endpoints",
            "jmx_port",
            "port",
            "host",
            "version",
            "timestamp",
        }
        assert registration["version"] == 5
        assert registration["host"] == "127.0.0.1" and registration["port"] == port
        assert registration["endpoints"] == [f"PLAINTEXT://127.0.0.1:{port}"]
        assert registration["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
        assert registration["jmx_port"] == -1 and registration["features"] == {}
        assert isinstance(registration["timestamp"], str) and registration["timestamp"].isdigit()


def test_cluster_id_and_controller(cluster: ClusterHandle, zk: KazooClient) -> None:
    cluster_id = _json(zk, "/cluster/id")
    assert cluster_id["version"] == "1" and BASE64_UUID.match(cluster_id["id"])
    controller_data, controller_stat = zk.get("/controller")
    controller = json.loads(controller_data)
    assert list(controller) == ["version", "brokerid", "timestamp", "kraftControllerEpoch"]
    assert controller["version"] == 2 and controller["brokerid"] in cluster.broker_ids
    assert controller["kraftControllerEpoch"] == -1
    assert controller["timestamp"].isdigit() and controller_stat.ephemeralOwner != 0
    epoch_data, _ = zk.get("/controller_epoch")
    assert int(epoch_data) >= 1
    for path in (
        "/brokers/topics",
        "/brokers/seqid",
        "/config/topics",
        "/config/changes",
        "/admin/delete_topics",
        "/isr_change_notification",
    ):
        assert zk.exists(path) is not None, path


def test_topic_znodes(cluster: ClusterHandle, zk: KazooClient) -> None:
    _create_topic(cluster)
    topic = _json(zk, f"/brokers/topics/{TOPIC}")
    assert topic["version"] == 3 and BASE64_UUID.match(topic["topic_id"])
    assert topic["adding_replicas"] == {} and topic["removing_replicas"] == {}
    assert sorted(topic["partitions"], key=int) == [str(p) for p in range(6)]
    for replicas in topic["partitions"].values():
        assert sorted(replicas) == cluster.broker_ids  # RF 3 over 3 brokers
    leaders = [replicas[0] for _, replicas in sorted(topic["partitions"].items())]
    assert sorted(set(leaders)) == cluster.broker_ids, "preferred leaders spread round-robin"
    assert _json(zk, f"/config/topics/{TOPIC}") == {
        "version": 1,
        "config": {"retention.ms": "3600000"},
    }
    epoch = int(zk.get("/controller_epoch")[0])
    for partition, replicas in topic["partitions"].items():
        path = f"/brokers/topics/{TOPIC}/partitions/{partition}/state"
        wait_until(lambda p=path: zk.exists(p) is not None, 30, path)
        state = _json(zk, path)
        assert set(state) == {"controller_epoch", "leader", "version", "leader_epoch", "isr"}
        assert state["version"] == 1 and state["leader"] == replicas[0]
        assert state["leader_epoch"] == 0 and state["controller_epoch"] == epoch
        assert state["isr"] == replicas


def test_delete_topic_removes_znodes(cluster: ClusterHandle, zk: KazooClient) -> None:
    name = "znode-delete-me"
    with WireClient.to(controller_address(cluster)) as client:
        created = create_topics(client, [topic_spec(name, 2)])
        assert int(created.topics[0].error_code) == 0
        deleted = delete_topics(client, [name], version=5)
        assert int(deleted.responses[0].error_code) == 0
    for path in (
        f"/brokers/topics/{name}",
        f"/config/topics/{name}",
        f"/admin/delete_topics/{name}",
    ):
        wait_until(lambda p=path: zk.exists(p) is None, 30, f"{path} removed")
