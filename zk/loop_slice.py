"""Long work on the event loop in slices of loop time.

Yielding after a fixed count of items ties the work's pace to how long the loop's other
callbacks take: on a busy loop one `asyncio.sleep(0)` can cost 100 ms, so 5,000 leadership
changes applied 32 to a turn took seconds. A slice of loop time keeps each turn short and
spends as few turns as the work needs.

It lives in the lowest layer so that every layer can slice its long loops (the ZooKeeper
layer decodes thousands of partition states at a controller failover).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

# Loop time one slice may use before it yields. The loop-lag bound is 100 ms, and one turn of
# the loop runs every task that is ready: during a failover a broker runs half a dozen sliced
# tasks at once (fetch sessions both ways, the controller, metadata), so each gets a small
# share of the bound (20 ms slices added up to stalls of 120-200 ms).
DEFAULT_SLICE_MS = 5.0


class LoopSlice:
    """`await slice.pause_if_spent()` between items: yields to the loop once `slice_ms` of
    work has run since the last yield."""

    def __init__(
        self, slice_ms: float = DEFAULT_SLICE_MS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if slice_ms <= 0:
            raise ValueError("a loop slice must be positive")
        self._slice_s = slice_ms / 1000
        self._clock = clock
        self._started_s = clock()

    def spent(self) -> bool:
        return self._clock() - self._started_s >= self._slice_s

    async def pause_if_spent(self) -> None:
        if self.spent():
            await asyncio.sleep(0)
            self._started_s = self._clock()


class TurnGate:
    """Lets one task through per turn of the event loop.

    Tasks started together run their first steps in the same turn: eight controller writes
    of 200 partition states, each prepared in one synchronous step of about 10 ms, held the
    loop for 80 ms. Awaiting `enter()` before such a step spreads the steps over turns."""

    def __init__(self) -> None:
        # The loop whose current turn is taken (a gate left taken by a loop that closed
        # before its next turn does not bind another loop).
        self._taken_on: asyncio.AbstractEventLoop | None = None

    async def enter(self) -> None:
        loop = asyncio.get_running_loop()
        while self._taken_on is loop:
            await asyncio.sleep(0)
        self._taken_on = loop
        # Scheduled now, so it runs at the start of the next turn, before the tasks that
        # yielded above resume.
        loop.call_soon(self._release)

    def _release(self) -> None:
        self._taken_on = None
