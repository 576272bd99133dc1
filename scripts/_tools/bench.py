"""Produce/consume throughput against a running cluster, measured with librdkafka.

    scripts/bench [--bootstrap 127.0.0.1:9092] [--records 200000] [--record-bytes 100]
                  [--partitions 6] [--replication-factor 1] [--compression none] [--acks 1]
                  [--compare-replication] [--compare [--impls ours,kafka]]
                  [--compare-transactional [--transaction-records 10000]]
                  [--compare-jvm-perf [--impls ours,kafka]]
    scripts/bench failover [--partitions 5000] [--impl ours|kafka] [--signal KILL|TERM]
    scripts/bench partitions [--impl ours,kafka] [--cut-s 25]

Prints one JSON object with records/s and MB/s for each phase. `--compare-replication` runs
acks=1 on replication factor 1 and then acks=all on replication factor 3 (each on a new topic)
and reports both with the ratio of their produce throughputs: what durability costs.
`--compare-transactional` does the same for exactly-once: idempotent acks=all produce, then a
transactional producer committing every --transaction-records records (read back
read_committed), both on replication factor 3 with the same batching. Start a
cluster first (`make up` or `scripts/cluster up`; 3 brokers for the comparison); a cluster of
Apache Kafka 3.9 (`scripts/cluster up --impl kafka`) is measured the same way.

`--compare` starts its own clusters, one after the other (ours, then Apache Kafka 3.9 from
`make reference`), runs the same cases on each (acks=1 on replication factor 1 and acks=all on
replication factor 3, records of 100 B and 1 KB) and prints both figures and their ratio: records
and MB per second, p99 produce latency, the brokers' CPU-seconds per GB and their peak RSS (from
/proc); see scripts/_tools/bench_compare.py. `failover` measures how fast 5,000 partitions'
leadership leaves a killed controller or a broker in controlled shutdown; see
scripts/_tools/bench_failover.py. `partitions` (root) cuts a partition's leader, the controller
and a follower off the network on a `--network netns` cluster and reports what the producer
lost and waited, ours and Kafka 3.9 side by side; see scripts/_tools/bench_partitions.py.

`--compare-jvm-perf` measures Kafka's own Java client instead of librdkafka: Kafka 3.9's
`kafka-producer-perf-test` (acks=all, default batching) and then `kafka-consumer-perf-test`,
with --records records of --record-bytes (or --record-size) bytes on a topic of 6 partitions
and replication factor 3, on a fresh cluster of ours and then of Kafka 3.9, side by side; see
scripts/_tools/bench_jvm_perf.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections.abc import Callable

from confluent_kafka import Consumer, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from kafka_cli._client import ClientConfig, load_properties, translate_java_tls

from .bench_meter import PhaseMeter

# The consumer's fetch.queue.backoff.ms (librdkafka's default: 1000); see `consume`.
FETCH_QUEUE_BACKOFF_MS = 10


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--record-bytes", "--record-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--replication-factor", type=int, default=1)
    parser.add_argument("--compression", default="none")
    parser.add_argument("--acks", default="1")
    parser.add_argument("--compare-replication", action="store_true")
    parser.add_argument("--compare", action="store_true", help="ours against Apache Kafka 3.9")
    parser.add_argument(
        "--impls",
        default="ours,kafka",
        help="with --compare or --compare-jvm-perf: which, in order",
    )
    parser.add_argument(
        "--compare-jvm-perf",
        action="store_true",
        help="Kafka's ProducerPerformance and ConsumerPerformance, ours against Kafka 3.9",
    )
    parser.add_argument("--compare-transactional", action="store_true")
    parser.add_argument("--transaction-records", type=int, default=10_000)
    parser.add_argument(
        "--command-config",
        help="Kafka client properties for every client (e.g. the client.properties that "
        "`scripts/cluster up --security ssl` writes)",
    )
    parser.set_defaults(idempotent=False, transactional=False)
    return parser.parse_args()


def client_properties(args: argparse.Namespace) -> ClientConfig:
    """--command-config's properties under librdkafka's names, and the bootstrap servers."""
    properties: ClientConfig = dict(load_properties(getattr(args, "command_config", None)))
    translate_java_tls(properties)
    return {**properties, "bootstrap.servers": args.bootstrap}


def create_topic(args: argparse.Namespace, topic: str) -> None:
    admin = AdminClient(client_properties(args))
    new_topic = NewTopic(topic, args.partitions, args.replication_factor)
    admin.create_topics([new_topic])[topic].result(timeout=60)


def produce(args: argparse.Namespace, topic: str, latencies_s: list[float]) -> float:
    """Produce `args.records` records; return the seconds taken. Each delivered record's
    latency (librdkafka's time from produce() to its acknowledgement) goes to `latencies_s`."""
    config: dict[str, object] = {
        **client_properties(args),
        "acks": args.acks,
        "compression.type": args.compression,
        "linger.ms": 5,
        "batch.size": 1_000_000,
        "queue.buffering.max.messages": 1_000_000,
        "enable.idempotence": args.idempotent or args.transactional,
    }
    if args.transactional:
        config["transactional.id"] = f"bench-{topic}"
    producer = Producer(config)
    if args.transactional:
        producer.init_transactions(60)
        producer.begin_transaction()
    payload = os.urandom(args.record_bytes // 2).hex().encode()[: args.record_bytes]
    failures: list[str] = []

    def report(error: object, message: Message) -> None:
        if error is not None:
            failures.append(str(error))
        else:
            latencies_s.append(message.latency() or 0.0)

    started = time.perf_counter()
    for index in range(args.records):
        while True:
            try:
                producer.produce(topic, value=payload, key=str(index).encode(), on_delivery=report)
                break
            except BufferError:
                producer.poll(0.01)
        if index % 10_000 == 0:
            producer.poll(0)
        if args.transactional and (index + 1) % args.transaction_records == 0:
            producer.commit_transaction(120)  # flushes the transaction's records first
            producer.begin_transaction()
    if args.transactional:
        producer.commit_transaction(120)
    if producer.flush(120) != 0 or failures:
        raise SystemExit(f"produce failed: {failures[:3]}")
    return time.perf_counter() - started


def consume(args: argparse.Namespace, topic: str) -> float:
    consumer = Consumer(
        {
            **client_properties(args),
            "group.id": f"bench-{topic}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52_428_800,
            # A broker that fills librdkafka's 64 MB queue (queued.max.messages.kbytes) faster
            # than this process drains it makes the client postpone every fetch by
            # fetch.queue.backoff.ms, 1 s by default: a 200 MB read then measured how many of
            # those seconds it hit (two on ours, one or none on Kafka 3.9), not the brokers.
            "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
            "isolation.level": "read_committed" if args.transactional else "read_uncommitted",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(args.partitions)])
    received = 0
    started = time.perf_counter()
    deadline = started + 300
    while received < args.records:
        if time.perf_counter() > deadline:
            raise SystemExit(f"consume timed out at {received}/{args.records}")
        messages = consumer.consume(num_messages=10_000, timeout=1.0)
        received += sum(1 for m in messages if m.error() is None)
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def run_case(args: argparse.Namespace, meter: PhaseMeter | None = None) -> dict[str, object]:
    """Produce then consume on a new topic; with a `meter`, also the brokers' CPU and RSS."""
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    create_topic(args, topic)
    megabytes = args.records * args.record_bytes / 1e6
    results: dict[str, object] = {
        "topic": topic,
        "records": args.records,
        "record_bytes": args.record_bytes,
        "partitions": args.partitions,
        "replication_factor": args.replication_factor,
        "compression": args.compression,
        "acks": args.acks,
    }
    latencies_s: list[float] = []
    phases: dict[str, Callable[[], float]] = {
        "produce": lambda: produce(args, topic, latencies_s),
        "consume": lambda: consume(args, topic),
    }
    for phase, run in phases.items():
        before = meter.sample() if meter is not None else None
        seconds = run()
        figures: dict[str, float] = {
            "seconds": round(seconds, 3),
            "records_per_s": round(args.records / seconds),
            "mb_per_s": round(megabytes / seconds, 2),
        }
        if phase == "produce":
            figures["p99_latency_ms"] = round(percentile(latencies_s, 0.99) * 1000, 1)
        if meter is not None and before is not None:
            figures.update(meter.figures_since(before, megabytes / 1000))
        results[phase] = figures
    return results


def compare_replication(args: argparse.Namespace) -> dict[str, object]:
    fast = run_case(argparse.Namespace(**{**vars(args), "acks": "1", "replication_factor": 1}))
    durable = run_case(argparse.Namespace(**{**vars(args), "acks": "all", "replication_factor": 3}))
    ratio = _produce_rate(durable) / _produce_rate(fast)
    return {"acks=1 rf=1": fast, "acks=all rf=3": durable, "produce_ratio": round(ratio, 3)}


def compare_transactional(args: argparse.Namespace) -> dict[str, object]:
    durable = {**vars(args), "acks": "all", "replication_factor": 3}
    idempotent = run_case(argparse.Namespace(**{**durable, "idempotent": True}))
    transactional = run_case(argparse.Namespace(**{**durable, "transactional": True}))
    ratio = _produce_rate(transactional) / _produce_rate(idempotent)
    return {
        "idempotent acks=all rf=3": idempotent,
        f"transactional ({args.transaction_records} records each) acks=all rf=3": transactional,
        "produce_ratio": round(ratio, 3),
    }


def _produce_rate(case: dict[str, object]) -> float:
    produce_phase = case["produce"]
    if not isinstance(produce_phase, dict):
        raise TypeError(f"a bench case's produce phase is a dict, not {produce_phase!r}")
    return float(produce_phase["records_per_s"])


def main() -> int:
    if sys.argv[1:2] == ["failover"]:
        from .bench_failover import failover_main

        return failover_main(sys.argv[2:])
    if sys.argv[1:2] == ["partitions"]:
        from .bench_partitions import partitions_main

        return partitions_main(sys.argv[2:])
    args = parse_args()
    if args.compare:
        from .bench_compare import compare_implementations

        return compare_implementations(args)
    if args.compare_jvm_perf:
        from .bench_jvm_perf import compare_jvm_perf

        return compare_jvm_perf(args)
    if args.compare_transactional:
        results = compare_transactional(args)
    elif args.compare_replication:
        results = compare_replication(args)
    else:
        results = run_case(args)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    main()
