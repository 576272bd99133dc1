"""Read the topic back and hold it against the acknowledgements: every acknowledged record at
its acknowledged offset, no payload twice, each producer's records in order in each partition.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, TopicPartition

from .chaos_produce import NO_OFFSET, Ack, parse_payload

REQUEST_TIMEOUT_S = 10.0
CONSUME_BATCH = 10_000
SAMPLES_KEPT = 5  # examples per kind of problem, for the report

Stored = dict[int, list[tuple[int, bytes]]]  # partition -> [(offset, payload)] in offset order
EpochAt = Callable[[int, int], int | None]  # (partition, offset) -> producer epoch, if known


@dataclass(slots=True)
class RecordCheck:
    acked: int = 0
    acked_without_offset: int = 0  # the client reported no offset: checked for presence only
    stored: int = 0  # records of this run found in the topic
    lost: int = 0  # acknowledged, but not at the acknowledged offset
    duplicated: int = 0  # extra copies of a payload written under one producer epoch
    # Extra copies written under a later producer epoch: the client re-sent records after it
    # bumped its epoch (librdkafka does so after OUT_OF_ORDER_SEQUENCE on any partition, and
    # treats NOT_LEADER_OR_FOLLOWER as "not persisted" though an acks=all wait may have
    # appended the batch; librdkafka#4953). Sequence numbers restart with a new epoch, so no
    # broker can tell them apart; Kafka's idempotence holds within one epoch.
    resent_after_epoch_bump: int = 0
    reordered: int = 0  # a producer's record behind a later one of its own in a partition
    unacknowledged: int = 0  # stored, never acknowledged (failed deliveries may still land)
    read_complete: bool = True
    samples: dict[str, list[str]] = field(default_factory=dict)

    def sample(self, problem: str, text: str) -> None:
        kept = self.samples.setdefault(problem, [])
        if len(kept) < SAMPLES_KEPT:
            kept.append(text)


def check_consumer(bootstrap: str, **settings: object) -> Consumer:
    """A reader for the checks (`settings`: more client properties)."""
    # The client insists on a group.id; with assign() and no commits the group stays unused.
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "chaos-check",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 0,
            **settings,
        }
    )


def _watermarks(
    consumer: Consumer, topic: str, partition: int, timeout_s: float
) -> tuple[int, int]:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=REQUEST_TIMEOUT_S
            )
            return int(low), int(high)
        except KafkaException:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.5)


def read_topic(
    bootstrap: str, topic: str, partitions: int, timeout_s: float
) -> tuple[Stored, bool]:
    """Every record from the log start to the high watermark of each partition; the flag says
    whether all of it arrived within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    consumer = check_consumer(bootstrap)
    stored: Stored = {p: [] for p in range(partitions)}
    try:
        bounds = {p: _watermarks(consumer, topic, p, timeout_s) for p in range(partitions)}
        pending = {p for p, (low, high) in bounds.items() if high > low}
        consumer.assign([TopicPartition(topic, p, bounds[p][0]) for p in sorted(pending)])
        while pending and time.monotonic() < deadline:
            for message in consumer.consume(CONSUME_BATCH, timeout=1.0):
                partition, offset = message.partition(), message.offset()
                if message.error() is not None or partition is None or offset is None:
                    continue
                if stored[partition] and offset <= stored[partition][-1][0]:
                    continue  # a re-fetch after a client-side retry, not a second copy
                stored[partition].append((offset, message.value() or b""))
                if offset >= bounds[partition][1] - 1:
                    pending.discard(partition)
    finally:
        consumer.close()
    return stored, not pending


def check_records(acks: list[Ack], stored: Stored, run: str, epoch_at: EpochAt) -> RecordCheck:
    result = RecordCheck(acked=len(acks))
    at_offset = {
        (p, offset): payload for p, records in stored.items() for offset, payload in records
    }
    in_partition = {(p, payload) for p, records in stored.items() for _, payload in records}
    for ack in acks:
        if ack.offset == NO_OFFSET:
            # Only presence in its partition can be checked; duplicates are counted below.
            result.acked_without_offset += 1
            if (ack.partition, ack.payload) not in in_partition:
                result.lost += 1
                result.sample("lost", f"{ack.payload!r} acked in {ack.partition}, no offset")
            continue
        found = at_offset.get((ack.partition, ack.offset))
        if found != ack.payload:
            result.lost += 1
            where = f"{ack.partition}/{ack.offset}"
            result.sample("lost", f"{ack.payload!r} acked at {where}, found {found!r}")
    acked_payloads = {ack.payload for ack in acks}
    counts: Counter[bytes] = Counter()
    copies: dict[bytes, list[int | None]] = {}  # payload -> producer epoch of each copy
    for partition, records in stored.items():
        last_sequence: dict[str, int] = {}
        for offset, payload in records:
            parsed = parse_payload(payload)
            if parsed is None or parsed[0] != run:
                continue  # another run's records (a reused topic) or not ours at all
            _, label, sequence = parsed
            result.stored += 1
            counts[payload] += 1
            copies.setdefault(payload, []).append(epoch_at(partition, offset))
            if counts[payload] > 1:
                continue  # a second copy: counted as duplicated, not also as reordered
            if payload not in acked_payloads:
                result.unacknowledged += 1
            if sequence < last_sequence.get(label, -1):
                result.reordered += 1
                result.sample("reordered", f"{payload!r} at {partition}/{offset}")
            last_sequence[label] = max(sequence, last_sequence.get(label, -1))
    for payload, count in counts.items():
        if count == 1:
            continue
        epochs = copies[payload]
        if None not in epochs and len(set(epochs)) == count:
            result.resent_after_epoch_bump += count - 1
            result.sample("resent after an epoch bump", f"{payload!r} epochs {epochs}")
        else:
            result.duplicated += count - 1
            result.sample("duplicated", f"{payload!r} stored {count} times, epochs {epochs}")
    return result
