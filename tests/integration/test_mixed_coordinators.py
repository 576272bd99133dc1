"""Controller, group coordinator and transaction coordinator moving between our broker and
Apache Kafka 3.9's (issue 39, items 1 and 3, and its acceptance list): `scripts/cluster up
--impl ours,kafka,kafka` starts our broker 1 first, so that it is the controller, then Kafka's
brokers 2 and 3 on the same ZooKeeper.

Checked, in order, on one cluster:
- a topic of replication factor 3, each broker the preferred leader of one partition, fully
  replicated under our controller;
- transactions whose coordinator is ours and Kafka's, each writing to partitions led by both
  implementations, one committed and one aborted: read_committed consumers bootstrapped on a
  broker of each implementation read exactly the committed records (the markers of either
  implementation's coordinator reached the other's leaders);
- our broker 1 SIGKILLed with a group's offsets committed on it and a transaction of its open:
  a Kafka broker becomes controller and moves the leaders; the group's offsets, fetched from
  the Kafka coordinator that loaded ours' `__consumer_offsets`, are unchanged and a consumer
  resumes at them; the open transaction commits through the Kafka coordinator that loaded
  ours' `__transaction_state`, and a new one commits;
- broker 1 restarted (ours) rejoins every ISR (state znodes and every broker's Metadata
  agree); a preferred election under Kafka's controller makes it leader again of the partitions
  it prefers, among them the `__consumer_offsets` partition of a group that committed while
  it was down and the `__transaction_state` partition of a transaction opened while it was
  down: ours, loading what Kafka wrote, serves the same offsets and completes the transaction;
- a Kafka broker SIGKILLed with two transactions open on its coordinator: ours, next in the
  `__transaction_state` partition's ISR, loads them; one commits, the other, whose producer
  went away, is aborted when a new producer with its transactional id starts;
- neither side logs an unhandled error or a request it could not parse.

Needs Apache Kafka 3.9's jars (`make reference`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, ElectionType, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from tests.integration.conftest import (
    REPO_ROOT,
    ClusterFactory,
    ClusterHandle,
    wait_until,
    zk_session,
)
from tests.integration.requests import topic_spec
from tests.integration.wire import WireClient, create_topics, metadata

pytestmark = pytest.mark.reference  # it starts Kafka's brokers

REFERENCE_LIB = REPO_ROOT / "reference" / "lib"
IMPLS = {1: "ours", 2: "kafka", 3: "kafka"}
OURS = 1
BROKER_IDS = tuple(IMPLS)
TOPIC = "coordinators-plain"
TXN_TOPIC = "coordinators-txn"
OFFSETS_TOPIC = "__consumer_offsets"
TXN_STATE_TOPIC = "__transaction_state"
# Each broker the preferred leader of one partition: every transaction and every read spans
# leaders of both implementations.
ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
INTERNAL_PARTITIONS = 3
RECORDS_PER_PARTITION = 20
TIMEOUT_S = 60.0
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "auto.leader.rebalance.enable": "false",
    "offsets.topic.num.partitions": str(INTERNAL_PARTITIONS),
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.num.partitions": str(INTERNAL_PARTITIONS),
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    # A SIGKILLed broker leaves /brokers/ids when its session expires.
    "zookeeper.session.timeout.ms": "6000",
}
FIND_COORDINATOR = 10
GROUP_KEY, TRANSACTION_KEY = 0, 1
# An unhandled error or a request one side could not parse, in either implementation's logs.
OUR_TROUBLE = re.compile(
    r"Traceback|unknown API key|malformed| ERROR |refused with|"
    r"(LeaderAndIsr|StopReplica|UpdateMetadata|WriteTxnMarkers) v\d+ from .* failed"
)
KAFKA_TROUBLE = re.compile(
    r" ERROR |STALE_|InvalidRequestException|UnsupportedVersionException|"
    r"Received error .* in LeaderAndIsr response"
)

# Kafka's own failover when the dead broker was controller and leader: its successor's
# replica state machine starts (OfflineReplica: the dead leader removed from the ISR, leader
# -1, told to the followers) before its partition state machine elects the new leaders, and a
# Kafka follower logs this at ERROR. An all-Kafka cluster logs the same.
KAFKA_FAILOVER_ROUTINE = re.compile(
    r"but cannot become follower since the new leader -1 is unavailable"
)


def _address(cluster: ClusterHandle, broker_id: int) -> str:
    return f"127.0.0.1:{cluster.broker_port(broker_id)}"


def _java_partition(key: str, partition_count: int) -> int:
    """Kafka's `Utils.abs(key.hashCode) % partitionCount`, computed here independently of the
    broker code under test (keys are ASCII, so UTF-16 units are the characters)."""
    hash_code = 0
    for char in key:
        hash_code = (31 * hash_code + ord(char)) & 0xFFFFFFFF
    signed = hash_code - (1 << 32) if hash_code & 0x80000000 else hash_code
    return (0 if signed == -(1 << 31) else abs(signed)) % partition_count


def _state(zk: KazooClient, topic: str, partition: int) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    state: dict[str, Any] = json.loads(data)
    return state


def _replicas(zk: KazooClient, topic: str) -> dict[int, list[int]]:
    data, _ = zk.get(f"/brokers/topics/{topic}")
    return {int(p): list(r) for p, r in json.loads(data)["partitions"].items()}


def _fully_replicated(zk: KazooClient, topics: list[str]) -> bool:
    try:
        return all(
            sorted(_state(zk, topic, p)["isr"]) == list(BROKER_IDS)
            for topic in topics
            for p in _replicas(zk, topic)
        )
    except Exception:  # a topic or state znode not created yet
        return False


def _leaders(zk: KazooClient, topic: str) -> dict[int, int]:
    return {p: int(_state(zk, topic, p)["leader"]) for p in _replicas(zk, topic)}


def _controller(zk: KazooClient) -> int:
    data, _ = zk.get("/controller")
    return int(json.loads(data)["brokerid"])


def _view(cluster: ClusterHandle, broker_id: int, topics: list[str]) -> dict[str, Any]:
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


def _views(cluster: ClusterHandle, topics: list[str]) -> dict[int, dict[str, Any]]:
    return {broker_id: _view(cluster, broker_id, topics) for broker_id in BROKER_IDS}


def _wait_every_broker_agrees(cluster: ClusterHandle, zk: KazooClient, topics: list[str]) -> None:
    """Until every broker's Metadata shows what the state znodes say of `topics`."""

    def agreed() -> bool:
        wanted = {
            topic: {
                p: (int(s["leader"]), sorted(s["isr"]))
                for p in _replicas(zk, topic)
                for s in [_state(zk, topic, p)]
            }
            for topic in topics
        }
        return all(v["topics"] == wanted for v in _views(cluster, topics).values())

    wait_until(
        agreed,
        TIMEOUT_S,
        lambda: (
            f"every broker's Metadata to match the state znodes "
            f"{ {t: {p: _state(zk, t, p) for p in _replicas(zk, t)} for t in topics} }: "
            f"{_views(cluster, topics)}"
        ),
    )


