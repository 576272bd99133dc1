"""Acceptance: follower replication against real brokers, ZooKeeper and clients.

Two clusters are shared by the module (each test has its own topic, replication factor 3,
min.insync.replicas=2 everywhere):

- `quick_isr_cluster`: replica.lag.time.max.ms=3000 and long ZooKeeper sessions, so a paused
  follower leaves the ISR by its leader's write long before its session could expire.
- `quick_failover_cluster`: short ZooKeeper sessions and replica.lag.time.max.ms=30000, so a
  killed broker is noticed within seconds while a briefly paused follower stays in the ISR.

What ZooKeeper holds is read with kazoo; what is on disk is read from each broker's log.dirs.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from broker.log.record_codec import SimpleRecord, build_batch
from tests.integration.conftest import ClusterFactory, ClusterHandle, wait_until, zk_session
from tests.integration.requests import FETCH, fetch_request
from tests.integration.wire import WireClient, broker_address, produce

TIMEOUT_S = 60
REPLICATION_FACTOR = 3
NOT_ENOUGH_REPLICAS = 19
FETCH_WAIT_MS = 200
COMMON_OVERRIDES = {
    "min.insync.replicas": "2",
    "replica.fetch.wait.max.ms": str(FETCH_WAIT_MS),
}
QUICK_ISR_OVERRIDES = COMMON_OVERRIDES | {
    "replica.lag.time.max.ms": "3000",
    # A follower paused past the lag time must stay registered: only its leader may drop it.
    "zookeeper.session.timeout.ms": "20000",
}
QUICK_FAILOVER_OVERRIDES = COMMON_OVERRIDES | {
    # Bounds how long a SIGKILLed broker's registration lingers, so failovers take seconds.
    "zookeeper.session.timeout.ms": "6000",
    # Longer than any pause below: only the controller (on a broker's death) shrinks an ISR.
    "replica.lag.time.max.ms": "30000",
}
# A follower's fetch parked at its leader is answered within replica.fetch.wait.max.ms; after
# this long a paused follower has nothing in flight that could still carry newer records.
PARKED_FETCH_DRAIN_S = 5 * FETCH_WAIT_MS / 1000
# The idempotent producer of the leader-kill test: spread over seconds so the kill lands
# while records are still being written.
IDEMPOTENT_COUNT = 2000
IDEMPOTENT_PARTITIONS = 3
PACE_EVERY = 10
PACE_S = 0.02


@pytest.fixture(scope="module")
def quick_isr_cluster(make_cluster_module: ClusterFactory) -> ClusterHandle:
    return make_cluster_module(overrides=QUICK_ISR_OVERRIDES)


@pytest.fixture(scope="module")
def quick_failover_cluster(make_cluster_module: ClusterFactory) -> ClusterHandle:
    return make_cluster_module(overrides=QUICK_FAILOVER_OVERRIDES)


# -- ZooKeeper --------------------------------------------------------------------------------


def _state_path(topic: str, partition: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{partition}/state"


def _state(zk: KazooClient, topic: str, partition: int) -> tuple[dict[str, Any], int]:
    """The partition state znode and its zkVersion (the partition epoch)."""
    data, stat = zk.get(_state_path(topic, partition))
    return json.loads(data), stat.version


def _controller(zk: KazooClient) -> int:
    return int(json.loads(zk.get("/controller")[0])["brokerid"])


def _isr_full(zk: KazooClient, topic: str, partitions: int) -> bool:
    for partition in range(partitions):
        if zk.exists(_state_path(topic, partition)) is None:
            return False
        state, _ = _state(zk, topic, partition)
        if state["leader"] < 0 or len(state["isr"]) != REPLICATION_FACTOR:
            return False
    return True


def _wait_for_full_isr(zk: KazooClient, topic: str, partitions: int) -> None:
    wait_until(
        lambda: _isr_full(zk, topic, partitions), TIMEOUT_S, f"a full ISR on every {topic} part"
    )


# -- topics and clients -----------------------------------------------------------------------


def _replicas_led_by(leader: int, broker_ids: list[int]) -> list[int]:
    """A replica list whose preferred (first) replica is `leader`."""
    return [leader, *(broker for broker in broker_ids if broker != leader)]


def _rotations(replicas: list[int], partitions: int) -> list[list[int]]:
    return [
        replicas[p % len(replicas) :] + replicas[: p % len(replicas)] for p in range(partitions)
    ]


def _create_topic(
    cluster: ClusterHandle,
    topic: str,
    partitions: int = 1,
    assignment: list[list[int]] | None = None,
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    if assignment is None:
        new_topic = NewTopic(topic, partitions, REPLICATION_FACTOR)
    else:
        new_topic = NewTopic(topic, len(assignment), replica_assignment=assignment)
    admin.create_topics([new_topic])[topic].result(timeout=TIMEOUT_S)


def _produce(
    bootstrap: str, topic: str, values: list[bytes], partitions: int, acks: str = "all"
) -> dict[bytes, tuple[int, int]]:
    """Write `values` round-robin over the partitions; returns value -> (partition, offset)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5})
    acked: dict[bytes, tuple[int, int]] = {}
    errors: list[str] = []

    def report(error: Any, message: Any) -> None:
        if error is None:
            acked[message.value()] = (message.partition(), message.offset())
        else:
            errors.append(str(error))

    for index, value in enumerate(values):
        producer.produce(topic, value, partition=index % partitions, on_delivery=report)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0 and not errors, errors[:3]
    return acked


