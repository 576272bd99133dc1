"""ISR change propagation against real ZooKeeper and broker processes: a leader's conditional
write of the partition state plus an /isr_change_notification child is consumed by the active
controller; and the KafkaZk operations behind it, in a private chroot of the same ZooKeeper.

The cluster tests only assert that notifications are consumed: brokers may rewrite the ISR
themselves (replication), so the ISR found afterwards is not asserted."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from kazoo.client import KazooClient

from tests.integration.conftest import ClusterHandle
from tests.integration.requests import topic_spec
from tests.integration.wire import WireClient, controller_address, create_topics
from zk.client import ZkClient
from zk.errors import BadVersionError, ControllerMovedError, NoNodeError
from zk.kafka_zk import KafkaZk
from zk.znodes import (
    IsrChangeNotificationSequenceZNode,
    IsrChangeNotificationZNode,
    PartitionState,
    TopicPartitionStateZNode,
)

# ZooKeeper's ISR change notifications and a topic are written here behind the brokers.
pytestmark = pytest.mark.own_cluster

TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.1
# A leader's conditional write may race the controller's (or another broker's) writes.
LEADER_WRITE_ATTEMPTS = 10
_chroots = itertools.count()


@asynccontextmanager
async def kafka_zk_session(connect: str) -> AsyncIterator[KafkaZk]:
    client = ZkClient(connect, session_timeout_ms=6000)
    await client.start()
    try:
        kafka_zk = KafkaZk(client)
        await kafka_zk.ensure_persistent_paths()
        yield kafka_zk
    finally:
        await client.close()


async def eventually(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {TIMEOUT_S:.0f} s waiting for {what}")
        await asyncio.sleep(POLL_INTERVAL_S)


def _create_topic(cluster: ClusterHandle, name: str, partitions: int, replication: int) -> None:
    with WireClient.to(controller_address(cluster)) as client:
        response = create_topics(client, [topic_spec(name, partitions, replication)])
        assert int(response.topics[0].error_code) == 0


async def _shrink_isr_as_leader(kafka_zk: KafkaZk, topic: str, partition: int) -> None:
    """Drop one follower from the ISR the way a leader does: read, conditional write keeping
    leader, leader epoch and controller epoch, then notify the controller."""
    for _ in range(LEADER_WRITE_ATTEMPTS):
        found = (await kafka_zk.get_partition_states(topic, [partition]))[partition]
        assert found is not None
        current, zk_version = found
        followers = [replica for replica in current.isr if replica != current.leader]
        assert followers, f"no follower in the ISR of {topic}-{partition}: {current}"
        shrunk = PartitionState(
            leader=current.leader,
            leader_epoch=current.leader_epoch,
            isr=[replica for replica in current.isr if replica != followers[-1]],
            controller_epoch=current.controller_epoch,
        )
        try:
            new_version = await kafka_zk.conditional_update_partition_state_as_leader(
                topic, partition, shrunk, zk_version
            )
        except BadVersionError:
            continue  # changed under us: read again, as a leader does
        assert new_version == zk_version + 1
        await kafka_zk.create_isr_change_notification([(topic, partition)])
        return
    raise AssertionError(f"the state of {topic}-{partition} kept changing")


async def _no_notifications(kafka_zk: KafkaZk) -> bool:
    return not await kafka_zk.get_isr_change_notifications()


def test_controller_consumes_isr_change_notification_from_leader(cluster: ClusterHandle) -> None:
    topic = "isr-change"
    _create_topic(cluster, topic, partitions=2, replication=3)

    async def scenario() -> None:
        async with kafka_zk_session(cluster.zk_connect) as kafka_zk:

            async def states_created() -> bool:
                states = await kafka_zk.get_partition_states(topic, [0, 1])
                return all(found is not None for found in states.values())

            await eventually(states_created, "partition states")
            await _shrink_isr_as_leader(kafka_zk, topic, 0)
            await _shrink_isr_as_leader(kafka_zk, topic, 1)
            await eventually(lambda: _no_notifications(kafka_zk), "notifications consumed")

    asyncio.run(scenario())


def test_controller_consumes_malformed_and_unknown_topic_notifications(
    cluster: ClusterHandle, zk: KazooClient
) -> None:
    epoch_before = int(zk.get("/controller_epoch")[0])
    zk.create("/isr_change_notification/isr_change_", b"not json", sequence=True)
    zk.create(
        "/isr_change_notification/isr_change_",
        IsrChangeNotificationSequenceZNode.encode([("no-such-topic", 0)]),
        sequence=True,
    )

    async def scenario() -> None:
        async with kafka_zk_session(cluster.zk_connect) as kafka_zk:
            await eventually(lambda: _no_notifications(kafka_zk), "notifications consumed")

    asyncio.run(scenario())
    # Handled as a matter of course, not by a failed controller and a re-election.
    assert int(zk.get("/controller_epoch")[0]) == epoch_before


# ------------------------------------------------------------------ KafkaZk operations


@pytest.fixture
def chroot_connect(cluster: ClusterHandle) -> str:
    """A private chroot on the cluster's ZooKeeper: the brokers never see these znodes."""
    return f"{cluster.zk_connect}/isr_change_test_{next(_chroots)}_{time.time_ns()}"