def _coordinator(cluster: ClusterHandle, broker_id: int, key: str, key_type: int) -> int:
    """The coordinator `broker_id` names for `key` (-1 while it answers an error)."""
    with WireClient.to(_address(cluster, broker_id)) as client:
        response = client.request(FIND_COORDINATOR, 3, {"key": key, "key_type": key_type})
    return int(response.node_id) if int(response.error_code) == 0 else -1


def _wait_coordinator(cluster: ClusterHandle, key: str, key_type: int, wanted: int) -> None:
    """Until every live broker names `wanted` as `key`'s coordinator."""
    live = [b for b in BROKER_IDS if cluster.broker_alive(b)]
    wait_until(
        lambda: all(_coordinator(cluster, b, key, key_type) == wanted for b in live),
        TIMEOUT_S,
        lambda: (
            f"coordinator {wanted} for {key!r}: "
            f"{ {b: _coordinator(cluster, b, key, key_type) for b in live} }"
        ),
    )


def _key_on(
    prefix: str, topic: str, zk: KazooClient, wanted: Callable[[int, list[int], int], bool]
) -> str:
    """The first `prefix-N` whose `topic` partition (replicas, current leader) is `wanted`."""
    replicas = _replicas(zk, topic)
    leaders = _leaders(zk, topic)
    for n in range(1000):
        key = f"{prefix}-{n}"
        partition = _java_partition(key, len(replicas))
        if wanted(partition, replicas[partition], leaders[partition]):
            return key
    pytest.fail(f"no {prefix} key maps to a wanted {topic} partition: {replicas} {leaders}")


