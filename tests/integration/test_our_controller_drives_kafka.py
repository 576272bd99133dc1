"""Our controller drives an Apache Kafka 3.9 broker (issue 39, item 1): `scripts/cluster up
--impl ours,kafka,ours` starts our broker 1 first, so it is the controller, and its
UpdateMetadata, LeaderAndIsr and StopReplica requests are all Kafka's broker 2 learns brokers,
the controller and leaders from (a ZooKeeper-mode Kafka broker does not watch those znodes).

Checked, in order, on one cluster: every broker's Metadata (each asked directly) names the same
brokers, controller and leaders; a topic of replication factor 3 created through Kafka's
broker, each broker the preferred leader of one partition, is fully replicated, written with
acks=all and read back through Kafka's broker; a topic deleted while Kafka's broker is killed
(SIGKILL) stays marked for deletion (its znodes stay once our brokers answered their
StopReplica and deleted their logs); Kafka's broker restarted rejoins every ISR, serves the
records, and the deletion completes (znodes and every broker's log directories gone, Kafka's
renamed for its deleter thread); our controller's broker killed, Kafka's broker follows
whichever broker wins the election (ours drives it as above; Kafka's, itself) and serves the
records; the topic deleted through Kafka's broker leaves its Metadata and its log directory;
and neither side logs an unhandled error, an unknown API or a refused controller request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
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
from tests.integration.wire import WireClient, metadata

pytestmark = pytest.mark.reference

REFERENCE_LIB = REPO_ROOT / "reference" / "lib"
IMPLS = {1: "ours", 2: "kafka", 3: "ours"}
KAFKA_BROKER = 2
TOPIC = "driven-by-ours"
# Each broker the preferred leader of one partition.
ASSIGNMENT = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
RECORDS_PER_PARTITION = 20
TIMEOUT_S = 60.0
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "auto.leader.rebalance.enable": "false",
    "offsets.topic.replication.factor": "3",
    # Kafka removes a deleted partition's renamed directory after this delay (default 60 s).
    "log.segment.delete.delay.ms": "1000",
    # A SIGKILLed broker leaves /brokers/ids when its session expires.
    "zookeeper.session.timeout.ms": "6000",
}
# A partition's directory (Kafka renames a deleted one to `<name>.<id>-delete` first).
_PARTITION_DIR = re.compile(rf"^{re.escape(TOPIC)}-\d+$")


def _address(cluster: ClusterHandle, broker_id: int) -> str:
    return f"127.0.0.1:{cluster.broker_port(broker_id)}"


def _view(cluster: ClusterHandle, broker_id: int, topics: list[str] | None) -> dict[str, Any]:
    """What `broker_id` itself answers to Metadata: brokers, controller, leaders and ISRs."""
    with WireClient.to(_address(cluster, broker_id)) as client:
        response = metadata(client, topics)
    return {
        "brokers": sorted(int(b.node_id) for b in response.brokers),
        "controller": int(response.controller_id),
        "topics": {
            str(t.name): {
                int(p.partition_index): (int(p.leader_id), sorted(int(r) for r in p.isr_nodes))
                for p in t.partitions
            }
            for t in response.topics
            if int(t.error_code) == 0
        },
    }


def _views(cluster: ClusterHandle, topics: list[str] | None) -> dict[int, dict[str, Any]]:
    return {broker_id: _view(cluster, broker_id, topics) for broker_id in IMPLS}


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


def _every_broker_agrees(
    cluster: ClusterHandle, expected: dict[int, tuple[int, list[int]]]
) -> Callable[[], bool]:
    def check() -> bool:
        views = _views(cluster, [TOPIC])
        return all(view["topics"].get(TOPIC) == expected for view in views.values())

    return check


def _value(partition: int, index: int) -> bytes:
    return f"p{partition}-{index}".encode()


def _expected(partition: int) -> list[bytes]:
    return [_value(partition, index) for index in range(RECORDS_PER_PARTITION)]


def _read_all(address: str) -> dict[int, list[bytes]]:
    consumer = KafkaConsumer(
        bootstrap_servers=address, enable_auto_commit=False, consumer_timeout_ms=10_000
    )
    try:
        partitions = [TopicPartition(TOPIC, p) for p in range(len(ASSIGNMENT))]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        read: dict[int, list[bytes]] = {p: [] for p in range(len(ASSIGNMENT))}
        for record in consumer:
            read[record.partition].append(record.value)
            if all(len(values) >= RECORDS_PER_PARTITION for values in read.values()):
                break
        return read
    finally:
        consumer.close()


def _kafka_partition_dirs(cluster: ClusterHandle) -> list[str]:
    data = cluster.dir / f"broker-{KAFKA_BROKER}" / "data"
    return sorted(p.name for p in data.iterdir() if _PARTITION_DIR.match(p.name))


@pytest.fixture(scope="module")
def mixed(make_cluster_module: ClusterFactory) -> ClusterHandle:
    if not any(REFERENCE_LIB.glob("kafka_2.13-*.jar")):
        pytest.fail(f"Apache Kafka 3.9's jars are not in {REFERENCE_LIB}: run `make reference`")
    return make_cluster_module(impl=",".join(IMPLS.values()), overrides=OVERRIDES)


def test_our_broker_is_controller_and_every_broker_names_it(mixed: ClusterHandle) -> None:
    status = mixed.status()
    assert status.controller_id == 1, status.text
    state = json.loads((mixed.dir / "cluster.json").read_text())
    assert state["processes"]["broker-1"]["impl"] == "ours"
    assert state["processes"][f"broker-{KAFKA_BROKER}"]["impl"] == "kafka"

    def agreed() -> bool:
        views = _views(mixed, [])
        return all(v["brokers"] == [1, 2, 3] and v["controller"] == 1 for v in views.values())

    wait_until(
        agreed,
        TIMEOUT_S,
        lambda: f"every broker to name brokers and controller: {_views(mixed, [])}",
    )


def test_a_topic_created_through_kafkas_broker_is_led_by_each_broker(
    mixed: ClusterHandle,
) -> None:
    admin = AdminClient({"bootstrap.servers": _address(mixed, KAFKA_BROKER)})
    new = NewTopic(TOPIC, len(ASSIGNMENT), replica_assignment=ASSIGNMENT)
    admin.create_topics([new])[TOPIC].result(timeout=TIMEOUT_S)
    with zk_session(mixed) as zk:
        wait_until(lambda: _fully_replicated(zk), TIMEOUT_S, f"{TOPIC} in sync on 3 brokers")
    expected = {p: (replicas[0], [1, 2, 3]) for p, replicas in enumerate(ASSIGNMENT)}
    wait_until(
        _every_broker_agrees(mixed, expected),
        TIMEOUT_S,
        lambda: f"every broker to show {expected}: {_views(mixed, [TOPIC])}",
    )

    producer = KafkaProducer(bootstrap_servers=_address(mixed, KAFKA_BROKER), acks="all")
    try:
        for partition in range(len(ASSIGNMENT)):
            for index in range(RECORDS_PER_PARTITION):
                producer.send(TOPIC, _value(partition, index), partition=partition).get(
                    timeout=TIMEOUT_S
                )
    finally:
        producer.close()
    read = _read_all(_address(mixed, KAFKA_BROKER))
    assert read == {p: _expected(p) for p in range(len(ASSIGNMENT))}


DELETED_WHILE_DOWN = "deleted-while-down"


def _partition_dirs(cluster: ClusterHandle, topic: str) -> dict[int, list[str]]:
    """Per broker, its directories of `topic`'s partitions (Kafka's renamed ones included)."""
    found = {}
    for broker_id in IMPLS:
        data = cluster.dir / f"broker-{broker_id}" / "data"
        found[broker_id] = sorted(p.name for p in data.iterdir() if p.name.startswith(f"{topic}-"))
    return found


def _deletion_znodes(zk: KazooClient, topic: str) -> list[str]:
    paths = [f"/brokers/topics/{topic}", f"/config/topics/{topic}", f"/admin/delete_topics/{topic}"]
    return [path for path in paths if zk.exists(path) is not None]


def test_a_topic_deleted_while_kafkas_broker_is_down_stays_marked_for_deletion(
    mixed: ClusterHandle,
) -> None:
    """Kafka's broker is left down for the next test, which restarts it."""
    topic = DELETED_WHILE_DOWN
    admin = AdminClient({"bootstrap.servers": _address(mixed, 1)})
    new = NewTopic(topic, 2, replica_assignment=[[2, 1, 3], [1, 3, 2]])
    admin.create_topics([new])[topic].result(timeout=TIMEOUT_S)

    def dirs() -> dict[int, list[str]]:
        return _partition_dirs(mixed, topic)

    wait_until(
        lambda: all(len(found) == 2 for found in dirs().values()),
        TIMEOUT_S,
        lambda: f"every broker to host both partitions: {dirs()}",
    )
    mixed.kill(KAFKA_BROKER, signal="KILL")
    wait_until(
        lambda: not mixed.status().brokers[KAFKA_BROKER].registered,
        TIMEOUT_S,
        "Kafka's broker to leave /brokers/ids",
    )
    # Answered once the deletion started, as Kafka's controller broker answers.
    admin.delete_topics([topic], operation_timeout=TIMEOUT_S)[topic].result(timeout=TIMEOUT_S)
    # Our brokers answered their StopReplica: their logs go, the topic stays marked.
    wait_until(
        lambda: not any(found for b, found in dirs().items() if b != KAFKA_BROKER),
        TIMEOUT_S,
        lambda: f"our brokers to delete their logs: {dirs()}",
    )
    with zk_session(mixed) as zk:
        assert len(_deletion_znodes(zk, topic)) == 3
    assert len(dirs()[KAFKA_BROKER]) == 2


