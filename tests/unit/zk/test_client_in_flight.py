"""ZkClient hands kazoo at most MAX_REQUESTS_IN_FLIGHT requests at a time (kazoo's wake-up
socket would otherwise block the loop), and the rest go out in the order they were made."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from zk.client import MAX_REQUESTS_IN_FLIGHT, ZkClient

_STAT = SimpleNamespace(
    czxid=1,
    mzxid=1,
    pzxid=1,
    ctime=0,
    mtime=0,
    version=0,
    cversion=0,
    aversion=0,
    ephemeralOwner=0,
    dataLength=0,
    numChildren=0,
)


class _Pending:
    """A kazoo async result answered when the test says so."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._callback: Callable[[Any], None] | None = None

    def rawlink(self, callback: Callable[[Any], None]) -> None:
        self._callback = callback

    def get_nowait(self) -> tuple[bytes, SimpleNamespace]:
        return self.path.encode(), _STAT

    def answer(self) -> None:
        if self._callback is not None:
            self._callback(self)


class _CountingKazoo:
    def __init__(self) -> None:
        self.sent: list[_Pending] = []

    def get_async(self, path: str) -> _Pending:
        request = _Pending(path)
        self.sent.append(request)
        return request


def test_requests_beyond_the_bound_wait_and_go_out_in_order() -> None:
    async def scenario() -> None:
        client = ZkClient("127.0.0.1:2181")
        kazoo = _CountingKazoo()
        client._loop = asyncio.get_running_loop()
        client._kazoo = kazoo
        total = MAX_REQUESTS_IN_FLIGHT + 50
        paths = [f"/p{i}" for i in range(total)]
        getting = asyncio.gather(*(client.get(path) for path in paths))
        for _ in range(3):  # each get starts as a task of its own
            await asyncio.sleep(0)
        assert len(kazoo.sent) == MAX_REQUESTS_IN_FLIGHT
        for answered in range(total):
            kazoo.sent[answered].answer()
            for _ in range(100):  # the answer reaches the loop through call_soon_threadsafe
                if len(kazoo.sent) >= min(total, answered + 1 + MAX_REQUESTS_IN_FLIGHT):
                    break
                await asyncio.sleep(0)
            unanswered = len(kazoo.sent) - (answered + 1)
            assert unanswered <= MAX_REQUESTS_IN_FLIGHT
        assert [request.path for request in kazoo.sent] == paths
        results = await asyncio.wait_for(getting, 5)
        assert [found[0] for found in results if found is not None] == [p.encode() for p in paths]

    asyncio.run(scenario())
