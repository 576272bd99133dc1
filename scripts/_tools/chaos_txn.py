"""Transactional writers and a consume-transform-produce copier for `scripts/chaos
--transactional`.

Each writer (a thread with its own transactional id) runs transactions of TXN_RECORDS numbered
records spread over the partitions, at its share of --rate, and aborts about one in
ABORT_EVERY on purpose. It records each transaction's outcome as the client saw it:
committed (commit_transaction returned), aborted (abort_transaction returned), or unknown (an
error left it undecided; the writer then starts a new incarnation with the same transactional
id, whose InitProducerId fences the old one and settles the transaction either way).

The copier reads the writers' topic read_committed and copies each batch to a second topic in
one transaction with the batch's input offsets (`send_offsets_to_transaction`); after an
abort or an undecided commit it goes back to its committed offsets, so every input record is
copied exactly once whatever the faults.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from .chaos_produce import NO_OFFSET, Ack

TXN_RECORDS = 20
ABORT_EVERY = 5  # about one transaction in this many is aborted on purpose
TRANSACTION_TIMEOUT_MS = 10_000  # an abandoned transaction is aborted this soon
CALL_TIMEOUT_S = 30.0
COMMIT_ATTEMPTS = 3
COPY_BATCH = 500
REINIT_PAUSE_S = 0.5
CLIENT_DEBUG = "cgrp,fetch,topic,eos,broker"


@dataclass(frozen=True, slots=True)
class Txn:
    records: tuple[tuple[int, bytes], ...]  # (partition, payload)
    outcome: str  # "committed", "aborted" or "unknown"
    ended_at: float


@dataclass(slots=True)
class _Log:
    txns: list[Txn] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, txn: Txn) -> None:
        with self.lock:
            self.txns.append(txn)

    def error(self, text: str) -> None:
        with self.lock:
            self.errors.append(text)


def _config(bootstrap: str, transactional_id: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "transactional.id": transactional_id,
        "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
        "request.timeout.ms": 10_000,
        "reconnect.backoff.max.ms": 1000,
        "log_level": 0,
    }


class ClientHung(Exception):
    """A librdkafka call that did not return within its bound."""


# librdkafka 2.10+ drops a broker that leaves the metadata (a broker shut down or killed) and
# its thread; a transactional call waiting on that broker (begin_transaction,
# send_offsets_to_transaction: both wait without a bound) can then block forever, and
# destroying that client blocks too. Such clients, and every producer replaced by a new one,
# are kept here, never destroyed: the writer or copier goes on with a new producer, whose
# InitProducerId fences the old one.
ABANDONED_CLIENTS: list[Any] = []
HUNG_CALL_TIMEOUT_S = CALL_TIMEOUT_S + 15


def _bounded(call: Callable[[], object], what: str) -> None:
    """Run `call` on a helper thread; ClientHung if it has not returned in time (the thread
    is left blocked)."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as error:  # handed to the caller's thread
            errors.append(error)

    thread = threading.Thread(target=run, name=f"chaos-copier-{what}", daemon=True)
    thread.start()
    thread.join(HUNG_CALL_TIMEOUT_S)
    if thread.is_alive():
        raise ClientHung(f"{what} blocked for {HUNG_CALL_TIMEOUT_S:.0f} s")
    if errors:
        raise errors[0]


def _debug_logging(path: Path | None) -> dict[str, Any]:
    """librdkafka's debug log of the group, fetch and transaction machinery into `path`."""
    if path is None:
        return {}
    logger = logging.getLogger(f"chaos.librdkafka.{path}")
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    return {"debug": CLIENT_DEBUG, "logger": logger, "log_level": 7}


def _new_producer(
    bootstrap: str,
    transactional_id: str,
    stopping: threading.Event,
    failures: list[str],
    logging_config: dict[str, Any] | None = None,
) -> Any:
    """A producer with its transactional id initialised (retried until it works or stop);
    each failed attempt's error goes to `failures`."""
    while True:
        producer = Producer({**_config(bootstrap, transactional_id), **(logging_config or {})})
        try:
            producer.init_transactions(CALL_TIMEOUT_S)
            return producer
        except KafkaException as error:
            failures.append(str(error.args[0]))
            ABANDONED_CLIENTS.append(producer)  # not destroyed: see ABANDONED_CLIENTS
            if stopping.is_set():
                return None
            time.sleep(REINIT_PAUSE_S)


