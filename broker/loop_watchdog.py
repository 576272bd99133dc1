"""Loop-lag watchdog: how long the event loop went without running, so stalls are visible.

A task asks to wake every `interval_ms`; whatever it wakes late by is time the loop spent
in some callback (or blocked in a system call) instead of serving requests. Every stall of
`stall_log_ms` or more is logged with its length, and the longest stall since the last
`take_longest_stall_ms()` is kept for metrics and benchmarks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

log = logging.getLogger(__name__)

# 20 ms between wakes costs the loop about 50 cheap callbacks a second.
DEFAULT_INTERVAL_MS = 20
# DESIGN.md's bound for a failover: no loop stall over 100 ms.
DEFAULT_STALL_LOG_MS = 100


class LoopWatchdog:
    def __init__(
        self, interval_ms: int = DEFAULT_INTERVAL_MS, stall_log_ms: int = DEFAULT_STALL_LOG_MS
    ) -> None:
        if interval_ms <= 0 or stall_log_ms <= 0:
            raise ValueError("loop watchdog interval and stall bound must be positive")
        self.interval_ms = interval_ms
        self.stall_log_ms = stall_log_ms
        self.longest_stall_ms = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="loop-watchdog")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def take_longest_stall_ms(self) -> float:
        """The longest stall since the previous call (or the start), and start over."""
        longest, self.longest_stall_ms = self.longest_stall_ms, 0.0
        return longest

    def record(self, stall_ms: float) -> None:
        self.longest_stall_ms = max(self.longest_stall_ms, stall_ms)
        if stall_ms >= self.stall_log_ms:
            log.warning("event loop stalled for %.0f ms", stall_ms)

    async def _run(self) -> None:
        interval_s = self.interval_ms / 1000
        while True:
            asked = time.monotonic()
            await asyncio.sleep(interval_s)
            self.record(max(0.0, (time.monotonic() - asked - interval_s) * 1000))
