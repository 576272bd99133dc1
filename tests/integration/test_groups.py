"""Acceptance: the classic group coordinator driven by real consumer-group clients.

One module-scoped 3-broker cluster; every test has its own data topic (6 partitions, RF 3)
and group. Members that must be killed or stopped independently run as separate processes
(`group_member.py`), publishing their assignment and consumed offsets in a JSON state file.

Ownership samples are "double collects": every live member's state file is read twice in a
row and the sample is kept only when no member's assignment version changed in between, so
all of them held those assignments at one same instant (between the two passes). Members
publish conservatively (see group_member.py), so an overlap in such a sample is a real one.
A background sampler takes samples throughout the membership tests, rebalances included.

Measurements (group formation, rebalance after a member crash) are printed as `MEASURE ...`
lines; run with `-s` to see them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from broker.coordinator.group.records import partition_for
from tests.integration.client_roundtrip import kcat_command
from tests.integration.conftest import ClusterFactory, ClusterHandle, wait_until, zk_session

OFFSETS_PARTITIONS = 6
TOPIC_PARTITIONS = 6
REPLICATION_FACTOR = 3
ALL_PARTITIONS = frozenset(range(TOPIC_PARTITIONS))
# Members' session timeout: above group.min.session.timeout.ms, short so a crash is noticed
# within seconds.
MEMBER_SESSION_TIMEOUT_MS = 3000
CLUSTER_OVERRIDES = {
    "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
    "group.initial.rebalance.delay.ms": "500",
    # Bounds how long a SIGKILLed broker stays registered (and leads its partitions).
    "zookeeper.session.timeout.ms": "6000",
    "group.min.session.timeout.ms": "1000",
}
TIMEOUT_S = 60
CLIENT_TIMEOUT_S = 30.0
MEMBER_EXIT_TIMEOUT_S = 30.0
RESTARTED_COORDINATOR_TIMEOUT_S = 30.0
SAMPLE_INTERVAL_S = 0.02
MEMBER_SCRIPT = Path(__file__).with_name("group_member.py")
REPO_ROOT = Path(__file__).resolve().parents[2]
LOG_TAIL_LINES = 30
# librdkafka's "no committed offset" (OFFSET_INVALID).
NO_COMMITTED_OFFSET = -1001


@pytest.fixture(scope="module")
def group_cluster(make_cluster_module: ClusterFactory) -> ClusterHandle:
    cluster = make_cluster_module(overrides=CLUSTER_OVERRIDES)
    # The first FindCoordinator creates __consumer_offsets; have that done before any test, so
    # the group formation measured below does not include it.
    wait_until(
        lambda: _committed(cluster.bootstrap, "probe", "probe") is not None,
        TIMEOUT_S,
        "a group coordinator answering OffsetFetch",
    )
    return cluster


# -- topics, records, offsets -----------------------------------------------------------------


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new_topic = NewTopic(topic, TOPIC_PARTITIONS, REPLICATION_FACTOR)
    admin.create_topics([new_topic])[topic].result(timeout=CLIENT_TIMEOUT_S)


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    """`values[i]` goes to partition `i % TOPIC_PARTITIONS`, in order, acknowledged by all."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for index, value in enumerate(values):
        producer.produce(topic, value=value, partition=index % TOPIC_PARTITIONS)
    assert producer.flush(TIMEOUT_S) == 0, "records not acknowledged"


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int] | None:
    """The group's committed offsets, read by a consumer that never joins the group; None
    while the coordinator cannot answer (it is moving or loading)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        wanted = [TopicPartition(topic, p) for p in sorted(ALL_PARTITIONS)]
        found = consumer.committed(wanted, timeout=10)
    except KafkaException:
        return None
    finally:
        consumer.close()
    if any(tp.error is not None for tp in found):
        return None
    return {tp.partition: tp.offset for tp in found}


def _coordinator_id(cluster: ClusterHandle, group: str) -> int:
    """The leader of the group's __consumer_offsets partition, from its state znode."""
    offsets_partition = partition_for(group, OFFSETS_PARTITIONS)
    path = f"/brokers/topics/__consumer_offsets/partitions/{offsets_partition}/state"
    with zk_session(cluster) as zk:
        state = json.loads(zk.get(path)[0])
    return int(state["leader"])