def _commit(producer: Any) -> None:
    """librdkafka's advice: a retriable commit error means call commit_transaction again."""
    for attempt in range(COMMIT_ATTEMPTS):
        try:
            producer.commit_transaction(CALL_TIMEOUT_S)
            return
        except KafkaException as error:
            if not error.args[0].retriable() or attempt == COMMIT_ATTEMPTS - 1:
                raise


def _end(producer: Any, abort: bool) -> str:
    """End the open transaction; its outcome as the client knows it."""
    try:
        if abort:
            producer.abort_transaction(CALL_TIMEOUT_S)
            return "aborted"
        _commit(producer)
        return "committed"
    except KafkaException as error:
        if error.args[0].txn_requires_abort():
            try:
                producer.abort_transaction(CALL_TIMEOUT_S)
                return "aborted"
            except KafkaException:
                return "unknown"
        return "unknown"


class TxnWriter(threading.Thread):
    def __init__(self, fleet: TxnFleet, index: int, rate_per_s: float) -> None:
        super().__init__(name=f"chaos-txn-{index}", daemon=True)
        self.fleet, self.index, self.rate_per_s = fleet, index, rate_per_s
        self.rng = random.Random(index)

    def run(self) -> None:
        fleet, sequence, incarnation = self.fleet, 0, 0
        transactional_id = f"chaos-{fleet.run}-t{self.index}"
        producer = _new_producer(fleet.bootstrap, transactional_id, fleet.stopping, [])
        next_at = time.monotonic()
        while producer is not None and not fleet.stopping.is_set():
            next_at += TXN_RECORDS / self.rate_per_s
            time.sleep(max(0.0, next_at - time.monotonic()))
            label = f"t{self.index}.{incarnation}"
            records = tuple(
                ((sequence + i) % fleet.partitions, f"{fleet.run}:{label}:{sequence + i}".encode())
                for i in range(TXN_RECORDS)
            )
            sequence += TXN_RECORDS
            outcome = self._transaction(producer, records)
            fleet.log.add(Txn(records, outcome, time.monotonic()))
            if outcome == "unknown":
                incarnation += 1
                fleet.log.error(f"{transactional_id}: a transaction ended undecided")
                ABANDONED_CLIENTS.append(producer)
                producer = _new_producer(fleet.bootstrap, transactional_id, fleet.stopping, [])
                next_at = time.monotonic()

    def _transaction(self, producer: Any, records: tuple[tuple[int, bytes], ...]) -> str:
        try:
            producer.begin_transaction()
            for partition, payload in records:
                producer.produce(self.fleet.topic, value=payload, partition=partition)
        except (KafkaException, BufferError):
            return _end(producer, abort=True)
        return _end(producer, abort=self.rng.randrange(ABORT_EVERY) == 0)


class TxnFleet:
    def __init__(
        self, bootstrap: str, topic: str, partitions: int, count: int, rate_per_s: float, run: str
    ) -> None:
        self.bootstrap, self.topic, self.partitions, self.run = bootstrap, topic, partitions, run
        self.stopping = threading.Event()
        self.log = _Log()
        self.writers = [TxnWriter(self, i, rate_per_s / count) for i in range(count)]

    def start(self) -> None:
        for writer in self.writers:
            writer.start()

    @property
    def acks(self) -> list[Ack]:
        """Each committed record, acknowledged when its commit returned."""
        with self.log.lock:
            txns = list(self.log.txns)
        return [
            Ack(txn.ended_at, partition, NO_OFFSET, payload)
            for txn in txns
            if txn.outcome == "committed"
            for partition, payload in txn.records
        ]

    def stop(self, timeout_s: float) -> list[Txn]:
        self.stopping.set()
        for writer in self.writers:
            writer.join(timeout_s)
        with self.log.lock:
            return list(self.log.txns)