def test_kafkas_broker_restarted_rejoins_serves_and_completes_the_deletion(
    mixed: ClusterHandle,
) -> None:
    assert not mixed.broker_alive(KAFKA_BROKER), "left down by the test before"
    with zk_session(mixed) as zk:
        wait_until(
            lambda: all(KAFKA_BROKER not in _partition_state(zk, p)["isr"] for p in range(3)),
            TIMEOUT_S,
            "Kafka's broker out of every ISR",
        )
        mixed.start(KAFKA_BROKER)
        wait_until(lambda: _fully_replicated(zk), TIMEOUT_S, "Kafka's broker back in every ISR")
        leaders = {p: _partition_state(zk, p)["leader"] for p in range(3)}
        wait_until(
            lambda: not _deletion_znodes(zk, DELETED_WHILE_DOWN),
            TIMEOUT_S,
            lambda: f"the deleted topic's znodes to go: {_deletion_znodes(zk, DELETED_WHILE_DOWN)}",
        )
    # Kafka renames a deleted log `<partition>.<id>-delete` when it deletes the replica; its
    # deleter thread removes those first 30 s after its start (log.initial.task.delay.ms).
    wait_until(
        lambda: (
            not any(
                not name.endswith("-delete")
                for found in _partition_dirs(mixed, DELETED_WHILE_DOWN).values()
                for name in found
            )
        ),
        TIMEOUT_S,
        lambda: f"its logs to go everywhere: {_partition_dirs(mixed, DELETED_WHILE_DOWN)}",
    )
    expected = {p: (leader, [1, 2, 3]) for p, leader in leaders.items()}
    wait_until(
        _every_broker_agrees(mixed, expected),
        TIMEOUT_S,
        lambda: f"every broker to show {expected}: {_views(mixed, [TOPIC])}",
    )
    assert _view(mixed, KAFKA_BROKER, [])["controller"] == 1
    read = _read_all(_address(mixed, KAFKA_BROKER))
    assert read == {p: _expected(p) for p in range(len(ASSIGNMENT))}