def _read_partition(bootstrap: str, topic: str, partition: int) -> list[tuple[int, bytes]]:
    """Every record of one partition below its high watermark, as (offset, value)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        _, high_watermark = consumer.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=TIMEOUT_S
        )
        consumer.assign([TopicPartition(topic, partition, 0)])
        records: list[tuple[int, bytes]] = []

        def read_to_high_watermark() -> bool:
            for message in consumer.consume(num_messages=1000, timeout=0.5):
                if message.error() is None:
                    records.append((message.offset(), message.value()))
            return not records or records[-1][0] >= high_watermark - 1

        if high_watermark > 0:
            wait_until(
                read_to_high_watermark, TIMEOUT_S, f"{topic}-{partition} to {high_watermark}"
            )
    finally:
        consumer.close()
    return records


def _batch(values: list[bytes]) -> bytes:
    return build_batch([SimpleRecord(None, value, (), 1000) for value in values])


def _fetch_at_epoch(client: WireClient, topic: str, partition: int, leader_epoch: int) -> Any:
    """A consumer Fetch that names the leader epoch: answered without error only by a leader
    that has applied exactly that epoch."""
    fields = fetch_request(topic, partition, 0)
    fields["topics"][0]["partitions"][0]["current_leader_epoch"] = leader_epoch
    return client.request(FETCH, 12, fields).responses[0].partitions[0]


# -- processes and disks ----------------------------------------------------------------------


def _pid(cluster: ClusterHandle, broker_id: int) -> int:
    pid = cluster.status().brokers[broker_id].pid
    assert pid is not None, f"broker {broker_id} has no pid"
    return pid


def _log_dir(cluster: ClusterHandle, broker_id: int) -> Path:
    properties = (cluster.dir / f"broker-{broker_id}" / "server.properties").read_text()
    for line in properties.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "log.dirs":
            return Path(value.strip().split(",")[0])
    raise AssertionError(f"no log.dirs in broker {broker_id}'s server.properties")


def _segment_files(
    cluster: ClusterHandle, broker_id: int, topic: str, partition: int
) -> list[Path]:
    return sorted((_log_dir(cluster, broker_id) / f"{topic}-{partition}").glob("*.log"))


def _segments(
    cluster: ClusterHandle, broker_id: int, topic: str, partition: int
) -> dict[str, bytes]:
    files = _segment_files(cluster, broker_id, topic, partition)
    return {path.name: path.read_bytes() for path in files}


def _log_size_bytes(cluster: ClusterHandle, broker_id: int, topic: str, partition: int) -> int:
    return sum(path.stat().st_size for path in _segment_files(cluster, broker_id, topic, partition))


def _same_log_sizes(cluster: ClusterHandle, topic: str, partitions: int) -> Callable[[], bool]:
    def same() -> bool:
        return all(
            len({_log_size_bytes(cluster, b, topic, p) for b in cluster.broker_ids}) == 1
            for p in range(partitions)
        )

    return same


# -- the idempotent producer of the leader-kill test ------------------------------------------


def _produce_paced(
    bootstrap: str, topic: str, acked: dict[bytes, tuple[int, int | None]], errors: list[str]
) -> None:
    """The idempotent acks=all producer, run on a worker thread: delivery reports (and so
    `acked`) are filled by this thread's poll/flush."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
        }
    )

    def report(error: Any, message: Any) -> None:
        if error is None:
            acked[message.value()] = (message.partition(), message.offset())
        else:
            errors.append(str(error))

    for index in range(IDEMPOTENT_COUNT):
        value = b"%06d" % index
        producer.produce(topic, value, partition=index % IDEMPOTENT_PARTITIONS, on_delivery=report)
        producer.poll(0)
        if index % PACE_EVERY == PACE_EVERY - 1:
            time.sleep(PACE_S)
    remaining = producer.flush(2 * TIMEOUT_S)
    if remaining:
        errors.append(f"{remaining} records still undelivered after the flush")


