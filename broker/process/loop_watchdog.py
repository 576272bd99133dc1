"""Loop-lag watchdog: how long the event loop went without running, so stalls are visible.

A task asks to wake every `interval_ms`; whatever it wakes late by is time the loop spent
in some callback (or blocked in a system call) instead of serving requests. Every stall of
`stall_log_ms` or more is logged with its length, and the longest stall since the last
`take_longest_stall_ms()` is kept for metrics and benchmarks.

A stall is not always our code: on a machine with more runnable threads than cores the loop's
thread waits for a CPU, and while another thread of the broker holds the GIL it waits for
that. So each logged stall says, for the time since the watchdog last slept, how long the loop's
thread ran (its CPU time) and how long it waited, runnable, for a CPU (the kernel's run-queue
wait, /proc/thread-self/schedstat); the rest it was idle or blocked (a system call, the GIL).

The length alone does not say what held the loop, and once the loop runs again the culprit
has returned. So a thread beside it wakes when a stall would reach `stack_log_ms`: when the
loop has not woken for that long, it logs the stack the loop's thread is in at that moment,
once a stall.
A stall with no frame of ours on that stack is often CPython's garbage collector, which stops
every thread while it walks the heap: collections of `stall_log_ms` or more are logged too,
with their generation, and the longest is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass

log = logging.getLogger(__name__)

# 20 ms between wakes costs the loop about 50 cheap callbacks a second.
DEFAULT_INTERVAL_MS = 20
# DESIGN.md's bound for a failover: no loop stall over 100 ms.
DEFAULT_STALL_LOG_MS = 100
# A stall this long has its stack logged: long enough to be rare, short enough to catch the
# stalls that matter.
DEFAULT_STACK_LOG_MS = 500


SCHEDSTAT_PATH = "/proc/thread-self/schedstat"


@dataclass(frozen=True, slots=True)
class ThreadTimes:
    """One thread's CPU time and run-queue wait so far, in seconds (wait None: unknown)."""

    ran_s: float
    queued_s: float | None


class ThreadClock:
    """The calling thread's CPU time and, on Linux, the time it spent runnable waiting for a
    CPU. Made and read on the same thread (the loop's): the schedstat file names the thread
    that opened it."""

    def __init__(self) -> None:
        try:
            self._schedstat_fd: int | None = os.open(SCHEDSTAT_PATH, os.O_RDONLY)
        except OSError:
            self._schedstat_fd = None  # not Linux, or a kernel without schedstats

    def read(self) -> ThreadTimes:
        return ThreadTimes(time.thread_time(), self._queued_s())

    def close(self) -> None:
        if self._schedstat_fd is not None:
            os.close(self._schedstat_fd)
            self._schedstat_fd = None

    def _queued_s(self) -> float | None:
        if self._schedstat_fd is None:
            return None
        # "<on-CPU ns> <run-queue wait ns> <time slices>"
        fields = os.pread(self._schedstat_fd, 128, 0).split()
        return int(fields[1]) / 1e9 if len(fields) >= 2 else None


@dataclass(frozen=True, slots=True)
class Stall:
    """How late the loop woke the watchdog, and what its thread did from the moment the
    watchdog asked to wake (`window_ms`, the stall plus the interval), in milliseconds."""

    stall_ms: float
    window_ms: float
    ran_ms: float
    queued_ms: float | None

    def describe(self) -> str:
        what = f"its thread ran {self.ran_ms:.0f} ms"
        if self.queued_ms is not None:
            what += f" and waited {self.queued_ms:.0f} ms for a CPU"
        return (
            f"{self.stall_ms:.0f} ms (in the {self.window_ms:.0f} ms since it last slept, {what})"
        )


def stall_between(
    asked_s: float, woke_s: float, interval_s: float, before: ThreadTimes, after: ThreadTimes
) -> Stall:
    queued_ms = None
    if before.queued_s is not None and after.queued_s is not None:
        queued_ms = (after.queued_s - before.queued_s) * 1000
    return Stall(
        stall_ms=max(0.0, (woke_s - asked_s - interval_s) * 1000),
        window_ms=(woke_s - asked_s) * 1000,
        ran_ms=(after.ran_s - before.ran_s) * 1000,
        queued_ms=queued_ms,
    )


