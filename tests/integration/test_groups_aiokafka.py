"""Acceptance: the classic group coordinator driven by aiokafka consumer-group members.

One module-scoped 3-broker cluster; every test has its own data topic (6 partitions, RF 3)
and group. Both members of a group are AIOKafkaConsumers in one event loop (each test body
runs under `asyncio.run`). Because the loop is single-threaded, reading both members'
`assignment()` one after the other, with no `await` in between, is a sample of one instant.
aiokafka keeps a member's old assignment until its new one arrives, so a sample taken in the
middle of a rebalance may be stale; the tests only wait for the settled split.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError

from tests.integration.conftest import ClusterFactory, ClusterHandle

OFFSETS_PARTITIONS = 6
TOPIC_PARTITIONS = 6
REPLICATION_FACTOR = 3
ALL_PARTITIONS = frozenset(range(TOPIC_PARTITIONS))
CLUSTER_OVERRIDES = {
    "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
    "group.initial.rebalance.delay.ms": "500",
    "group.min.session.timeout.ms": "1000",
    "zookeeper.session.timeout.ms": "6000",
}
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500
REQUEST_TIMEOUT_MS = 10000
TIMEOUT_S = 30.0
POLL_TIMEOUT_MS = 100
PROBE_INTERVAL_S = 0.1
RECORDS_PER_PARTITION = 10


@pytest.fixture(scope="module")
def group_cluster(make_cluster_module: ClusterFactory) -> ClusterHandle:
    cluster = make_cluster_module(overrides=CLUSTER_OVERRIDES)
    # The first FindCoordinator creates __consumer_offsets; have a coordinator answering
    # before any test, so the tests do not race its creation.
    asyncio.run(_wait_for_coordinator(cluster.bootstrap))
    return cluster


async def _eventually(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    """The async `wait_until`: poll `condition` until true, fail after TIMEOUT_S."""
    deadline = time.monotonic() + TIMEOUT_S
    while not await condition():
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {TIMEOUT_S:.0f} s waiting for {what}")
        await asyncio.sleep(PROBE_INTERVAL_S)


async def _wait_for_coordinator(bootstrap: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=REQUEST_TIMEOUT_MS)
    await admin.start()
    try:

        async def answers() -> bool:
            try:
                await admin.find_coordinator("probe")
            except KafkaError:
                return False
            return True

        await _eventually(answers, "FindCoordinator answering without an error")
    finally:
        await admin.close()


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _partitions(topic: str) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in sorted(ALL_PARTITIONS)]


async def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=REQUEST_TIMEOUT_MS)
    await admin.start()
    try:
        response = await admin.create_topics(
            [NewTopic(topic, TOPIC_PARTITIONS, REPLICATION_FACTOR)]
        )
    finally:
        await admin.close()
    errors = [(error[0], error[1]) for error in response.topic_errors]
    assert errors == [(topic, 0)], f"CreateTopics answered {response}"


async def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    """`values[i]` goes to partition `i % TOPIC_PARTITIONS`, in order, acknowledged by all."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for index, value in enumerate(values):
            sent = await producer.send(topic, value=value, partition=index % TOPIC_PARTITIONS)
            await asyncio.wait_for(sent, TIMEOUT_S)
    finally:
        await producer.stop()


@dataclass(frozen=True)
class Consumed:
    member: str
    partition: int
    offset: int
    value: bytes | None


@dataclass
class Group:
    """The members of one group, all in this event loop, and every record they consumed."""

    bootstrap: str
    group: str
    topic: str
    members: dict[str, AIOKafkaConsumer] = field(default_factory=dict)
    consumed: list[Consumed] = field(default_factory=list)

    async def join(self, name: str) -> AIOKafkaConsumer:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            request_timeout_ms=REQUEST_TIMEOUT_MS,
        )
        await consumer.start()
        self.members[name] = consumer
        consumer.subscribe([self.topic])
        return consumer

    async def leave(self, name: str) -> None:
        """`stop()`: the member leaves the group (LeaveGroup) and closes."""
        await self.members.pop(name).stop()

    def owned(self) -> dict[str, frozenset[int]]:
        """Every member's assignment at this instant (nothing awaits while reading them)."""
        return {
            name: frozenset(tp.partition for tp in consumer.assignment())
            for name, consumer in self.members.items()
        }

    async def poll(self) -> None:
        for name, consumer in list(self.members.items()):
            batches = await consumer.getmany(timeout_ms=POLL_TIMEOUT_MS)
            for tp, records in batches.items():
                assert tp.topic == self.topic
                self.consumed.extend(
                    Consumed(name, record.partition, record.offset, record.value)
                    for record in records
                )

    async def poll_until(self, condition: Callable[[], bool], what: str) -> None:
        """Keep every member polling (getmany) until `condition`, for at most TIMEOUT_S."""
        deadline = time.monotonic() + TIMEOUT_S
        while not condition():
            if time.monotonic() >= deadline:
                pytest.fail(
                    f"timed out after {TIMEOUT_S:.0f} s waiting for {what}; "
                    f"owned: {self.owned()}, consumed: {len(self.consumed)} records"
                )
            await self.poll()

    def split_evenly(self) -> bool:
        """Every member owns an equal share of the partitions, each partition exactly once."""
        owned = self.owned()
        if not owned:
            return False
        share = TOPIC_PARTITIONS // len(owned)
        listed = [p for partitions in owned.values() for p in partitions]
        return (
            all(len(partitions) == share for partitions in owned.values())
            and len(listed) == len(set(listed))
            and frozenset(listed) == ALL_PARTITIONS
        )

    async def close(self) -> None:
        for name in list(self.members):
            await self.leave(name)


