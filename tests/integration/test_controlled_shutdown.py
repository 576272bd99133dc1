"""Acceptance: a SIGTERMed leader's partitions move before it exits (controlled shutdown), while
an idempotent acks=all producer sees nothing worse than retries and every acked record stays
readable."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient
from kazoo.recipe.watchers import DataWatch
from kio.schema.errors import ErrorCode

from tests.integration.conftest import ClusterFactory, wait_until, zk_session

TOPIC = "controlled"
PARTITIONS = 6
TIMEOUT_S = 60.0
RECORDS_BEFORE_KILL = 100
RECORDS_AFTER_EXIT = 100
PRODUCE_INTERVAL_S = 0.002


def _json(zk: KazooClient, path: str) -> Any:
    return json.loads(zk.get(path)[0])


def _state_path(partition: int) -> str:
    return f"/brokers/topics/{TOPIC}/partitions/{partition}/state"


@dataclass
class _Timeline:
    """ZooKeeper notifications in the order the session saw them (ZooKeeper delivers them in
    zxid order): partition leaders, then the shutting-down broker's registration."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    leaders: dict[int, int] = field(default_factory=dict)
    leaders_when_deregistered: dict[int, int] | None = None

    def state_watcher(self, partition: int) -> Callable[[bytes | None, Any], None]:
        # Two parameters exactly: kazoo passes the event too to a three-parameter callback.
        def on_state(data: bytes | None, _stat: Any) -> None:
            if data is not None:
                with self.lock:
                    self.leaders[partition] = json.loads(data)["leader"]

        return on_state

    def on_registration(self, data: bytes | None) -> None:
        if data is None:
            with self.lock:
                if self.leaders_when_deregistered is None:
                    self.leaders_when_deregistered = dict(self.leaders)


class _ContinuousProducer:
    """Produces to the given partitions until stopped; remembers what was acked and any error."""

    def __init__(self, bootstrap: str, partitions: list[int]) -> None:
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 120000,
            }
        )
        self._partitions = partitions
        self.acked: dict[tuple[int, int], bytes] = {}
        # Delivered, but the report carries no offset: checked by value.
        self.acked_without_offset: list[bytes] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.errors.append(str(error))
            return
        offset, value = message.offset(), message.value()
        assert value is not None
        if offset is None or offset < 0:
            self.acked_without_offset.append(value)
            return
        self.acked[(message.partition() or 0, offset)] = value

    def _run(self) -> None:
        sequence = 0
        while not self._stop.is_set():
            partition = self._partitions[sequence % len(self._partitions)]
            value = f"record-{sequence}".encode()
            self._producer.produce(TOPIC, value, partition=partition, on_delivery=self._on_delivery)
            sequence += 1
            self._producer.poll(PRODUCE_INTERVAL_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT_S)
        remaining = self._producer.flush(TIMEOUT_S)
        assert remaining == 0, f"{remaining} records never delivered"


def _read_all(bootstrap: str) -> dict[tuple[int, int], bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "cs-check", "enable.auto.commit": False}
    )
    ends = {
        p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=TIMEOUT_S)[1]
        for p in range(PARTITIONS)
    }
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    stored: dict[tuple[int, int], bytes] = {}
    deadline = time.monotonic() + TIMEOUT_S
    positions = dict.fromkeys(range(PARTITIONS), 0)
    while any(positions[p] < ends[p] for p in ends) and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is None or message.error() is not None:
            continue
        offset = message.offset()
        value = message.value()
        assert offset is not None and value is not None
        stored[(message.partition() or 0, offset)] = value
        positions[message.partition() or 0] = offset + 1
    consumer.close()
    return stored