# -- tests ------------------------------------------------------------------------------------


def test_leader_killed_under_idempotent_acks_all_producer_loses_nothing(
    quick_failover_cluster: ClusterHandle,
) -> None:
    cluster, topic = quick_failover_cluster, "replication-leader-kill"
    with zk_session(cluster) as zk:
        # Partition 0 is led by a broker that is not the controller: the kill tests replica
        # failover, not controller failover.
        controller = _controller(zk)
        leader = next(broker for broker in cluster.broker_ids if broker != controller)
        replicas = _replicas_led_by(leader, cluster.broker_ids)
        _create_topic(cluster, topic, assignment=_rotations(replicas, IDEMPOTENT_PARTITIONS))
        _wait_for_full_isr(zk, topic, IDEMPOTENT_PARTITIONS)
        before, _ = _state(zk, topic, 0)
        assert before["leader"] == leader
        acked: dict[bytes, tuple[int, int | None]] = {}
        errors: list[str] = []
        with ThreadPoolExecutor(max_workers=1) as pool:
            producing = pool.submit(_produce_paced, cluster.bootstrap, topic, acked, errors)
            wait_until(
                lambda: len(acked) >= IDEMPOTENT_COUNT // 5 or producing.done(),
                TIMEOUT_S,
                "a fifth of the records acknowledged",
            )
            assert len(acked) < IDEMPOTENT_COUNT, "everything was acknowledged before the kill"
            cluster.kill(leader, "KILL")
            try:
                wait_until(
                    lambda: _state(zk, topic, 0)[0]["leader"] not in (leader, -1),
                    TIMEOUT_S,
                    f"a new leader for {topic}-0",
                )
            finally:
                cluster.start(leader)
            producing.result(timeout=3 * TIMEOUT_S)
    assert not errors, errors[:3]
    assert len(acked) == IDEMPOTENT_COUNT
    # librdkafka reports a record without an offset when it was answered with an error but a
    # later batch's success proves it was written ("implicitly acked").
    without_offset = sorted(value for value, (_, offset) in acked.items() if offset is None)
    assert not without_offset, f"acknowledged without an offset: {without_offset[:6]}"
    for partition in range(IDEMPOTENT_PARTITIONS):
        expected = sorted((offset, value) for value, (p, offset) in acked.items() if p == partition)
        records = _read_partition(cluster.bootstrap, topic, partition)
        # Exactly the acknowledged records at their offsets: nothing lost, nothing twice.
        assert records == expected, f"partition {partition}"
        values = [value for _, value in records]
        assert values == sorted(values), f"partition {partition} is out of order"