def test_after_our_controllers_broker_dies_kafkas_broker_follows_the_next_controller(
    mixed: ClusterHandle,
) -> None:
    mixed.kill(1, signal="KILL")
    wait_until(lambda: mixed.status().controller_id in (2, 3), TIMEOUT_S, "a new controller")
    controller = mixed.status().controller_id
    with zk_session(mixed) as zk:
        wait_until(
            lambda: all(_partition_state(zk, p)["leader"] != 1 for p in range(3)),
            TIMEOUT_S,
            "leadership off broker 1",
        )
        leaders = {p: _partition_state(zk, p)["leader"] for p in range(3)}
        isrs = {p: sorted(_partition_state(zk, p)["isr"]) for p in range(3)}

    def kafka_follows() -> bool:
        view = _view(mixed, KAFKA_BROKER, [TOPIC])
        shown = {p: leader for p, (leader, _) in view["topics"].get(TOPIC, {}).items()}
        return view["controller"] == controller and view["brokers"] == [2, 3] and shown == leaders

    wait_until(
        kafka_follows,
        TIMEOUT_S,
        lambda: (
            f"Kafka's broker to name controller 3, brokers [2, 3], leaders {leaders} "
            f"(ISRs {isrs}): {_view(mixed, KAFKA_BROKER, [TOPIC])}"
        ),
    )
    read = _read_all(_address(mixed, KAFKA_BROKER))
    assert read == {p: _expected(p) for p in range(len(ASSIGNMENT))}
    mixed.start(1)
    with zk_session(mixed) as zk:
        wait_until(lambda: _fully_replicated(zk), TIMEOUT_S, "broker 1 back in every ISR")
    wait_until(
        lambda: _view(mixed, KAFKA_BROKER, [])["brokers"] == [1, 2, 3],
        TIMEOUT_S,
        "Kafka's broker to see broker 1 again",
    )


