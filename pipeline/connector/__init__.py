"""The Kafka connector behind `pipeline.spark.register`: options, planning, reading, writing."""
