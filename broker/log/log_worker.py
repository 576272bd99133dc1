"""One owner of a log's blocking file-system work: a queue drained, in order, on a worker
thread (Kafka serialises a log's file work under the log's lock; here the event loop only
enqueues and, when it needs the result, awaits).

The loop keeps the log's in-memory state and the cheap, non-blocking calls (page-cache writes,
ftruncate, renames); closing and deleting files, fsyncs and checkpoint writes go here. Work
submitted where no event loop runs (loading, tools, a worker thread) runs at once, in the
caller's thread, as it is already off the loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


class LogLifecycle:
    """The lock a log's file work holds (worker threads only, never the loop) and whether
    the log is closed; shared by the log and its parts, whose deferred file work must not
    race with the files being closed or renamed."""

    __slots__ = ("closed", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.closed = False


class LogWorker:
    def __init__(self, name: str) -> None:
        self.name = name
        # Told of an I/O error in submitted work (any thread), e.g. to take the log dir
        # offline; `run` raises it to its caller instead.
        self.on_io_error: Callable[[OSError], None] | None = None
        # Each item is one step of work on this log; the queue holds at most what the loop
        # handed over since the worker last ran (a few segment releases and checkpoint writes).
        self._queue: deque[tuple[Callable[[], Any], asyncio.Future[Any] | None]] = deque()
        self._drainer: asyncio.Task[None] | None = None

    def submit(self, work: Callable[[], object]) -> None:
        """Run `work` after everything submitted before it; a failure is logged."""
        loop = _running_loop()
        if loop is None:
            self._run_logged(work)
            return
        self._queue.append((work, None))
        self._ensure_drainer(loop)

    async def run(self, work: Callable[[], T]) -> T:
        """Run `work` after everything submitted before it and return its result."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        self._queue.append((work, done))
        self._ensure_drainer(loop)
        return await done

    async def idle(self) -> None:
        """Wait until everything submitted so far has run."""
        await self.run(_nothing)

    def _run_logged(self, work: Callable[[], object]) -> None:
        try:
            work()
        except Exception as error:
            logger.exception("file-system work on log %s failed", self.name)
            if isinstance(error, OSError) and self.on_io_error is not None:
                self.on_io_error(error)

    @property
    def pending(self) -> int:
        return len(self._queue)

    def _ensure_drainer(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._drainer is None or self._drainer.done():
            self._drainer = loop.create_task(self._drain(), name=f"log-worker {self.name}")

    async def _drain(self) -> None:
        while self._queue:
            work, done = self._queue.popleft()
            if done is None:
                await asyncio.to_thread(self._run_logged, work)
                continue
            try:
                result = await asyncio.to_thread(work)
            except Exception as error:
                if not done.done():
                    done.set_exception(error)
            else:
                if not done.done():
                    done.set_result(result)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _nothing() -> None:
    return None
