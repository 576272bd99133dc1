"""The example pipeline: user registrations through Kafka, Spark and Parquet (`make pipeline`)."""
