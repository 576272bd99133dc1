"""A Spark driver for the checkpoint-recovery test: Spark's Kafka connector reads a topic and
appends every record to a Parquet file sink, with a checkpoint.

    python -m tests.integration.spark_kafka_driver BOOTSTRAP TOPIC OUTPUT CHECKPOINT

It keeps going (small micro-batches, one a second) until killed. `start_query(..., drain=True)`
is the same query processing what is in the topic now, then finishing.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from pipeline.example.session import kafka_connector_jars, local_session
from tests.integration.spark_fixtures import TEST_JAVA_OPTIONS

MAX_OFFSETS_PER_TRIGGER = 400


def start_query(
    spark: SparkSession, bootstrap: str, topic: str, output: str, checkpoint: str, *, drain: bool
) -> StreamingQuery:
    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    if not drain:
        # Small batches keep the first driver mid-run when it is killed; the drain has no
        # need of them (after the batch planned before the kill, it takes the rest at once).
        source = source.option("maxOffsetsPerTrigger", str(MAX_OFFSETS_PER_TRIGGER))
    records = source.load().selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
    writer = (
        records.writeStream.format("parquet")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
    )
    if drain:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="1 second")
    return writer.start()


def main(bootstrap: str, topic: str, output: str, checkpoint: str) -> int:
    spark = local_session(
        "spark-kafka-driver", jars=kafka_connector_jars(), java_options=TEST_JAVA_OPTIONS
    )
    query = start_query(spark, bootstrap, topic, output, checkpoint, drain=False)
    print("started", flush=True)
    query.awaitTermination()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
