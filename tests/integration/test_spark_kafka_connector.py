"""Acceptance: Spark's own Kafka connector (spark-sql-kafka-0-10, kafka-clients inside it)
reads from and writes to our cluster, batch and streaming, with the connector's options.

The jars come from `make spark-connector`; one local Spark session (shared with the other
Spark modules in this process) serves the module. The checkpoint-recovery test runs its first
driver as a separate process, which it SIGKILLs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from tests.integration.conftest import REPO_ROOT, ClusterHandle, wait_until
from tests.integration.spark_fixtures import shared_session
from tests.integration.spark_kafka_driver import MAX_OFFSETS_PER_TRIGGER, start_query
from tests.integration.test_pipeline_spark import consume_all, create_topic, produce

# One pytest process of their own runs the Spark modules (`make test` starts it beside the rest).
pytestmark = pytest.mark.spark

TIMEOUT_S = 60.0
STREAM_TIMEOUT_S = 180.0
DRIVER_START_TIMEOUT_S = 180.0
DRIVER_DRAIN_TIMEOUT_S = 240.0


@pytest.fixture(scope="module")
def spark(pytestconfig: pytest.Config) -> SparkSession:
    return shared_session(pytestconfig, connector=True)


def read(spark: SparkSession, bootstrap: str, **options: str) -> DataFrame:
    source = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        source = source.option(key, value)
    return source.load()


def values(rows: list[Row]) -> list[str]:
    return sorted(bytes(r.value).decode() for r in rows)


def produce_at(bootstrap: str, topic: str, partition: int, timestamps: list[int]) -> None:
    """One record per timestamp (CreateTime, ms), value p<partition>-<index>."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for index, timestamp in enumerate(timestamps):
        producer.produce(
            topic, value=f"p{partition}-{index}".encode(), partition=partition, timestamp=timestamp
        )
    assert producer.flush(TIMEOUT_S) == 0


def run_available_now(frame: DataFrame, checkpoint: Path, **sink: str) -> StreamingQuery:
    """Streams `frame` to the Kafka sink (`sink`: its options) until the input at the start
    is processed; fails with the query's exception if it did not finish."""
    writer = frame.writeStream.format("kafka").option("checkpointLocation", str(checkpoint))
    for key, value in sink.items():
        writer = writer.option(key, value)
    query = writer.trigger(availableNow=True).start()
    finished = query.awaitTermination(STREAM_TIMEOUT_S)
    assert finished, f"query did not finish in {STREAM_TIMEOUT_S} s: {query.status}"
    assert query.exception() is None, f"query failed: {query.exception()}"
    return query


def test_batch_write_then_batch_read_with_headers(
    spark: SparkSession, cluster: ClusterHandle
) -> None:
    topic = create_topic(cluster.bootstrap, 3)
    frame = spark.range(30).selectExpr(
        "CAST(id AS STRING) AS key",
        "CONCAT('v', id) AS value",
        "CAST(id % 3 AS INT) AS partition",
        "array(named_struct('key', 'n', 'value', CAST(CAST(id AS STRING) AS BINARY)),"
        " named_struct('key', 'empty', 'value', CAST(NULL AS BINARY))) AS headers",
    )
    frame.write.format("kafka").option("kafka.bootstrap.servers", cluster.bootstrap).option(
        "topic", topic
    ).save()

    loaded = read(spark, cluster.bootstrap, subscribe=topic, includeHeaders="true")
    assert loaded.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int,"
        "headers:array<struct<key:string,value:binary>>>"
    )
    rows = loaded.collect()
    assert values(rows) == sorted(f"v{i}" for i in range(30))
    for row in rows:
        number = int(bytes(row.key).decode())
        assert row.topic == topic and row.partition == number % 3, row
        assert row.timestampType == 0 and row.timestamp is not None, row
        assert [(h.key, h.value) for h in row.headers] == [
            ("n", str(number).encode()),
            ("empty", None),
        ], row
    for partition in range(3):
        offsets = sorted(r.offset for r in rows if r.partition == partition)
        assert offsets == list(range(10)), f"partition {partition}: offsets {offsets}"
    without_headers = read(spark, cluster.bootstrap, subscribe=topic)
    assert "headers" not in without_headers.columns


