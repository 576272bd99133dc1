"""The leader's ISR changes through the controller (Kafka's DefaultAlterPartitionManager, for
inter.broker.protocol.version 2.7-IV2 and later; below it isr.py writes the znode).

A leader that wants another ISR marks the change pending on the partition
(`Partition.begin_isr_change`: no other change starts meanwhile, and the high watermark counts
the maximal ISR, KIP-497) and submits it here. Submitted changes wait in `unsent`, one per
partition; at most one AlterPartition request is in flight, carrying every change waiting when
it leaves. Its answer decides each change, as Kafka's Partition does:

- NONE: the partition takes the controller's state (ISR, partition epoch) unless it moved on
  meanwhile (`Partition.commit_isr_change`), so an answer never takes it back;
- OPERATION_NOT_ATTEMPTED, INELIGIBLE_REPLICA: not applied by any controller; the partition goes
  back to its committed ISR and a later check may ask again;
- UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID, FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION,
  INVALID_REQUEST, NEW_LEADER_ELECTED: the controller holds a newer state; the change stays
  pending until that state arrives (the state znode's watch, or a LeaderAndIsr), which settles
  it (`Partition._apply`);
- any other partition error: submitted again;
- a top-level error (STALE_BROKER_EPOCH, NOT_CONTROLLER, ...) or no answer (no controller
  known, a connection failure): the changes stay unsent and go again after a back-off (50 ms
  doubling to 1 s while the controller cannot be reached, Kafka's reconnect back-off);
  a partition missing from an answer goes again at once.

The partition epoch is the state znode's zkVersion (ZooKeeper mode): the answer's partition
epoch is the version the partition knows from then on, the same number the znode's watch and a
LeaderAndIsr carry for that state, so whichever of the three arrives first applies it and the
others find it applied (broker/replication/control_requests.py has the rule).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kio.schema.errors import ErrorCode

from broker.replication.partition import Partition, PendingIsrChange
from controller.state_change_log import ChangeReason, leader_changed_isr

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

RETRY_BACKOFF_S = 0.05  # Kafka's "send-alter-partition" reschedule after a top-level error
MAX_UNREACHABLE_BACKOFF_S = 1.0  # reconnect.backoff.max.ms
# The controller holds a newer state: wait for it (the watch or a LeaderAndIsr brings it).
WAIT_FOR_NEWER_STATE = frozenset(
    {
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.unknown_topic_id,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.invalid_update_version,
        ErrorCode.invalid_request,
        ErrorCode.new_leader_elected,
    }
)
# Refused before any write: back to the committed ISR.
NOT_APPLIED = frozenset({ErrorCode.operation_not_attempted, ErrorCode.ineligible_replica})


@dataclass(frozen=True, slots=True)
class AlterPartitionEntry:
    """One partition of a request."""

    topic: str
    topic_id: str | None  # Kafka's string form; None: the topic has none (v0-v1 only)
    partition: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int


@dataclass(frozen=True, slots=True)
class PartitionAnswer:
    error_code: ErrorCode
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1


@dataclass(frozen=True, slots=True)
class AlterPartitionAnswer:
    error_code: ErrorCode
    partitions: dict[TopicPartition, PartitionAnswer] = field(default_factory=dict)


class ControllerUnreachableError(Exception):
    """No answer: no controller known, not registered, or the connection failed."""


class AlterPartitionSender(Protocol):
    async def send(
        self, broker_epoch: int, entries: list[AlterPartitionEntry], use_topic_ids: bool
    ) -> AlterPartitionAnswer:
        """Send one AlterPartition to the controller; ControllerUnreachableError if none
        answered."""
        ...

    async def close(self) -> None: ...


@dataclass(slots=True)
class _Item:
    partition: Partition
    change: PendingIsrChange
    topic_id: str | None

    @property
    def key(self) -> TopicPartition:
        return self.partition.key

    def entry(self) -> AlterPartitionEntry:
        return AlterPartitionEntry(
            self.partition.topic,
            self.topic_id,
            self.partition.partition,
            self.change.leader_epoch,
            self.change.isr,
            self.change.partition_epoch,
        )


class AlterPartitionManager:
    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        sender: AlterPartitionSender,
        on_isr_changed: Callable[[Partition], None],
        topic_id: Callable[[str], str | None],
        topic_ids_supported: bool = True,
        retry_backoff_s: float = RETRY_BACKOFF_S,
        max_unreachable_backoff_s: float = MAX_UNREACHABLE_BACKOFF_S,
    ) -> None:
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._sender = sender
        self._on_isr_changed = on_isr_changed
        self._topic_id = topic_id
        # Below inter.broker.protocol.version 2.8 AlterPartition names topics (v0-v1).
        self._topic_ids_supported = topic_ids_supported
        self._retry_backoff_s = retry_backoff_s
        self._max_unreachable_backoff_s = max_unreachable_backoff_s
        self._unreachable_backoff_s = retry_backoff_s
        # Changes waiting for a request, one per partition; an item leaves when answered.
        self.unsent: dict[TopicPartition, _Item] = {}
        self._in_flight: asyncio.Task[None] | None = None
        self._retry: asyncio.TimerHandle | None = None
        self._stopped = False
        # Kafka's IsrShrinksPerSec / IsrExpandsPerSec / FailedIsrUpdatesPerSec meters.
        self.shrinks = 0
        self.expands = 0
        self.failed = 0

    @property
    def in_flight(self) -> bool:
        return self._in_flight is not None

    def propose(self, partition: Partition, isr: list[int]) -> None:
        """Ask the controller for `isr` unless a change of `partition` is already pending."""
        committed = list(partition.isr)
        change = partition.begin_isr_change(isr)
        if change is None:
            return
        log.info(
            "%s-%d: %s ISR from %s to %s (leader epoch %d, partition epoch %d, high watermark"
            " %d, log end %d)",
            *partition.key,
            "Expanding" if change.is_expand else "Shrinking",
            committed,
            isr,
            change.leader_epoch,
            change.partition_epoch,
            partition.high_watermark,
            partition.log.log_end_offset,
        )
        self._submit(_Item(partition, change, self._topic_id(partition.topic) or None))

    def count_landed(self, change: PendingIsrChange) -> None:
        """The change reached this broker from the controller (the state znode's watch or a
        LeaderAndIsr) before its answer, which will now be ignored: it still counts."""
        self._count(change)

    def _count(self, change: PendingIsrChange) -> None:
        if change.is_expand:
            self.expands += 1
        else:
            self.shrinks += 1

    def _submit(self, item: _Item) -> None:
        if item.key in self.unsent:
            # Kafka's OperationNotAttemptedException: one change per partition waits.
            self._settle(item, PartitionAnswer(ErrorCode.operation_not_attempted))
            return
        self.unsent[item.key] = item
        self._maybe_propagate()

    def _maybe_propagate(self) -> None:
        """Send everything waiting, unless a request is in flight or a retry is scheduled."""
        if self._stopped or not self.unsent or self._in_flight is not None:
            return
        if self._retry is not None:
            return
        items = list(self.unsent.values())
        self._in_flight = asyncio.get_running_loop().create_task(
            self._send(items), name="alter-partition"
        )

    async def _send(self, items: list[_Item]) -> None:
        retry_in_s: float | None = None
        try:
            use_topic_ids = self._topic_ids_supported and all(i.topic_id for i in items)
            answer = await self._sender.send(
                self._broker_epoch(), [item.entry() for item in items], use_topic_ids
            )
            answered = self._handle(answer, items)
        except ControllerUnreachableError as error:
            retry_in_s = self._unreachable_backoff_s
            self._unreachable_backoff_s = min(
                self._unreachable_backoff_s * 2, self._max_unreachable_backoff_s
            )
            log.info(
                "AlterPartition of %d partitions not answered (%s); retrying in %.2f s",
                len(items),
                error,
                retry_in_s,
            )
        except Exception:
            # A bug, not the network: logged, and the changes go again after the back-off
            # rather than waiting for the next change to restart the sending.
            log.exception("AlterPartition of %d partitions failed", len(items))
            retry_in_s = self._max_unreachable_backoff_s
        else:
            self._unreachable_backoff_s = self._retry_backoff_s
            if not answered:
                retry_in_s = self._retry_backoff_s
        finally:
            self._in_flight = None
        if retry_in_s is None:
            self._maybe_propagate()
        elif not self._stopped:
            self._retry = asyncio.get_running_loop().call_later(retry_in_s, self._retry_now)

    def _retry_now(self) -> None:
        self._retry = None
        self._maybe_propagate()

    def _handle(self, answer: AlterPartitionAnswer, items: list[_Item]) -> bool:
        """Settle each answered item; False for a top-level error (everything goes again)."""
        if answer.error_code != ErrorCode.none:
            log.warning(
                "the controller answered AlterPartition with %s; retrying", answer.error_code.name
            )
            return False
        for item in items:
            found = answer.partitions.get(item.key)
            if found is None:
                log.warning("%s-%d: sent but not in the AlterPartition answer", *item.key)
                continue
            if self.unsent.get(item.key) is item:
                del self.unsent[item.key]
            self._settle(item, found)
        return True

    def _settle(self, item: _Item, answer: PartitionAnswer) -> None:
        current = item.partition
        if current.pending_isr is not item.change:
            log.debug("%s-%d: answer to %s ignored: settled meanwhile", *item.key, item.change)
            return
        if answer.error_code == ErrorCode.none:
            self._commit(item, answer)
            return
        self.failed += 1
        error = answer.error_code
        if error in NOT_APPLIED:
            current.abandon_isr_change(item.change)
            log.info(
                "%s-%d: the controller refused ISR %s with %s; back to %s",
                *item.key,
                list(item.change.isr),
                error.name,
                current.isr,
            )
        elif error in WAIT_FOR_NEWER_STATE:
            log.info(
                "%s-%d: the controller refused ISR %s with %s; waiting for its newer state",
                *item.key,
                list(item.change.isr),
                error.name,
            )
        else:
            log.warning(
                "%s-%d: ISR %s failed with %s; retrying",
                *item.key,
                list(item.change.isr),
                error.name,
            )
            self._submit(item)

    def _commit(self, item: _Item, answer: PartitionAnswer) -> None:
        current = item.partition
        old_isr = list(current.isr)
        if not current.commit_isr_change(
            item.change, answer.leader_epoch, list(answer.isr), answer.partition_epoch
        ):
            self.failed += 1
            log.info(
                "%s-%d: answer %s ignored: this leader is at epoch %d, partition epoch %d",
                *item.key,
                answer,
                current.leader_epoch,
                current.zk_version,
            )
            return
        self._count(item.change)
        leader_changed_isr(
            self._broker_id,
            *item.key,
            old_isr,
            list(answer.isr),
            answer.leader_epoch,
            answer.partition_epoch,
            ChangeReason.ISR_EXPAND if item.change.is_expand else ChangeReason.ISR_SHRINK,
        )
        self._on_isr_changed(current)

    async def stop(self) -> None:
        self._stopped = True
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        task = self._in_flight
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._sender.close()
