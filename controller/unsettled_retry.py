"""The timer that retries partition writes which kept losing races to leaders' ISR writes.

A decision that did not settle is never left for some later ZooKeeper change (which may not
come): the partition state machine remembers it and this timer enqueues a
`RetryUnsettledPartitions` event after a back-off, so the retry, like every change of the
controller's state, runs on the controller's event task. The back-off doubles while retries keep
failing, up to a bound, and starts over once everything settled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from controller.event_manager import DelayedEvent
from controller.events import ControllerEvent, RetryUnsettledPartitions
from controller.partition_state_machine import PartitionStateMachine

# Short enough that a partition left leaderless by a lost race is elected quickly once the
# racing stops; doubling keeps a partition that races for long from loading ZooKeeper.
FIRST_RETRY_BACKOFF_S = 0.1
MAX_RETRY_BACKOFF_S = 5.0


class UnsettledRetryTimer:
    def __init__(
        self,
        enqueue: Callable[[ControllerEvent], None],
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self._timer = DelayedEvent(enqueue, sleep)
        self._backoff_s = FIRST_RETRY_BACKOFF_S

    @property
    def backoff_s(self) -> float:
        """The delay the next retry waits."""
        return self._backoff_s

    def schedule(self) -> None:
        """Retry after the current back-off, unless a retry is waiting already."""
        self._timer.schedule(RetryUnsettledPartitions(), self._backoff_s)

    async def retry(self, machine: PartitionStateMachine) -> None:
        """Handle the event: decide the unsettled partitions again. Failures of this retry
        schedule the next one (through the machine's `on_unsettled`) after a doubled back-off."""
        self._backoff_s = min(self._backoff_s * 2, MAX_RETRY_BACKOFF_S)
        await machine.retry_unsettled()
        if not machine.has_unsettled():
            self._backoff_s = FIRST_RETRY_BACKOFF_S

    def cancel(self) -> None:
        """The controller resigns: its successor reconciles every partition anyway."""
        self._timer.cancel()
        self._backoff_s = FIRST_RETRY_BACKOFF_S