def test_follower_paused_past_lag_time_leaves_isr_by_leaders_write_and_returns(
    quick_isr_cluster: ClusterHandle,
) -> None:
    cluster, topic = quick_isr_cluster, "replication-isr-shrink"
    _create_topic(cluster, topic)
    with zk_session(cluster) as zk:
        _wait_for_full_isr(zk, topic, 1)
        before, before_version = _state(zk, topic, 0)
        controller = _controller(zk)
        follower = next(r for r in before["isr"] if r not in (before["leader"], controller))
        # Bootstrapped from the leader alone: a metadata request to the paused broker would
        # wait out the client's socket timeout.
        leader_address = broker_address(cluster, before["leader"])
        producer = Producer({"bootstrap.servers": leader_address, "acks": 1})

        def isr_after_writing() -> list[int]:
            producer.produce(topic, b"tick", partition=0)
            assert producer.flush(TIMEOUT_S) == 0
            return list(_state(zk, topic, 0)[0]["isr"])

        isr_after_writing()  # connected to the leader before the pause

        cluster.kill(follower, "STOP")
        try:
            wait_until(
                lambda: follower not in isr_after_writing(),
                TIMEOUT_S,
                f"the leader to drop paused broker {follower} from the ISR",
            )
            shrunk, shrunk_version = _state(zk, topic, 0)
        finally:
            cluster.kill(follower, "CONT")
        wait_until(
            lambda: follower in isr_after_writing(),
            TIMEOUT_S,
            f"resumed broker {follower} back in the ISR",
        )
        back, back_version = _state(zk, topic, 0)
    assert shrunk["isr"] == [r for r in before["isr"] if r != follower]
    # The leader's own conditional write: same leader, leader epoch and controller epoch;
    # only the znode's version moved. (A controller-made change would bump leader_epoch.)
    for state in (shrunk, back):
        assert state["leader"] == before["leader"]
        assert state["leader_epoch"] == before["leader_epoch"]
        assert state["controller_epoch"] == before["controller_epoch"]
    assert before_version < shrunk_version < back_version
    assert sorted(back["isr"]) == sorted(before["isr"])


def test_acks_all_refused_with_not_enough_replicas_when_both_followers_are_dead(
    quick_failover_cluster: ClusterHandle,
) -> None:
    cluster, topic = quick_failover_cluster, "replication-not-enough"
    with zk_session(cluster) as zk:
        # The controller leads, so killing the followers leaves the controller in place.
        leader = _controller(zk)
        replicas = _replicas_led_by(leader, cluster.broker_ids)
        _create_topic(cluster, topic, assignment=[replicas])
        _wait_for_full_isr(zk, topic, 1)
        address = broker_address(cluster, leader)
        with WireClient.to(address) as client:
            wait_until(
                lambda: int(produce(client, topic, 0, _batch([b"first"]), acks=-1).error_code) == 0,
                TIMEOUT_S,
                "a first acks=all write",
            )
        killed: list[int] = []
        try:
            for follower in replicas[1:]:
                cluster.kill(follower, "KILL")
                killed.append(follower)
            wait_until(
                lambda: _state(zk, topic, 0)[0]["isr"] == [leader],
                TIMEOUT_S,
                "the controller to shrink the ISR to the leader",
            )
            shrunk, _ = _state(zk, topic, 0)
            assert shrunk["leader"] == leader
            with WireClient.to(address) as client:
                wait_until(
                    lambda: (
                        int(_fetch_at_epoch(client, topic, 0, shrunk["leader_epoch"]).error_code)
                        == 0
                    ),
                    TIMEOUT_S,
                    f"broker {leader} to apply leader epoch {shrunk['leader_epoch']}",
                )
                log_end = int(
                    _fetch_at_epoch(client, topic, 0, shrunk["leader_epoch"]).high_watermark
                )
                refused = produce(client, topic, 0, _batch([b"refused"]), acks=-1)
                accepted = produce(client, topic, 0, _batch([b"accepted"]), acks=1)
        finally:
            for follower in killed:
                cluster.start(follower)
    assert int(refused.error_code) == NOT_ENOUGH_REPLICAS
    # Refused before the append: the acks=1 record takes the offset the refused one would have.
    assert (int(accepted.error_code), int(accepted.base_offset)) == (0, log_end)