def _led_by(brokers: set[int]) -> Callable[[int, list[int], int], bool]:
    def wanted(_partition: int, _replicas: list[int], leader: int) -> bool:
        return leader in brokers

    return wanted


# ---- records ------------------------------------------------------------------------------


def _produce_plain(cluster: ClusterHandle, topic: str, values: dict[int, list[bytes]]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    failures: list[str] = []

    def on_delivery(error: Any, message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    for partition, batch in values.items():
        for value in batch:
            producer.produce(topic, value, partition=partition, on_delivery=on_delivery)
    assert producer.flush(TIMEOUT_S) == 0
    assert failures == []


def _consumer(bootstrap: str, group_id: str, read_committed: bool) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if read_committed else "read_uncommitted",
        }
    )


def _read_until_sentinel(
    consumer: Consumer, topic: str, sentinel: bytes
) -> dict[int, list[tuple[int, bytes]]]:
    """(offset, value) of each partition up to the `sentinel` record written last to each (a
    plain record after the transactions: a read_committed fetch reaches it only once every
    transaction before it is decided)."""
    read: dict[int, list[tuple[int, bytes]]] = {p: [] for p in ASSIGNMENT}
    done: set[int] = set()
    deadline = time.monotonic() + TIMEOUT_S
    while done != set(ASSIGNMENT):
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out reading {topic} to {sentinel!r}: {read}")
        message = consumer.poll(0.5)
        if message is None:
            continue
        assert message.error() is None, message.error()
        partition, value = message.partition(), message.value()
        assert partition is not None and value is not None
        if partition in done:
            continue
        if value == sentinel:
            done.add(partition)
        else:
            read[partition].append((message.offset() or 0, value))
    return read


def _read_committed_everywhere(
    cluster: ClusterHandle, round_name: str
) -> dict[int, dict[int, list[bytes]]]:
    """TXN_TOPIC as read_committed consumers bootstrapped on each live broker read it."""
    sentinel = f"sentinel-{round_name}".encode()
    _produce_plain(cluster, TXN_TOPIC, {p: [sentinel] for p in ASSIGNMENT})
    seen: dict[int, dict[int, list[bytes]]] = {}
    for broker_id in BROKER_IDS:
        if not cluster.broker_alive(broker_id):
            continue
        consumer = _consumer(_address(cluster, broker_id), f"reader-{round_name}", True)
        try:
            consumer.assign(
                [ConfluentPartition(TXN_TOPIC, p, OFFSET_BEGINNING) for p in ASSIGNMENT]
            )
            read = _read_until_sentinel(consumer, TXN_TOPIC, sentinel)
        finally:
            consumer.close()
        # Earlier rounds' sentinels are plain records too; leave them out.
        seen[broker_id] = {
            p: [v for _, v in records if not v.startswith(b"sentinel-")]
            for p, records in read.items()
        }
    return seen


