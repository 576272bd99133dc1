"""Kafka 3.9's own performance tools, i.e. the Java client with its default settings, against
our brokers: ProducerPerformance (`kafka-producer-perf-test`, acks=all, idempotent as 3.9's
producer is by default, unthrottled) writes RECORDS records to a topic of 6 partitions and
replication factor 3, and every one is acknowledged and stored once; ConsumerPerformance
(`kafka-consumer-perf-test`, a new consumer group) then reads back exactly RECORDS.

Counts and exit codes only: how fast is `scripts/bench --compare-jvm-perf`'s business.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from tests.integration.conftest import ClusterFactory, ClusterHandle
from tests.integration.jvm_tools import ToolRun, run_jvm_tool

# The fixture that runs `make reference` (shared with tests/reference/).
from tests.reference.conftest import reference_lib as reference_lib

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from _tools.bench_jvm_perf import parse_consumer, parse_producer

pytestmark = pytest.mark.reference

TOPIC = "jvm-perf"
PARTITIONS = 6
REPLICATION = 3
RECORDS = 20_000
RECORD_BYTES = 100
OVERRIDES = {
    "min.insync.replicas": "2",
    # The consumer group forms at once, and its offsets topic is small to create.
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
}
ADMIN_TIMEOUT_S = 60.0


def _described(run: ToolRun) -> str:
    return f"{run.command} exited {run.returncode}\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"


def _create_topic(cluster: ClusterHandle) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics([NewTopic(TOPIC, PARTITIONS, REPLICATION)])
    futures[TOPIC].result(timeout=ADMIN_TIMEOUT_S)


def _stored_records(cluster: ClusterHandle) -> int:
    """The sum of the partitions' high watermarks: the records stored and replicated."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "jvm-perf-count"})
    try:
        return sum(
            consumer.get_watermark_offsets(
                TopicPartition(TOPIC, partition), timeout=ADMIN_TIMEOUT_S
            )[1]
            for partition in range(PARTITIONS)
        )
    finally:
        consumer.close()


def test_producer_and_consumer_performance_count_every_record(
    reference_lib: Path, make_cluster: ClusterFactory
) -> None:
    cluster = make_cluster(overrides=OVERRIDES)
    _create_topic(cluster)

    produced = run_jvm_tool(
        "kafka-producer-perf-test",
        *("--topic", TOPIC, "--num-records", str(RECORDS)),
        *("--record-size", str(RECORD_BYTES), "--throughput", "-1"),
        *("--producer-props", f"bootstrap.servers={cluster.bootstrap}", "acks=all"),
    )
    assert produced.returncode == 0, _described(produced)
    producer = parse_producer(produced.stdout)
    assert producer is not None, _described(produced)
    assert producer.records == RECORDS, _described(produced)
    assert _stored_records(cluster) == RECORDS

    consumed = run_jvm_tool(
        "kafka-consumer-perf-test",
        *("--bootstrap-server", cluster.bootstrap, "--topic", TOPIC),
        *("--messages", str(RECORDS), "--group", "jvm-perf"),
    )
    assert consumed.returncode == 0, _described(consumed)
    consumer = parse_consumer(consumed.stdout)
    assert consumer is not None, _described(consumed)
    assert not consumer.stopped_short, _described(consumed)
    assert consumer.records == RECORDS, _described(consumed)