def test_restarted_ex_leader_truncates_its_unreplicated_tail(
    quick_failover_cluster: ClusterHandle,
) -> None:
    cluster, topic = quick_failover_cluster, "replication-truncate"
    committed = [b"committed-%d" % i for i in range(10)]
    tail = [b"tail-%d" % i for i in range(5)]
    later = [b"later-%d" % i for i in range(10)]
    with zk_session(cluster) as zk:
        controller = _controller(zk)
        leader = next(broker for broker in cluster.broker_ids if broker != controller)
        replicas = _replicas_led_by(leader, cluster.broker_ids)
        followers = replicas[1:]
        _create_topic(cluster, topic, assignment=[replicas])
        _wait_for_full_isr(zk, topic, 1)
        before, _ = _state(zk, topic, 0)
        assert before["leader"] == leader
        _produce(cluster.bootstrap, topic, committed, 1)
        follower_pids = {follower: _pid(cluster, follower) for follower in followers}
        # SIGSTOP and SIGCONT go straight to the pids: through scripts/cluster (about a second
        # per call) the pause could approach the 6 s session timeout.
        stopped: list[int] = []
        try:
            for follower in followers:
                os.kill(follower_pids[follower], signal.SIGSTOP)
                stopped.append(follower)
            # Not a wait for an outcome: a long poll parked before the pause is answered within
            # replica.fetch.wait.max.ms, and must not carry the tail to a paused follower.
            time.sleep(PARKED_FETCH_DRAIN_S)
            with WireClient.to(broker_address(cluster, leader)) as client:
                tail_results = [produce(client, topic, 0, _batch([v]), acks=1) for v in tail]
            cluster.kill(leader, "KILL")
        finally:
            for follower in stopped:
                os.kill(follower_pids[follower], signal.SIGCONT)
        assert [int(result.error_code) for result in tail_results] == [0] * len(tail)
        tail_offsets = [int(result.base_offset) for result in tail_results]
        assert tail_offsets == list(range(len(committed), len(committed) + len(tail)))
        try:
            wait_until(
                lambda: _state(zk, topic, 0)[0]["leader"] in followers,
                TIMEOUT_S,
                f"a follower of {topic}-0 elected leader",
            )
            elected, _ = _state(zk, topic, 0)
            later_acked = _produce(cluster.bootstrap, topic, later, 1)
        finally:
            cluster.start(leader)
        _wait_for_full_isr(zk, topic, 1)
    assert elected["leader_epoch"] > before["leader_epoch"]
    # The new leader never had the tail: the later records took its offsets.
    later_offsets = sorted(offset for _, offset in later_acked.values())
    assert later_offsets == list(range(len(committed), len(committed) + len(later)))
    values = [value for _, value in _read_partition(cluster.bootstrap, topic, 0)]
    assert values == committed + later
    wait_until(_same_log_sizes(cluster, topic, 1), TIMEOUT_S, "equal log sizes on every replica")
    ex_leader_files = _segments(cluster, leader, topic, 0)
    assert not any(b"tail-" in data for data in ex_leader_files.values())
    for follower in followers:
        assert _segments(cluster, follower, topic, 0) == ex_leader_files, f"broker {follower}"
    # The ex-leader cut its log back to where the new leader's epoch began.
    truncated = f"{topic}-0: truncating from {tail_offsets[-1] + 1} to {len(committed)}"
    assert truncated in cluster.broker_log(leader).read_text(errors="replace")


def test_replicas_log_files_are_byte_identical_once_writes_stop_and_isr_is_full(
    quick_isr_cluster: ClusterHandle,
) -> None:
    cluster, topic, partitions = quick_isr_cluster, "replication-identical", 3
    _create_topic(cluster, topic, partitions)
    values = [b"value-%05d" % i for i in range(3000)]
    acked = _produce(cluster.bootstrap, topic, values, partitions)
    assert len(acked) == len(values)
    with zk_session(cluster) as zk:
        _wait_for_full_isr(zk, topic, partitions)
    wait_until(
        _same_log_sizes(cluster, topic, partitions), TIMEOUT_S, "equal log sizes on every replica"
    )
    for partition in range(partitions):
        reference = _segments(cluster, cluster.broker_ids[0], topic, partition)
        assert sum(len(data) for data in reference.values()) > 0, f"partition {partition} empty"
        for broker in cluster.broker_ids[1:]:
            assert _segments(cluster, broker, topic, partition) == reference, (
                f"partition {partition} on broker {broker}"
            )
