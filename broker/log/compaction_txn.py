"""What the cleaner does with transactions (Kafka's LogCleaner rules for KIP-98 data).

- Data of an aborted transaction is removed: its records never enter the offset map (so they
  cannot supersede a committed value) and a cleaning pass drops them all (the batch stays as
  an empty batch if it is its producer's latest, like any emptied batch).
- Data of a committed transaction is compacted like any other data.
- A marker (control batch) goes once no data batch of its transaction is left - none of the
  producer's transactional batches since its previous marker was seen in this pass, which
  covers the log from its start - and its segment is past the delete horizon, as tombstones.
  Until then it is copied untouched. An abort marker that goes takes its transaction off the
  log's aborted list (Kafka rewrites the cleaned segments' .txnindex likewise), or
  read_committed consumers would skip the producer's later batches, waiting for it.
- Nothing above the last stable offset is cleaned (the caller bounds the cleanable range).

Which transactions were aborted comes from the log's aborted-transaction list (first offset to
marker offset, per producer). One `TxnCleaning` follows one pass in offset order; a second,
fresh one answers `is_aborted` while the offset map is built.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable

from broker.log.batch import BatchHeader
from broker.log.transaction_state import AbortedTxn
from broker.log.txn_index import aborted_in


class TxnCleaning:
    def __init__(self, aborted: Iterable[AbortedTxn]) -> None:
        self._aborted_txns = list(aborted)
        ranges: defaultdict[int, list[tuple[int, int]]] = defaultdict(list)
        for txn in self._aborted_txns:
            ranges[txn.producer_id].append((txn.first_offset, txn.last_offset))
        self._aborted = {producer: sorted(found) for producer, found in ranges.items()}
        # Producers with a transactional data batch seen since their last marker.
        self._data_seen: set[int] = set()
        self._removed: list[int] = []

    def is_aborted(self, header: BatchHeader) -> bool:
        """A transactional data batch of an aborted transaction."""
        if not header.is_transactional or header.is_control:
            return False
        ranges = self._aborted.get(header.producer_id, [])
        index = bisect.bisect_right(ranges, (header.base_offset, 2**63)) - 1
        return index >= 0 and ranges[index][0] <= header.base_offset <= ranges[index][1]

    def on_data_batch(self, header: BatchHeader) -> bool:
        """A data batch read in offset order; whether its records are all to go (aborted)."""
        if not header.is_transactional:
            return False
        self._data_seen.add(header.producer_id)
        return self.is_aborted(header)

    def on_marker(self, header: BatchHeader, retain_deletes: bool) -> bool:
        """A control batch read in offset order; whether it goes: its transaction has no
        data left and its segment is past the delete horizon. Removed markers are collected
        (`take_removed`): the log must forget an aborted transaction whose marker went."""
        data_left = header.producer_id in self._data_seen
        self._data_seen.discard(header.producer_id)
        if data_left or retain_deletes:
            return False
        self._removed.append(header.base_offset)
        return True

    def kept_aborts(self, base_offset: int, end_offset: int) -> list[AbortedTxn]:
        """The aborted transactions whose markers in [base_offset, end_offset) this pass kept
        (call before `take_removed`)."""
        removed = set(self._removed)
        found = aborted_in(self._aborted_txns, base_offset, end_offset)
        return [txn for txn in found if txn.last_offset not in removed]

    def take_removed(self) -> list[int]:
        """Offsets of the markers removed since the last call."""
        removed, self._removed = self._removed, []
        return removed
