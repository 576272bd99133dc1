"""The loop-lag watchdog sees a callback that blocks the loop, and only that."""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import threading
import time
from collections.abc import Callable

import pytest

from broker.process.loop_watchdog import LoopWatchdog, Stall, ThreadClock

BLOCK_S = 0.3


async def _hold_loop_under_watchdog(
    watchdog: LoopWatchdog, hold: Callable[[], None] | None, settle_s: float = 0.05
) -> None:
    """Start the watchdog, let it take a few quiet samples, hold the loop with `hold`, then
    let it see the loop run again before stopping it."""
    watchdog.start()
    await asyncio.sleep(settle_s)
    if hold is not None:
        hold()
    await asyncio.sleep(settle_s)
    await watchdog.stop()


def _sleep(seconds: float) -> Callable[[], None]:
    """Blocks the loop without using CPU, as a synchronous fsync on it would."""
    return functools.partial(time.sleep, seconds)


def test_a_blocking_call_on_the_loop_is_measured_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    watchdog = LoopWatchdog(interval_ms=10, stall_log_ms=100)
    with caplog.at_level(logging.WARNING, logger="broker.process.loop_watchdog"):
        asyncio.run(_hold_loop_under_watchdog(watchdog, _sleep(BLOCK_S)))
    longest = watchdog.take_longest_stall_ms()
    assert longest >= BLOCK_S * 1000 - 20
    assert any("event loop stalled for" in record.message for record in caplog.records)
    assert watchdog.take_longest_stall_ms() == 0.0  # taken: it starts over


def test_stalls_under_the_bound_are_kept_but_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    watchdog = LoopWatchdog(interval_ms=10, stall_log_ms=100)
    with caplog.at_level(logging.WARNING, logger="broker.process.loop_watchdog"):
        watchdog.record(Stall(stall_ms=40.0, window_ms=50.0, ran_ms=40.0, queued_ms=0.0))
    assert watchdog.longest_stall_ms == 40.0
    assert not caplog.records


def _longest_stall_line(caplog: pytest.LogCaptureFixture) -> str:
    """The line of the longest logged stall (a loaded machine may log others)."""
    lines = [r.message for r in caplog.records if "event loop stalled for" in r.message]
    assert lines, "no stall was logged"
    return max(lines, key=lambda line: int(line.split("stalled for ")[1].split(" ms")[0]))


def test_a_stall_spent_blocked_shows_the_loop_thread_did_not_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    watchdog = LoopWatchdog(interval_ms=10, stall_log_ms=100)
    with caplog.at_level(logging.WARNING, logger="broker.process.loop_watchdog"):
        asyncio.run(_hold_loop_under_watchdog(watchdog, _sleep(BLOCK_S)))  # no CPU
    line = _longest_stall_line(caplog)
    ran_ms = int(line.split("its thread ran ")[1].split(" ms")[0])
    assert ran_ms < BLOCK_S * 1000 / 2, line


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_stall_spent_computing_shows_the_loop_thread_ran(
    caplog: pytest.LogCaptureFixture,
) -> None:
    watchdog = LoopWatchdog(interval_ms=10, stall_log_ms=100)
    with caplog.at_level(logging.WARNING, logger="broker.process.loop_watchdog"):
        asyncio.run(_hold_loop_under_watchdog(watchdog, functools.partial(_spin, BLOCK_S)))
    line = _longest_stall_line(caplog)
    ran_ms = int(line.split("its thread ran ")[1].split(" ms")[0])
    assert ran_ms >= BLOCK_S * 1000 - 20, line  # the spin's CPU time, however long the wait


def test_the_thread_clock_reads_its_own_thread() -> None:
    clock = ThreadClock()
    try:
        before = clock.read()
        _spin(0.05)
        after = clock.read()
    finally:
        clock.close()
    assert after.ran_s - before.ran_s >= 0.05
    if before.queued_s is not None:  # Linux: the run-queue wait only grows
        assert after.queued_s is not None and after.queued_s >= before.queued_s


def test_a_stall_describes_its_parts() -> None:
    stall = Stall(stall_ms=180.4, window_ms=200.4, ran_ms=31.2, queued_ms=140.0)
    assert stall.describe() == (
        "180 ms (in the 200 ms since it last slept, its thread ran 31 ms "
        "and waited 140 ms for a CPU)"
    )
    unknown = Stall(stall_ms=180.0, window_ms=200.0, ran_ms=31.0, queued_ms=None)
    assert "waited" not in unknown.describe()


def test_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError):
        LoopWatchdog(interval_ms=0)


def _blocking_function_under_test(block_s: float) -> None:
    time.sleep(block_s)


def test_a_long_stall_logs_the_stack_that_holds_the_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    watchdog = LoopWatchdog(interval_ms=10, stall_log_ms=100, stack_log_ms=100)
    with caplog.at_level(logging.WARNING, logger="broker.process.loop_watchdog"):
        asyncio.run(
            _hold_loop_under_watchdog(
                watchdog, functools.partial(_blocking_function_under_test, 0.5)
            )
        )
    stacks = [r.message for r in caplog.records if "so far, in:" in r.message]
    assert len(stacks) == 1, stacks  # once per stall, however long
    assert "_blocking_function_under_test" in stacks[0]


def test_no_stack_is_logged_when_the_loop_keeps_running(
    caplog: pytest.LogCaptureFixture,
) -> None:
    watchdog = LoopWatchdog(interval_ms=10, stall_log_ms=100, stack_log_ms=100)
    with caplog.at_level(logging.WARNING, logger="broker.process.loop_watchdog"):
        asyncio.run(_hold_loop_under_watchdog(watchdog, None))
    assert not [r for r in caplog.records if "so far, in:" in r.message]


class _CountedEvent(threading.Event):
    def __init__(self) -> None:
        super().__init__()
        self.waits = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        return super().wait(timeout)


def test_the_stack_thread_wakes_only_when_a_stall_could_reach_its_bound() -> None:
    """With the loop running, the stack thread sleeps stack_log_ms at a time, not one interval:
    each of its wakes wants the GIL from the loop's thread."""
    watchdog = LoopWatchdog(interval_ms=10, stall_log_ms=100, stack_log_ms=200)
    stopped = watchdog._stopped = _CountedEvent()
    asyncio.run(_hold_loop_under_watchdog(watchdog, None, settle_s=0.5))
    # One second of a running loop: 100 intervals; the thread woke about 5 times.
    assert 1 <= stopped.waits <= 20, stopped.waits


def test_a_long_garbage_collection_is_logged_with_its_generation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A bound of 1 ms: a full collection of the test process's heap takes longer than that.
    watchdog = LoopWatchdog(interval_ms=10, stall_log_ms=1)

    async def collect() -> None:
        watchdog.start()
        gc.collect()
        await watchdog.stop()

    with caplog.at_level(logging.WARNING, logger="broker.process.loop_watchdog"):
        asyncio.run(collect())
    assert watchdog.longest_gc_ms >= 1
    assert any(
        "garbage collection of generation 2 took" in record.message for record in caplog.records
    )
    assert watchdog._on_gc not in gc.callbacks  # stop() leaves the collector as it found it
