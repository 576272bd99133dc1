"""Server-sent events fan out to every page; a page that stops reading is cut loose, not
left to fill memory."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _lab.collector import SUBSCRIBER_QUEUE_MESSAGES, Hub


def test_every_subscriber_gets_each_event_and_a_slow_one_is_told_to_end() -> None:
    async def scenario() -> None:
        hub = Hub()
        async with hub.subscribe() as fast, hub.subscribe() as slow:
            hub.publish("snapshot", {"n": 1})
            assert await fast.get() == ("snapshot", {"n": 1})
            for n in range(SUBSCRIBER_QUEUE_MESSAGES):
                hub.publish("snapshot", {"n": n})
                await fast.get()
            assert slow not in hub.subscribers
            assert fast in hub.subscribers
            assert slow.get_nowait() is None  # its stream ends; the page reconnects
        assert hub.subscribers == set()

    asyncio.run(scenario())
