"""How the broker process's garbage collector runs: often, over little of the heap.

CPython's cyclic collector holds the interpreter while it walks a generation, and the event
loop with it. A broker with 5,000 partitions keeps a few million long-lived objects (logs,
segments, indexes, the cluster view), so a full collection walked them for 140-570 ms. With
the default thresholds (700, 10, 10) the objects of each follower fetch round (thousands per
round, living for the round) were promoted to the oldest generation fast enough to set off a
full collection every 2-3 s during a failover; each freed nothing. Hence:

- the young generations keep CPython's thresholds: larger ones only moved the pause (a
  50,000-allocation young generation took 187 ms, a 5,000 one's middle collections 140 ms);
- once a CHECK_INTERVAL_S, if anything was promoted to the oldest generation since the last
  full collection, a full collection, and what survives it is frozen (`gc.freeze()`: moved out
  of every generation), so that each full collection walks only what was promoted since the
  previous one: the long-lived heap is walked once, not on every full collection;
- frozen objects that later become cyclic garbage cannot be collected, so every
  UNFREEZE_INTERVAL_S they are handed back: the next full collection walks the whole heap once
  (one long pause in that interval) and frees them.

Objects freed by reference counting, nearly all of them, are freed at once either way, frozen
or not.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time

log = logging.getLogger(__name__)

OLDEST_GENERATION = 2
# How often frozen objects go back to be looked at by a full collection.
UNFREEZE_INTERVAL_S = 600.0
# How often the policy's task collects what was promoted, and freezes it: often, so that
# each full collection has little to walk (a second's promotions during a failover took 320 ms).
CHECK_INTERVAL_S = 0.1


class GcPolicy:
    def __init__(
        self,
        unfreeze_interval_s: float = UNFREEZE_INTERVAL_S,
        check_interval_s: float = CHECK_INTERVAL_S,
    ) -> None:
        self.unfreeze_interval_s = unfreeze_interval_s
        self.check_interval_s = check_interval_s
        self._full_collections = 0  # counted by the collector's callback, on any thread
        self._frozen_after = 0  # the count at the last freeze
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is not None:
            return
        gc.callbacks.append(self._on_gc)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="gc-policy")

    async def stop(self) -> None:
        """Stop freezing. What is frozen stays so: at exit, handing it back would only make
        the interpreter's last collection walk the whole heap."""
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        gc.callbacks.remove(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        # Only counts (the collector may run on any thread): freezing is the task's job.
        if phase == "stop" and info["generation"] == OLDEST_GENERATION:
            self._full_collections += 1

    async def _run(self) -> None:
        unfrozen_at = time.monotonic()
        while True:
            await asyncio.sleep(self.check_interval_s)
            if time.monotonic() - unfrozen_at >= self.unfreeze_interval_s:
                unfrozen_at = time.monotonic()
                self.hand_back_frozen()
            self.collect_promoted()

    def hand_back_frozen(self) -> None:
        """Unfreeze everything and collect it: the one walk of the whole heap an interval."""
        log.debug("handing %d frozen objects back to the collector", gc.get_freeze_count())
        gc.unfreeze()
        gc.collect(OLDEST_GENERATION)

    def collect_promoted(self) -> None:
        """A full collection if middle collections promoted anything since the last one, and
        freeze what survived (after an automatic full collection too)."""
        if gc.get_count()[OLDEST_GENERATION] > 0:
            gc.collect(OLDEST_GENERATION)
        if self._full_collections != self._frozen_after:
            self._frozen_after = self._full_collections
            gc.freeze()
