"""Self-fencing (zookeeper.session.fencing.enable): a broker cut off from ZooKeeper for longer
than its session timeout stops leading and stops acting as controller; shorter cuts, a flapping
link and a SIGSTOP shorter than the timeout do not fence it.

Every broker reaches ZooKeeper through a relay in this process (tests/integration/zk_relay.py)
that holds one broker's traffic both ways without closing its connections: no root needed.
One cluster for the module (3 brokers, zookeeper.session.timeout.ms=6000), the cases in order:
the ones that must not fence first, then the cut leader, then the cut controller.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from broker.log.record_codec import SimpleRecord, build_batch
from scripts._cluster.ports import reserve_cluster_ports
from tests.integration.conftest import (
    UP_TIMEOUT_S,
    ClusterHandle,
    run_cluster_command,
    wait_until,
    zk_session,
)
from tests.integration.wire import WireClient, broker_address, metadata, produce
from tests.integration.zk_relay import ZkRelay

SESSION_TIMEOUT_MS = 6000
TIMEOUT_S = 60
TOPIC = "session-fencing"
FENCED_LINE = "fences itself"
UNFENCED_LINE = "lifts its fence"
EXPIRED_LINE = "ZooKeeper session expired"
CONTROLLER_STOPS_LINE = "stops acting as controller"
NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE = 6, 5


@dataclass
class Fenceable:
    cluster: ClusterHandle
    relay: ZkRelay
    zk: KazooClient

    def pid(self, broker_id: int) -> int:
        state = json.loads((self.cluster.dir / "cluster.json").read_text())
        return int(state["processes"][f"broker-{broker_id}"]["pid"])

    def log_count(self, broker_id: int, line: str) -> int:
        return self.cluster.broker_log(broker_id).read_text(errors="replace").count(line)

    def state(self) -> dict[str, Any]:
        path = f"/brokers/topics/{TOPIC}/partitions/0/state"
        return dict(json.loads(self.zk.get(path)[0]))

    def controller(self) -> int | None:
        try:
            return int(json.loads(self.zk.get("/controller")[0])["brokerid"])
        except Exception:
            return None

    def registered(self) -> set[int]:
        return {int(child) for child in self.zk.get_children("/brokers/ids")}


@pytest.fixture(scope="module")
def fenceable() -> Iterator[Fenceable]:
    ports = reserve_cluster_ports(3, 1)
    relay = ZkRelay("127.0.0.1", ports.zk_port_base)
    directory = Path(tempfile.mkdtemp(prefix="fencing-", dir=os.environ.get("CLUSTER_TEST_TMP")))
    directory = directory / "cluster"
    cluster = ClusterHandle(directory, 3, 1, ports.port_base, ports.zk_port_base, ports=ports)
    args = ["up", "--dir", str(directory), "--brokers", "3", "--zookeepers", "1"]
    args += ["--port-base", str(ports.port_base), "--zk-port-base", str(ports.zk_port_base)]
    for key, value in {
        "zookeeper.connect": relay.address,
        "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "min.insync.replicas": "2",
    }.items():
        args += ["--set", f"{key}={value}"]
    try:
        result = run_cluster_command(*args, timeout_s=UP_TIMEOUT_S)
        if result.returncode != 0:
            pytest.fail(f"up exited {result.returncode}\n{result.stderr}\n{cluster.log_tails()}")
        with zk_session(cluster) as zk:
            yield Fenceable(cluster, relay, zk)
    finally:
        cluster.tear_down()
        relay.close()
        shutil.rmtree(directory.parent, ignore_errors=True)


@dataclass
class AckedProducer:
    """An idempotent acks=all producer writing numbered values to partition 0 in a thread."""

    bootstrap: str
    acked: list[tuple[float, bytes]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(TIMEOUT_S)

    def acked_since(self, since_s: float) -> int:
        return sum(1 for at, _ in list(self.acked) if at > since_s)

    def longest_gap_s(self) -> float:
        times = [at for at, _ in self.acked]
        return max((b - a for a, b in itertools.pairwise(times)), default=0.0)

    def _run(self) -> None:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 120_000,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )

        def report(error: Any, message: Any) -> None:
            if error is None:
                self.acked.append((time.monotonic(), message.value()))
            else:
                self.failed.append(str(error))

        number = 0
        while not self._stop.is_set():
            producer.produce(TOPIC, value=f"v{number}".encode(), partition=0, on_delivery=report)
            number += 1
            producer.poll(0.02)
        producer.flush(TIMEOUT_S)


def _consume_all(bootstrap: str, expected: int) -> list[bytes | None]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    seen: list[bytes | None] = []

    def done() -> bool:
        for message in consumer.consume(num_messages=1000, timeout=0.5):
            if message.error() is None:
                seen.append(message.value())
        return len(seen) >= expected

    try:
        wait_until(done, TIMEOUT_S, f"{expected} records")
        for message in consumer.consume(num_messages=1000, timeout=1):
            if message.error() is None:
                seen.append(message.value())
    finally:
        consumer.close()
    return seen


def _diagnose(f: Fenceable, producer: AckedProducer) -> str:
    leaders = {}
    for broker in f.cluster.broker_ids:
        with WireClient.to(broker_address(f.cluster, broker)) as client:
            answer = metadata(client, [TOPIC]).topics[0].partitions[0]
        leaders[broker] = (int(answer.error_code), int(answer.leader_id))
    return (
        f"state {f.state()}, metadata by broker {leaders}, {len(producer.acked)} acked, "
        f"failed {producer.failed[:3]}"
    )


def _wait_isr_whole(f: Fenceable) -> None:
    wait_until(lambda: len(f.state()["isr"]) == 3, TIMEOUT_S, lambda: f"whole ISR: {f.state()}")


def test_shorter_cuts_a_flapping_link_and_a_short_sigstop_do_not_fence(f: Fenceable) -> None:
    controller = f.controller()
    # Led by a broker that is not the controller: the leader's cut and the controller's are
    # separate cases.
    broker = next(b for b in f.cluster.broker_ids if b != controller)
    others = [b for b in f.cluster.broker_ids if b != broker]
    admin = AdminClient({"bootstrap.servers": f.cluster.bootstrap})
    created = admin.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[broker, *others]])])
    created[TOPIC].result(timeout=TIMEOUT_S)
    state_path = f"/brokers/topics/{TOPIC}/partitions/0/state"
    wait_until(lambda: f.zk.exists(state_path) is not None, TIMEOUT_S, "the partition state")
    _wait_isr_whole(f)
    before = (f.log_count(broker, FENCED_LINE), f.log_count(broker, EXPIRED_LINE))
    pid = f.pid(broker)
    # A flapping link: 6 s without ZooKeeper in all, never more than 3 s at a time (with the
    # last ping answered up to 2 s before a cut, at most 5 s without an answer: a margin
    # for a loaded machine below the 6 s bound).
    for held_s in (3.0, 3.0):
        f.relay.cut(pid)
        time.sleep(held_s)
        f.relay.heal(pid)
        time.sleep(1.5)
    # A stop shorter than the timeout (with the last ping up to 2 s before it, ZooKeeper hears
    # nothing for at most 5 s: the session lives).
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(3)
    finally:
        os.kill(pid, signal.SIGCONT)
    with WireClient.to(broker_address(f.cluster, broker)) as client:
        answer = metadata(client, [TOPIC]).topics[0].partitions[0]
    assert (int(answer.error_code), int(answer.leader_id)) == (0, broker)
    after = (f.log_count(broker, FENCED_LINE), f.log_count(broker, EXPIRED_LINE))
    assert after == before, "no fence and no expired session"


def test_a_leader_cut_off_from_zookeeper_fences_itself_and_the_producer_moves_on(
    f: Fenceable,
) -> None:
    leader = int(f.state()["leader"])
    assert f.controller() != leader, "the controller's own cut is the next test"
    fences = f.log_count(leader, FENCED_LINE)
    producer = AckedProducer(f.cluster.bootstrap)
    producer.start()
    wait_until(lambda: len(producer.acked) >= 50, TIMEOUT_S, "the producer under way")
    pid = f.pid(leader)
    f.relay.cut(pid)
    healed = False
    try:
        wait_until(
            lambda: f.log_count(leader, FENCED_LINE) > fences, TIMEOUT_S, "the leader's fence"
        )
        with WireClient.to(broker_address(f.cluster, leader)) as client:
            answer = metadata(client, [TOPIC]).topics[0].partitions[0]
            assert (int(answer.error_code), int(answer.leader_id)) == (LEADER_NOT_AVAILABLE, -1)
            batch = build_batch([SimpleRecord(None, b"to the fenced leader", (), 0)])
            refused = produce(client, TOPIC, 0, batch, acks=-1)
            assert int(refused.error_code) == NOT_LEADER_OR_FOLLOWER
        wait_until(lambda: f.state()["leader"] != leader, TIMEOUT_S, "a new leader")
        resumed_from = time.monotonic()
        wait_until(
            lambda: producer.acked_since(resumed_from) >= 50,
            TIMEOUT_S,
            lambda: f"acks from the new leader: {_diagnose(f, producer)}",
        )
        f.relay.heal(pid)
        healed = True
        wait_until(lambda: leader in f.state()["isr"], TIMEOUT_S, "the old leader in the ISR")
        wait_until(
            lambda: f.log_count(leader, UNFENCED_LINE) > fences, TIMEOUT_S, "the fence lifted"
        )
    finally:
        if not healed:
            f.relay.heal(pid)
        producer.stop()
    gap_s = producer.longest_gap_s()
    print(f"\nlongest gap between acknowledgements, leader cut: {gap_s:.1f} s")
    assert producer.failed == []
    values = [value for _, value in producer.acked]
    stored = _consume_all(f.cluster.bootstrap, len(values))
    assert len(stored) == len(set(stored)), "no duplicate"
    assert set(values) <= set(stored), "nothing acknowledged is lost"
    _wait_isr_whole(f)


def test_the_controller_cut_off_from_zookeeper_stops_acting_as_controller(f: Fenceable) -> None:
    controller = f.controller()
    assert controller is not None
    fences = f.log_count(controller, FENCED_LINE)
    stops = f.log_count(controller, CONTROLLER_STOPS_LINE)
    pid = f.pid(controller)
    f.relay.cut(pid)
    try:
        wait_until(
            lambda: f.log_count(controller, FENCED_LINE) > fences,
            TIMEOUT_S,
            "the controller's fence",
        )
        wait_until(
            lambda: f.log_count(controller, CONTROLLER_STOPS_LINE) > stops,
            5,
            "the fenced controller to stop acting as controller",
        )
        wait_until(
            lambda: f.controller() not in (None, controller), TIMEOUT_S, "another controller"
        )
    finally:
        f.relay.heal(pid)
    wait_until(lambda: controller in f.registered(), TIMEOUT_S, "the old controller registered")
    wait_until(
        lambda: f.log_count(controller, UNFENCED_LINE) > fences, TIMEOUT_S, "the fence lifted"
    )
    _wait_isr_whole(f)


@pytest.fixture(name="f")
def _f(fenceable: Fenceable) -> Fenceable:
    return fenceable
