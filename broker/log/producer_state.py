"""Idempotent producer state of one partition: per producer id, its epoch and last batches.

Kafka's rules (ProducerStateManager / ProducerAppendInfo), for batches from clients:
- a batch with an older epoch than the producer's current one is fenced
  (INVALID_PRODUCER_EPOCH);
- a batch whose sequence range equals one of the producer's last five batches is a retry:
  the append is skipped and the original offsets are returned;
- a new epoch must start at sequence 0, unless the producer is unknown here (its state was
  never seen, or removed), in which case any sequence is accepted;
- otherwise the first sequence must follow the last one (wrapping at 2^31 - 1), or the
  batch is OUT_OF_ORDER_SEQUENCE_NUMBER.
Transactions (KIP-98): a producer's transactional batches open a transaction that its
marker (a control batch, appended by the leader for the transaction coordinator) ends. A
marker older than the producer's epoch is INVALID_PRODUCER_EPOCH, one from an older
coordinator epoch TRANSACTION_COORDINATOR_FENCED. `transactions` keeps the open, unreplicated
and aborted transactions (see `transaction_state`).
The state is rebuilt from the batches of the log when it is opened (markers read from the
control batches' records).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from broker.log.batch import BatchHeader
from broker.log.control_records import EndTxnMarker
from broker.log.errors import (
    INVALID_PRODUCER_EPOCH,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    TRANSACTION_COORDINATOR_FENCED,
    RecordError,
)
from broker.log.producer_snapshot import NO_OFFSET, SnapshotEntry
from broker.log.transaction_state import AbortedTxn, CompletedTxn, TransactionTracker

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
BATCHES_RETAINED_PER_PRODUCER = 5  # Kafka's NumBatchesToRetain; clients keep 5 in flight
MAX_PRODUCERS_PER_PARTITION = 100_000  # least recently used producer ids beyond this are forgotten
MAX_SEQUENCE = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BatchRange:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    max_timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchRange] = field(
        default_factory=lambda: deque(maxlen=BATCHES_RETAINED_PER_PRODUCER)
    )
    coordinator_epoch: int = -1  # of the last marker written for this producer

    @property
    def last_sequence(self) -> int | None:
        return self.batches[-1].last_sequence if self.batches else None


def last_sequence_of(header: BatchHeader) -> int:
    return (header.base_sequence + header.last_offset_delta) % (MAX_SEQUENCE + 1)


def _at_epoch(entry: ProducerEntry | None, epoch: int) -> ProducerEntry:
    """The entry to record a batch of `epoch` in: a new epoch forgets the sequences, not
    the coordinator epoch."""
    if entry is None:
        return ProducerEntry(epoch)
    if entry.epoch != epoch:
        return ProducerEntry(epoch, coordinator_epoch=entry.coordinator_epoch)
    return entry


def _in_sequence(last_sequence: int, next_sequence: int) -> bool:
    return next_sequence == (last_sequence + 1) % (MAX_SEQUENCE + 1)


@dataclass(frozen=True, slots=True)
class ActiveProducer:
    """One producer as DescribeProducers reports it (-1 where nothing is known)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


# A batch as the state sees it: its header, and the marker it carries if it is one.
LoggedBatch = tuple[BatchHeader, EndTxnMarker | None]


