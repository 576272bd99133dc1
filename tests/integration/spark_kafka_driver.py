"""A Spark driver for the checkpoint-recovery test: Spark's Kafka connector reads a topic and
appends every record to a Parquet file sink, with a checkpoint.

    python -m tests.integration.spark_kafka_driver BOOTSTRAP TOPIC OUTPUT CHECKPOINT MODE

MODE `run` keeps going (small micro-batches, one a second) until killed; `drain` processes
what is in the topic now and exits 0.
"""

from __future__ import annotations

import sys

from pipeline.example.session import kafka_connector_jars, local_session

MAX_OFFSETS_PER_TRIGGER = 400


def main(bootstrap: str, topic: str, output: str, checkpoint: str, mode: str) -> int:
    spark = local_session("spark-kafka-driver", jars=kafka_connector_jars())
    records = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(MAX_OFFSETS_PER_TRIGGER))
        .load()
        .selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
    )
    writer = (
        records.writeStream.format("parquet")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
    )
    if mode == "drain":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="1 second")
    query = writer.start()
    print("started", flush=True)
    query.awaitTermination()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
