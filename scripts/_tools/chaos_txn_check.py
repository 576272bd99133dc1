"""`scripts/chaos --transactional`: read both topics back and hold them against the writers'
transactions and the copier.

Read committed, the writers' topic must show every record of each committed transaction once,
none of an aborted one, and each transaction whose outcome the client never learnt either
whole or not at all; each writer's records in order within a partition. The copier's topic,
read committed, must hold exactly the records the writers' topic shows, each once.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from .chaos_produce import parse_payload
from .chaos_txn import Txn
from .chaos_verify import check_consumer

CONSUME_BATCH = 10_000
SAMPLES_KEPT = 5
POLL_PAUSE_S = 0.5

Stored = dict[int, list[tuple[int, bytes]]]  # partition -> [(offset, payload)]


@dataclass(slots=True)
class TxnCheck:
    committed_txns: int = 0
    aborted_txns: int = 0
    unknown_txns: int = 0
    committed_records: int = 0
    lost: int = 0  # of a committed transaction, not read
    duplicated: int = 0  # read more than once
    aborted_visible: int = 0  # of an aborted transaction, read
    partial_txns: int = 0  # some records of one transaction read, others not
    reordered: int = 0
    foreign: int = 0  # read, but no writer of this run wrote it
    copied: int = 0
    copy_lost: int = 0
    copy_duplicated: int = 0
    copy_foreign: int = 0
    read_complete: bool = True
    samples: dict[str, list[str]] = field(default_factory=dict)

    def sample(self, problem: str, text: str) -> None:
        kept = self.samples.setdefault(problem, [])
        if len(kept) < SAMPLES_KEPT:
            kept.append(text)

    @property
    def problems(self) -> int:
        return sum(
            (
                self.lost,
                self.duplicated,
                self.aborted_visible,
                self.partial_txns,
                self.reordered,
                self.foreign,
                self.copy_lost,
                self.copy_duplicated,
                self.copy_foreign,
            )
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _consumer(bootstrap: str, isolation_level: str) -> Consumer:
    return check_consumer(
        bootstrap, **{"isolation.level": isolation_level, "enable.partition.eof": True}
    )


def wait_stable(bootstrap: str, topic: str, partitions: int, timeout_s: float) -> bool:
    """Until no transaction is open in any partition (last stable offset = high watermark)."""
    readers = [_consumer(bootstrap, level) for level in ("read_committed", "read_uncommitted")]
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            try:
                stable, high = (
                    [
                        r.get_watermark_offsets(TopicPartition(topic, p), 10, False)[1]
                        for p in range(partitions)
                    ]
                    for r in readers
                )
                if stable == high:
                    return True
            except KafkaException:  # a leader gone for a moment: ask again
                pass
            time.sleep(POLL_PAUSE_S)
        return False
    finally:
        for reader in readers:
            reader.close()


def read_committed(
    bootstrap: str, topic: str, partitions: int, timeout_s: float
) -> tuple[Stored, bool]:
    """Every record a read_committed reader sees, to the end of each partition."""
    consumer = _consumer(bootstrap, "read_committed")
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    stored: Stored = {p: [] for p in range(partitions)}
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while len(at_end) < partitions and time.monotonic() < deadline:
            for message in consumer.consume(CONSUME_BATCH, 1.0):
                error, partition, offset = message.error(), message.partition(), message.offset()
                if partition is None:
                    continue
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        at_end.add(partition)
                    continue
                if offset is None or (stored[partition] and offset <= stored[partition][-1][0]):
                    continue  # a re-fetch after a client-side retry
                at_end.discard(partition)
                stored[partition].append((offset, message.value() or b""))
    finally:
        consumer.close()
    return stored, len(at_end) == partitions


def check_writers(txns: list[Txn], stored: Stored, run: str) -> TxnCheck:
    result = TxnCheck()
    counts: Counter[bytes] = Counter(
        payload for records in stored.values() for _, payload in records
    )
    for txn in txns:
        seen = [counts[payload] > 0 for _, payload in txn.records]
        if txn.outcome == "committed":
            result.committed_txns += 1
            result.committed_records += len(txn.records)
            for (partition, payload), found in zip(txn.records, seen, strict=True):
                if not found:
                    result.lost += 1
                    result.sample("lost", f"{payload!r} committed in {partition}, not read")
        elif txn.outcome == "aborted":
            result.aborted_txns += 1
            visible = sum(seen)
            result.aborted_visible += visible
            if visible:
                result.sample(
                    "aborted visible", f"{visible} of {txn.records[0][1]!r}'s transaction"
                )
        else:
            result.unknown_txns += 1
        if any(seen) and not all(seen):
            result.partial_txns += 1
            result.sample(
                "partial", f"{sum(seen)}/{len(seen)} of {txn.records[0][1]!r}'s transaction read"
            )
    written = {payload for txn in txns for _, payload in txn.records}
    for payload, count in counts.items():
        if count > 1:
            result.duplicated += count - 1
            result.sample("duplicated", f"{payload!r} read {count} times")
        parsed = parse_payload(payload)
        if payload not in written and parsed is not None and parsed[0] == run:
            result.foreign += 1
            result.sample("foreign", f"{payload!r}")
    for partition, records in stored.items():
        last: dict[str, int] = {}
        for offset, payload in records:
            parsed = parse_payload(payload)
            if parsed is None or parsed[0] != run:
                continue
            _, label, sequence = parsed
            if sequence < last.get(label, -1):
                result.reordered += 1
                result.sample("reordered", f"{payload!r} at {partition}/{offset}")
            last[label] = max(sequence, last.get(label, -1))
    return result


def check_copies(result: TxnCheck, source: Stored, copies: Stored) -> None:
    expected = Counter(payload for records in source.values() for _, payload in records)
    found = Counter(payload for records in copies.values() for _, payload in records)
    result.copied = sum(found.values())
    for payload in expected:
        if payload not in found:
            result.copy_lost += 1
            result.sample("copy lost", f"{payload!r}")
    for payload, count in found.items():
        if payload not in expected:
            result.copy_foreign += 1
            result.sample("copy foreign", f"{payload!r}")
        elif count > 1:
            result.copy_duplicated += count - 1
            result.sample("copy duplicated", f"{payload!r} copied {count} times")


def copy_targets(source: Stored) -> dict[int, int]:
    """The input offsets the copier has committed once it copied everything readable."""
    return {p: records[-1][0] + 1 for p, records in source.items() if records}


TABLE_ROWS = (
    ("transactions committed", "committed_txns"),
    ("transactions aborted", "aborted_txns"),
    ("transactions undecided by the client", "unknown_txns"),
    ("committed records", "committed_records"),
    ("lost", "lost"),
    ("duplicated", "duplicated"),
    ("aborted records visible", "aborted_visible"),
    ("partly visible transactions", "partial_txns"),
    ("reordered", "reordered"),
    ("unknown records", "foreign"),
    ("copied (consume-transform-produce)", "copied"),
    ("copies lost", "copy_lost"),
    ("copies duplicated", "copy_duplicated"),
    ("copies of unknown records", "copy_foreign"),
)


def table_rows(result: dict[str, Any]) -> list[tuple[str, object]]:
    """The check's lines of the table, from the summary (TxnCheck.as_dict's keys)."""
    return [(name, result[key]) for name, key in TABLE_ROWS]
