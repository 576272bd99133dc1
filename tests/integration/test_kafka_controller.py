"""Our brokers follow an Apache Kafka 3.9 controller (issue 39, item 2): `scripts/cluster up
--impl kafka,ours,ours` starts ZooKeeper and Kafka broker 1 first, so that it is the
controller, then our brokers 2 and 3 on the same ZooKeeper.

Kafka's controller sends our brokers LeaderAndIsr, UpdateMetadata and StopReplica; they must
serve them (no closed connection, no retries on Kafka's side), follow its leadership decisions
and delete the replicas of a topic it deletes. Needs Apache Kafka 3.9's jars (`make
reference`).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import (
    REPO_ROOT,
    ClusterFactory,
    ClusterHandle,
    wait_until,
    zk_session,
)
from tests.integration.requests import topic_spec
from tests.integration.wire import WireClient, create_topics, delete_topics, metadata

pytestmark = pytest.mark.reference  # it starts Kafka's broker

REFERENCE_LIB = REPO_ROOT / "reference" / "lib"
KAFKA_BROKER_ID = 1
OUR_BROKER_IDS = (2, 3)
BROKER_IDS = (KAFKA_BROKER_ID, *OUR_BROKER_IDS)
TOPIC = "kafka-controller-mixed"
DELETED_TOPIC = "kafka-controller-deleted"
# Each broker the preferred leader of one partition.
ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
RECORDS_PER_PARTITION = 200
REPLICA_LAG_TIME_MAX_MS = 4000
# Partition 1 is led by our broker 2; broker 3, ours, is stopped to fall out of its ISR.
OUR_LED_PARTITION = 1
STOPPED_FOLLOWER_ID = 3
SETTLE_TIMEOUT_S = 60.0
# What Kafka's controller logs when one of our brokers closes its connection or does not
# answer (ControllerChannelManager's RequestSendThread, the NetworkClient), and what its
# state-change log says of an error in a LeaderAndIsr answer. (Its channel to its own broker
# may drop once at start-up, before that broker's listener is up: not ours to check.)
KAFKA_CHANNEL_TROUBLE = re.compile(
    r"fails to send (a )?request .* \(id: [23] |"
    r"\[Controller id=\d+, targetBrokerId=[23]\] .*disconnected|"
    r"Received error .* in LeaderAndIsr response .* from broker [23]\b"
)
OUR_TROUBLE = re.compile(
    r"unknown API key|Traceback|malformed|"
    r"(LeaderAndIsr|StopReplica|UpdateMetadata) v\d+ from .* failed"
)


def _address(cluster: ClusterHandle, broker_id: int) -> str:
    return f"127.0.0.1:{cluster.broker_port(broker_id)}"


def _state_change_log(cluster: ClusterHandle, broker_id: int) -> Path:
    return cluster.broker_log(broker_id).parent / "state-change.log"


@pytest.fixture(scope="module")
def mixed(make_cluster_module: ClusterFactory) -> ClusterHandle:
    if not any(REFERENCE_LIB.glob("kafka_2.13-*.jar")):
        pytest.fail(f"Apache Kafka 3.9's jars are not in {REFERENCE_LIB}: run `make reference`")
    overrides = {
        "group.initial.rebalance.delay.ms": "0",
        # Leadership moves back to a restarted broker only when a test elects it.
        "auto.leader.rebalance.enable": "false",
        # Short, so our leader drops a stopped follower from the ISR within seconds; the
        # ZooKeeper session outlives the stop, so the controller never sees the follower die.
        "replica.lag.time.max.ms": str(REPLICA_LAG_TIME_MAX_MS),
        "zookeeper.session.timeout.ms": "40000",
    }
    return make_cluster_module(impl="kafka,ours,ours", overrides=overrides)


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
def mixed_topic(mixed: ClusterHandle) -> str:
    """TOPIC created through Kafka's controller, fully replicated, as every broker shows it."""
    with WireClient.to(_address(mixed, KAFKA_BROKER_ID)) as client:
        created = create_topics(
            client, [topic_spec(TOPIC, -1, -1, {"min.insync.replicas": "2"}, ASSIGNMENT)]
        )
    assert [int(t.error_code) for t in created.topics] == [0], created
    wanted = {p: (replicas[0], tuple(sorted(replicas))) for p, replicas in ASSIGNMENT.items()}
    seen: dict[int, Any] = {}

    def every_broker_agrees() -> bool:
        for broker_id in BROKER_IDS:
            seen[broker_id] = _leaders(_address(mixed, broker_id), TOPIC)
        return all(view == wanted for view in seen.values())

    wait_until(every_broker_agrees, SETTLE_TIMEOUT_S, lambda: f"leaders {wanted}, saw {seen}")
    return TOPIC