def test_leader_state_write_is_conditional_but_not_fenced(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with kafka_zk_session(chroot_connect) as kafka_zk:
            won = await kafka_zk.try_elect_controller(1)
            assert won is not None
            epoch, epoch_zk_version = won
            await kafka_zk.create_topic("t", {0: [1, 2, 3]}, {}, "AAAAAAAAAAAAAAAAAAAAAA")
            initial = PartitionState(1, 0, [1, 2, 3], epoch)
            created = await kafka_zk.create_partition_states(epoch_zk_version, "t", {0: initial})
            assert created == {0: 0}
            # Another controller's election does not stop a leader's ISR write.
            await kafka_zk.client.set("/controller_epoch", b"7")
            shrunk = PartitionState(1, 0, [1, 2], epoch)
            new_version = await kafka_zk.conditional_update_partition_state_as_leader(
                "t", 0, shrunk, 0
            )
            assert new_version == 1
            found = await kafka_zk.client.get(TopicPartitionStateZNode.path("t", 0))
            assert found is not None
            assert TopicPartitionStateZNode.decode(found[0]) == shrunk
            with pytest.raises(BadVersionError):
                await kafka_zk.conditional_update_partition_state_as_leader("t", 0, initial, 0)
            with pytest.raises(NoNodeError):
                await kafka_zk.conditional_update_partition_state_as_leader("t", 9, initial, 0)

    asyncio.run(scenario())


def test_isr_change_notifications_are_listed_read_and_deleted_fenced(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with kafka_zk_session(chroot_connect) as kafka_zk:
            won = await kafka_zk.try_elect_controller(1)
            assert won is not None
            _, epoch_zk_version = won
            first = await kafka_zk.create_isr_change_notification([("t", 0), ("u", 1)])
            await kafka_zk.client.create(
                IsrChangeNotificationSequenceZNode.create_path(), b"{}", sequence=True
            )
            await kafka_zk.create_isr_change_notification([("t", 0), ("t", 2)])
            names = await kafka_zk.get_isr_change_notifications()
            assert len(names) == 3
            assert names == sorted(names)
            assert first == f"{IsrChangeNotificationZNode.path()}/{names[0]}"

            # The malformed one and one that vanished are skipped; duplicates named once.
            read = await kafka_zk.read_isr_change_notifications([*names, "isr_change_9999999999"])
            assert read == [("t", 0), ("u", 1), ("t", 2)]

            # A deposed controller cannot delete them.
            await kafka_zk.client.set("/controller_epoch", b"7")
            with pytest.raises(ControllerMovedError):
                await kafka_zk.delete_isr_change_notifications(epoch_zk_version, names)
            assert await kafka_zk.get_isr_change_notifications() == names

            current = await kafka_zk.get_controller_epoch()
            assert current is not None
            # Already-missing ones are skipped.
            await kafka_zk.delete_isr_change_notifications(
                current[1], [*names, "isr_change_9999999999"]
            )
            assert await kafka_zk.get_isr_change_notifications() == []

    asyncio.run(scenario())
