"""A segment's aborted-transaction index, `<base offset>.txnindex`, in Kafka's format.

One 34-byte entry per transaction aborted by a marker in the segment: version (i16, 0),
producer id (i64), first offset (i64), last offset (i64, the marker's), last stable offset
(i64, when the abort was appended). The file exists only once a segment holds an abort, as
in Kafka. The aborted transactions a read_committed fetch names come from memory
(`transaction_state`), rebuilt from the markers when a log is opened; these files record them
for Kafka's tools and are brought back in line with the log whenever it is opened.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from broker.log.transaction_state import AbortedTxn

if TYPE_CHECKING:
    from broker.log.segment import LogSegment

TXN_INDEX_SUFFIX = ".txnindex"
ENTRY = struct.Struct(">hqqqq")
ENTRY_VERSION = 0


class TransactionIndex:
    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, txn: AbortedTxn) -> None:
        """(Page cache only: the segment's flush fsyncs it.)"""
        with open(self.path, "ab") as file:
            file.write(_entry(txn))

    def entries(self) -> list[AbortedTxn]:
        """The entries, oldest first; a torn last entry or one of another version ends them."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        found = []
        for start in range(0, len(data) - ENTRY.size + 1, ENTRY.size):
            version, producer_id, first, last, stable = ENTRY.unpack_from(data, start)
            if version != ENTRY_VERSION:
                break
            found.append(AbortedTxn(producer_id, first, last, stable))
        return found

    def replace(self, txns: Sequence[AbortedTxn]) -> None:
        """Write exactly `txns` (no file for none)."""
        if not txns:
            self.path.unlink(missing_ok=True)
            return
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_bytes(b"".join(_entry(txn) for txn in txns))
        os.replace(temporary, self.path)

    def truncate_to(self, offset: int) -> None:
        """Drop the transactions whose marker is at or after `offset` (truncated away)."""
        entries = self.entries()
        kept = [txn for txn in entries if txn.last_offset < offset]
        if len(kept) != len(entries):
            self.replace(kept)

    def flush(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def rename(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)


def _entry(txn: AbortedTxn) -> bytes:
    return ENTRY.pack(
        ENTRY_VERSION, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset
    )


def aborted_in(txns: Sequence[AbortedTxn], base_offset: int, end_offset: int) -> list[AbortedTxn]:
    """Those whose marker lies in [base_offset, end_offset): a segment's entries."""
    return [txn for txn in txns if base_offset <= txn.last_offset < end_offset]


END_OF_LOG = 2**63 - 1


def reconcile_txn_indexes(segments: Sequence[LogSegment], aborted: Sequence[AbortedTxn]) -> None:
    """(Opening a log.) Each segment's .txnindex made to hold exactly the aborts whose markers
    it holds, `aborted` being all of them as rebuilt from the log: a crash may have left one
    behind."""
    ends = [s.base_offset for s in segments[1:]] + [END_OF_LOG]
    for segment, end_offset in zip(segments, ends, strict=True):
        expected = aborted_in(aborted, segment.base_offset, end_offset)
        if segment.txn_index.entries() != expected:
            segment.txn_index.replace(expected)
