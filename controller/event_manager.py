"""One bounded queue, one consumer task: controller events are handled one at a time, in the
order they were enqueued (Kafka's ControllerEventManager).

Events are "re-read" notifications, so an event whose kind is already waiting in the queue is
dropped: the waiting one will see the newer state when it runs. That also bounds the queue by
the number of event kinds, so `enqueue` never blocks a watch callback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from controller.events import ControllerEvent

log = logging.getLogger(__name__)

MAX_QUEUED_EVENTS = 64

EventHandler = Callable[[ControllerEvent], Awaitable[None]]
# Told each handled event's kind and how long it took, in milliseconds.
EventTimer = Callable[[str, float], None]


class ControllerEventManager:
    def __init__(self, handler: EventHandler, on_handled: EventTimer | None = None) -> None:
        self._handler = handler
        self._on_handled = on_handled
        self._queue: asyncio.Queue[ControllerEvent] = asyncio.Queue(maxsize=MAX_QUEUED_EVENTS)
        self._queued_kinds: set[type[ControllerEvent]] = set()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="controller-event-manager"
            )

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def enqueue(self, event: ControllerEvent) -> None:
        """Queue an event unless one of its kind is already waiting. Call on the loop."""
        kind = type(event)
        if kind in self._queued_kinds:
            return
        if self._queue.full():
            # Coalescing keeps the queue at most one event per kind, far below the bound.
            raise RuntimeError(f"controller event queue full ({MAX_QUEUED_EVENTS} events)")
        self._queued_kinds.add(kind)
        self._queue.put_nowait(event)

    def idle(self) -> bool:
        """No event waiting (the consumer may still be handling one)."""
        return self._queue.empty()

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            # Forget the kind before handling: a change arriving during handling must re-queue.
            self._queued_kinds.discard(type(event))
            started = time.perf_counter()
            try:
                await self._handler(event)
            except asyncio.CancelledError:
                raise
            except Exception:
                # One failed event must not stop the controller; the handler logs specifics.
                log.exception("controller event %s failed", type(event).__name__)
            if self._on_handled is not None:
                self._on_handled(type(event).__name__, (time.perf_counter() - started) * 1000)


class DelayedEvent:
    """Enqueues one event after a delay (e.g. a retry after a failure); at most one waits."""

    def __init__(
        self,
        enqueue: Callable[[ControllerEvent], None],
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self._enqueue = enqueue
        self._sleep = sleep  # tests substitute one they control
        self._task: asyncio.Task[None] | None = None

    def schedule(self, event: ControllerEvent, delay_s: float) -> None:
        """Unless one is waiting already; call on the loop."""
        if self._task is not None and not self._task.done():
            return
        self._task = asyncio.get_running_loop().create_task(self._enqueue_after(event, delay_s))

    def cancel(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()

    async def _enqueue_after(self, event: ControllerEvent, delay_s: float) -> None:
        await self._sleep(delay_s)
        self._enqueue(event)
