"""The row layout of Spark's Kafka connector, for reading and for checking sink input."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)
# Kafka's TimestampType ids, as Spark's `timestampType` column carries them.
NO_TIMESTAMP_TYPE = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1


def source_schema(include_headers: bool) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def is_text_or_binary(data_type: DataType) -> bool:
    return isinstance(data_type, StringType | BinaryType)


def is_headers_type(data_type: DataType) -> bool:
    """array<struct<key: string, value: binary>>, nullability aside."""
    if not isinstance(data_type, ArrayType):
        return False
    element = data_type.elementType
    if not isinstance(element, StructType) or element.fieldNames() != ["key", "value"]:
        return False
    return isinstance(element["key"].dataType, StringType) and isinstance(
        element["value"].dataType, BinaryType
    )