def _txn_values(label: str) -> dict[int, list[bytes]]:
    return {p: [f"{label}-p{p}-{n}".encode() for n in range(5)] for p in ASSIGNMENT}


def _transactional_producer(cluster: ClusterHandle, transactional_id: str) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 120_000,
        }
    )
    producer.init_transactions(TIMEOUT_S)
    return producer


def _write_in_transaction(producer: Producer, values: dict[int, list[bytes]]) -> None:
    producer.begin_transaction()
    for partition, batch in values.items():
        for value in batch:
            producer.produce(TXN_TOPIC, value, partition=partition)
    assert producer.flush(TIMEOUT_S) == 0


def _committed_offsets(cluster: ClusterHandle, group_id: str) -> dict[int, int]:
    """OffsetFetch for `group_id` through its coordinator."""
    consumer = _consumer(cluster.bootstrap, group_id, False)
    try:
        found = consumer.committed(
            [ConfluentPartition(TOPIC, p) for p in ASSIGNMENT], timeout=TIMEOUT_S
        )
    finally:
        consumer.close()
    return {int(tp.partition): int(tp.offset) for tp in found}


def _resumed_first_records(cluster: ClusterHandle, group_id: str) -> dict[int, tuple[int, bytes]]:
    """The first (offset, value) a consumer of `group_id` reads from each partition when it
    resumes at the group's committed offsets."""
    consumer = _consumer(cluster.bootstrap, group_id, False)
    first: dict[int, tuple[int, bytes]] = {}
    try:
        consumer.assign([ConfluentPartition(TOPIC, p) for p in ASSIGNMENT])
        deadline = time.monotonic() + TIMEOUT_S
        while len(first) < len(ASSIGNMENT):
            if time.monotonic() >= deadline:
                pytest.fail(f"timed out resuming {group_id}: {first}")
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            partition, value = message.partition(), message.value()
            assert partition is not None and value is not None
            first.setdefault(partition, (message.offset() or 0, value))
    finally:
        consumer.close()
    return first


def _commit_offsets(cluster: ClusterHandle, group_id: str, offsets: dict[int, int]) -> None:
    consumer = _consumer(cluster.bootstrap, group_id, False)
    try:
        consumer.commit(
            offsets=[ConfluentPartition(TOPIC, p, o) for p, o in offsets.items()],
            asynchronous=False,
        )
    finally:
        consumer.close()


def _plain_value(partition: int, index: int) -> bytes:
    return f"p{partition}-{index}".encode()


# ---- the cluster --------------------------------------------------------------------------


class Shared:
    """What one test leaves for the next (the module's tests run in order on one cluster)."""

    committed: dict[int, list[bytes]]
    open_producer: Producer | None = None
    open_values: dict[int, list[bytes]]
    group_on_ours: str
    group_on_ours_offsets: dict[int, int]
    group_while_down: str
    group_while_down_offsets: dict[int, int]
    transaction_while_down: str
    producer_while_down: Producer | None = None
    values_while_down: dict[int, list[bytes]]


@pytest.fixture(scope="module")
def mixed(make_cluster_module: ClusterFactory) -> ClusterHandle:
    if not any(REFERENCE_LIB.glob("kafka_2.13-*.jar")):
        pytest.fail(f"Apache Kafka 3.9's jars are not in {REFERENCE_LIB}: run `make reference`")
    return make_cluster_module(impl=",".join(IMPLS.values()), overrides=OVERRIDES)


@pytest.fixture(scope="module")
def zk(mixed: ClusterHandle) -> Iterator[KazooClient]:
    with zk_session(mixed) as client:
        yield client


@pytest.fixture(scope="module")
def shared() -> Iterator[Shared]:
    state = Shared()
    state.committed = {p: [] for p in ASSIGNMENT}
    yield state
    for producer in (state.open_producer, state.producer_while_down):
        if producer is not None:
            producer.flush(0)


