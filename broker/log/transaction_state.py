"""The transactions of one partition, as its log shows them (Kafka's ProducerStateManager keeps
the same three collections):

- open transactions: per producer, the offset of its first transactional batch since its
  last marker;
- completed transactions whose marker is not yet below the high watermark: until it is, a
  follower may still lose the marker, so the transaction still counts as unstable;
- aborted transactions, for read_committed fetches: each with the last stable offset at the
  time of its abort marker (Kafka's `.txnindex` entry), which bounds how far a search for
  aborted transactions below an offset must look.

The first unstable offset is the smallest first offset among the first two; the last stable
offset (LSO) is the smaller of it and the high watermark: read_committed consumers read below
the LSO only.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int  # the LSO just after the abort marker was appended


class TransactionTracker:
    def __init__(self) -> None:
        self._ongoing: dict[int, int] = {}  # producer id -> first offset, in offset order
        self._unreplicated: list[CompletedTxn] = []  # in marker order
        self._aborted: list[AbortedTxn] = []  # in marker (last offset) order

    @classmethod
    def restored(cls, ongoing: dict[int, int], aborted: list[AbortedTxn]) -> TransactionTracker:
        """From a producer-state snapshot (the open transactions) and the aborted-transaction
        indexes below it; transactions completed before it count as replicated."""
        tracker = cls()
        tracker._ongoing = dict(sorted(ongoing.items(), key=lambda item: item[1]))
        tracker._aborted = sorted(aborted, key=lambda t: t.last_offset)
        return tracker

    @property
    def ongoing(self) -> dict[int, int]:
        return dict(self._ongoing)

    def open_first_offset(self, producer_id: int) -> int | None:
        return self._ongoing.get(producer_id)

    def on_transactional_batch(self, producer_id: int, first_offset: int) -> None:
        """A data batch of `producer_id`'s transaction (the first one opens it)."""
        self._ongoing.setdefault(producer_id, first_offset)

    def on_marker(self, producer_id: int, marker_offset: int, is_commit: bool) -> CompletedTxn:
        """The producer's marker was appended at `marker_offset`; a marker with no open
        transaction completes an empty one there, as in Kafka."""
        first_offset = self._ongoing.pop(producer_id, marker_offset)
        completed = CompletedTxn(producer_id, first_offset, marker_offset, not is_commit)
        self._unreplicated.append(completed)
        if completed.is_aborted:
            next_unstable = next(iter(self._ongoing.values()), marker_offset + 1)
            self._aborted.append(
                AbortedTxn(producer_id, first_offset, marker_offset, next_unstable)
            )
        return completed

    def on_high_watermark(self, high_watermark: int) -> None:
        """Completed transactions whose markers every ISR member holds are stable."""
        if self._unreplicated and self._unreplicated[0].last_offset < high_watermark:
            self._unreplicated = [t for t in self._unreplicated if t.last_offset >= high_watermark]

    def first_unstable_offset(self) -> int | None:
        candidates = [t.first_offset for t in self._unreplicated]
        if self._ongoing:
            candidates.append(next(iter(self._ongoing.values())))
        return min(candidates, default=None)

    def last_stable_offset(self, high_watermark: int) -> int:
        first_unstable = self.first_unstable_offset()
        return high_watermark if first_unstable is None else min(first_unstable, high_watermark)

    def aborted_between(self, fetch_offset: int, upper_offset: int) -> list[AbortedTxn]:
        """Aborted transactions with records in [fetch_offset, upper_offset): what a
        read_committed fetch from `fetch_offset` must tell the consumer to skip."""
        start = bisect.bisect_left(self._aborted, fetch_offset, key=lambda t: t.last_offset)
        found = []
        for txn in self._aborted[start:]:
            if txn.first_offset < upper_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_offset:
                break  # every later abort began at or after this LSO
        return found

    @property
    def aborted(self) -> list[AbortedTxn]:
        return list(self._aborted)

    def latest_aborted(self) -> AbortedTxn | None:
        return self._aborted[-1] if self._aborted else None

    def truncate_from(self, offset: int) -> None:
        """The log lost its records at and after `offset`: transactions that began there
        vanish, and those whose marker went are open again."""
        reopened = {
            t.producer_id: t.first_offset
            for t in self._unreplicated
            if t.first_offset < offset <= t.last_offset
        }
        self._unreplicated = [t for t in self._unreplicated if t.last_offset < offset]
        kept = {p: f for p, f in self._ongoing.items() if f < offset} | reopened
        self._ongoing = dict(sorted(kept.items(), key=lambda item: item[1]))
        self._aborted = [t for t in self._aborted if t.last_offset < offset]

    def forget_aborted(self, marker_offsets: Collection[int]) -> None:
        """The cleaner removed these markers (no data of their transactions was left): a
        read_committed consumer must not wait for an abort marker it will never see."""
        if marker_offsets:
            self._aborted = [t for t in self._aborted if t.last_offset not in marker_offsets]

    def trim_below(self, log_start_offset: int) -> None:
        """Segments below the new log start went: so did their aborted transactions."""
        start = bisect.bisect_left(self._aborted, log_start_offset, key=lambda t: t.last_offset)
        if start:
            self._aborted = self._aborted[start:]
