"""Several log dirs on one broker (JBOD, KIP-112/113): where new replicas go, DescribeLogDirs
per directory, and `kafka-log-dirs` showing them, against a one-broker cluster whose
`log.dirs` names two directories (the same for every broker, so one broker only)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from tests.integration.conftest import REPO_ROOT, ClusterFactory, ClusterHandle, wait_until

pytestmark = pytest.mark.integration

TOOL_TIMEOUT_S = 60.0
PLACEMENT_WAIT_S = 60.0


@dataclass(frozen=True)
class TwoDirBroker:
    cluster: ClusterHandle
    log_dirs: tuple[Path, Path]

    def admin(self) -> KafkaAdminClient:
        return KafkaAdminClient(bootstrap_servers=self.cluster.bootstrap)


@pytest.fixture(scope="module")
def broker(make_cluster_module: ClusterFactory) -> Iterator[TwoDirBroker]:
    base = Path(tempfile.mkdtemp(prefix="jbod-"))
    log_dirs = (base / "disk-a", base / "disk-b")
    cluster = make_cluster_module(
        brokers=1, overrides={"log.dirs": ",".join(str(d) for d in log_dirs)}
    )
    try:
        yield TwoDirBroker(cluster, log_dirs)
    finally:
        cluster.down()
        shutil.rmtree(base, ignore_errors=True)


def create_topic(admin: KafkaAdminClient, name: str, partitions: int) -> None:
    admin.create_topics([NewTopic(name, partitions, 1)])


def partitions_by_dir(admin: KafkaAdminClient, topic: str) -> dict[str, dict[int, Any]]:
    """DescribeLogDirs of broker 1: log dir -> partition of `topic` -> its description."""
    (described,) = admin.describe_log_dirs([topic], brokers=[1])
    found: dict[str, dict[int, Any]] = {}
    for log_dir in described["log_dirs"]:
        assert log_dir["error_code"] == 0
        partitions = found.setdefault(log_dir["log_dir"], {})
        for entry in log_dir["topics"]:
            if entry["name"] == topic:
                for partition in entry["partitions"]:
                    partitions[partition["partition_index"]] = partition
    return found


def wait_for_partitions(admin: KafkaAdminClient, topic: str, count: int) -> dict[str, Any]:
    latest: dict[str, dict[int, Any]] = {}

    def all_placed() -> bool:
        nonlocal latest
        latest = partitions_by_dir(admin, topic)
        return sum(len(p) for p in latest.values()) == count

    wait_until(all_placed, PLACEMENT_WAIT_S, f"{count} partitions of {topic} in DescribeLogDirs")
    return latest


def test_new_replicas_spread_evenly_over_the_log_dirs(broker: TwoDirBroker) -> None:
    admin = broker.admin()
    try:
        create_topic(admin, "spread", 6)
        placed = wait_for_partitions(admin, "spread", 6)
    finally:
        admin.close()
    disk_a, disk_b = (str(d) for d in broker.log_dirs)
    assert set(placed) == {disk_a, disk_b}
    assert len(placed[disk_a]) == len(placed[disk_b]) == 3
    for log_dir, partitions in placed.items():
        on_disk = {p.name for p in Path(log_dir).glob("spread-*")}
        assert on_disk == {f"spread-{index}" for index in partitions}
        for partition in partitions.values():
            assert partition["is_future_key"] is False
            assert partition["offset_lag"] == 0


def test_partition_sizes_are_those_on_disk(broker: TwoDirBroker) -> None:
    admin = broker.admin()
    try:
        create_topic(admin, "sized", 2)
        wait_for_partitions(admin, "sized", 2)
        producer = Producer({"bootstrap.servers": broker.cluster.bootstrap, "acks": "all"})
        for index in range(40):
            producer.produce("sized", value=b"x" * 200, partition=index % 2)
        assert producer.flush(60) == 0
        placed = partitions_by_dir(admin, "sized")
    finally:
        admin.close()
    sizes = {}
    for log_dir, partitions in placed.items():
        for index, partition in partitions.items():
            files = (Path(log_dir) / f"sized-{index}").glob("*.log")
            sizes[index] = partition["partition_size"]
            assert partition["partition_size"] == sum(f.stat().st_size for f in files) > 0
    assert len(sizes) == 2


def test_kafka_log_dirs_tool_shows_both_dirs(broker: TwoDirBroker) -> None:
    admin = broker.admin()
    try:
        create_topic(admin, "shown", 2)
        wait_for_partitions(admin, "shown", 2)
    finally:
        admin.close()
    tool = str(REPO_ROOT / ".venv" / "bin" / "kafka-log-dirs")
    bootstrap = broker.cluster.bootstrap
    result = subprocess.run(
        [tool, "--bootstrap-server", bootstrap, "--describe", "--topic-list", "shown"],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout.splitlines()[2])
    (only_broker,) = document["brokers"]
    log_dirs = only_broker["logDirs"]
    assert [d["logDir"] for d in log_dirs] == sorted(str(d) for d in broker.log_dirs)
    partitions = sorted(p["partition"] for d in log_dirs for p in d["partitions"])
    assert partitions == ["shown-0", "shown-1"]
    assert all(len(d["partitions"]) == 1 for d in log_dirs)
