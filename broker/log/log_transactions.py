"""The transactional side of a partition's log (KIP-98), mixed into `Log`: the last stable
offset, the aborted transactions a read_committed fetch must name, and the markers the leader
writes for the transaction coordinator. The transaction state itself lives in the producer
state (`producer_state`, `transaction_state`); the markers a follower replicates are read in
`Log.append_as_follower`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.log.batch import BatchHeader, Buffer, assign_offsets, validate_batches
from broker.log.control_records import EndTxnMarker, build_marker_batch, read_marker
from broker.log.errors import LogInvariantError, RecordError
from broker.log.producer_state import NO_PRODUCER_ID, ProducerStateManager
from broker.log.segment import batch_spans
from broker.log.transaction_state import AbortedTxn, CompletedTxn
from broker.log.txn_index import aborted_in

if TYPE_CHECKING:
    from broker.log.config import LogConfig
    from broker.log.epoch_cache import LeaderEpochCache
    from broker.log.segment import BatchSpan, LogSegment

logger = logging.getLogger(__name__)

END_OF_LOG = 2**63 - 1


class TransactionalLog:
    if TYPE_CHECKING:  # provided by Log
        producer_state: ProducerStateManager
        high_watermark: int
        log_end_offset: int
        config: LogConfig
        leader_epoch_cache: LeaderEpochCache

        def _check_open(self) -> None: ...

        def _write(
            self, data: bytearray, spans: list[BatchSpan], first_offset: int, now_ms: int
        ) -> None: ...

        def _record_producer_batch(
            self, header: BatchHeader, first_offset: int, marker: EndTxnMarker | None = None
        ) -> CompletedTxn | None: ...

        @property
        def segments(self) -> list[LogSegment]: ...

        def segment_for(self, offset: int) -> LogSegment: ...

        def _report_io_error(self, error: OSError) -> None: ...

    @property
    def last_stable_offset(self) -> int:
        """What read_committed consumers may read below: the high watermark, or the first
        offset of a transaction not yet decided (or whose marker is not yet replicated)."""
        return self.producer_state.transactions.last_stable_offset(self.high_watermark)

    def aborted_transactions(self, fetch_offset: int, upper_offset: int) -> list[AbortedTxn]:
        """Aborted transactions with records in [fetch_offset, upper_offset)."""
        return self.producer_state.transactions.aborted_between(fetch_offset, upper_offset)

    def _index_abort(self) -> None:
        """The abort just recorded, into the .txnindex of the segment holding its marker."""
        txn = self.producer_state.transactions.latest_aborted()
        if txn is None:
            return
        try:
            self.segment_for(txn.last_offset).txn_index.append(txn)
        except OSError as error:
            logger.error("writing the transaction index of %s failed: %s", self, error)
            self._report_io_error(error)

    def _reconcile_txn_indexes(self) -> None:
        """(Opening the log.) Each segment's .txnindex made to hold exactly the aborts whose
        markers it holds, as rebuilt from the log: a crash may have left one behind."""
        aborted = self.producer_state.transactions.aborted
        segments = self.segments
        ends = [s.base_offset for s in segments[1:]] + [END_OF_LOG]
        for segment, end_offset in zip(segments, ends, strict=True):
            expected = aborted_in(aborted, segment.base_offset, end_offset)
            if segment.txn_index.entries() != expected:
                segment.txn_index.replace(expected)

    def append_marker_as_leader(
        self,
        producer_id: int,
        producer_epoch: int,
        marker: EndTxnMarker,
        leader_epoch: int,
        now_ms: int,
    ) -> CompletedTxn:
        """Write a transaction marker for the coordinator (WriteTxnMarkers). Raises
        RecordError when the producer's epoch or the coordinator's is older than one seen."""
        self._check_open()
        self.producer_state.check_marker(producer_id, producer_epoch, marker.coordinator_epoch)
        data = bytearray(build_marker_batch(producer_id, producer_epoch, marker, now_ms))
        header = validate_batches(data, self.config.max_message_bytes, from_client=False)[0]
        first_offset = self.log_end_offset
        assign_offsets(data, first_offset, leader_epoch)
        self._write(data, batch_spans([header], first_offset, -1), first_offset, now_ms)
        self.leader_epoch_cache.assign(leader_epoch, first_offset)
        completed = self._record_producer_batch(header, first_offset, marker)
        if completed is None:
            raise LogInvariantError(f"{self}: the marker at {first_offset} completed nothing")
        return completed


def replicated_marker(records: Buffer, position: int, header: BatchHeader) -> EndTxnMarker | None:
    """The marker of a control batch a follower appends (None for other batches)."""
    if not header.is_control or header.producer_id == NO_PRODUCER_ID:
        return None
    try:
        return read_marker(memoryview(records)[position : position + header.size_bytes], header)
    except RecordError as error:
        logger.warning("control batch at offset %d replicated: %s", header.base_offset, error)
        return None