def test_our_broker_is_controller_and_every_topic_is_fully_replicated(
    mixed: ClusterHandle, zk: KazooClient
) -> None:
    assert _controller(zk) == OURS
    with WireClient.to(_address(mixed, OURS)) as client:
        specs = [
            topic_spec(name, -1, -1, {"min.insync.replicas": "2"}, ASSIGNMENT)
            for name in (TOPIC, TXN_TOPIC)
        ]
        created = create_topics(client, specs)
    assert [int(t.error_code) for t in created.topics] == [0, 0], created
    # The internal topics, created on first use (a FindCoordinator), here on Kafka's broker.
    for key_type in (GROUP_KEY, TRANSACTION_KEY):
        _coordinator(mixed, 2, "warm-up", key_type)
    topics = [TOPIC, TXN_TOPIC, OFFSETS_TOPIC, TXN_STATE_TOPIC]
    wait_until(lambda: _fully_replicated(zk, topics), TIMEOUT_S, f"{topics} in sync on 3 brokers")
    assert _leaders(zk, TOPIC) == {p: r[0] for p, r in ASSIGNMENT.items()}
    _wait_every_broker_agrees(mixed, zk, topics)
    assert {v["controller"] for v in _views(mixed, []).values()} == {OURS}
    _produce_plain(
        mixed,
        TOPIC,
        {p: [_plain_value(p, n) for n in range(RECORDS_PER_PARTITION)] for p in ASSIGNMENT},
    )


def test_transactions_from_either_coordinator_reach_either_implementations_leaders(
    mixed: ClusterHandle, zk: KazooClient, shared: Shared
) -> None:
    for impl, coordinators in (("ours", {OURS}), ("kafka", {2, 3})):
        transactional_id = _key_on(
            f"txn-{impl}",
            TXN_STATE_TOPIC,
            zk,
            _led_by(coordinators),
        )
        producer = _transactional_producer(mixed, transactional_id)
        coordinator = _coordinator(mixed, OURS, transactional_id, TRANSACTION_KEY)
        assert coordinator in coordinators, (impl, coordinator)
        committed, aborted = _txn_values(f"{impl}-commit"), _txn_values(f"{impl}-abort")
        _write_in_transaction(producer, committed)
        producer.commit_transaction(TIMEOUT_S)
        _write_in_transaction(producer, aborted)
        producer.abort_transaction(TIMEOUT_S)
        for p in ASSIGNMENT:
            shared.committed[p] += committed[p]
        if impl == "ours":
            shared.open_producer = producer
    seen = _read_committed_everywhere(mixed, "before-kill")
    assert seen == {b: shared.committed for b in BROKER_IDS}
    # Left open (after the read: it holds every partition's last stable offset) for the test
    # that kills its coordinator.
    assert shared.open_producer is not None
    shared.open_values = _txn_values("ours-open")
    _write_in_transaction(shared.open_producer, shared.open_values)


def test_group_offsets_committed_on_ours(
    mixed: ClusterHandle, zk: KazooClient, shared: Shared
) -> None:
    shared.group_on_ours = _key_on(
        "group-ours", OFFSETS_TOPIC, zk, lambda _p, _r, leader: leader == OURS
    )
    _wait_coordinator(mixed, shared.group_on_ours, GROUP_KEY, OURS)
    shared.group_on_ours_offsets = {0: 5, 1: 7, 2: 9}
    _commit_offsets(mixed, shared.group_on_ours, shared.group_on_ours_offsets)
    assert _committed_offsets(mixed, shared.group_on_ours) == shared.group_on_ours_offsets