def test_subscribe_pattern_and_assign(spark: SparkSession, cluster: ClusterHandle) -> None:
    prefix = f"pat-{uuid.uuid4().hex[:6]}"
    first = create_topic(cluster.bootstrap, 1, f"{prefix}-a")
    second = create_topic(cluster.bootstrap, 2, f"{prefix}-b")
    other = create_topic(cluster.bootstrap, 1, f"x{prefix}")
    for topic in (first, second, other):
        produce(cluster.bootstrap, topic, 6)
    rows = read(spark, cluster.bootstrap, subscribePattern=f"{prefix}-.*").collect()
    counts = {t: sum(1 for r in rows if r.topic == t) for t in {r.topic for r in rows}}
    assert counts == {first: 6, second: 6}, f"subscribePattern read {counts}"

    three = create_topic(cluster.bootstrap, 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for partition in range(3):
        for index in range(4):
            producer.produce(three, value=f"p{partition}-{index}".encode(), partition=partition)
    assert producer.flush(TIMEOUT_S) == 0
    assign = json.dumps({three: [0, 2]})
    rows = read(spark, cluster.bootstrap, assign=assign).collect()
    assert sorted((r.partition, r.offset) for r in rows) == [
        (p, o) for p in (0, 2) for o in range(4)
    ], f"assign {assign} read {sorted((r.partition, r.offset) for r in rows)}"


def test_starting_and_ending_offsets_as_json(spark: SparkSession, cluster: ClusterHandle) -> None:
    topic = create_topic(cluster.bootstrap, 2)
    for partition in range(2):
        produce_at(cluster.bootstrap, topic, partition, [int(time.time() * 1000)] * 10)
    rows = read(
        spark,
        cluster.bootstrap,
        subscribe=topic,
        startingOffsets=json.dumps({topic: {"0": 3, "1": -2}}),  # -2: earliest
        endingOffsets=json.dumps({topic: {"0": 7, "1": -1}}),  # -1: latest
    ).collect()
    seen = sorted((r.partition, r.offset) for r in rows)
    expected = [(0, o) for o in range(3, 7)] + [(1, o) for o in range(10)]
    assert seen == expected, f"read {seen}"


def test_offsets_by_timestamp_batch_and_streaming(
    spark: SparkSession, cluster: ClusterHandle, tmp_path: Path
) -> None:
    topic = create_topic(cluster.bootstrap, 2)
    base = int(time.time() * 1000) - 60_000
    for partition in range(2):
        produce_at(cluster.bootstrap, topic, partition, [base + i * 1000 for i in range(10)])
    # Per partition: from the first record at or after the start time, up to (not including)
    # the first record at or after the end time.
    rows = read(
        spark,
        cluster.bootstrap,
        subscribe=topic,
        startingOffsetsByTimestamp=json.dumps({topic: {"0": base + 2500, "1": base}}),
        endingOffsetsByTimestamp=json.dumps({topic: {"0": base + 7000, "1": base + 3000}}),
    ).collect()
    seen = sorted((r.partition, r.offset) for r in rows)
    expected = [(0, o) for o in range(3, 7)] + [(1, o) for o in range(3)]
    assert seen == expected, f"by timestamp read {seen}"

    # startingTimestamp: one start time for every partition, streaming this time.
    collected: list[tuple[int, int]] = []

    def collect(batch: DataFrame, _batch_id: int) -> None:
        collected.extend((r.partition, r.offset) for r in batch.collect())

    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", topic)
        .option("startingTimestamp", str(base + 6000))
        .load()
    )
    query = (
        stream.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(STREAM_TIMEOUT_S), f"did not finish: {query.status}"
    assert query.exception() is None, f"query failed: {query.exception()}"
    expected = [(p, o) for p in range(2) for o in range(6, 10)]
    assert sorted(collected) == expected, f"startingTimestamp read {sorted(collected)}"


def test_streaming_read_and_write_respect_max_offsets_per_trigger(
    spark: SparkSession, cluster: ClusterHandle, tmp_path: Path
) -> None:
    source, target = create_topic(cluster.bootstrap, 3), create_topic(cluster.bootstrap, 2)
    total, limit = 300, 40
    produce(cluster.bootstrap, source, total)
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(limit))
        .load()
        .selectExpr("key", "value")
    )
    query = run_available_now(
        stream,
        tmp_path / "checkpoint",
        **{"kafka.bootstrap.servers": cluster.bootstrap},
        topic=target,
    )
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]
    assert all(size <= limit for size in sizes), f"batch sizes {sizes} over {limit}"
    assert sum(sizes) == total and len(sizes) >= total // limit, f"batch sizes {sizes}"
    copied = consume_all(cluster.bootstrap, target, total)
    assert sorted(m.value().decode() for m in copied) == sorted(f"v{i}" for i in range(total))


