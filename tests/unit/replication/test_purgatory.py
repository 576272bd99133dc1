"""Delayed operations wake only for the events that can complete them."""

import asyncio

from broker.replication.purgatory import PartitionWaiters


def test_produce_wakes_only_when_the_high_watermark_reaches_its_offset() -> None:
    async def scenario() -> None:
        waiters = PartitionWaiters()
        low, high = waiters.wait_for_high_watermark(5), waiters.wait_for_high_watermark(9)
        waiters.on_high_watermark(4)
        assert not low.done() and not high.done()
        waiters.on_high_watermark(5)
        assert low.done() and not high.done()
        waiters.on_append()
        assert not high.done()  # an append alone commits nothing

    asyncio.run(scenario())


def test_follower_fetch_wakes_on_append_and_consumer_fetch_on_high_watermark() -> None:
    async def scenario() -> None:
        waiters = PartitionWaiters()
        loop = asyncio.get_running_loop()
        follower, consumer = loop.create_future(), loop.create_future()
        waiters.watch(follower, follower=True)
        waiters.watch(consumer, follower=False)
        waiters.on_append()
        assert follower.done() and not consumer.done()
        waiters.on_high_watermark(1)
        assert consumer.done()

    asyncio.run(scenario())


def test_leadership_change_wakes_everyone() -> None:
    async def scenario() -> None:
        waiters = PartitionWaiters()
        loop = asyncio.get_running_loop()
        follower, produce = loop.create_future(), waiters.wait_for_high_watermark(100)
        waiters.watch(follower, follower=True)
        waiters.on_leadership_change()
        assert follower.done() and produce.done() and len(waiters) == 0

    asyncio.run(scenario())
