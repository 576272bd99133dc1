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
The state is rebuilt from the batch headers of the log when it is opened.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from broker.log.batch import BatchHeader
from broker.log.errors import INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER, RecordError

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

    @property
    def last_sequence(self) -> int | None:
        return self.batches[-1].last_sequence if self.batches else None


def last_sequence_of(header: BatchHeader) -> int:
    return (header.base_sequence + header.last_offset_delta) % (MAX_SEQUENCE + 1)


def _in_sequence(last_sequence: int, next_sequence: int) -> bool:
    return next_sequence == (last_sequence + 1) % (MAX_SEQUENCE + 1)


class ProducerStateManager:
    def __init__(self) -> None:
        self._producers: OrderedDict[int, ProducerEntry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._producers)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its latest batch: the batch the log cleaner keeps
        (empty if need be) so that the producer's sequence survives compaction."""
        return {
            producer_id: entry.batches[-1].last_offset
            for producer_id, entry in self._producers.items()
            if entry.batches
        }

    def has_batches_from(self, offset: int) -> bool:
        """Whether any producer's latest batch ends at or after `offset`: only then does a
        truncation there change this state (the batches are recorded in offset order)."""
        return any(
            entry.batches and entry.batches[-1].last_offset >= offset
            for entry in self._producers.values()
        )

    def remove_batches_from(self, offset: int) -> None:
        """Forget the batches at and after `offset` (a truncation there). What remains is
        exact for the batches it keeps, but a producer whose every retained batch went is
        forgotten, and its older history is not restored: a rebuild from the log is."""
        for producer_id, entry in list(self._producers.items()):
            if not entry.batches or entry.batches[-1].last_offset < offset:
                continue
            kept = [batch for batch in entry.batches if batch.last_offset < offset]
            if kept:
                entry.batches = deque(kept, maxlen=BATCHES_RETAINED_PER_PRODUCER)
            else:
                del self._producers[producer_id]

    def check(self, header: BatchHeader) -> BatchRange | None:
        """Validate a client batch before it is written.

        Returns the original batch's range if this is a retry of it, None if it should be
        appended; raises RecordError when the producer is fenced or out of sequence.
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

    def update(self, header: BatchHeader, first_offset: int) -> None:
        """Record a batch that was written at `first_offset` (leader) or as stored (loading)."""
        if header.producer_id == NO_PRODUCER_ID or header.is_control:
            return
        entry = self._producers.pop(header.producer_id, None)
        if entry is None or header.producer_epoch != entry.epoch:
            entry = ProducerEntry(header.producer_epoch)
        entry.batches.append(
            BatchRange(
                header.base_sequence,
                last_sequence_of(header),
                first_offset,
                first_offset + header.last_offset_delta,
                header.max_timestamp,
            )
        )
        self._producers[header.producer_id] = entry  # most recently used goes last
        while len(self._producers) > MAX_PRODUCERS_PER_PARTITION:
            self._producers.popitem(last=False)

    def rebuild(self, headers: Iterable[BatchHeader]) -> None:
        self._producers.clear()
        for header in headers:
            self.update(header, header.base_offset)