def _offsets_partition_isr(cluster: ClusterHandle, group: str) -> list[int]:
    offsets_partition = partition_for(group, OFFSETS_PARTITIONS)
    path = f"/brokers/topics/__consumer_offsets/partitions/{offsets_partition}/state"
    with zk_session(cluster) as zk:
        return list(json.loads(zk.get(path)[0])["isr"])


def _registered(cluster: ClusterHandle, broker_id: int) -> bool:
    with zk_session(cluster) as zk:
        return zk.exists(f"/brokers/ids/{broker_id}") is not None


# -- member processes -------------------------------------------------------------------------


@dataclass
class Member:
    name: str
    process: subprocess.Popen[bytes]
    state_file: Path
    log_file: Path

    def state(self) -> dict[str, Any]:
        """The last state the member published; version 0 and nothing owned before its first."""
        try:
            loaded: dict[str, Any] = json.loads(self.state_file.read_text())
        except FileNotFoundError:
            return {"assignment_version": 0, "assigned": [], "consumed": {}}
        return loaded

    def consumed(self) -> dict[int, int]:
        return {int(p): offset for p, offset in self.state()["consumed"].items()}


Snapshot = dict[str, frozenset[int]]


@dataclass
class Members:
    """Member processes of one group, and a sampler checking that no partition ever has two
    owners at one instant."""

    directory: Path
    bootstrap: str
    group: str
    topic: str
    client: str
    assignor: str
    live: list[Member] = field(default_factory=list)
    overlaps: list[Snapshot] = field(default_factory=list)
    sample_count: int = 0
    partial_sample_count: int = 0  # samples in which some partition had no owner
    _started: list[Member] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop_sampling: threading.Event = field(default_factory=threading.Event)
    _sampler: threading.Thread | None = None

    def start(self, name: str) -> Member:
        number = len(self._started)
        state_file = self.directory / f"{name}-{number}.json"
        log_file = self.directory / f"{name}-{number}.log"
        command = [sys.executable, str(MEMBER_SCRIPT), "--client", self.client]
        command += ["--assignor", self.assignor, "--bootstrap", self.bootstrap]
        command += ["--group", self.group, "--topic", self.topic]
        command += ["--state-file", str(state_file)]
        command += ["--session-timeout-ms", str(MEMBER_SESSION_TIMEOUT_MS)]
        with log_file.open("wb") as log:
            process = subprocess.Popen(
                command, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        member = Member(name, process, state_file, log_file)
        self._started.append(member)
        with self._lock:
            self.live.append(member)
        return member

    def stop(self, member: Member) -> None:
        """SIGTERM: the member publishes an empty assignment, then leaves the group."""
        member.process.send_signal(signal.SIGTERM)
        exit_code = member.process.wait(timeout=MEMBER_EXIT_TIMEOUT_S)
        assert exit_code == 0, f"member {member.name} exited {exit_code}\n{self.logs()}"
        with self._lock:
            self.live.remove(member)

    def kill(self, member: Member) -> float:
        """SIGKILL; returns when it was sent (time.time()). Its stale state file is no longer
        sampled: a dead process owns nothing."""
        with self._lock:
            self.live.remove(member)
        killed_at = time.time()
        member.process.kill()
        member.process.wait(timeout=MEMBER_EXIT_TIMEOUT_S)
        return killed_at

    def snapshot(self) -> Snapshot | None:
        """Every live member's assignment at one instant, or None if one changed meanwhile."""
        with self._lock:
            members = list(self.live)
        first = [member.state() for member in members]
        second = [member.state() for member in members]
        if any(
            a["assignment_version"] != b["assignment_version"]
            for a, b in zip(first, second, strict=True)
        ):
            return None
        return {m.name: frozenset(s["assigned"]) for m, s in zip(members, second, strict=True)}

    def check_sample(self) -> Snapshot | None:
        snapshot = self.snapshot()
        if snapshot is not None:
            self.sample_count += 1
            if frozenset().union(*snapshot.values()) != ALL_PARTITIONS:
                self.partial_sample_count += 1
            owned = [p for assigned in snapshot.values() for p in assigned]
            if len(owned) != len(set(owned)):
                self.overlaps.append(snapshot)
        return snapshot

    def start_sampling(self) -> None:
        def sample() -> None:
            while not self._stop_sampling.wait(SAMPLE_INTERVAL_S):
                self.check_sample()

        self._sampler = threading.Thread(target=sample, name="ownership-sampler", daemon=True)
        self._sampler.start()

    def wait_for_split(self, owner_count: int, what: str) -> Snapshot:
        """Wait until the live members (`owner_count` of them) own all partitions, equally
        and each partition once; fail at once on any overlapping sample."""
        found: list[Snapshot] = []

        def split() -> bool:
            assert not self.overlaps, f"a partition had two owners at once: {self.overlaps}"
            snapshot = self.check_sample()
            if snapshot is None or len(snapshot) != owner_count:
                return False
            sizes = {len(assigned) for assigned in snapshot.values()}
            union = frozenset().union(*snapshot.values())
            if sizes == {TOPIC_PARTITIONS // owner_count} and union == ALL_PARTITIONS:
                found.append(snapshot)
                return True
            return False

        wait_until(split, TIMEOUT_S, what)
        return found[0]

    def last_assignment_change(self) -> float:
        with self._lock:
            members = list(self.live)
        return max(float(member.state()["assignment_changed_at"]) for member in members)

    def first_subscribe(self) -> float:
        return min(float(member.state()["subscribed_at"]) for member in self._started)

    def consumed(self) -> dict[int, int]:
        """The highest offset any member (live or not) consumed, per partition."""
        highest: dict[int, int] = {}
        for member in self._started:
            for partition, offset in member.consumed().items():
                highest[partition] = max(offset, highest.get(partition, -1))
        return highest

    def close(self) -> None:
        self._stop_sampling.set()
        if self._sampler is not None:
            self._sampler.join(timeout=MEMBER_EXIT_TIMEOUT_S)
        for member in self._started:
            if member.process.poll() is None:
                member.process.kill()
                member.process.wait(timeout=MEMBER_EXIT_TIMEOUT_S)

    def logs(self) -> str:
        sections = []
        for member in self._started:
            lines = member.log_file.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
            state = member.state_file.read_text() if member.state_file.exists() else "(none)"
            sections.append(f"--- {member.log_file.name}\n" + "\n".join(lines))
            sections.append(f"--- {member.state_file.name}: {state}")
        return "\n".join(sections)


@pytest.fixture
def make_members(tmp_path: Path, group_cluster: ClusterHandle) -> Iterator[Callable[..., Members]]:
    """`make_members(topic, client, assignor)`: a Members for a new group; every process it
    started is killed at teardown, and member logs are printed (shown if the test failed)."""
    created: list[Members] = []

    def make(topic: str, client: str = "confluent", assignor: str = "range") -> Members:
        directory = tmp_path / f"members-{len(created)}"
        directory.mkdir()
        members = Members(
            directory, group_cluster.bootstrap, _unique("group"), topic, client, assignor
        )
        created.append(members)
        return members

    try:
        yield make
    finally:
        for members in created:
            members.close()
            print(members.logs())


def _measure(what: str, milliseconds: float) -> None:
    print(f"MEASURE {what}: {milliseconds:.0f} ms")


# -- tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client", "assignor"),
    [("confluent", "range"), ("confluent", "cooperative-sticky"), ("kafka-python", "range")],
)
def test_three_members_in_separate_processes_share_partitions_without_overlap(
    group_cluster: ClusterHandle,
    make_members: Callable[..., Members],
    client: str,
    assignor: str,
) -> None:
    topic = _unique("share")
    _create_topic(group_cluster.bootstrap, topic)
    members = make_members(topic, client, assignor)
    members.start_sampling()
    first, second, third = (members.start(name) for name in ("a", "b", "c"))

    members.wait_for_split(3, f"3 {client}/{assignor} members splitting {TOPIC_PARTITIONS} parts")
    formed_ms = (members.last_assignment_change() - members.first_subscribe()) * 1000
    _measure(f"3-member group formation ({client}/{assignor}), first subscribe to split", formed_ms)

    members.stop(second)
    members.wait_for_split(2, "the 2 remaining members taking over the stopped member's parts")

    members.start("b")
    members.wait_for_split(3, "a 3-way split again after the stopped member came back")

    assert not members.overlaps, f"a partition had two owners at once: {members.overlaps}"
    assert members.sample_count > 0
    print(
        f"ownership samples: {members.sample_count}, "
        f"{members.partial_sample_count} of them with a partition unowned (mid-rebalance)"
    )
    assert first.process.poll() is None and third.process.poll() is None


def test_member_killed_with_sigkill_loses_its_partitions_after_session_timeout(
    group_cluster: ClusterHandle, make_members: Callable[..., Members]
) -> None:
    topic = _unique("crash")
    _create_topic(group_cluster.bootstrap, topic)
    members = make_members(topic)
    members.start_sampling()
    for name in ("a", "b", "c"):
        members.start(name)
    members.wait_for_split(3, "3 members splitting the partitions")
    victim = members.live[1]

    killed_at = members.kill(victim)
    survivors = members.wait_for_split(2, "the 2 survivors owning all partitions")

    assert victim.name not in survivors
    assert all(member.process.poll() is None for member in members.live)
    admin = AdminClient({"bootstrap.servers": group_cluster.bootstrap})
    group = members.group
    description = admin.describe_consumer_groups([group])[group].result(timeout=CLIENT_TIMEOUT_S)
    assert description.state == ConsumerGroupState.STABLE
    assert len(description.members) == len(survivors)  # the coordinator dropped the dead one
    rebalance_ms = (members.last_assignment_change() - killed_at) * 1000
    _measure("rebalance after a member's SIGKILL, kill to survivors owning all", rebalance_ms)
    assert not members.overlaps, f"a partition had two owners at once: {members.overlaps}"


def test_restarted_consumer_resumes_right_after_its_last_commit(
    group_cluster: ClusterHandle,
) -> None:
    topic, group = _unique("resume"), _unique("group")
    bootstrap = group_cluster.bootstrap
    _create_topic(bootstrap, topic)
    old = [b"old-%d" % index for index in range(30)]
    new = [b"new-%d" % index for index in range(12)]
    _produce(bootstrap, topic, old)
    settings = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": MEMBER_SESSION_TIMEOUT_MS,
    }

    first = Consumer(settings)
    try:
        first.subscribe([topic])
        read = _consume(first, len(old))
        assert sorted(read) == sorted(old)
        first.commit(asynchronous=False)
        per_partition = len(old) // TOPIC_PARTITIONS
        assert _committed(bootstrap, group, topic) == dict.fromkeys(ALL_PARTITIONS, per_partition)
    finally:
        first.close()

    _produce(bootstrap, topic, new)
    second = Consumer(settings)
    try:
        second.subscribe([topic])
        assert sorted(_consume(second, len(new))) == sorted(new)
        positions = second.position([TopicPartition(topic, p) for p in sorted(ALL_PARTITIONS)])
        end = (len(old) + len(new)) // TOPIC_PARTITIONS
        assert {tp.partition: tp.offset for tp in positions} == dict.fromkeys(ALL_PARTITIONS, end)
    finally:
        second.close()