def test_each_broker_leads_its_preferred_partition_and_all_agree(
    mixed: ClusterHandle, mixed_topic: str
) -> None:
    views = {
        broker_id: _leaders(_address(mixed, broker_id), mixed_topic) for broker_id in BROKER_IDS
    }
    leaders = {broker_id: {p: v[0] for p, v in view.items()} for broker_id, view in views.items()}
    assert leaders[KAFKA_BROKER_ID] == {0: 1, 1: 2, 2: 3}
    assert leaders[2] == leaders[3] == leaders[KAFKA_BROKER_ID]


def test_acks_all_writes_through_our_leaders_and_reads_back(
    mixed: ClusterHandle, mixed_topic: str
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
    mixed: ClusterHandle,
) -> None:
    """Kafka's controller finishes a deletion only once every replica answered StopReplica
    (delete=true) without error; our brokers must delete their logs."""
    spec = topic_spec(DELETED_TOPIC, -1, -1, None, {0: [2, 3, 1]})
    with WireClient.to(_address(mixed, KAFKA_BROKER_ID)) as client:
        created = create_topics(client, [spec])
        assert [int(t.error_code) for t in created.topics] == [0], created
    ours_logs = [mixed.broker_log(b).parent / "data" / f"{DELETED_TOPIC}-0" for b in OUR_BROKER_IDS]
    wait_until(
        lambda: all(path.exists() for path in ours_logs), SETTLE_TIMEOUT_S, "replicas created"
    )
    with WireClient.to(_address(mixed, KAFKA_BROKER_ID)) as client:
        deleted = delete_topics(client, [DELETED_TOPIC])
    assert [int(r.error_code) for r in deleted.responses] == [0], deleted
    with zk_session(mixed) as zk:
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
        assert "Handling StopReplica request" in _state_change_log(mixed, broker_id).read_text()


def test_neither_side_logs_trouble_with_the_controller_requests(
    mixed: ClusterHandle, mixed_topic: str
) -> None:
    kafka_lines = mixed.broker_log(KAFKA_BROKER_ID).read_text(errors="replace").splitlines()
    kafka_lines += (
        _state_change_log(mixed, KAFKA_BROKER_ID).read_text(errors="replace").splitlines()
    )
    assert [line for line in kafka_lines if KAFKA_CHANNEL_TROUBLE.search(line)] == []
    for broker_id in OUR_BROKER_IDS:
        text = mixed.broker_log(broker_id).read_text(errors="replace")
        assert [line for line in text.splitlines() if OUR_TROUBLE.search(line)] == []
        # They were served: Kafka's controller sent each of our brokers its requests.
        state_changes = _state_change_log(mixed, broker_id).read_text(errors="replace")
        assert "Handling LeaderAndIsr request" in state_changes
        # ... and fenced none of them: Kafka's controller and broker epochs are ours.
        assert "refused with" not in state_changes


def _zk_state(zk: Any, partition: int) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{TOPIC}/partitions/{partition}/state")
    state: dict[str, Any] = json.loads(data)
    return state


def _kafka_controller_isr_updates(cluster: ClusterHandle, partition: int) -> list[str]:
    """Kafka's controller's lines (kafka.controller at TRACE, as Kafka ships it) for the
    AlterPartition requests it served for TOPIC-`partition`."""
    text = cluster.broker_log(KAFKA_BROKER_ID).read_text(errors="replace")
    marker = f"ISR for partition {TOPIC}-{partition} updated to"
    return [line for line in text.splitlines() if marker in line]


