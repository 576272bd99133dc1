"""The controller event queue: in order, one at a time, coalesced, survives failures."""

from __future__ import annotations

import asyncio

from controller.event_manager import ControllerEventManager
from controller.events import BrokerChange, ControllerEvent, Startup, TopicChange
from tests.unit.controller.harness import wait_until


def test_events_are_handled_in_order_one_at_a_time() -> None:
    async def scenario() -> None:
        handled: list[str] = []
        running = 0
        most_running = 0

        async def handler(event: ControllerEvent) -> None:
            nonlocal running, most_running
            running += 1
            most_running = max(most_running, running)
            await asyncio.sleep(0)
            handled.append(type(event).__name__)
            running -= 1

        manager = ControllerEventManager(handler)
        manager.start()
        for event in (Startup(), BrokerChange(), TopicChange()):
            manager.enqueue(event)
        await wait_until(lambda: len(handled) == 3, "three events handled")
        assert handled == ["Startup", "BrokerChange", "TopicChange"]
        assert most_running == 1
        await manager.stop()

    asyncio.run(scenario())


def test_queued_event_of_same_kind_is_coalesced_but_not_one_being_handled() -> None:
    async def scenario() -> None:
        handled: list[str] = []
        release = asyncio.Event()

        async def handler(event: ControllerEvent) -> None:
            if not handled:
                await release.wait()
            handled.append(type(event).__name__)

        manager = ControllerEventManager(handler)
        manager.start()
        manager.enqueue(BrokerChange())
        await wait_until(manager.idle, "first event taken off the queue")
        # The first is being handled: a new change must queue again, once.
        for _ in range(5):
            manager.enqueue(BrokerChange())
        release.set()
        await wait_until(lambda: len(handled) == 2 and manager.idle(), "two events handled")
        assert handled == ["BrokerChange", "BrokerChange"]
        await manager.stop()

    asyncio.run(scenario())


def test_failing_event_does_not_stop_the_queue() -> None:
    async def scenario() -> None:
        handled: list[str] = []

        async def handler(event: ControllerEvent) -> None:
            if isinstance(event, Startup):
                raise RuntimeError("boom")
            handled.append(type(event).__name__)

        manager = ControllerEventManager(handler)
        manager.start()
        manager.enqueue(Startup())
        manager.enqueue(TopicChange())
        await wait_until(lambda: handled == ["TopicChange"], "later event handled")
        await manager.stop()

    asyncio.run(scenario())