def _consume(consumer: Consumer, count: int) -> list[bytes]:
    """The first `count` record values the consumer polls, within TIMEOUT_S."""
    values: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(values) < count:
        assert time.monotonic() < deadline, f"only {len(values)} of {count} records consumed"
        for message in consumer.consume(num_messages=count - len(values), timeout=0.5):
            value = message.value()
            assert message.error() is None and value is not None, message.error()
            values.append(value)
    return values


def test_group_whose_members_closed_is_empty_and_can_be_deleted(
    group_cluster: ClusterHandle, make_members: Callable[..., Members]
) -> None:
    bootstrap = group_cluster.bootstrap
    topic = _unique("empty")
    _create_topic(bootstrap, topic)
    _produce(bootstrap, topic, [b"e-%d" % index for index in range(12)])
    members = make_members(topic)
    started = [members.start(name) for name in ("a", "b")]
    members.wait_for_split(2, "2 members splitting the partitions")
    wait_until(
        lambda: members.consumed() == dict.fromkeys(ALL_PARTITIONS, 1), TIMEOUT_S, "all consumed"
    )
    # A closing member commits what it consumed, so the group has offsets to delete too.
    for member in started:
        members.stop(member)
    group = members.group
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def describe() -> Any:
        return admin.describe_consumer_groups([group])[group].result(timeout=CLIENT_TIMEOUT_S)

    descriptions: list[Any] = []

    def empty() -> bool:
        descriptions.append(describe())
        return bool(descriptions[-1].state == ConsumerGroupState.EMPTY)

    wait_until(empty, TIMEOUT_S, f"{group} described as Empty after its members closed")
    assert descriptions[-1].members == []
    listed = admin.list_consumer_groups().result(timeout=CLIENT_TIMEOUT_S)
    assert (group, ConsumerGroupState.EMPTY) in [(g.group_id, g.state) for g in listed.valid]
    assert _committed(bootstrap, group, topic) == dict.fromkeys(ALL_PARTITIONS, 2)

    admin.delete_consumer_groups([group])[group].result(timeout=CLIENT_TIMEOUT_S)

    listed = admin.list_consumer_groups().result(timeout=CLIENT_TIMEOUT_S)
    assert group not in [g.group_id for g in listed.valid]
    # DescribeGroups v0-v5 describe an unknown group as Dead, without an error.
    assert describe().state == ConsumerGroupState.DEAD
    assert _committed(bootstrap, group, topic) == dict.fromkeys(ALL_PARTITIONS, NO_COMMITTED_OFFSET)


