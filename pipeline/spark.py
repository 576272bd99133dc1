"""The Kafka source and sink for PySpark, through Spark's Python Data Source API.

    from pipeline.spark import register
    name = register(spark)
    spark.read.format(name).option("kafka.bootstrap.servers", bs).option("subscribe", t).load()

Options, schema and semantics are those of Spark's own Kafka connector; only the format name
differs, because Spark reserves `kafka` for its JVM connector. Clients are librdkafka's
(`confluent-kafka`), created inside Spark's Python workers.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from pipeline.connector.options import (
    STRATEGY_OPTIONS,
    OptionError,
    batch_source_options,
    parse_sink_options,
    parse_source_options,
    stream_source_options,
)
from pipeline.connector.readers import KafkaBatchReader, KafkaStreamReader
from pipeline.connector.schema import source_schema
from pipeline.connector.writers import KafkaBatchWriter, KafkaStreamWriter, check_sink_schema

FORMAT_NAME = "pykafka"


class KafkaDataSource(DataSource):
    """Spark builds one per `load()` / `save()` / `start()` from the user's options."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> StructType:
        if not any(name.lower() in self.options for name in STRATEGY_OPTIONS):
            # Spark may ask a sink for its schema too; the sink has no source options.
            return source_schema(include_headers=False)
        return source_schema(parse_source_options(self.options).include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(batch_source_options(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(stream_source_options(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise OptionError(
                "Save mode Overwrite not allowed for Kafka. Allowed save modes are Append "
                "(and ErrorIfExists with Spark's own connector)."
            )
        options = parse_sink_options(self.options)
        return KafkaBatchWriter(options, check_sink_schema(schema, options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = parse_sink_options(self.options)
        return KafkaStreamWriter(options, check_sink_schema(schema, options))


def register(spark: SparkSession) -> str:
    """Registers the source and sink on `spark`; returns the name to pass to `format(...)`."""
    spark.dataSource.register(KafkaDataSource)
    return FORMAT_NAME
