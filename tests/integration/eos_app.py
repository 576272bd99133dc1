"""A consume-transform-produce application with exactly-once semantics, run as its own process
by the transaction crash tests so that it can be SIGKILLed.

It reads every partition of --input (read_committed, assigned rather than subscribed: the
transactional id alone fences an older instance, no rebalance in the way), and per batch, in
one transaction, writes "out-" + each value to the same partition of --output and commits the
batch's input offsets for --group. It exits 0 once its committed positions cover --expected
input records, 3 when fenced or otherwise fatally failed.

Progress goes to stdout, one line per event, for the test to follow:
    ready | committed <txn> <records> <total> | aborted <records> | holding <records>
    | fatal <error>
Lines starting "stage " say how far start-up got. On stderr: librdkafka's debug log of the
transaction and group machinery (with --debug), and the stacks of its threads if start-up
stalls, so that a test that times out waiting for it can show where it stood.
`--hold-at K,L` makes it stop after writing (and flushing) the records of its K-th and L-th
transaction, print `holding`, and wait for a line on stdin before committing: an open
transaction with records in the log, at a moment the test controls.
"""

from __future__ import annotations

import argparse
import faulthandler
import sys
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

TIMEOUT_S = 60
BATCH_RECORDS = 10
EXIT_FATAL = 3
COMMIT_ATTEMPTS = 3
STALL_DUMP_S = 90  # below the test's wait, so the dump is there when it gives up
CLIENT_DEBUG = "eos,cgrp,topic,broker"


def _say(line: str) -> None:
    print(line, flush=True)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    for name in ("--bootstrap", "--input", "--output", "--group", "--transactional-id"):
        parser.add_argument(name, required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--expected", type=int, required=True)
    parser.add_argument("--hold-at", default="")
    parser.add_argument("--debug", action="store_true")
    return parser.parse_args()


def _client_logging(args: argparse.Namespace) -> dict[str, Any]:
    """librdkafka logs to stderr from its own threads, even while a call blocks."""
    return {"debug": CLIENT_DEBUG} if args.debug else {}


def _consumer(args: argparse.Namespace) -> Any:
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **_client_logging(args),
        }
    )
    _say("stage consumer created")
    consumer.assign([TopicPartition(args.input, p) for p in range(args.partitions)])
    return consumer


def _rewind(consumer: Any, args: argparse.Namespace) -> None:
    """Back to the committed offsets: an aborted batch is read and copied again."""
    partitions = [TopicPartition(args.input, p) for p in range(args.partitions)]
    for committed in consumer.committed(partitions, TIMEOUT_S):
        offset = committed.offset if committed.offset >= 0 else 0
        consumer.seek(TopicPartition(args.input, committed.partition, offset))


def _copied(consumer: Any, args: argparse.Namespace) -> int:
    positions = consumer.position([TopicPartition(args.input, p) for p in range(args.partitions)])
    return sum(max(tp.offset, 0) for tp in positions)


def _copy(producer: Any, args: argparse.Namespace, messages: list[Any]) -> None:
    producer.begin_transaction()
    for message in messages:
        value = b"out-" + message.value()
        producer.produce(args.output, value=value, partition=message.partition())
    producer.flush(TIMEOUT_S)


def _commit(producer: Any) -> None:
    """librdkafka's advice: a retriable error from commit_transaction means call it again."""
    for _ in range(COMMIT_ATTEMPTS - 1):
        try:
            producer.commit_transaction(TIMEOUT_S)
            return
        except KafkaException as exception:
            if not exception.args[0].retriable():
                raise
    producer.commit_transaction(TIMEOUT_S)


def _run(args: argparse.Namespace) -> int:
    hold_at = {int(n) for n in args.hold_at.split(",") if n}
    faulthandler.dump_traceback_later(STALL_DUMP_S)
    consumer = _consumer(args)
    _say("stage consumer assigned")
    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "transactional.id": args.transactional_id,
            "transaction.timeout.ms": 60_000,
            **_client_logging(args),
        }
    )
    _say("stage producer created")
    producer.init_transactions(TIMEOUT_S)
    faulthandler.cancel_dump_traceback_later()
    _say("ready")
    transactions = 0
    while True:
        batch = consumer.consume(BATCH_RECORDS, 0.5)
        messages = [m for m in batch if m.error() is None]
        for message in batch:
            if message.error() is not None:
                print(f"consume error {message.error()}", file=sys.stderr, flush=True)
        if not messages:
            continue
        try:
            _copy(producer, args, messages)
            transactions += 1
            if transactions in hold_at:
                _say(f"holding {len(messages)}")
                sys.stdin.readline()
            positions = consumer.position(consumer.assignment())
            metadata = consumer.consumer_group_metadata()
            producer.send_offsets_to_transaction(positions, metadata, TIMEOUT_S)
            _commit(producer)
        except KafkaException as exception:
            error = exception.args[0]
            if error.fatal() or not error.txn_requires_abort():
                _say(f"fatal {error}")
                return EXIT_FATAL
            producer.abort_transaction(TIMEOUT_S)
            _rewind(consumer, args)
            _say(f"aborted {len(messages)}")
            continue
        copied = _copied(consumer, args)
        _say(f"committed {transactions} {len(messages)} {copied}")
        if copied >= args.expected:
            consumer.close()
            return 0


if __name__ == "__main__":
    sys.exit(_run(_parse_args()))