def test_kafkas_controller_takes_over_when_our_controllers_broker_is_killed(
    mixed: ClusterHandle, zk: KazooClient
) -> None:
    mixed.kill(OURS, signal="KILL")
    wait_until(
        lambda: zk.exists("/controller") is not None and _controller(zk) in (2, 3),
        TIMEOUT_S,
        "a Kafka broker to become controller",
    )
    controller = _controller(zk)
    topics = [TOPIC, TXN_TOPIC, OFFSETS_TOPIC, TXN_STATE_TOPIC]
    wait_until(
        # (Kafka's controller writes leader -1 for broker 1's partitions before electing.)
        lambda: all(set(_leaders(zk, t).values()) <= {2, 3} for t in topics),
        TIMEOUT_S,
        lambda: f"leadership moved to Kafka's brokers: { {t: _leaders(zk, t) for t in topics} }",
    )

    def kafka_brokers_follow() -> bool:
        views = {b: _view(mixed, b, []) for b in (2, 3)}
        return all(v["controller"] == controller and v["brokers"] == [2, 3] for v in views.values())

    wait_until(kafka_brokers_follow, TIMEOUT_S, "Kafka's brokers to name the new controller")


def test_a_group_keeps_its_offsets_when_its_coordinator_moves_from_ours_to_kafka(
    mixed: ClusterHandle, zk: KazooClient, shared: Shared
) -> None:
    partition = _java_partition(shared.group_on_ours, INTERNAL_PARTITIONS)
    new_coordinator = _leaders(zk, OFFSETS_TOPIC)[partition]
    assert new_coordinator in (2, 3)
    _wait_coordinator(mixed, shared.group_on_ours, GROUP_KEY, new_coordinator)
    assert _committed_offsets(mixed, shared.group_on_ours) == shared.group_on_ours_offsets
    first = _resumed_first_records(mixed, shared.group_on_ours)
    assert first == {p: (o, _plain_value(p, o)) for p, o in shared.group_on_ours_offsets.items()}


def test_an_open_transaction_commits_through_kafkas_coordinator_after_ours_is_killed(
    mixed: ClusterHandle, shared: Shared
) -> None:
    producer = shared.open_producer
    assert producer is not None
    # The records were acknowledged (acks=all) before broker 1 died; the Kafka coordinator
    # that loaded ours' __transaction_state knows the transaction's partitions.
    producer.commit_transaction(TIMEOUT_S)
    for p in ASSIGNMENT:
        shared.committed[p] += shared.open_values[p]
    following = _txn_values("after-kill")
    _write_in_transaction(producer, following)
    producer.commit_transaction(TIMEOUT_S)
    for p in ASSIGNMENT:
        shared.committed[p] += following[p]
    seen = _read_committed_everywhere(mixed, "after-kill")
    assert seen == {2: shared.committed, 3: shared.committed}


def test_a_group_and_a_transaction_start_on_kafka_while_broker_1_is_down(
    mixed: ClusterHandle, zk: KazooClient, shared: Shared
) -> None:
    """Keys whose internal-topic partition prefers broker 1, led by a Kafka broker now."""
    shared.group_while_down = _key_on(
        "group-down", OFFSETS_TOPIC, zk, lambda _p, replicas, _l: replicas[0] == OURS
    )
    partition = _java_partition(shared.group_while_down, INTERNAL_PARTITIONS)
    _wait_coordinator(
        mixed, shared.group_while_down, GROUP_KEY, _leaders(zk, OFFSETS_TOPIC)[partition]
    )
    shared.group_while_down_offsets = {0: 3, 1: 11, 2: 13}
    _commit_offsets(mixed, shared.group_while_down, shared.group_while_down_offsets)
    assert _committed_offsets(mixed, shared.group_while_down) == shared.group_while_down_offsets

    transactional_id = _key_on(
        "txn-down", TXN_STATE_TOPIC, zk, lambda _p, replicas, _l: replicas[0] == OURS
    )
    shared.transaction_while_down = transactional_id
    producer = _transactional_producer(mixed, transactional_id)
    assert _coordinator(mixed, 2, transactional_id, TRANSACTION_KEY) in (2, 3)
    committed = _txn_values("down-commit")
    _write_in_transaction(producer, committed)
    producer.commit_transaction(TIMEOUT_S)
    for p in ASSIGNMENT:
        shared.committed[p] += committed[p]
    shared.values_while_down = _txn_values("down-open")
    _write_in_transaction(producer, shared.values_while_down)
    shared.producer_while_down = producer