def _offsets_collected(frame: DataFrame, checkpoint: Path) -> tuple[list[int], Any]:
    """Runs `frame` once to the end (availableNow) into foreachBatch; returns the offsets it
    saw and the query's exception (None when it succeeded)."""
    offsets: list[int] = []

    def collect(batch: DataFrame, _batch_id: int) -> None:
        offsets.extend(r.offset for r in batch.select("offset").collect())

    query = (
        frame.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(STREAM_TIMEOUT_S)
    except Exception as error:  # awaitTermination raises the query's failure
        return sorted(offsets), error
    assert not query.isActive, f"query did not finish in {STREAM_TIMEOUT_S} s"
    return sorted(offsets), query.exception()


def test_fail_on_data_loss_after_delete_records(
    spark: SparkSession, cluster: ClusterHandle, tmp_path: Path
) -> None:
    topic = create_topic(cluster.bootstrap, 1)
    produce(cluster.bootstrap, topic, 20)

    def stream(fail_on_data_loss: str) -> DataFrame:
        return (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", cluster.bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("failOnDataLoss", fail_on_data_loss)
            .load()
        )

    checkpoint = tmp_path / "checkpoint"
    offsets, error = _offsets_collected(stream("true"), checkpoint)
    assert error is None and offsets == list(range(20)), f"first run: {offsets}, {error}"

    produce(cluster.bootstrap, topic, 20)  # offsets 20..39
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.delete_records([TopicPartition(topic, 0, 30)], request_timeout=TIMEOUT_S)
    low = next(iter(futures.values())).result(timeout=TIMEOUT_S)
    assert low.low_watermark == 30, f"log start offset after DeleteRecords: {low.low_watermark}"
    # The checkpoint says "next: 20"; the log now starts at 30.
    lenient, strict = tmp_path / "lenient", tmp_path / "strict"
    shutil.copytree(checkpoint, lenient)
    shutil.copytree(checkpoint, strict)

    offsets, error = _offsets_collected(stream("false"), lenient)
    assert error is None, f"failOnDataLoss=false failed: {error}"
    assert offsets == list(range(30, 40)), f"failOnDataLoss=false read offsets {offsets}"

    offsets, error = _offsets_collected(stream("true"), strict)
    assert error is not None, f"failOnDataLoss=true did not fail; it read offsets {offsets}"
    assert "lost" in str(error).lower() or "data loss" in str(error).lower(), str(error)[:2000]
    assert offsets == [], f"failOnDataLoss=true still delivered offsets {offsets}"


def test_kafka_options_pass_through_read_committed(
    spark: SparkSession, cluster: ClusterHandle
) -> None:
    """kafka.isolation.level=read_committed reaches the connector's consumers: the records
    of an aborted transaction are not read (the default, read_uncommitted, reads them)."""
    topic = create_topic(cluster.bootstrap, 1)
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "transactional.id": f"txn-{uuid.uuid4().hex}"}
    )
    producer.init_transactions(TIMEOUT_S)
    for label, commit in (("first", True), ("aborted", False), ("last", True)):
        producer.begin_transaction()
        for index in range(5):
            producer.produce(topic, value=f"{label}-{index}".encode())
        if commit:
            producer.commit_transaction(TIMEOUT_S)
        else:
            # Sent and in the log first: abort_transaction drops what is still unsent.
            assert producer.flush(TIMEOUT_S) == 0
            producer.abort_transaction(TIMEOUT_S)
    committed = sorted(f"{label}-{i}" for label in ("first", "last") for i in range(5))
    aborted = sorted(f"aborted-{i}" for i in range(5))

    rows = read(
        spark,
        cluster.bootstrap,
        subscribe=topic,
        **{"kafka.isolation.level": "read_committed", "kafka.client.id": "spark-rc"},
    ).collect()
    assert values(rows) == committed, f"read_committed read {values(rows)}"
    rows = read(spark, cluster.bootstrap, subscribe=topic).collect()
    assert values(rows) == sorted(committed + aborted), f"read_uncommitted read {values(rows)}"