def _controller_id(cluster: ClusterHandle) -> int:
    with zk_session(cluster) as zk:
        return int(json.loads(zk.get("/controller")[0])["brokerid"])


def _group_coordinated_by(cluster: ClusterHandle, wanted: Callable[[int], bool]) -> str:
    """A new group id whose offsets partition is led by a broker `wanted` accepts."""
    with zk_session(cluster) as zk:
        leaders = {
            partition: json.loads(
                zk.get(f"/brokers/topics/__consumer_offsets/partitions/{partition}/state")[0]
            )["leader"]
            for partition in range(OFFSETS_PARTITIONS)
        }
    while True:
        group = _unique("group")
        if wanted(leaders[partition_for(group, OFFSETS_PARTITIONS)]):
            return group


@pytest.mark.parametrize(
    ("assignor", "coordinator_is_controller"),
    [("range", False), ("cooperative-sticky", False), ("range", True)],
)
def test_group_described_empty_after_its_killed_coordinator_restarts_and_members_close(
    group_cluster: ClusterHandle,
    make_members: Callable[..., Members],
    assignor: str,
    coordinator_is_controller: bool,
) -> None:
    bootstrap = group_cluster.bootstrap
    topic = _unique("restart")
    _create_topic(bootstrap, topic)
    per_partition = 2
    _produce(bootstrap, topic, [b"r-%d" % i for i in range(per_partition * TOPIC_PARTITIONS)])
    members = make_members(topic, assignor=assignor)
    controller = _controller_id(group_cluster)
    members.group = _group_coordinated_by(
        group_cluster, lambda leader: (leader == controller) == coordinator_is_controller
    )
    group = members.group
    started = [members.start(name) for name in ("a", "b")]
    members.wait_for_split(2, "2 members splitting the partitions")
    wait_until(
        lambda: len(_offsets_partition_isr(group_cluster, group)) == REPLICATION_FACTOR,
        TIMEOUT_S,
        "a full ISR on the group's offsets partition",
    )
    coordinator = _coordinator_id(group_cluster, group)
    assert (coordinator == controller) == coordinator_is_controller
    group_cluster.kill(coordinator, "KILL")
    try:
        wait_until(
            lambda: _coordinator_id(group_cluster, group) not in (coordinator, -1),
            TIMEOUT_S,
            "a new leader of the group's offsets partition",
        )
        wait_until(
            lambda: (
                _committed(bootstrap, group, topic) == dict.fromkeys(ALL_PARTITIONS, per_partition)
            ),
            TIMEOUT_S,
            "the members' commits of everything on the new coordinator",
        )
    finally:
        group_cluster.start(coordinator)
    wait_until(
        lambda: coordinator in _offsets_partition_isr(group_cluster, group),
        TIMEOUT_S,
        f"restarted broker {coordinator} back in the offsets partition's ISR",
    )
    for member in started:
        members.stop(member)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    answers: list[Any] = []

    def empty() -> bool:
        try:
            answers.append(
                admin.describe_consumer_groups([group])[group].result(timeout=CLIENT_TIMEOUT_S)
            )
        except KafkaException as error:
            answers.append(error)
            return False
        return bool(answers[-1].state == ConsumerGroupState.EMPTY)

    # Kafka 3.9 answers within a few seconds; the bound only allows for a loaded machine.
    deadline = time.monotonic() + RESTARTED_COORDINATOR_TIMEOUT_S
    while not empty():
        assert time.monotonic() < deadline, f"{group} not described as Empty: {answers[-3:]}"
        time.sleep(0.2)
    assert _committed(bootstrap, group, topic) == dict.fromkeys(ALL_PARTITIONS, per_partition)


