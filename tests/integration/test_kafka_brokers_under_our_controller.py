"""Apache Kafka 3.9 brokers under our controller (issue 39, item 1): `scripts/cluster up --impl
ours,kafka,ours` starts our broker 1 first, so that it is the controller, then Kafka's broker 2
and our broker 3 on the same ZooKeeper.

Our controller tells Kafka's broker the cluster through UpdateMetadata and LeaderAndIsr
(test_our_controller_drives_kafka.py checks what it learns), and serves what Kafka's broker
sends its controller: AllocateProducerIds (an idempotent producer's InitProducerId on the Kafka
broker), AlterPartition (the Kafka leader, and ours, shrinking the ISR of a follower that
stopped fetching, and expanding it when it catches up), and ControlledShutdown (a SIGTERM'd
Kafka broker's leaderships move before it exits). Needs Apache Kafka 3.9's jars
(`make reference`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from kazoo.client import KazooClient

from tests.integration.conftest import (
    REPO_ROOT,
    ClusterFactory,
    ClusterHandle,
    wait_until,
    zk_session,
)
from tests.integration.requests import topic_spec
from tests.integration.wire import WireClient, create_topics

pytestmark = pytest.mark.reference  # it starts Kafka's broker

REFERENCE_LIB = REPO_ROOT / "reference" / "lib"
CONTROLLER_ID = 1
KAFKA_BROKER_ID = 2
STOPPED_FOLLOWER_ID = 3
BROKER_IDS = (1, 2, 3)
TOPIC = "under-our-controller"
# Partitions 0 and 1 led by the Kafka broker, 2 by our controller's broker.
ASSIGNMENT = {0: [2, 3, 1], 1: [2, 1, 3], 2: [1, 2, 3]}
KAFKA_LED = (0, 1)
OUR_LED = 2  # by our broker 1, the controller
SHRUNK = (*KAFKA_LED, OUR_LED)
TIMEOUT_S = 60.0
# Short, so the Kafka leader drops a stopped follower from the ISR within seconds; the ZooKeeper
# session outlives the stop, so the controller never sees the follower die.
REPLICA_LAG_TIME_MAX_MS = 4000
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "auto.leader.rebalance.enable": "false",
    "replica.lag.time.max.ms": str(REPLICA_LAG_TIME_MAX_MS),
    "zookeeper.session.timeout.ms": "40000",
}
INIT_PRODUCER_ID = 22
COORDINATOR_LOAD_IN_PROGRESS = 14
# What Kafka's broker logs when its requests to our controller fail or its connection drops.
KAFKA_TROUBLE = re.compile(
    r"Controlled shutdown request returned after .* with error|"
    r"Error during controlled shutdown|"
    r"Proceeding to do an unclean shutdown|"
    r"(AlterPartition|AllocateProducerIds).* (failed|error)|"
    r"Controller returned an unexpected top-level error|"
    r"Disconnecting from node 1 due to|"
    r"Connection to node 1 .* (could not be established|terminated)"
)
OUR_TROUBLE = re.compile(
    r"unknown API key|Traceback|malformed|"
    r"(AlterPartition|AllocateProducerIds|ControlledShutdown) v\d+ from .* failed"
)


def _address(cluster: ClusterHandle, broker_id: int) -> str:
    return f"127.0.0.1:{cluster.broker_port(broker_id)}"


def _state(zk: KazooClient, partition: int) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{TOPIC}/partitions/{partition}/state")
    state: dict[str, Any] = json.loads(data)
    return state


def _all_in_sync(zk: KazooClient) -> bool:
    try:
        return all(sorted(_state(zk, p)["isr"]) == [1, 2, 3] for p in ASSIGNMENT)
    except Exception:  # not created yet
        return False


def _state_change_log(cluster: ClusterHandle, broker_id: int) -> Path:
    return cluster.broker_log(broker_id).parent / "state-change.log"


def _controller_lines(cluster: ClusterHandle, partition: int, reason: str) -> list[str]:
    """Our controller's state-change log lines for TOPIC-`partition` with `reason`."""
    text = _state_change_log(cluster, CONTROLLER_ID).read_text(errors="replace")
    marker = f"Changed partition {TOPIC}-{partition} "
    return [line for line in text.splitlines() if marker in line and f"reason: {reason}" in line]


@pytest.fixture(scope="module")
def mixed(make_cluster_module: ClusterFactory) -> ClusterHandle:
    """The cluster, with TOPIC created and fully replicated."""
    if not any(REFERENCE_LIB.glob("kafka_2.13-*.jar")):
        pytest.fail(f"Apache Kafka 3.9's jars are not in {REFERENCE_LIB}: run `make reference`")
    cluster = make_cluster_module(impl="ours,kafka,ours", overrides=OVERRIDES)
    assert cluster.status().controller_id == CONTROLLER_ID

    # CreateTopics goes to the controller in ZooKeeper mode (a Kafka broker that is not the
    # controller answers NOT_CONTROLLER).
    with WireClient.to(_address(cluster, CONTROLLER_ID)) as client:
        spec = topic_spec(TOPIC, -1, -1, {"min.insync.replicas": "2"}, ASSIGNMENT)
        response = create_topics(client, [spec])
    assert [int(t.error_code) for t in response.topics] == [0], response
    with zk_session(cluster) as zk:
        wait_until(lambda: _all_in_sync(zk), TIMEOUT_S, f"{TOPIC} in sync on 3 brokers")
    return cluster


