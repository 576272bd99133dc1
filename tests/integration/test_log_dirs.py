"""Several log dirs on one broker (JBOD, KIP-112/113): where new replicas go, DescribeLogDirs
per directory, and `kafka-log-dirs` showing them, against a one-broker cluster whose
`log.dirs` names two directories (the same for every broker, so one broker only)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaAdminClient, TopicPartitionReplica
from kafka.admin import NewTopic
from kafka.errors import LogDirNotFoundError, NoError, UnknownTopicOrPartitionError

from tests.integration.conftest import REPO_ROOT, ClusterFactory, ClusterHandle, wait_until

TOOL_TIMEOUT_S = 60.0
PLACEMENT_WAIT_S = 60.0
MOVE_WAIT_S = 90.0
CONSUME_WAIT_S = 60.0
MOVED_RECORDS = 4000


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
        cluster.tear_down()
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


def dir_of(admin: KafkaAdminClient, topic: str, partition: int) -> list[tuple[str, bool]]:
    """(log dir, is future) of every log of the partition on broker 1."""
    placed = partitions_by_dir(admin, topic)
    return sorted(
        (log_dir, entry["is_future_key"])
        for log_dir, partitions in placed.items()
        for index, entry in partitions.items()
        if index == partition
    )


def test_moving_a_replica_to_its_current_dir_changes_nothing(broker: TwoDirBroker) -> None:
    admin = broker.admin()
    try:
        create_topic(admin, "stays", 1)
        wait_for_partitions(admin, "stays", 1)
        ((current, _),) = dir_of(admin, "stays", 0)
        replica = TopicPartitionReplica("stays", 0, 1)
        assert admin.alter_replica_log_dirs({replica: current}) == {replica: NoError}
        assert dir_of(admin, "stays", 0) == [(current, False)]
    finally:
        admin.close()


def test_alter_replica_log_dirs_errors(broker: TwoDirBroker) -> None:
    admin = broker.admin()
    try:
        create_topic(admin, "misdirected", 1)
        wait_for_partitions(admin, "misdirected", 1)
        replica = TopicPartitionReplica("misdirected", 0, 1)
        missing = str(broker.log_dirs[0].parent / "disk-c")
        assert admin.alter_replica_log_dirs({replica: missing}) == {replica: LogDirNotFoundError}
        relative = broker.log_dirs[0].name
        assert admin.alter_replica_log_dirs({replica: relative}) == {replica: LogDirNotFoundError}
        unknown = TopicPartitionReplica("no-such-topic", 0, 1)
        target = str(broker.log_dirs[0])
        assert admin.alter_replica_log_dirs({unknown: target}) == {
            unknown: UnknownTopicOrPartitionError
        }
    finally:
        admin.close()


def test_replica_moves_to_the_other_dir_with_all_its_records(broker: TwoDirBroker) -> None:
    topic = "moved"
    producer = Producer(
        {"bootstrap.servers": broker.cluster.bootstrap, "acks": "all", "linger.ms": 5}
    )
    admin = broker.admin()
    try:
        create_topic(admin, topic, 1)
        wait_for_partitions(admin, topic, 1)
        ((source, _),) = dir_of(admin, topic, 0)
        (destination,) = {str(d) for d in broker.log_dirs} - {source}
        for index in range(MOVED_RECORDS // 2):
            producer.produce(topic, value=b"%06d" % index + b"." * 300, partition=0)
        assert producer.flush(60) == 0
        replica = TopicPartitionReplica(topic, 0, 1)
        assert admin.alter_replica_log_dirs({replica: destination}) == {replica: NoError}
        # Records keep coming while the copy catches up.
        for index in range(MOVED_RECORDS // 2, MOVED_RECORDS):
            producer.produce(topic, value=b"%06d" % index + b"." * 300, partition=0)
        assert producer.flush(60) == 0
        wait_until(
            lambda: dir_of(admin, topic, 0) == [(destination, False)],
            MOVE_WAIT_S,
            f"{topic}-0 moved to {destination}",
        )
    finally:
        admin.close()
    # The old copy is renamed `-delete` and removed by its log's worker, as Kafka does it
    # asynchronously: wait for it to go.
    wait_until(
        lambda: not list(Path(source).glob(f"{topic}-0*")),
        MOVE_WAIT_S,
        f"the old copy of {topic}-0 removed from {source}",
    )
    assert [p.name for p in Path(destination).glob(f"{topic}-0*")] == [f"{topic}-0"]
    values = consume_all(broker.cluster.bootstrap, topic, MOVED_RECORDS)
    assert [value[:6] for value in values] == [b"%06d" % i for i in range(MOVED_RECORDS)]
    # The moved replica goes on taking records.
    producer.produce(topic, value=b"after", partition=0)
    assert producer.flush(60) == 0
    assert consume_all(broker.cluster.bootstrap, topic, MOVED_RECORDS + 1)[-1] == b"after"


def consume_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    values: list[bytes] = []
    deadline = time.monotonic() + CONSUME_WAIT_S
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    assert len(values) == count, f"consumed {len(values)} of {count} records"
    return values


def reassign_tool(broker: TwoDirBroker, *args: str) -> subprocess.CompletedProcess[str]:
    tool = str(REPO_ROOT / ".venv" / "bin" / "kafka-reassign-partitions")
    return subprocess.run(
        [tool, "--bootstrap-server", broker.cluster.bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        check=False,
    )


def test_reassign_partitions_tool_moves_a_replica_between_log_dirs(
    broker: TwoDirBroker, tmp_path: Path
) -> None:
    topic = "tooled"
    admin = broker.admin()
    try:
        create_topic(admin, topic, 1)
        wait_for_partitions(admin, topic, 1)
        ((source, _),) = dir_of(admin, topic, 0)
    finally:
        admin.close()
    (destination,) = {str(d) for d in broker.log_dirs} - {source}
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": topic, "partition": 0, "replicas": [1], "log_dirs": [destination]}
                ],
            }
        )
    )
    executed = reassign_tool(broker, "--execute", "--reassignment-json-file", str(plan))
    assert executed.returncode == 0, executed.stderr
    assert executed.stdout.splitlines()[-1] == (
        f"Successfully started moving log directory to {destination} for replica {topic}-0 "
        "with broker 1 "
    )
    done = f"Reassignment of replica {topic}-0-1 completed successfully."
    verified: list[str] = []

    def completed() -> bool:
        nonlocal verified
        result = reassign_tool(broker, "--verify", "--reassignment-json-file", str(plan))
        assert result.returncode == 0, result.stderr
        verified = result.stdout.splitlines()
        return verified[-1] == done

    wait_until(completed, MOVE_WAIT_S, f"--verify to say {done!r}")
    assert verified == [
        "Status of partition reassignment:",
        f"Reassignment of partition {topic}-0 is completed.",
        done,
    ]
    assert [p.name for p in Path(destination).glob(f"{topic}-0*")] == [f"{topic}-0"]

    elsewhere = str(broker.log_dirs[0].parent / "disk-z")
    plan.write_text(plan.read_text().replace(destination, elsewhere))
    refused = reassign_tool(broker, "--execute", "--reassignment-json-file", str(plan))
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"Error: Failed to alter dir for {topic}-0-1: LogDirNotFoundError"
    )