class LoopWatchdog:
    def __init__(
        self,
        interval_ms: int = DEFAULT_INTERVAL_MS,
        stall_log_ms: int = DEFAULT_STALL_LOG_MS,
        stack_log_ms: int = DEFAULT_STACK_LOG_MS,
    ) -> None:
        if interval_ms <= 0 or stall_log_ms <= 0 or stack_log_ms <= 0:
            raise ValueError("loop watchdog interval and stall bounds must be positive")
        self.interval_ms = interval_ms
        self.stall_log_ms = stall_log_ms
        self.stack_log_ms = stack_log_ms
        self.longest_stall_ms = 0.0
        self.longest_gc_ms = 0.0
        self._gc_started_s = 0.0
        self._task: asyncio.Task[None] | None = None
        # When the loop last woke the watchdog (time.monotonic()), read by the stack thread.
        self._last_wake_s = time.monotonic()
        self._stopped = threading.Event()
        self._stack_thread: threading.Thread | None = None

    def start(self) -> None:
        if self._task is None:
            self._last_wake_s = time.monotonic()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="loop-watchdog")
            self._stopped.clear()
            self._stack_thread = threading.Thread(
                target=self._watch_stacks,
                args=(threading.get_ident(),),
                name="loop-watchdog-stacks",
                daemon=True,
            )
            self._stack_thread.start()
            gc.callbacks.append(self._on_gc)

    async def stop(self) -> None:
        self._stopped.set()
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._stack_thread is not None:
            await asyncio.to_thread(self._stack_thread.join)
            self._stack_thread = None

    def take_longest_stall_ms(self) -> float:
        """The longest stall since the previous call (or the start), and start over."""
        longest, self.longest_stall_ms = self.longest_stall_ms, 0.0
        return longest

    def record(self, stall: Stall) -> None:
        self.longest_stall_ms = max(self.longest_stall_ms, stall.stall_ms)
        if stall.stall_ms >= self.stall_log_ms:
            log.warning("event loop stalled for %s", stall.describe())

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started_s = time.perf_counter()
            return
        took_ms = (time.perf_counter() - self._gc_started_s) * 1000
        self.longest_gc_ms = max(self.longest_gc_ms, took_ms)
        if took_ms >= self.stall_log_ms:
            log.warning(
                "garbage collection of generation %d took %.0f ms (%d objects freed)",
                info["generation"],
                took_ms,
                info["collected"],
            )

    async def _run(self) -> None:
        interval_s = self.interval_ms / 1000
        clock = ThreadClock()
        try:
            times = clock.read()
            while True:
                asked_s = time.monotonic()
                await asyncio.sleep(interval_s)
                self._last_wake_s = time.monotonic()
                before, times = times, clock.read()
                self.record(stall_between(asked_s, self._last_wake_s, interval_s, before, times))
        finally:
            clock.close()

    def _watch_stacks(self, loop_thread_id: int) -> None:
        # It sleeps until the loop's current stall, if it goes on, reaches stack_log_ms: a
        # thread that woke every interval would want the GIL 50 times a second, and on a busy
        # machine the loop's thread, once it hands the GIL over, waits until this one gets a
        # CPU to take it.
        interval_s = self.interval_ms / 1000
        stack_log_s = self.stack_log_ms / 1000
        logged_for = 0.0  # the wake after which the current stall was already logged
        wait_s = stack_log_s
        while not self._stopped.wait(wait_s):
            last_wake_s = self._last_wake_s
            stalled_s = time.monotonic() - last_wake_s - interval_s
            if logged_for == last_wake_s:
                wait_s = stack_log_s
                continue
            if stalled_s < stack_log_s:
                wait_s = max(interval_s, stack_log_s - stalled_s)
                continue
            stalled_ms = stalled_s * 1000
            wait_s = stack_log_s
            frame = sys._current_frames().get(loop_thread_id)
            if frame is None:
                return  # the loop's thread is gone
            logged_for = last_wake_s
            stack = "".join(traceback.format_stack(frame))
            log.warning("event loop blocked for %.0f ms so far, in:\n%s", stalled_ms, stack)