def test_our_broker_restarted_rejoins_every_isr_under_kafkas_controller(
    mixed: ClusterHandle, zk: KazooClient
) -> None:
    controller = _controller(zk)
    mixed.start(OURS)
    topics = [TOPIC, TXN_TOPIC, OFFSETS_TOPIC, TXN_STATE_TOPIC]
    wait_until(
        lambda: _fully_replicated(zk, topics),
        TIMEOUT_S,
        lambda: f"broker 1 back in every ISR: { {t: _leaders(zk, t) for t in topics} }",
    )
    assert _controller(zk) == controller
    _wait_every_broker_agrees(mixed, zk, topics)
    assert {v["controller"] for v in _views(mixed, []).values()} == {controller}


def test_a_preferred_election_under_kafkas_controller_makes_ours_leader_again(
    mixed: ClusterHandle, zk: KazooClient
) -> None:
    assert _controller(zk) in (2, 3)  # Kafka's controller runs the election
    topics = [TOPIC, TXN_TOPIC, OFFSETS_TOPIC, TXN_STATE_TOPIC]
    preferring_ours = [
        ConfluentPartition(topic, p)
        for topic in topics
        for p, replicas in _replicas(zk, topic).items()
        if replicas[0] == OURS
    ]
    admin = AdminClient({"bootstrap.servers": _address(mixed, 2)})
    results = admin.elect_leaders(ElectionType.PREFERRED, preferring_ours).result(timeout=TIMEOUT_S)
    assert {str(tp): error for tp, error in results.items() if error is not None} == {}
    wait_until(
        lambda: all(_leaders(zk, tp.topic)[tp.partition] == OURS for tp in preferring_ours),
        TIMEOUT_S,
        lambda: f"broker 1 to lead {preferring_ours}: { {t: _leaders(zk, t) for t in topics} }",
    )
    assert _leaders(zk, TOPIC) == {p: r[0] for p, r in ASSIGNMENT.items()}
    _wait_every_broker_agrees(mixed, zk, topics)


def test_a_group_keeps_its_offsets_when_its_coordinator_moves_from_kafka_to_ours(
    mixed: ClusterHandle, shared: Shared
) -> None:
    _wait_coordinator(mixed, shared.group_while_down, GROUP_KEY, OURS)
    assert _committed_offsets(mixed, shared.group_while_down) == shared.group_while_down_offsets
    first = _resumed_first_records(mixed, shared.group_while_down)
    assert first == {p: (o, _plain_value(p, o)) for p, o in shared.group_while_down_offsets.items()}
    # The group committed on ours before the kill: its offsets came back through Kafka.
    assert _committed_offsets(mixed, shared.group_on_ours) == shared.group_on_ours_offsets


def test_a_transaction_opened_on_kafkas_coordinator_commits_through_ours(
    mixed: ClusterHandle, shared: Shared
) -> None:
    producer = shared.producer_while_down
    assert producer is not None
    _wait_coordinator(mixed, shared.transaction_while_down, TRANSACTION_KEY, OURS)
    producer.commit_transaction(TIMEOUT_S)
    for p in ASSIGNMENT:
        shared.committed[p] += shared.values_while_down[p]
    following, dropped = _txn_values("back-commit"), _txn_values("back-abort")
    _write_in_transaction(producer, following)
    producer.commit_transaction(TIMEOUT_S)
    _write_in_transaction(producer, dropped)
    producer.abort_transaction(TIMEOUT_S)
    for p in ASSIGNMENT:
        shared.committed[p] += following[p]
    seen = _read_committed_everywhere(mixed, "after-election")
    assert seen == {b: shared.committed for b in BROKER_IDS}


