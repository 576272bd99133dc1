"""ReplicaManager's delayed operations (Kafka's DelayedFetch and DelayedProduce purgatories):
a fetch parked until it has `min_bytes` to give, and an acks=all produce parked until the high
watermark passes its batch.

A part of `broker.replication.replica_manager.ReplicaManager` (kept apart so that module stays
about replicas' roles, appends and reads): it is handed the replica manager's partition map and
a view of its session fence.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from kio.schema.errors import ErrorCode

from broker.replication.delayed_fetch import DelayedFetch
from broker.replication.partition import Partition
from broker.replication.purgatory import TooManyWaitersError
from zk.loop_slice import LoopSlice

# (fenced from ZooKeeper, fence generation): the generation is bumped at each fence.
FenceView = Callable[[], tuple[bool, int]]


class DelayedOperations:
    def __init__(
        self, partitions: Mapping[tuple[str, int], Partition], session_fence: FenceView
    ) -> None:
        self._partitions = partitions
        self._session_fence = session_fence
        # Fetches parked in `wait_for_fetch` (for the request queue size metric).
        self.delayed_fetches = 0

    def get_by_key(self, key: tuple[str, int]) -> Partition | None:
        return self._partitions.get(key)

    async def wait_for_fetch(self, delayed: DelayedFetch, timeout_s: float) -> None:
        """Return once `delayed` can complete or at the timeout. Each wake-up (an append for a
        follower, a high-watermark move for a consumer, a change of role) only checks
        offsets; the caller reads the logs once, afterwards."""
        if delayed.changed_since_read:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        self.delayed_fetches += 1
        try:
            while True:
                remaining_s = deadline - loop.time()
                if remaining_s <= 0 or not await self._wait_for_change(delayed, remaining_s):
                    return
                if await delayed.try_complete(self.get_by_key):
                    return
        finally:
            self.delayed_fetches -= 1

    async def _wait_for_change(self, delayed: DelayedFetch, timeout_s: float) -> bool:
        """Watch the fetch's partitions and wait until one may have more to give: True then,
        False when the fetch should answer now (it can complete already, the timeout passed,
        or a partition holds too many delayed operations to park another). The watches are
        set in slices of loop time, and completion checked after them: a change before a
        partition's watch shows in the check, one after wakes the watch."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        watched: list[Partition] = []
        loop_slice = LoopSlice()
        try:
            for key in delayed.keys:
                await loop_slice.pause_if_spent()
                current = self._partitions.get(key)
                if current is None:
                    continue
                current.waiters.watch(waiter, delayed.follower)
                watched.append(current)
            if await delayed.try_complete(self.get_by_key):
                return False
            await asyncio.wait_for(asyncio.shield(waiter), timeout_s)
        except (TooManyWaitersError, TimeoutError):
            return False
        finally:
            for current in watched:
                current.waiters.unwatch(waiter)
        return True

    async def wait_for_replication(
        self, topic: str, partition: int, required_offset: int, min_isr: int, timeout_s: float
    ) -> ErrorCode:
        """acks=all: wait until the high watermark reaches `required_offset` (the offset after
        the appended batch), then answer as Kafka's DelayedProduce does."""
        key = (topic, partition)
        current = self._partitions.get(key)
        fenced, fence_generation = self._session_fence()
        if current is None or not current.is_leader or fenced:
            return ErrorCode.not_leader_or_follower
        generation = current.leadership_generation

        def still_leading() -> bool:
            found = self._partitions.get(key)
            return (
                _still_leading(found, current, generation)
                and fence_generation == self._session_fence()[1]
            )

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while current.high_watermark < required_offset:
            if not still_leading():
                return ErrorCode.not_leader_or_follower
            remaining_s = deadline - loop.time()
            if remaining_s <= 0:
                return ErrorCode.request_timed_out
            try:
                future = current.waiters.wait_for_high_watermark(required_offset)
                await asyncio.wait_for(future, remaining_s)
            except (TimeoutError, TooManyWaitersError):
                return ErrorCode.request_timed_out
        if not still_leading():
            return ErrorCode.not_leader_or_follower
        if len(current.maximal_isr) < min_isr:
            return ErrorCode.not_enough_replicas_after_append
        return ErrorCode.none


def _still_leading(found: Partition | None, current: Partition, generation: int) -> bool:
    return found is current and current.is_leader and current.leadership_generation == generation