def test_an_idempotent_producer_gets_its_id_on_the_kafka_broker(mixed: ClusterHandle) -> None:
    answers: list[tuple[int, int]] = []

    def initialized() -> bool:
        with WireClient.to(_address(mixed, KAFKA_BROKER_ID)) as client:
            response = client.request(
                INIT_PRODUCER_ID,
                4,
                {"transactional_id": None, "transaction_timeout": 60000},
            )
        answers.append((int(response.error_code), int(response.producer_id)))
        return answers[-1][0] == 0

    # The Kafka broker answers COORDINATOR_LOAD_IN_PROGRESS until our controller has answered
    # its AllocateProducerIds (forever, without it).
    wait_until(initialized, TIMEOUT_S, lambda: f"InitProducerId answered: {answers[-5:]}")
    assert {code for code, _ in answers} <= {0, COORDINATOR_LOAD_IN_PROGRESS}
    producer_id = answers[-1][1]
    with zk_session(mixed) as zk:
        data, _ = zk.get("/latest_producer_id_block")
    block = json.loads(data)
    assert block["broker"] == KAFKA_BROKER_ID, block
    start, end = int(block["block_start"]), int(block["block_end"])
    assert (end - start + 1, start <= producer_id <= end) == (1000, True), (block, producer_id)


def test_the_leaders_shrink_and_expand_the_isr_through_alter_partition(
    mixed: ClusterHandle,
) -> None:
    """The Kafka leader (partitions 0 and 1) and ours (partition 2, led by the controller's
    own broker) both ask our controller."""
    with zk_session(mixed) as zk:
        before = {p: _state(zk, p) for p in SHRUNK}
        mixed.kill(STOPPED_FOLLOWER_ID, "STOP")
        try:
            # A follower at the leader's end offset stays in sync however long it is silent:
            # records it does not fetch put it behind.
            producer = KafkaProducer(bootstrap_servers=_address(mixed, CONTROLLER_ID), acks=1)
            try:
                for p in SHRUNK:
                    producer.send(TOPIC, b"while 3 is stopped", partition=p).get(TIMEOUT_S)
            finally:
                producer.close()
            wait_until(
                lambda: all(STOPPED_FOLLOWER_ID not in _state(zk, p)["isr"] for p in SHRUNK),
                TIMEOUT_S,
                lambda: f"broker 3 out of the ISRs: {[_state(zk, p) for p in SHRUNK]}",
            )
            shrunk = {p: _state(zk, p) for p in SHRUNK}
        finally:
            mixed.kill(STOPPED_FOLLOWER_ID, "CONT")
        wait_until(
            lambda: all(STOPPED_FOLLOWER_ID in _state(zk, p)["isr"] for p in SHRUNK),
            TIMEOUT_S,
            lambda: f"broker 3 back in the ISRs: {[_state(zk, p) for p in SHRUNK]}",
        )
        after = {p: _state(zk, p) for p in SHRUNK}
    for p in SHRUNK:
        # The leader changed only the ISR: same leader and leader epoch throughout.
        leader = ASSIGNMENT[p][0] if p == OUR_LED else KAFKA_BROKER_ID
        assert {before[p]["leader"], shrunk[p]["leader"], after[p]["leader"]} == {leader}
        epochs = {before[p]["leader_epoch"], shrunk[p]["leader_epoch"], after[p]["leader_epoch"]}
        assert len(epochs) == 1, (before[p], shrunk[p], after[p])
        # Written by our controller, on the leader's AlterPartition requests.
        assert _controller_lines(mixed, p, "ISR shrink"), p
        assert _controller_lines(mixed, p, "ISR expand"), p


def test_a_sigtermed_kafka_broker_moves_its_leaderships_through_our_controller(
    mixed: ClusterHandle,
) -> None:
    mixed.kill(KAFKA_BROKER_ID, "TERM")
    wait_until(
        lambda: not mixed.broker_alive(KAFKA_BROKER_ID),
        TIMEOUT_S,
        "the Kafka broker exits",
    )
    kafka_log = mixed.broker_log(KAFKA_BROKER_ID).read_text(errors="replace")
    assert "Controlled shutdown request returned successfully" in kafka_log
    with zk_session(mixed) as zk:
        leaders = {p: _state(zk, p)["leader"] for p in ASSIGNMENT}
    assert leaders[0] == 3 and leaders[1] == 1, leaders
    for p in KAFKA_LED:
        assert _controller_lines(mixed, p, "controlled shutdown"), p


def test_no_errors_in_either_sides_logs(mixed: ClusterHandle) -> None:
    kafka_log = mixed.broker_log(KAFKA_BROKER_ID).read_text(errors="replace")
    kafka_trouble = [line for line in kafka_log.splitlines() if KAFKA_TROUBLE.search(line)]
    assert kafka_trouble == []
    for broker_id in (1, 3):
        ours = mixed.broker_log(broker_id).read_text(errors="replace")
        trouble = [line for line in ours.splitlines() if OUR_TROUBLE.search(line)]
        assert trouble == [], broker_id