class Copier(threading.Thread):
    """Copies `source` to `sink` exactly once (read_committed, offsets in the transaction)."""

    def __init__(
        self,
        bootstrap: str,
        source: str,
        sink: str,
        partitions: int,
        run: str,
        client_log: Path | None = None,
    ) -> None:
        super().__init__(name="chaos-copier", daemon=True)
        self.client_logging = _debug_logging(client_log)
        self.bootstrap, self.source, self.sink, self.partitions = (
            bootstrap,
            source,
            sink,
            partitions,
        )
        self.group = self.transactional_id = f"chaos-{run}-copier"
        self.stopping = threading.Event()
        self.log = _Log()
        # Where it stands, for a report on a copier that never caught up.
        self.stage = "starting"
        self.consumed = 0
        self.outcomes: Counter[str] = Counter()
        self.consume_errors: Counter[str] = Counter()
        self.init_failures: list[str] = []

    def progress(self) -> str:
        last_failure = self.init_failures[-1] if self.init_failures else "none"
        return (
            f"stage {self.stage}, {self.consumed} records consumed, transactions"
            f" {dict(self.outcomes)}, {len(self.init_failures)} failed init_transactions"
            f" (last: {last_failure}), consume errors {dict(self.consume_errors)}"
        )

    def _init_producer(self) -> Any:
        self.stage = "init_transactions"
        producer = _new_producer(
            self.bootstrap,
            self.transactional_id,
            self.stopping,
            self.init_failures,
            self.client_logging,
        )
        self.stage = "copying"
        return producer

    def run(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "log_level": 0,
                **self.client_logging,
            }
        )
        self.stage = "assign"
        consumer.assign([TopicPartition(self.source, p) for p in range(self.partitions)])
        producer = self._init_producer()
        while producer is not None and not self.stopping.is_set():
            batch = consumer.consume(COPY_BATCH, 0.5)
            messages = [m for m in batch if m.error() is None]
            self.consume_errors.update(str(m.error()) for m in batch if m.error() is not None)
            if not messages:
                continue
            self.consumed += len(messages)
            outcome = self._copy(consumer, producer, messages)
            self.outcomes[outcome] += 1
            if outcome == "committed":
                continue
            if outcome == "unknown":
                self.log.error("a copy transaction ended undecided")
            if outcome in ("unknown", "hung"):
                ABANDONED_CLIENTS.append(producer)
                producer = self._init_producer()  # fences the old one
            self._rewind(consumer)
        consumer.close()

    def _copy(self, consumer: Any, producer: Any, messages: list[Any]) -> str:
        try:
            _bounded(producer.begin_transaction, "begin_transaction")
            for message in messages:
                producer.produce(self.sink, value=message.value(), partition=message.partition())
            positions = consumer.position(consumer.assignment())
            metadata = consumer.consumer_group_metadata()
            _bounded(
                lambda: producer.send_offsets_to_transaction(positions, metadata, CALL_TIMEOUT_S),
                "send_offsets_to_transaction",
            )
        except ClientHung as hung:
            self.log.error(f"copier's producer abandoned: {hung}")
            return "hung"
        except (KafkaException, BufferError):
            return _end(producer, abort=True)
        return _end(producer, abort=False)

    def _rewind(self, consumer: Any) -> None:
        partitions = [TopicPartition(self.source, p) for p in range(self.partitions)]
        while not self.stopping.is_set():
            try:
                committed = consumer.committed(partitions, CALL_TIMEOUT_S)
                break
            except KafkaException:
                time.sleep(REINIT_PAUSE_S)
        else:
            return
        for tp in committed:
            consumer.seek(TopicPartition(self.source, tp.partition, max(tp.offset, 0)))

    def committed_offsets(self) -> dict[int, int] | None:
        """The group's committed input offsets, None when they cannot be read now."""
        # read_committed asks for stable offsets: none pending in an open transaction.
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "isolation.level": "read_committed",
                "log_level": 0,
            }
        )
        try:
            partitions = [TopicPartition(self.source, p) for p in range(self.partitions)]
            found = consumer.committed(partitions, CALL_TIMEOUT_S)
            return {tp.partition: max(tp.offset, 0) for tp in found}
        except KafkaException:
            return None
        finally:
            consumer.close()

    def stop(self, timeout_s: float) -> None:
        self.stopping.set()
        self.join(timeout_s)