def _committed_batches(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return sum(1 for p in commits.iterdir() if p.name.isdigit()) if commits.is_dir() else 0


def _driver(cluster: ClusterHandle, topic: str, tmp_path: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tests.integration.spark_kafka_driver",
        cluster.bootstrap,
        topic,
        str(tmp_path / "output"),
        str(tmp_path / "checkpoint"),
    ]


def test_streaming_query_recovers_after_its_driver_is_killed(
    spark: SparkSession, cluster: ClusterHandle, tmp_path: Path
) -> None:
    """A driver (its own Python and JVM) streams a topic into a Parquet file sink, and is
    SIGKILLed mid-run; the same query started again on the same checkpoint (in this process's
    JVM: a new driver all the same) resumes: the sink ends up with every record exactly once."""
    topic = create_topic(cluster.bootstrap, 3)
    first, more = 3000, 500
    produce(cluster.bootstrap, topic, first)
    checkpoint = tmp_path / "checkpoint"
    log = (tmp_path / "driver-1.log").open("w")
    # Its own session (process group), so that the kill takes the driver's JVM with it.
    driver = subprocess.Popen(
        _driver(cluster, topic, tmp_path),
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_until(
            lambda: _committed_batches(checkpoint) >= 1 or driver.poll() is not None,
            DRIVER_START_TIMEOUT_S,
            lambda: f"a committed batch in {checkpoint} (driver log: {log.name})",
        )
        assert driver.poll() is None, (
            f"driver exited {driver.returncode}: {(tmp_path / 'driver-1.log').read_text()[-3000:]}"
        )
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(TIMEOUT_S)
        log.close()
    batches_at_kill = _committed_batches(checkpoint)
    # At most MAX_OFFSETS_PER_TRIGGER records a batch: still mid-run.
    assert batches_at_kill * MAX_OFFSETS_PER_TRIGGER < first, (
        f"{batches_at_kill} batches committed at the kill: the run had already finished"
    )

    produce(cluster.bootstrap, topic, more)  # v0.. again: told apart by (partition, offset)
    resumed = start_query(
        spark,
        cluster.bootstrap,
        topic,
        str(tmp_path / "output"),
        str(checkpoint),
        drain=True,
    )
    assert resumed.awaitTermination(int(DRIVER_DRAIN_TIMEOUT_S)), f"not done: {resumed.status}"
    assert resumed.exception() is None, f"restarted query failed: {resumed.exception()}"
    assert _committed_batches(checkpoint) > batches_at_kill

    # Reading the sink's directory goes through its _spark_metadata log: committed files only.
    rows = spark.read.parquet(str(tmp_path / "output")).collect()
    keys = [(r.partition, r.offset) for r in rows]
    assert len(keys) == len(set(keys)), f"{len(keys) - len(set(keys))} records written twice"
    produced = consume_all(cluster.bootstrap, topic, first + more)
    expected = sorted((m.partition(), m.offset()) for m in produced)
    assert len(expected) == first + more
    assert sorted(keys) == expected, (
        f"sink has {len(keys)} records, topic {len(expected)}; missing "
        f"{sorted(set(expected) - set(keys))[:10]}"
    )
