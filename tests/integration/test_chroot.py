"""A cluster under a ZooKeeper chroot (`zookeeper.connect=host:port/kafka`) keeps every znode
below the chroot, and clients cannot tell the difference."""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.client import KazooClient

from scripts._cluster.ports import reserve_cluster_ports
from tests.integration.conftest import ClusterHandle, run_cluster_command

CHROOT = "/kafka/cluster-a"


def test_cluster_under_a_chroot(tmp_path: Path) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    ports = reserve_cluster_ports(2, 1)
    port_base, zk_port_base = ports.port_base, ports.zk_port_base
    directory = tmp_path / "cluster"
    handle = ClusterHandle(directory, 2, 1, port_base, zk_port_base, ports=ports)
    connect = f"127.0.0.1:{zk_port_base}{CHROOT}"
    result = run_cluster_command(
        "up", "--dir", str(directory), "--brokers", "2", "--port-base", str(port_base),
        "--zk-port-base", str(zk_port_base), "--set", f"zookeeper.connect={connect}",
    )  # fmt: skip
    try:
        if result.returncode != 0:
            pytest.fail(f"up failed: {result.stderr}\n{handle.log_tails()}")
        producer = Producer({"bootstrap.servers": handle.bootstrap})
        producer.produce("chrooted", b"hello")
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": handle.bootstrap, "group.id": "unused"})
        consumer.assign([TopicPartition("chrooted", 0, 0)])
        message = consumer.poll(30)
        consumer.close()
        assert message is not None and message.value() == b"hello"
        zk = KazooClient(hosts=handle.zk_connect)
        zk.start(timeout=30)
        try:
            assert sorted(zk.get_children(f"{CHROOT}/brokers/ids")) == ["1", "2"]
            assert zk.exists(f"{CHROOT}/controller") is not None
            assert zk.exists(f"{CHROOT}/brokers/topics/chrooted") is not None
            assert zk.exists("/brokers/ids") is None, "nothing may be written outside the chroot"
            assert zk.exists("/controller") is None
        finally:
            zk.stop()
    finally:
        handle.tear_down()
        handle.release_ports()
