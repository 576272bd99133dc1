"""Long work on the event loop in slices of loop time.

Yielding after a fixed count of items ties the work's pace to how long the loop's other
callbacks take: on a busy loop one `asyncio.sleep(0)` can cost 100 ms, so 5,000 leadership
changes applied 32 to a turn took seconds. A slice of loop time keeps each turn short (the
loop-lag bound is 100 ms) and spends as few turns as the work needs.
"""

from __future__ import annotations

import asyncio
import time

# Loop time one slice may use before it yields: a fifth of the 100 ms stall bound.
DEFAULT_SLICE_MS = 20.0


class LoopSlice:
    """`await slice.pause_if_spent()` between items: yields to the loop once `slice_ms` of
    work has run since the last yield."""

    def __init__(self, slice_ms: float = DEFAULT_SLICE_MS) -> None:
        if slice_ms <= 0:
            raise ValueError("a loop slice must be positive")
        self._slice_s = slice_ms / 1000
        self._started_s = time.monotonic()

    def spent(self) -> bool:
        return time.monotonic() - self._started_s >= self._slice_s

    async def pause_if_spent(self) -> None:
        if self.spent():
            await asyncio.sleep(0)
            self._started_s = time.monotonic()