class ProducerStateManager:
    def __init__(self) -> None:
        self._producers: OrderedDict[int, ProducerEntry] = OrderedDict()
        self.transactions = TransactionTracker()

    def __len__(self) -> int:
        return len(self._producers)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def active_producers(self) -> list[ActiveProducer]:
        ongoing = self.transactions.ongoing
        return [
            ActiveProducer(
                producer_id,
                entry.epoch,
                entry.batches[-1].last_sequence if entry.batches else -1,
                entry.batches[-1].max_timestamp if entry.batches else -1,
                entry.coordinator_epoch,
                ongoing.get(producer_id, -1),
            )
            for producer_id, entry in self._producers.items()
        ]

    def last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its latest batch: the batch the log cleaner keeps
        (empty if need be) so that the producer's sequence survives compaction."""
        return {
            producer_id: entry.batches[-1].last_offset
            for producer_id, entry in self._producers.items()
            if entry.batches
        }

    def has_batches_from(self, offset: int) -> bool:
        """Whether any producer's latest batch or marker ends at or after `offset`: only then
        does a truncation there change this state (the batches are recorded in offset
        order)."""
        return (
            any(
                entry.batches and entry.batches[-1].last_offset >= offset
                for entry in self._producers.values()
            )
            or any(t.last_offset >= offset for t in self.transactions.aborted)
            or any(first_offset >= offset for first_offset in self.transactions.ongoing.values())
        )

    def remove_batches_from(self, offset: int) -> None:
        """Forget the batches at and after `offset` (a truncation there). What remains is
        exact for the batches it keeps, but a producer whose every retained batch went is
        forgotten, and its older history is not restored: a rebuild from the log is."""
        self.transactions.truncate_from(offset)
        for producer_id, entry in list(self._producers.items()):
            if not entry.batches or entry.batches[-1].last_offset < offset:
                continue
            kept = [batch for batch in entry.batches if batch.last_offset < offset]
            if kept:
                entry.batches = deque(kept, maxlen=BATCHES_RETAINED_PER_PRODUCER)
            else:
                del self._producers[producer_id]

    def check(self, header: BatchHeader, sequences: bool = True) -> BatchRange | None:
        """Validate a client batch before it is written.

        Returns the original batch's range if this is a retry of it, None if it should be
        appended; raises RecordError when the producer is fenced or out of sequence. Without
        `sequences` (a coordinator's own writes, as Kafka's AppendOrigin.Coordinator) only the
        epoch is checked.
        """
        if header.producer_id == NO_PRODUCER_ID or header.is_control:
            return None
        entry = self._producers.get(header.producer_id)
        if entry is None:
            return None
        if header.producer_epoch < entry.epoch:
            raise RecordError(
                INVALID_PRODUCER_EPOCH,
                f"producer {header.producer_id} epoch {header.producer_epoch} is older than"
                f" the current epoch {entry.epoch}",
            )
        if not sequences:
            return None
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise RecordError(
                    OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {header.producer_id} new epoch {header.producer_epoch} must start"
                    f" at sequence 0, not {header.base_sequence}",
                )
            return None
        duplicate = self._find_duplicate(entry, header)
        if duplicate is not None:
            return duplicate
        last_sequence = entry.last_sequence
        if last_sequence is not None and not _in_sequence(last_sequence, header.base_sequence):
            raise RecordError(
                OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {header.producer_id} sent sequence {header.base_sequence} after"
                f" {last_sequence}",
            )
        return None

    @staticmethod
    def _find_duplicate(entry: ProducerEntry, header: BatchHeader) -> BatchRange | None:
        last_sequence = last_sequence_of(header)
        for batch in entry.batches:
            if (batch.first_sequence, batch.last_sequence) == (header.base_sequence, last_sequence):
                return batch
        return None

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Validate a marker before the leader writes it (Kafka's appendEndTxnMarker checks)."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise RecordError(
                INVALID_PRODUCER_EPOCH,
                f"marker for producer {producer_id} at epoch {producer_epoch}, older than"
                f" {entry.epoch}",
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise RecordError(
                TRANSACTION_COORDINATOR_FENCED,
                f"marker for producer {producer_id} from coordinator epoch {coordinator_epoch},"
                f" older than {entry.coordinator_epoch}",
            )

    def update(
        self, header: BatchHeader, first_offset: int, marker: EndTxnMarker | None = None
    ) -> CompletedTxn | None:
        """Record a batch that was written at `first_offset` (leader) or as stored (loading);
        a control batch with its `marker`. Returns the transaction a marker completed."""
        if header.producer_id == NO_PRODUCER_ID:
            return None
        if header.is_control:
            return None if marker is None else self._complete(header, first_offset, marker)
        if header.is_transactional:
            self.transactions.on_transactional_batch(header.producer_id, first_offset)
        entry = _at_epoch(self._producers.pop(header.producer_id, None), header.producer_epoch)
        entry.batches.append(
            BatchRange(
                header.base_sequence,
                last_sequence_of(header),
                first_offset,
                first_offset + header.last_offset_delta,
                header.max_timestamp,
            )
        )
        self._remember(header.producer_id, entry)
        return None

    def _complete(self, header: BatchHeader, offset: int, marker: EndTxnMarker) -> CompletedTxn:
        # A marker may carry a bumped epoch (the coordinator fenced the producer or aborted
        # on timeout): the producer's sequences then start anew.
        entry = _at_epoch(self._producers.pop(header.producer_id, None), header.producer_epoch)
        entry.coordinator_epoch = marker.coordinator_epoch
        self._remember(header.producer_id, entry)
        return self.transactions.on_marker(header.producer_id, offset, marker.is_commit)

    def _remember(self, producer_id: int, entry: ProducerEntry) -> None:
        self._producers[producer_id] = entry  # most recently used goes last
        while len(self._producers) > MAX_PRODUCERS_PER_PARTITION:
            self._producers.popitem(last=False)

    def rebuild(self, batches: Iterable[LoggedBatch]) -> None:
        self._producers.clear()
        self.transactions = TransactionTracker()
        self.replay(batches)

    def replay(self, batches: Iterable[LoggedBatch]) -> None:
        """Record logged batches (as stored) on top of the state."""
        for header, marker in batches:
            self.update(header, header.base_offset, marker)

    def snapshot_entries(self) -> list[SnapshotEntry]:
        """The state as a snapshot holds it: each producer's latest batch only (Kafka's)."""
        ongoing = self.transactions.ongoing
        return [
            _snapshot_entry(producer_id, entry, ongoing.get(producer_id, NO_OFFSET))
            for producer_id, entry in self._producers.items()
        ]

    def restore(self, entries: list[SnapshotEntry], aborted: list[AbortedTxn]) -> None:
        """The state a snapshot holds, with the aborted transactions below it (from the
        segments' .txnindex files)."""
        self._producers.clear()
        ongoing = {}
        for saved in entries:
            entry = ProducerEntry(saved.producer_epoch, coordinator_epoch=saved.coordinator_epoch)
            if saved.last_offset != NO_OFFSET:
                entry.batches.append(
                    BatchRange(
                        (saved.last_sequence - saved.offset_delta) % (MAX_SEQUENCE + 1),
                        saved.last_sequence,
                        saved.last_offset - saved.offset_delta,
                        saved.last_offset,
                        saved.timestamp,
                    )
                )
            self._remember(saved.producer_id, entry)
            if saved.current_txn_first_offset != NO_OFFSET:
                ongoing[saved.producer_id] = saved.current_txn_first_offset
        self.transactions = TransactionTracker.restored(ongoing, aborted)


def _snapshot_entry(producer_id: int, entry: ProducerEntry, txn_first_offset: int) -> SnapshotEntry:
    if not entry.batches:
        return SnapshotEntry(
            producer_id,
            entry.epoch,
            -1,
            NO_OFFSET,
            0,
            -1,
            entry.coordinator_epoch,
            txn_first_offset,
        )
    batch = entry.batches[-1]
    return SnapshotEntry(
        producer_id,
        entry.epoch,
        batch.last_sequence,
        batch.last_offset,
        batch.last_offset - batch.first_offset,
        batch.max_timestamp,
        entry.coordinator_epoch,
        txn_first_offset,
    )