@contextlib.asynccontextmanager
async def _group(bootstrap: str, topic: str) -> AsyncIterator[Group]:
    group = Group(bootstrap, _unique("group"), topic)
    try:
        yield group
    finally:
        await group.close()


async def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int | None]:
    """The group's committed offsets, read by a fresh consumer that never joins the group."""
    reader = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
    )
    await reader.start()
    try:
        return {
            tp.partition: await asyncio.wait_for(reader.committed(tp), TIMEOUT_S)
            for tp in _partitions(topic)
        }
    finally:
        await reader.stop()


async def _end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=REQUEST_TIMEOUT_MS)
    await reader.start()
    try:
        ends = await asyncio.wait_for(reader.end_offsets(_partitions(topic)), TIMEOUT_S)
    finally:
        await reader.stop()
    return {tp.partition: offset for tp, offset in ends.items()}


# -- tests ------------------------------------------------------------------------------------


def test_aiokafka_group_of_two_splits_partitions_and_commits(
    group_cluster: ClusterHandle,
) -> None:
    asyncio.run(_two_members_split_and_commit(group_cluster.bootstrap))


async def _two_members_split_and_commit(bootstrap: str) -> None:
    topic = _unique("aio-split")
    await _create_topic(bootstrap, topic)
    values = [b"v-%d" % index for index in range(RECORDS_PER_PARTITION * TOPIC_PARTITIONS)]

    async with _group(bootstrap, topic) as group:
        first, second = await group.join("a"), await group.join("b")
        await group.poll_until(group.split_evenly, "2 members splitting 6 partitions 3 and 3")
        split = group.owned()

        # Produced only once the split is settled: a record fetched, uncommitted, by a member
        # that then lost its partition would legitimately be read again by the new owner.
        await _produce(bootstrap, topic, values)
        await group.poll_until(
            lambda: len(group.consumed) >= len(values), f"the {len(values)} records consumed"
        )

        assert group.owned() == split, "the group rebalanced while consuming"
        positions = [(record.partition, record.offset) for record in group.consumed]
        assert len(positions) == len(set(positions)), "a record was consumed twice"
        assert sorted(record.value or b"" for record in group.consumed) == sorted(values)
        for record in group.consumed:
            assert record.partition in split[record.member], (
                f"{record} consumed by a member not owning partition {record.partition}"
            )
        ends = await _end_offsets(bootstrap, topic)
        assert ends == dict.fromkeys(ALL_PARTITIONS, RECORDS_PER_PARTITION)
        # Each member's position is at the end of each of its partitions: nothing more to
        # fetch, so no record can come again later either.
        for name, member in (("a", first), ("b", second)):
            for partition in split[name]:
                assert await member.position(TopicPartition(topic, partition)) == ends[partition]

        await first.commit()
        await second.commit()

        assert await _committed(bootstrap, group.group, topic) == ends


def test_aiokafka_member_leaving_hands_its_partitions_to_the_other(
    group_cluster: ClusterHandle,
) -> None:
    asyncio.run(_member_leaves(group_cluster.bootstrap))


async def _member_leaves(bootstrap: str) -> None:
    topic = _unique("aio-leave")
    await _create_topic(bootstrap, topic)

    async with _group(bootstrap, topic) as group:
        await group.join("a")
        remaining = await group.join("b")
        await group.poll_until(group.split_evenly, "2 members splitting 6 partitions 3 and 3")
        left_behind = group.owned()["a"]
        assert left_behind

        await group.leave("a")
        await group.poll_until(
            lambda: group.owned() == {"b": ALL_PARTITIONS},
            "the remaining member owning all 6 partitions",
        )

        # It really fetches the partitions it was handed: one new record on every partition.
        values = [b"after-%d" % p for p in sorted(ALL_PARTITIONS)]
        await _produce(bootstrap, topic, values)
        await group.poll_until(
            lambda: {record.partition for record in group.consumed} == ALL_PARTITIONS,
            "the remaining member consuming a record from every partition",
        )
        assert {record.member for record in group.consumed} == {"b"}
        assert sorted(record.value or b"" for record in group.consumed) == sorted(values)
        assert {tp.partition for tp in remaining.assignment()} == ALL_PARTITIONS