def test_sigterm_moves_leadership_before_exit_and_producer_sees_no_error(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides={"min.insync.replicas": "2"})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(timeout=TIMEOUT_S)
    with zk_session(cluster) as zk:
        wait_until(
            lambda: zk.exists(f"/brokers/topics/{TOPIC}/partitions/{PARTITIONS - 1}/state"),
            TIMEOUT_S,
            "partition states",
        )
        controller = _json(zk, "/controller")["brokerid"]
        leaders = {p: _json(zk, _state_path(p))["leader"] for p in range(PARTITIONS)}
        target = next(b for b in cluster.broker_ids if b != controller and b in leaders.values())
        led = sorted(p for p, leader in leaders.items() if leader == target)
        timeline = _Timeline()
        for partition in range(PARTITIONS):
            DataWatch(zk, _state_path(partition), timeline.state_watcher(partition))
        DataWatch(zk, f"/brokers/ids/{target}", lambda data, _stat: timeline.on_registration(data))

        producer = _ContinuousProducer(cluster.bootstrap, led)
        producer.start()
        try:
            wait_until(lambda: len(producer.acked) >= RECORDS_BEFORE_KILL, TIMEOUT_S, "acks")
            cluster.kill(target, "TERM")
            wait_until(lambda: not cluster.broker_alive(target), TIMEOUT_S, f"broker {target} exit")
            acked_at_exit = len(producer.acked)
            wait_until(
                lambda: len(producer.acked) >= acked_at_exit + RECORDS_AFTER_EXIT,
                TIMEOUT_S,
                "acks from the new leaders",
            )
        finally:
            producer.stop()
        wait_until(
            lambda: timeline.leaders_when_deregistered is not None,
            TIMEOUT_S,
            f"/brokers/ids/{target} to disappear",
        )

    assert producer.errors == []
    # Every partition it led had another leader before its registration went away.
    moved = timeline.leaders_when_deregistered
    assert moved is not None
    assert all(moved[p] not in (target, -1) for p in led), (led, moved)
    state_change_log = (cluster.dir / f"broker-{controller}" / "state-change.log").read_text()
    for partition in led:
        assert f"Changed partition {TOPIC}-{partition} to LeaderAndIsr(leader=" in state_change_log
    assert "reason: controlled shutdown" in state_change_log
    broker_log = cluster.broker_log(target).read_text()
    assert "Controlled shutdown succeeded" in broker_log
    stored = _read_all(cluster.bootstrap)
    lost = {k: v for k, v in producer.acked.items() if stored.get(k) != v}
    assert lost == {}, f"{len(lost)} acked records not readable"
    values = set(stored.values())
    assert [v for v in producer.acked_without_offset if v not in values] == []


def test_a_parked_acks_all_produce_is_answered_not_leader_at_sigterm(
    make_cluster: ClusterFactory,
) -> None:
    """Kafka 3.9 answers the acks=all produces still waiting when a SIGTERMed leader hands its
    partitions over with NOT_LEADER_OR_FOLLOWER, rather than closing their connections. The
    produce is held in purgatory by a follower that is in the ISR but stopped (SIGSTOP); the
    controller (a third broker) moves the partition to that follower at the leader's
    controlled shutdown."""
    from broker.log.record_codec import SimpleRecord, build_batch
    from tests.integration.requests import PRODUCE, produce_request, topic_spec
    from tests.integration.wire import (
        WireClient,
        broker_address,
        controller_address,
        controller_id,
        create_topics,
    )

    cluster = make_cluster()
    controller = controller_id(cluster)
    leader, follower = (b for b in cluster.broker_ids if b != controller)
    topic = "parked"
    with WireClient.to(controller_address(cluster)) as admin:
        spec = topic_spec(topic, -1, -1, assignments={0: [leader, follower]})
        created = create_topics(admin, [spec])
    assert [int(t.error_code) for t in created.topics] == [0]
    with zk_session(cluster) as zk:
        path = f"/brokers/topics/{topic}/partitions/0/state"
        wait_until(lambda: zk.exists(path), TIMEOUT_S, "the partition's state")
        state = _json(zk, path)
    assert (state["leader"], sorted(state["isr"])) == (leader, sorted([leader, follower]))
    batch = build_batch([SimpleRecord(None, b"parked", (), 1_700_000_000_000)])
    with WireClient.to(broker_address(cluster, leader), timeout_s=TIMEOUT_S) as client:
        # One acked write first, so the follower is fetching and in sync.
        client.request(PRODUCE, 9, produce_request(topic, 0, batch, acks=-1))
        cluster.kill(follower, "STOP")
        try:
            # Sent before the SIGTERM: whether it parks first or arrives during the controlled
            # shutdown, the answer must be NOT_LEADER_OR_FOLLOWER, never a closed connection.
            client.send(PRODUCE, 9, produce_request(topic, 0, batch, acks=-1, timeout_ms=30000))
            cluster.kill(leader, "TERM")
            response = client.read_response(PRODUCE, 9)
        finally:
            cluster.kill(follower, "CONT")
    result = response.responses[0].partition_responses[0]
    assert result.error_code == ErrorCode.not_leader_or_follower
    wait_until(lambda: not cluster.broker_alive(leader), TIMEOUT_S, f"broker {leader} exit")
    assert "Controlled shutdown succeeded" in cluster.broker_log(leader).read_text()
