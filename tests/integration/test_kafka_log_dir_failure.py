"""An Apache Kafka 3.9 broker loses one of its two log dirs under our controller (issue 39:
answers handled as Kafka's controller handles them). `scripts/cluster up --impl ours,kafka`:
our broker 1 is the controller, Kafka's broker 2 has two log dirs. One of them is replaced by
a file (as in Kafka's LogDirFailureTest), so its next checkpoint write fails: Kafka's broker
takes that dir offline and writes only a log dir event notification (no
/brokers/offline_replicas). Our controller answers it as Kafka's does, with LeaderAndIsr for
every replica of broker 2; the answer names the replicas it lost with KAFKA_STORAGE_ERROR, and
the controller moves their leadership to broker 1 and takes them out of the ISRs, logging
"Mark replicas ... as offline", while broker 2 keeps its replicas in the other dir."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tests.integration.conftest import (
    REPO_ROOT,
    ClusterFactory,
    ClusterHandle,
    wait_until,
    zk_session,
)

pytestmark = pytest.mark.reference

REFERENCE_LIB = REPO_ROOT / "reference" / "lib"
KAFKA_BROKER = 2
TOPIC = "kafka-disks"
# Kafka's broker leads partitions 0 and 1 and follows 2 and 3.
ASSIGNMENT = [[2, 1], [2, 1], [1, 2], [1, 2]]
TIMEOUT_S = 60.0
OVERRIDES = {
    "log.dirs": "{broker_dir}/disk-a,{broker_dir}/disk-b",
    # A failed directory shows at the next checkpoint: make that soon.
    "log.flush.offset.checkpoint.interval.ms": "500",
    "replica.high.watermark.checkpoint.interval.ms": "500",
    "auto.leader.rebalance.enable": "false",
}


@pytest.fixture(scope="module")
def mixed(make_cluster_module: ClusterFactory) -> ClusterHandle:
    if not any(REFERENCE_LIB.glob("kafka_2.13-*.jar")):
        pytest.fail(f"Apache Kafka 3.9's jars are not in {REFERENCE_LIB}: run `make reference`")
    return make_cluster_module(brokers=2, impl="ours,kafka", overrides=OVERRIDES)


def _state(zk: KazooClient, partition: int) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{TOPIC}/partitions/{partition}/state")
    return dict(json.loads(data))


def _states(zk: KazooClient) -> dict[int, tuple[int, list[int]]]:
    return {
        p: (_state(zk, p)["leader"], sorted(_state(zk, p)["isr"])) for p in range(len(ASSIGNMENT))
    }


def _in_sync(zk: KazooClient) -> bool:
    try:
        return all(isr == [1, 2] for _, isr in _states(zk).values())
    except Exception:  # not created yet
        return False


def _placement(disks: tuple[Path, Path]) -> dict[int, Path]:
    """Which of Kafka's log dirs holds each partition."""
    found = {}
    for disk in disks:
        for child in disk.glob(f"{TOPIC}-*"):
            found[int(child.name.rsplit("-", 1)[1])] = disk
    return found


def test_kafkas_failed_log_dir_is_learned_from_its_leader_and_isr_answer(
    mixed: ClusterHandle,
) -> None:
    assert mixed.status().controller_id == 1
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{mixed.broker_port(1)}"})
    new = NewTopic(TOPIC, len(ASSIGNMENT), replica_assignment=ASSIGNMENT)
    admin.create_topics([new])[TOPIC].result(timeout=TIMEOUT_S)
    broker_dir = mixed.dir / f"broker-{KAFKA_BROKER}"
    disks = (broker_dir / "disk-a", broker_dir / "disk-b")
    with zk_session(mixed) as zk:
        wait_until(lambda: _in_sync(zk), TIMEOUT_S, f"{TOPIC} in sync on both brokers")
        wait_until(
            lambda: sorted(_placement(disks)) == list(range(len(ASSIGNMENT))),
            TIMEOUT_S,
            lambda: f"Kafka's broker to host every partition: {_placement(disks)}",
        )
        placed = _placement(disks)
        failing = placed[0]  # a partition Kafka's broker leads
        lost = sorted(p for p, disk in placed.items() if disk == failing)
        kept = sorted(p for p, disk in placed.items() if disk != failing)
        assert kept, f"Kafka put every partition in {failing}"
        before = _states(zk)

        failing.rename(failing.with_name(failing.name + ".failed"))
        failing.write_text("not a directory any more\n")

        def moved() -> bool:
            states = _states(zk)
            return all(states[p] == (1, [1]) for p in lost)

        wait_until(
            moved,
            TIMEOUT_S,
            lambda: f"partitions {lost} led by broker 1 alone: {_states(zk)}",
        )
        after = _states(zk)
        assert {p: after[p] for p in kept} == {p: before[p] for p in kept}
        assert zk.exists(f"/brokers/ids/{KAFKA_BROKER}") is not None  # still serving
        assert zk.exists(f"/brokers/offline_replicas/{KAFKA_BROKER}") is None  # ours only
    state_change = (mixed.dir / "broker-1" / "state-change.log").read_text(errors="replace")
    marked = re.findall(r"Mark replicas (\S+) on broker 2 as offline", state_change)
    assert sorted(p for line in marked for p in line.split(",")) == [f"{TOPIC}-{p}" for p in lost]