def test_kcat_balanced_consumer_reads_every_record(group_cluster: ClusterHandle) -> None:
    bootstrap = group_cluster.bootstrap
    topic, group = _unique("kcat"), _unique("group")
    _create_topic(bootstrap, topic)
    values = [b"kcat-%d" % index for index in range(60)]
    _produce(bootstrap, topic, values)

    command = [kcat_command(), "-b", bootstrap, "-G", group, topic, "-o", "beginning", "-e", "-q"]
    command += ["-f", r"%p %o %s\n"]
    result = subprocess.run(
        command, capture_output=True, timeout=TIMEOUT_S, check=False, stdin=subprocess.DEVNULL
    )

    assert result.returncode == 0, result.stderr.decode(errors="replace")
    lines = result.stdout.decode().splitlines()
    expected = [
        f"{index % TOPIC_PARTITIONS} {index // TOPIC_PARTITIONS} kcat-{index}"
        for index in range(len(values))
    ]
    assert sorted(lines) == sorted(expected)


def test_coordinator_killed_keeps_committed_offsets_and_group_continues(
    group_cluster: ClusterHandle, make_members: Callable[..., Members]
) -> None:
    bootstrap = group_cluster.bootstrap
    topic = _unique("failover")
    _create_topic(bootstrap, topic)
    per_partition = 10
    _produce(bootstrap, topic, [b"before-%d" % i for i in range(per_partition * TOPIC_PARTITIONS)])
    members = make_members(topic)
    started = [members.start(name) for name in ("a", "b")]
    group = members.group
    members.wait_for_split(2, "2 members splitting the partitions")
    consumed_before = dict.fromkeys(ALL_PARTITIONS, per_partition - 1)
    wait_until(lambda: members.consumed() == consumed_before, TIMEOUT_S, "all records consumed")
    committed_before = dict.fromkeys(ALL_PARTITIONS, per_partition)
    wait_until(
        lambda: _committed(bootstrap, group, topic) == committed_before,
        TIMEOUT_S,
        "the members' auto-commits of everything they consumed",
    )
    coordinator = _coordinator_id(group_cluster, group)
    wait_until(
        lambda: len(_offsets_partition_isr(group_cluster, group)) == REPLICATION_FACTOR,
        TIMEOUT_S,
        "a full ISR on the group's offsets partition",
    )

    group_cluster.kill(coordinator, "KILL")
    try:
        _produce(
            bootstrap, topic, [b"after-%d" % i for i in range(per_partition * TOPIC_PARTITIONS)]
        )
        wait_until(
            lambda: _coordinator_id(group_cluster, group) not in (coordinator, -1),
            TIMEOUT_S,
            "a new leader of the group's offsets partition",
        )
        found: list[dict[int, int]] = []

        def read_committed() -> bool:
            committed = _committed(bootstrap, group, topic)
            if committed is not None:
                found.append(committed)
            return committed is not None

        wait_until(read_committed, TIMEOUT_S, "committed offsets from the new coordinator")
        for partition in ALL_PARTITIONS:
            assert found[0][partition] >= committed_before[partition], found[0]

        consumed_after = dict.fromkeys(ALL_PARTITIONS, 2 * per_partition - 1)
        wait_until(
            lambda: members.consumed() == consumed_after,
            TIMEOUT_S,
            "the members consuming the records produced after the kill",
        )
        wait_until(
            lambda: (
                _committed(bootstrap, group, topic)
                == dict.fromkeys(ALL_PARTITIONS, 2 * per_partition)
            ),
            TIMEOUT_S,
            "the members' commits on the new coordinator",
        )
        new_coordinator = _coordinator_id(group_cluster, group)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        description = admin.describe_consumer_groups([group])[group].result(
            timeout=CLIENT_TIMEOUT_S
        )
        assert description.coordinator.id == new_coordinator != coordinator
        assert description.state == ConsumerGroupState.STABLE
        assert len(description.members) == len(started)
        assert all(member.process.poll() is None for member in started)
    finally:
        group_cluster.start(coordinator)
        wait_until(
            lambda: _registered(group_cluster, coordinator),
            TIMEOUT_S,
            f"broker {coordinator} registered again",
        )
