"""Acceptance: the PySpark connector (source and sink, batch and streaming) on a real cluster.

One Spark session (`local[2]`, shared with the other Spark modules in this process) serves
the module; the leader-move test uses a cluster of its own because it kills a broker.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from pipeline.spark import register
from tests.integration.conftest import ClusterFactory, ClusterHandle, wait_until
from tests.integration.spark_fixtures import shared_session

# One pytest process of their own runs these (`make test` starts it beside the rest), so that
# one SparkSession serves all three modules. A Python-source query whose worker misses Spark's
# fixed 10 s connect-back to the JVM on a busy machine is started again (see below).
pytestmark = pytest.mark.spark

TIMEOUT_S = 60.0
STREAM_TIMEOUT_S = 240.0
SESSION_TIMEOUT_MS = "6000"  # a SIGKILLed broker's partitions move after this
PYTHON_WORKER_TIMEOUT = "Python worker failed to connect back"
WORKER_START_ATTEMPTS = 3


@pytest.fixture(scope="module")
def spark(pytestconfig: pytest.Config) -> SparkSession:
    return shared_session(pytestconfig, connector=False)


@pytest.fixture(scope="module")
def fmt(spark: SparkSession) -> str:
    return register(spark)


def create_topic(bootstrap: str, partitions: int, name: str | None = None) -> str:
    name = name or f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(timeout=TIMEOUT_S)
    wait_until(lambda: _leaders_known(admin, name, partitions), TIMEOUT_S, f"leaders of {name}")
    return name


def _leaders_known(admin: AdminClient, topic: str, partitions: int) -> bool:
    metadata = admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
    return len(metadata.partitions) == partitions and all(
        p.leader >= 0 for p in metadata.partitions.values()
    )


def produce(bootstrap: str, topic: str, count: int, **extra: Any) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for index in range(count):
        producer.produce(topic, value=f"v{index}".encode(), key=f"k{index}".encode(), **extra)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0


def consume_all(bootstrap: str, topic: str, expected: int) -> list[Any]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    messages: list[Any] = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(messages) < expected and time.monotonic() < deadline:
        messages += [m for m in consumer.consume(1000, 1.0) if m.error() is None]
    consumer.close()
    return messages


def reader(spark: SparkSession, fmt: str, bootstrap: str, **options: str) -> DataFrame:
    source = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        source = source.option(key, value)
    return source.load()


def test_batch_read_returns_spark_schema_and_headers(
    spark: SparkSession, fmt: str, cluster: ClusterHandle
) -> None:
    topic = create_topic(cluster.bootstrap, 3)
    produce(cluster.bootstrap, topic, 30, headers=[("source", b"test"), ("empty", None)])
    frame = reader(spark, fmt, cluster.bootstrap, subscribe=topic, includeHeaders="true")
    assert frame.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int,"
        "headers:array<struct<key:string,value:binary>>>"
    )
    rows = frame.collect()
    assert sorted(bytes(r.value).decode() for r in rows) == sorted(f"v{i}" for i in range(30))
    assert {r.topic for r in rows} == {topic}
    assert {r.partition for r in rows} == {0, 1, 2}
    assert all(r.timestampType == 0 and r.timestamp is not None for r in rows)
    assert all(
        [(h.key, h.value) for h in r.headers] == [("source", b"test"), ("empty", None)]
        for r in rows
    )
    by_partition: dict[int, list[int]] = {}
    for r in rows:
        by_partition.setdefault(r.partition, []).append(r.offset)
    assert all(sorted(o) == list(range(len(o))) for o in by_partition.values())


def test_batch_read_with_assign_and_per_partition_offsets(
    spark: SparkSession, fmt: str, cluster: ClusterHandle
) -> None:
    topic = create_topic(cluster.bootstrap, 2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for partition in (0, 1):
        for index in range(10):
            producer.produce(topic, value=f"{partition}-{index}".encode(), partition=partition)
    assert producer.flush(TIMEOUT_S) == 0
    frame = reader(
        spark,
        fmt,
        cluster.bootstrap,
        assign=json.dumps({topic: [0, 1]}),
        startingOffsets=json.dumps({topic: {"0": 3, "1": -2}}),
        endingOffsets=json.dumps({topic: {"0": 7, "1": -1}}),
    )
    got = sorted((r.partition, r.offset, bytes(r.value).decode()) for r in frame.collect())
    expected = [(0, i, f"0-{i}") for i in range(3, 7)] + [(1, i, f"1-{i}") for i in range(10)]
    assert got == expected
    only_one = reader(
        spark,
        fmt,
        cluster.bootstrap,
        assign=json.dumps({topic: [1]}),
        startingOffsets=json.dumps({topic: {"1": 8}}),
    )
    assert [r.offset for r in only_one.collect()] == [8, 9]


def _ran_or_ended(query: StreamingQuery) -> bool:
    return query.lastProgress is not None or not query.isActive


def started(start: Callable[[], StreamingQuery]) -> StreamingQuery:
    """`start()`'s query once it has run a batch or ended. Spark starts a streaming query's
    Python source worker with the query and gives it a fixed 10 s to connect back (not
    configurable), which a busy machine can miss: then the query is started again, as the
    example pipeline does, at most twice; no batch ran, so nothing is read twice."""
    for attempt in range(1, WORKER_START_ATTEMPTS + 1):
        query = start()
        wait_until(
            functools.partial(_ran_or_ended, query),
            STREAM_TIMEOUT_S,
            f"the first batch of {query.name}",
        )
        failure = query.exception()
        if failure is None or PYTHON_WORKER_TIMEOUT not in str(failure):
            return query
        print(
            f"{query.name}: {PYTHON_WORKER_TIMEOUT} (attempt {attempt} of {WORKER_START_ATTEMPTS})"
        )
    return query


def _run_available_now(frame: DataFrame, name: str, checkpoint: Path) -> StreamingQuery:
    query = started(
        frame.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start
    )
    assert query.awaitTermination(STREAM_TIMEOUT_S), f"{name} did not finish"
    assert query.exception() is None
    return query


def test_streaming_read_respects_max_offsets_per_trigger(
    spark: SparkSession, fmt: str, cluster: ClusterHandle, tmp_path: Path
) -> None:
    topic = create_topic(cluster.bootstrap, 4)
    total, limit = 6000, 1000
    produce(cluster.bootstrap, topic, total)
    frame = (
        spark.readStream.format(fmt)
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(limit))
        .load()
        .selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
    )
    started = time.monotonic()
    query = _run_available_now(frame, "limited", tmp_path / "checkpoint")
    elapsed_s = time.monotonic() - started
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert all(p["numInputRows"] <= limit for p in batches)
    assert len(batches) >= total // limit
    assert sum(p["numInputRows"] for p in batches) == total
    rows = spark.sql("SELECT value, partition, offset FROM limited").collect()
    assert sorted(r.value for r in rows) == sorted(f"v{i}" for i in range(total))
    assert len({(r.partition, r.offset) for r in rows}) == total
    processing_s = sum(p["durationMs"].get("triggerExecution", 0) for p in batches) / 1000
    print(
        f"\nstreaming read: {total} records in {elapsed_s:.1f} s wall, "
        f"{total / processing_s:.0f} records/s while processing"
    )


def test_streaming_and_batch_sinks_are_read_back(
    spark: SparkSession, fmt: str, cluster: ClusterHandle, tmp_path: Path
) -> None:
    source, target = create_topic(cluster.bootstrap, 2), create_topic(cluster.bootstrap, 2)
    produce(cluster.bootstrap, source, 200)
    stream = started(
        spark.readStream.format(fmt)
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("key", "CONCAT('s-', CAST(value AS STRING)) AS value")
        .writeStream.format(fmt)
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("topic", target)
        .option("checkpointLocation", str(tmp_path / "sink"))
        .trigger(availableNow=True)
        .start
    )
    assert stream.awaitTermination(STREAM_TIMEOUT_S) and stream.exception() is None
    rows = [(f"b-{i}", target, [("h", bytearray(b"x"))]) for i in range(50)]
    batch = spark.createDataFrame(
        rows, "value string, topic string, headers array<struct<key:string,value:binary>>"
    )
    batch.write.format(fmt).mode("append").option(
        "kafka.bootstrap.servers", cluster.bootstrap
    ).save()
    messages = consume_all(cluster.bootstrap, target, 250)
    values = sorted(m.value().decode() for m in messages)
    assert values == sorted([f"s-v{i}" for i in range(200)] + [f"b-{i}" for i in range(50)])
    keyed = {m.value().decode(): m.key() for m in messages if m.value().startswith(b"s-")}
    assert keyed["s-v7"] == b"k7"
    assert all(m.headers() == [("h", b"x")] for m in messages if m.value().startswith(b"b-"))


def test_sink_row_without_topic_fails_clearly(
    spark: SparkSession, fmt: str, cluster: ClusterHandle
) -> None:
    frame = spark.createDataFrame([("x", None)], "value string, topic string")
    with pytest.raises(Exception, match="null topic present in the data"):
        frame.write.format(fmt).mode("append").option(
            "kafka.bootstrap.servers", cluster.bootstrap
        ).save()
    no_topic = spark.createDataFrame([("x",)], "value string")
    with pytest.raises(Exception, match="topic option required"):
        no_topic.write.format(fmt).mode("append").option(
            "kafka.bootstrap.servers", cluster.bootstrap
        ).save()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"subscribe": "a", "assign": '{"a":[0]}'}, "Only one of the following options"),
        ({"subscribe": "a", "startingOffsets": '{"a":{"0":'}, "startingOffsets"),
        ({"subscribe": "a", "bootstrap": None}, "kafka.bootstrap.servers"),
        ({"assign": '{"no-such-topic":[0]}'}, "'assign'"),
        ({"subscribe": "a", "maxOffsetsPerTrigger": "-5"}, "maxOffsetsPerTrigger"),
    ],
    ids=[
        "subscribe-and-assign",
        "malformed-offsets",
        "no-bootstrap",
        "unknown-assign-topic",
        "negative-max-offsets",
    ],
)
def test_bad_option_fails_before_any_work_naming_it(
    spark: SparkSession,
    fmt: str,
    cluster: ClusterHandle,
    tmp_path: Path,
    options: dict[str, str | None],
    named: str,
) -> None:
    source = spark.readStream.format(fmt)
    if "bootstrap" not in options:
        source = source.option("kafka.bootstrap.servers", cluster.bootstrap)
    for key, value in options.items():
        if key != "bootstrap" and value is not None:
            source = source.option(key, value)
    with pytest.raises(Exception, match=named):
        query = (
            source.load()
            .writeStream.format("memory")
            .queryName(f"bad_{uuid.uuid4().hex[:6]}")
            .option("checkpointLocation", str(tmp_path / "bad"))
            .start()
        )
        try:
            query.awaitTermination(STREAM_TIMEOUT_S)
        finally:
            query.stop()


def _leader_of(bootstrap: str, topic: str, partition: int) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return int(
        admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions[partition].leader
    )


def test_streaming_read_survives_a_leader_being_killed(
    spark: SparkSession, fmt: str, make_cluster: ClusterFactory, tmp_path: Path
) -> None:
    cluster = make_cluster(overrides={"zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS})
    topic = create_topic(cluster.bootstrap, 4)
    total, limit = 4000, 1000
    produce(cluster.bootstrap, topic, total)  # acks=all: every replica has them
    query = started(
        spark.readStream.format(fmt)
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(limit))
        .option("kafkaConsumer.pollTimeoutMs", "60000")
        .load()
        .selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
        .writeStream.format("memory")
        .queryName("moving")
        .option("checkpointLocation", str(tmp_path / "moving"))
        .trigger(processingTime="1 second")
        .start
    )
    try:

        def rows_read() -> int:
            # From the query's progress reports: no Spark job per poll, unlike a COUNT(*).
            assert query.exception() is None, query.exception()
            return sum(int(p["numInputRows"]) for p in query.recentProgress)

        wait_until(lambda: rows_read() > 0, STREAM_TIMEOUT_S, "the first micro-batch")
        at_kill = rows_read()
        victim = _leader_of(cluster.bootstrap, topic, 0)
        cluster.kill(victim, "KILL")
        # Reported batches plus at most one in flight: the rest is planned after the kill.
        assert at_kill + limit < total, f"{at_kill} of {total} records read before the kill"
        wait_until(lambda: rows_read() >= total, STREAM_TIMEOUT_S, "every record after the kill")
        assert query.isActive
        got = spark.sql("SELECT value, partition, offset FROM moving").collect()
        assert sorted(r.value for r in got) == sorted(f"v{i}" for i in range(total))
        assert len({(r.partition, r.offset) for r in got}) == total
        assert _leader_of(cluster.bootstrap, topic, 0) != victim
    finally:
        query.stop()