def test_a_topic_deleted_leaves_kafkas_metadata_and_log_dir(mixed: ClusterHandle) -> None:
    assert len(_kafka_partition_dirs(mixed)) == len(ASSIGNMENT)
    admin = AdminClient({"bootstrap.servers": _address(mixed, KAFKA_BROKER)})
    admin.delete_topics([TOPIC])[TOPIC].result(timeout=TIMEOUT_S)
    wait_until(
        lambda: all(TOPIC not in v["topics"] for v in _views(mixed, [TOPIC]).values()),
        TIMEOUT_S,
        lambda: f"every broker to forget {TOPIC}: {_views(mixed, [TOPIC])}",
    )
    wait_until(
        lambda: not _kafka_partition_dirs(mixed),
        TIMEOUT_S,
        lambda: f"Kafka's log dir to lose {TOPIC}: {_kafka_partition_dirs(mixed)}",
    )


def _lines(path: Path, pattern: re.Pattern[str]) -> list[str]:
    return [line for line in path.read_text(errors="replace").splitlines() if pattern.search(line)]


def test_neither_side_logs_errors_or_refusals(mixed: ClusterHandle) -> None:
    ours_bad = re.compile(r"Traceback|unknown API key| ERROR |Received error|refused with")
    for broker_id in (1, 3):
        broker_dir = mixed.dir / f"broker-{broker_id}"
        assert _lines(broker_dir / "broker.log", ours_bad) == [], f"broker {broker_id}"
        assert _lines(broker_dir / "state-change.log", ours_bad) == [], f"broker {broker_id}"
    # Kafka's own: no error, no controller request it refused or could not handle.
    kafka_dir = mixed.dir / f"broker-{KAFKA_BROKER}"
    # (Exceptions Kafka logs at INFO, e.g. a fetcher closed when its last partition is
    # deleted, are its own routine; an unhandled one is logged at ERROR.)
    kafka_bad = re.compile(r" ERROR |STALE_")
    assert _lines(kafka_dir / "broker.log", kafka_bad) == []
    # When Kafka's broker wins the election after our controller's broker dies (either may),
    # its own failover logs this at ERROR: its replica state machine tells the followers leader
    # -1 (the dead leader out of the ISR) before its partition state machine elects; an
    # all-Kafka cluster logs the same. Only lines from Kafka's own controller are excused
    # (test_mixed_coordinators.py allows the same line).
    kafka_routine = re.compile(
        rf"from controller {KAFKA_BROKER} .*cannot become follower since the new leader -1 is "
        "unavailable"
    )
    state_changes = _lines(kafka_dir / "state-change.log", kafka_bad)
    assert [line for line in state_changes if not kafka_routine.search(line)] == []