def test_our_leader_shrinks_and_expands_the_isr_through_kafkas_controller(
    mixed: ClusterHandle, mixed_topic: str
) -> None:
    """Our leader asks Kafka's controller with AlterPartition (it writes no state znode itself):
    the follower that stopped fetching leaves the ISR and rejoins it once it catches up, at
    the same leader and leader epoch, and Kafka's controller logs both updates."""
    from kafka import KafkaProducer

    leader = ASSIGNMENT[OUR_LED_PARTITION][0]
    served_before = len(_kafka_controller_isr_updates(mixed, OUR_LED_PARTITION))
    with zk_session(mixed) as zk:
        before = _zk_state(zk, OUR_LED_PARTITION)
        mixed.kill(STOPPED_FOLLOWER_ID, "STOP")
        try:
            # A follower at the leader's end offset stays in sync however long it is silent.
            producer = KafkaProducer(bootstrap_servers=_address(mixed, leader), acks=1)
            try:
                producer.send(TOPIC, b"while 3 is stopped", partition=OUR_LED_PARTITION).get(
                    SETTLE_TIMEOUT_S
                )
            finally:
                producer.close()
            wait_until(
                lambda: STOPPED_FOLLOWER_ID not in _zk_state(zk, OUR_LED_PARTITION)["isr"],
                SETTLE_TIMEOUT_S,
                lambda: f"broker 3 out of the ISR: {_zk_state(zk, OUR_LED_PARTITION)}",
            )
            shrunk = _zk_state(zk, OUR_LED_PARTITION)
        finally:
            mixed.kill(STOPPED_FOLLOWER_ID, "CONT")
        wait_until(
            lambda: STOPPED_FOLLOWER_ID in _zk_state(zk, OUR_LED_PARTITION)["isr"],
            SETTLE_TIMEOUT_S,
            lambda: f"broker 3 back in the ISR: {_zk_state(zk, OUR_LED_PARTITION)}",
        )
        after = _zk_state(zk, OUR_LED_PARTITION)
    assert {before["leader"], shrunk["leader"], after["leader"]} == {leader}
    assert before["leader_epoch"] == shrunk["leader_epoch"] == after["leader_epoch"]
    # The state was written by Kafka's controller (its epoch), on our leader's requests.
    assert shrunk["controller_epoch"] == after["controller_epoch"] == before["controller_epoch"]
    wait_until(
        lambda: len(_kafka_controller_isr_updates(mixed, OUR_LED_PARTITION)) >= served_before + 2,
        SETTLE_TIMEOUT_S,
        "Kafka's controller to log the shrink and the expand",
    )
    # Every broker's Metadata names the whole ISR again (UpdateMetadata from Kafka's
    # controller, the state znode's watch on ours).
    _wait_for_leaders(mixed, {0: (1, BROKER_IDS), 1: (2, BROKER_IDS), 2: (3, BROKER_IDS)})


def _wait_for_leaders(
    cluster: ClusterHandle, wanted: dict[int, tuple[int, tuple[int, ...]]]
) -> None:
    seen: dict[int, Any] = {}

    def every_broker_agrees() -> bool:
        for broker_id in BROKER_IDS:
            seen[broker_id] = _leaders(_address(cluster, broker_id), TOPIC)
        return all(view == wanted for view in seen.values())

    wait_until(every_broker_agrees, SETTLE_TIMEOUT_S, lambda: f"leaders {wanted}, saw {seen}")


def test_our_broker_restarted_under_kafkas_controller_rejoins_and_leads_again(
    mixed: ClusterHandle, mixed_topic: str
) -> None:
    """Restarted, our broker has a new broker epoch, which Kafka's controller's requests
    carry: they must not be fenced. The broker catches up, rejoins every ISR, and a preferred
    election makes it leader of its partition again at a newer leader epoch. (After the log
    check above: the stop makes Kafka's controller log the disconnection.)"""
    from confluent_kafka import ElectionType
    from confluent_kafka import TopicPartition as ConfluentPartition
    from confluent_kafka.admin import AdminClient

    restarted = 3
    state_changes = _state_change_log(mixed, restarted)
    before_restart = state_changes.stat().st_size
    mixed.kill(restarted)  # a controlled shutdown: Kafka's controller moves its leadership
    mixed.start(restarted)
    everyone = tuple(BROKER_IDS)
    _wait_for_leaders(
        mixed,
        {
            0: (1, everyone),
            1: (2, everyone),
            # Kafka's controlled-shutdown election: the next replica in the ISR, broker 1.
            2: (1, everyone),
        },
    )
    admin = AdminClient({"bootstrap.servers": _address(mixed, KAFKA_BROKER_ID)})
    elected = admin.elect_leaders(ElectionType.PREFERRED, [ConfluentPartition(TOPIC, 2)])
    elected.result(timeout=SETTLE_TIMEOUT_S)
    _wait_for_leaders(mixed, {0: (1, everyone), 1: (2, everyone), 2: (3, everyone)})
    with state_changes.open(errors="replace") as log_file:
        log_file.seek(before_restart)
        since_restart = log_file.read()
    assert "Handling LeaderAndIsr request" in since_restart
    assert "refused with" not in since_restart
    assert f"Leader {TOPIC}-2 starts at leader epoch" in since_restart