def _kafka_led_then_ours(_partition: int, replicas: list[int], leader: int) -> bool:
    """A partition led by its preferred Kafka replica, ours the next in line."""
    return leader == replicas[0] != OURS and replicas[1] == OURS


def _on_partition(wanted: int) -> Callable[[int, list[int], int], bool]:
    def on(partition: int, _replicas: list[int], _leader: int) -> bool:
        return partition == wanted

    return on


def test_a_transaction_open_on_a_killed_kafka_coordinator_commits_through_ours(
    mixed: ClusterHandle, zk: KazooClient, shared: Shared
) -> None:
    transactional_id = _key_on("txn-kafka-killed", TXN_STATE_TOPIC, zk, _kafka_led_then_ours)
    partition = _java_partition(transactional_id, INTERNAL_PARTITIONS)
    killed = _leaders(zk, TXN_STATE_TOPIC)[partition]
    producer = _transactional_producer(mixed, transactional_id)
    assert _coordinator(mixed, OURS, transactional_id, TRANSACTION_KEY) == killed
    opened = _txn_values("kafka-killed-open")
    _write_in_transaction(producer, opened)
    # A second transaction on the same coordinator whose producer goes away: its successor's
    # InitProducerId makes the next coordinator abort it.
    abandoned_id = _key_on("txn-abandoned", TXN_STATE_TOPIC, zk, _on_partition(partition))
    abandoned = _transactional_producer(mixed, abandoned_id)
    _write_in_transaction(abandoned, _txn_values("abandoned"))
    mixed.kill(killed, signal="KILL")
    live = {b for b in BROKER_IDS if b != killed}
    topics = [TOPIC, TXN_TOPIC, OFFSETS_TOPIC, TXN_STATE_TOPIC]
    wait_until(
        lambda: all(set(_leaders(zk, t).values()) <= live for t in topics),
        TIMEOUT_S,
        lambda: f"leadership off broker {killed}: { {t: _leaders(zk, t) for t in topics} }",
    )
    assert _leaders(zk, TXN_STATE_TOPIC)[partition] == OURS
    _wait_coordinator(mixed, transactional_id, TRANSACTION_KEY, OURS)
    # Ours loaded the Kafka coordinator's __transaction_state: the transaction's partitions.
    producer.commit_transaction(TIMEOUT_S)
    following = _txn_values("kafka-killed-next")
    _write_in_transaction(producer, following)
    producer.commit_transaction(TIMEOUT_S)
    successor = _transactional_producer(mixed, abandoned_id)
    after_abandoned = _txn_values("abandoned-successor")
    _write_in_transaction(successor, after_abandoned)
    successor.commit_transaction(TIMEOUT_S)
    for p in ASSIGNMENT:
        shared.committed[p] += opened[p] + following[p] + after_abandoned[p]
    seen = _read_committed_everywhere(mixed, "after-kafka-kill")
    assert seen == {b: shared.committed for b in sorted(live)}


def _lines(path: Path, pattern: re.Pattern[str]) -> list[str]:
    if not path.exists():
        return []
    return [
        line
        for line in path.read_text(errors="replace").splitlines()
        if pattern.search(line) and not KAFKA_FAILOVER_ROUTINE.search(line)
    ]


def test_neither_side_logs_errors_or_refusals(mixed: ClusterHandle) -> None:
    trouble: dict[str, list[str]] = {}
    for broker_id, impl in IMPLS.items():
        pattern = OUR_TROUBLE if impl == "ours" else KAFKA_TROUBLE
        for name in ("broker.log", "state-change.log"):
            found = _lines(mixed.dir / f"broker-{broker_id}" / name, pattern)
            if found:
                trouble[f"broker-{broker_id}/{name}"] = found
    assert trouble == {}, "\n".join(
        f"{name}: {line}" for name, lines in trouble.items() for line in lines
    )
