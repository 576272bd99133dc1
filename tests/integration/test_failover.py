"""Acceptance: controller failover (SIGTERM and SIGKILL) and recovery after `kill -9`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from tests.integration.conftest import ClusterFactory, ClusterHandle, wait_until, zk_session

SESSION_TIMEOUT_MS = "6000"  # bounds how long a SIGKILLed broker's ephemeral znodes linger
TIMEOUT_S = 60


def _json(zk: KazooClient, path: str) -> Any:
    return json.loads(zk.get(path)[0])


def _controller(zk: KazooClient) -> tuple[int | None, int]:
    epoch = int(zk.get("/controller_epoch")[0])
    try:
        return _json(zk, "/controller")["brokerid"], epoch
    except NoNodeError:  # between the old session's expiry and the next election
        return None, epoch


def _create_topic(cluster: ClusterHandle, name: str, partitions: int, replication: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, partitions, replication)])[name].result(timeout=TIMEOUT_S)


def _states(zk: KazooClient, topic: str) -> dict[int, dict[str, Any]]:
    partitions = zk.get_children(f"/brokers/topics/{topic}/partitions")
    return {int(p): _json(zk, f"/brokers/topics/{topic}/partitions/{p}/state") for p in partitions}


@pytest.mark.parametrize("signal", ["TERM", "KILL"])
def test_killing_the_controller_elects_another_with_higher_epoch(
    make_cluster: ClusterFactory, signal: str
) -> None:
    cluster = make_cluster(overrides={"zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS})
    _create_topic(cluster, "failover", 6, 3)
    with zk_session(cluster) as zk:
        wait_until(lambda: len(_states(zk, "failover")) == 6, TIMEOUT_S, "partition states")
        old_controller, old_epoch = _controller(zk)
        assert old_controller is not None
        before = _states(zk, "failover")
        cluster.kill(old_controller, signal)

        def moved() -> bool:
            controller, epoch = _controller(zk)
            return controller not in (None, old_controller) and epoch > old_epoch

        wait_until(moved, TIMEOUT_S, "a new controller with a higher epoch")
        new_controller, new_epoch = _controller(zk)
        assert new_epoch == old_epoch + 1

        def leaders_moved() -> bool:
            states = _states(zk, "failover")
            return all(s["leader"] != old_controller for s in states.values())

        wait_until(leaders_moved, TIMEOUT_S, "leaders away from the dead broker")
        after = _states(zk, "failover")
        for partition, state in after.items():
            assert old_controller not in state["isr"]
            if before[partition]["leader"] == old_controller:
                assert state["leader_epoch"] == before[partition]["leader_epoch"] + 1
                # SIGTERM: the old controller moved it in its controlled shutdown.
                mover_epoch = old_epoch if signal == "TERM" else new_epoch
                assert state["controller_epoch"] == mover_epoch
        cluster.start(old_controller)
        assert _controller(zk)[0] == new_controller, "a restarted broker must not steal control"


def _produce(bootstrap: str, topic: str, count: int) -> dict[tuple[int, int], bytes]:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 2})
    acked: dict[tuple[int, int], bytes] = {}

    def report(error: Any, message: Any) -> None:
        if error is None:
            acked[(message.partition(), message.offset())] = message.value()

    for i in range(count):
        producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode(), on_delivery=report)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0
    return acked


def _consume_all(
    bootstrap: str, topic: str, partitions: int, count: int
) -> dict[tuple[int, int], bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: dict[tuple[int, int], bytes] = {}

    def done() -> bool:
        for message in consumer.consume(num_messages=1000, timeout=0.5):
            if message.error() is None:
                seen[(message.partition(), message.offset())] = message.value()
        return len(seen) >= count

    wait_until(done, TIMEOUT_S, f"{count} records")
    consumer.close()
    return seen


def test_broker_restarted_after_kill_9_serves_acknowledged_data(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides={"zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS})
    # Replication factor 1: every record lives only on its leader, so what is read back after
    # the restart can only come from the killed broker's own recovered log.
    _create_topic(cluster, "durable", 6, 1)
    acked = _produce(cluster.bootstrap, "durable", 5000)
    assert len(acked) == 5000
    with zk_session(cluster) as zk:
        states = _states(zk, "durable")
        victim = states[0]["leader"]
        cluster.kill(victim, "KILL")
        wait_until(
            lambda: str(victim) not in zk.get_children("/brokers/ids"),
            TIMEOUT_S,
            "the killed broker's registration to expire",
        )
        cluster.start(victim)

        def led_again() -> bool:
            now = _states(zk, "durable")
            return all(
                now[p]["leader"] == victim for p, s in states.items() if s["leader"] == victim
            )

        wait_until(led_again, TIMEOUT_S, "the restarted broker leading its partitions again")
    assert _consume_all(cluster.bootstrap, "durable", 6, len(acked)) == acked


def test_torn_tail_and_corrupt_indexes_are_repaired_on_restart(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(
        brokers=1, overrides={"zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS}
    )
    _create_topic(cluster, "torn", 1, 1)
    acked = _produce(cluster.bootstrap, "torn", 3000)
    cluster.kill(1, "KILL")
    partition_dir = cluster.dir / "broker-1" / "data" / "torn-0"
    segment = sorted(partition_dir.glob("*.log"))[-1]
    with segment.open("ab") as torn:
        # A batch header promising 4 KiB that never arrived: what a crash mid-write leaves.
        torn.write((0).to_bytes(8, "big") + (4096).to_bytes(4, "big") + b"\x00" * 30)
    segment.with_suffix(".index").write_bytes(b"\xff" * 64)
    segment.with_suffix(".timeindex").unlink(missing_ok=True)
    with zk_session(cluster) as zk:
        wait_until(
            lambda: "1" not in zk.get_children("/brokers/ids"), TIMEOUT_S, "registration expiry"
        )
    cluster.start(1)
    assert _consume_all(cluster.bootstrap, "torn", 1, len(acked)) == acked
    more = _produce(cluster.bootstrap, "torn", 10)
    assert sorted(offset for _, offset in more) == list(range(len(acked), len(acked) + 10))
    assert segment.with_suffix(".timeindex").exists()


def test_paused_controller_is_replaced_and_rejoins_as_a_plain_broker(
    make_cluster: ClusterFactory,
) -> None:
    """SIGSTOP the controller past its session timeout: its ZooKeeper session expires, another
    broker wins a higher epoch, and on SIGCONT the old one must notice, stop acting as
    controller (its epoch is fenced), re-register and serve again."""
    cluster = make_cluster(overrides={"zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS})
    _create_topic(cluster, "paused", 6, 1)
    with zk_session(cluster) as zk:
        old_controller, old_epoch = _controller(zk)
        assert old_controller is not None
        cluster.kill(old_controller, "STOP")
        try:
            wait_until(
                lambda: _controller(zk)[0] not in (None, old_controller),
                TIMEOUT_S,
                "another controller while the old one is paused",
            )
        finally:
            cluster.kill(old_controller, "CONT")
        new_controller, new_epoch = _controller(zk)
        assert new_epoch > old_epoch
        wait_until(
            lambda: str(old_controller) in zk.get_children("/brokers/ids"),
            TIMEOUT_S,
            "the resumed broker to re-register",
        )

        def all_led() -> bool:
            states = _states(zk, "paused")
            live = {int(b) for b in zk.get_children("/brokers/ids")}
            return len(states) == 6 and all(s["leader"] in live for s in states.values())

        wait_until(all_led, TIMEOUT_S, "every partition led by a live broker")
        assert _controller(zk) == (new_controller, new_epoch)
        for state in _states(zk, "paused").values():
            assert state["controller_epoch"] <= new_epoch
    acked = _produce(cluster.bootstrap, "paused", 600)
    assert len(acked) == 600
