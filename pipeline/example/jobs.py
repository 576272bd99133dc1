"""The streaming jobs of the example, each with its own checkpoint.

- `stats`: registrations per country per 1-minute event-time window (30 s watermark), the
  running counts written to `registration-stats` through the Kafka sink (update mode, via
  foreachBatch: Spark allows only append and complete for Python stream sinks).
- `archive`: every parsed registration appended to Parquet; with the checkpoint and the
  source's replayable offsets, the file sink holds each input record exactly once.
- `replay`: an independent reader that starts from `earliest` in its own checkpoint and keeps
  per-country totals (memory table `replay_totals`): it re-reads the same log as `archive`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

REGISTRATIONS_TOPIC = "registrations"
STATS_TOPIC = "registration-stats"
TOPIC_PARTITIONS = {REGISTRATIONS_TOPIC: 4, STATS_TOPIC: 2}
WINDOW = "1 minute"
WATERMARK_DELAY = "30 seconds"
TRIGGER_INTERVAL = "3 seconds"
MAX_OFFSETS_PER_TRIGGER = 5000
REPLAY_TABLE = "replay_totals"

EVENT_SCHEMA = StructType(
    [
        StructField("event_id", StringType()),
        StructField("user_id", LongType()),
        StructField("country", StringType()),
        StructField("event_time", TimestampType()),
    ]
)


@dataclass(frozen=True)
class JobPaths:
    """Where checkpoints and output live under the example's work directory."""

    root: Path

    @property
    def archive(self) -> Path:
        return self.root / "output" / "registrations"

    def checkpoint(self, job: str) -> Path:
        return self.root / "checkpoints" / job


def _registrations(spark: SparkSession, fmt: str, bootstrap: str, starting: str) -> DataFrame:
    raw = (
        spark.readStream.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", REGISTRATIONS_TOPIC)
        .option("startingOffsets", starting)
        .option("maxOffsetsPerTrigger", str(MAX_OFFSETS_PER_TRIGGER))
        .load()
    )
    parsed = raw.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("event"))
    return parsed.select("event.*")


def start_stats(
    spark: SparkSession, fmt: str, bootstrap: str, paths: JobPaths, once: bool
) -> StreamingQuery:
    counts = (
        _registrations(spark, fmt, bootstrap, "earliest")
        .withWatermark("event_time", WATERMARK_DELAY)
        .groupBy(F.window("event_time", WINDOW), "country")
        .count()
    )
    records = counts.select(
        F.col("country").alias("key"),
        F.to_json(
            F.struct(
                F.col("window.start").alias("window_start"),
                F.col("window.end").alias("window_end"),
                "country",
                "count",
            )
        ).alias("value"),
    )

    def publish(batch: DataFrame, _batch_id: int) -> None:
        # Spark refuses update mode for Python stream sinks, so each micro-batch's changed
        # windows go through the batch sink (at least once, like Spark's Kafka sink).
        (
            batch.write.format(fmt)
            .mode("append")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", STATS_TOPIC)
            .save()
        )

    writer = (
        records.writeStream.queryName("stats")
        .foreachBatch(publish)
        .option("checkpointLocation", str(paths.checkpoint("stats")))
        .outputMode("update")
    )
    return _trigger(writer, once).start()


def start_archive(
    spark: SparkSession, fmt: str, bootstrap: str, paths: JobPaths, once: bool
) -> StreamingQuery:
    writer = (
        _registrations(spark, fmt, bootstrap, "earliest")
        .writeStream.queryName("archive")
        .format("parquet")
        .option("path", str(paths.archive))
        .option("checkpointLocation", str(paths.checkpoint("archive")))
        .outputMode("append")
    )
    return _trigger(writer, once).start()


def start_replay(
    spark: SparkSession, fmt: str, bootstrap: str, paths: JobPaths, once: bool
) -> StreamingQuery:
    totals = _registrations(spark, fmt, bootstrap, "earliest").groupBy("country").count()
    writer = (
        totals.writeStream.queryName(REPLAY_TABLE)
        .format("memory")
        .option("checkpointLocation", str(paths.checkpoint("replay")))
        .outputMode("complete")
    )
    return _trigger(writer, once).start()


def _trigger(writer: DataStreamWriter, once: bool) -> DataStreamWriter:
    if once:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=TRIGGER_INTERVAL)
