"""The leader's ISR writes, ZooKeeper-mode style (Kafka before AlterIsr): used when
inter.broker.protocol.version is below 2.7-IV2; from it on, leaders send AlterPartition to the
controller instead (alter_partition_manager.py).

The leader writes the partition state znode itself, conditionally at the zkVersion it knows and
keeping the controller's `controller_epoch`; only after the write succeeds does it use the new
ISR (so the high watermark never counts a replica ZooKeeper does not list). When the write loses
a race it re-reads the znode and adopts it if it is still leader of the same epoch; the next
check decides again. Changed partitions are announced to the controller with one
`/isr_change_notification/isr_change_<seq>` per batch, at most every
ISR_CHANGE_PROPAGATION_INTERVAL_S (Kafka's `isrChangeNotificationConfig`, 2.5 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Protocol

from broker.replication.partition import Partition, PendingIsrChange
from controller.state_change_log import ChangeReason, leader_changed_isr
from zk.errors import BadVersionError, NoNodeError, ZkError
from zk.znodes import PartitionState

log = logging.getLogger(__name__)

ISR_CHANGE_PROPAGATION_INTERVAL_S = 2.5
# Partitions named in one notification (keeps each znode well under ZooKeeper's 1 MB).
MAX_PARTITIONS_PER_NOTIFICATION = 5000

TopicPartition = tuple[str, int]


class IsrZk(Protocol):
    async def conditional_update_partition_state_as_leader(
        self, topic: str, partition: int, state: PartitionState, expected_zk_version: int
    ) -> int: ...

    async def get_partition_states(
        self, topic: str, partitions: list[int]
    ) -> dict[int, tuple[PartitionState, int] | None]: ...

    async def create_isr_change_notification(self, partitions: list[TopicPartition]) -> str: ...


class IsrProposer(Protocol):
    """What the replica manager asks of the leaders' ISR path (this module's writer, or the
    AlterPartition manager)."""

    shrinks: int
    expands: int
    failed: int

    def propose(self, partition: Partition, isr: list[int]) -> None: ...

    def count_landed(self, change: PendingIsrChange) -> None: ...

    async def stop(self) -> None: ...


class IsrWriter:
    def __init__(self, kafka_zk: IsrZk, on_isr_changed: Callable[[Partition], None]) -> None:
        self._zk = kafka_zk
        self._on_isr_changed = on_isr_changed
        self._tasks: set[asyncio.Task[None]] = set()
        self._changed: set[TopicPartition] = set()
        self._propagation: asyncio.Task[None] | None = None
        # ISR changes written, and writes refused or failed (Kafka's IsrShrinksPerSec,
        # IsrExpandsPerSec and FailedIsrUpdatesPerSec meters).
        self.shrinks = 0
        self.expands = 0
        self.failed = 0

    def count_landed(self, change: PendingIsrChange) -> None:
        """Never called: this path marks no change pending (it writes before it applies)."""

    def propose(self, partition: Partition, isr: list[int]) -> None:
        """Write `isr` for `partition` unless a write for it is already on its way."""
        if not partition.begin_isr_write():
            return
        task = asyncio.get_running_loop().create_task(
            self._write(partition, isr, partition.leader_epoch, partition.zk_version),
            name=f"isr-{partition.topic}-{partition.partition}",
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(self, partition: Partition, isr: list[int], epoch: int, version: int) -> None:
        state = PartitionState(
            leader=partition.broker_id,
            leader_epoch=epoch,
            isr=isr,
            controller_epoch=partition.controller_epoch,
        )
        try:
            new_version = await self._zk.conditional_update_partition_state_as_leader(
                partition.topic, partition.partition, state, version
            )
        except BadVersionError:
            self.failed += 1
            await self._adopt_current(partition, epoch)
            return
        except (NoNodeError, ZkError) as error:
            self.failed += 1
            log.warning("%s-%d: writing ISR %s failed: %s", *partition.key, isr, error)
            return
        finally:
            partition.end_isr_write()
        old_isr = list(partition.isr)
        grew = len(isr) > len(old_isr)
        reason = ChangeReason.ISR_EXPAND if grew else ChangeReason.ISR_SHRINK
        if grew:
            self.expands += 1
        else:
            self.shrinks += 1
        leader_changed_isr(
            partition.broker_id, *partition.key, old_isr, isr, epoch, new_version, reason
        )
        if partition.is_leader and partition.leader_epoch == epoch:
            log.debug("%s-%d: ISR %s -> %s", *partition.key, partition.isr, isr)
            partition.apply_isr(isr, max(new_version, partition.zk_version))
            self._on_isr_changed(partition)
        self._announce(partition.key)

    async def _adopt_current(self, partition: Partition, epoch: int) -> None:
        """Lost a race: take what ZooKeeper holds if it is still this leadership."""
        try:
            found = (await self._zk.get_partition_states(partition.topic, [partition.partition]))[
                partition.partition
            ]
        except ZkError:
            return
        if found is None:
            return
        state, zk_version = found
        same_leadership = state.leader_epoch == epoch and state.leader == partition.broker_id
        if same_leadership and partition.is_leader and partition.leader_epoch == epoch:
            log.info("%s-%d: ISR write lost a race; now %s", *partition.key, state.isr)
            partition.apply_isr(list(state.isr), zk_version)
            self._on_isr_changed(partition)

    def _announce(self, key: TopicPartition) -> None:
        self._changed.add(key)
        if self._propagation is None or self._propagation.done():
            self._propagation = asyncio.get_running_loop().create_task(
                self._propagate(), name="isr-change-propagation"
            )

    async def _propagate(self) -> None:
        await asyncio.sleep(ISR_CHANGE_PROPAGATION_INTERVAL_S)
        changed, self._changed = sorted(self._changed), set()
        for start in range(0, len(changed), MAX_PARTITIONS_PER_NOTIFICATION):
            batch = changed[start : start + MAX_PARTITIONS_PER_NOTIFICATION]
            try:
                await self._zk.create_isr_change_notification(batch)
            except ZkError as error:
                log.warning("announcing ISR changes of %d partitions failed: %s", len(batch), error)

    async def stop(self) -> None:
        tasks = [*self._tasks, *([self._propagation] if self._propagation else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
