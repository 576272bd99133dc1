"""AllocateProducerIds on the controller, against the fake ZooKeeper: blocks of 1,000 claimed
from /latest_producer_id_block, contiguous across calls, brokers and a controller change, and
Kafka's refusals."""

from __future__ import annotations

import asyncio

from controller.errors import (
    BROKER_ID_NOT_REGISTERED,
    NONE,
    NOT_CONTROLLER,
    STALE_BROKER_EPOCH,
)
from controller.producer_ids import ProducerIdsBlock
from tests.unit.controller.fake_zk import FakeZkStore
from tests.unit.controller.harness import start_cluster, wait_until
from zk.znodes import ProducerIdBlockZNode


def test_blocks_are_contiguous_across_calls_brokers_and_a_controller_change() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2, 3])
        active = cluster.active()
        epochs = store.broker_epochs
        first = await active.allocate_producer_ids(2, epochs[2])
        second = await active.allocate_producer_ids(3, epochs[3])
        third = await active.allocate_producer_ids(2, epochs[2])
        assert [first, second, third] == [
            ProducerIdsBlock(NONE, 0, 1000),
            ProducerIdsBlock(NONE, 1000, 1000),
            ProducerIdsBlock(NONE, 2000, 1000),
        ]
        data, _ = store.producer_id_block
        assert data is not None
        assert ProducerIdBlockZNode.decode(data) == (2, 2000, 2999)
        # The controller's broker dies; the next controller carries on from the znode.
        crashed = cluster.sessions[active.broker_id]
        crashed.closed = True  # every later call of the crashed broker fails
        store.expire_session(crashed.session_id)
        await wait_until(
            lambda: any(c.is_active and c is not active for c in cluster.controllers),
            "a new controller",
        )
        await cluster.settle()
        successor = cluster.active()
        block = await successor.allocate_producer_ids(3, epochs[3])
        assert block == ProducerIdsBlock(NONE, 3000, 1000)
        await cluster.stop()

    asyncio.run(scenario())


def test_refusals_unregistered_stale_epoch_and_not_controller() -> None:
    async def scenario() -> None:
        store = FakeZkStore()
        cluster = await start_cluster(store, [1, 2])
        active = cluster.active()
        unknown = await active.allocate_producer_ids(9, 5)
        assert unknown == ProducerIdsBlock(BROKER_ID_NOT_REGISTERED)
        stale = await active.allocate_producer_ids(2, store.broker_epochs[2] - 1)
        assert stale == ProducerIdsBlock(STALE_BROKER_EPOCH)
        other = next(c for c in cluster.controllers if c is not active)
        assert await other.allocate_producer_ids(2, store.broker_epochs[2]) == ProducerIdsBlock(
            NOT_CONTROLLER
        )
        assert store.producer_id_block == (None, 0)  # nothing claimed
        await cluster.stop()

    asyncio.run(scenario())
