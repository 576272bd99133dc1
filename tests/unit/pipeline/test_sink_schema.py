"""The sink's input checks, with Spark's messages."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from pipeline.connector.options import OptionError, SinkOptions
from pipeline.connector.writers import check_sink_schema

WITH_TOPIC = SinkOptions({"bootstrap.servers": "x"}, "t")
WITHOUT_TOPIC = SinkOptions({"bootstrap.servers": "x"}, None)


TYPES: dict[str, DataType] = {
    "string": StringType(),
    "binary": BinaryType(),
    "int": IntegerType(),
    "array<string>": ArrayType(StringType()),
    "array<struct<key: string, value: binary>>": ArrayType(
        StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    ),
}


def schema(ddl: str) -> StructType:
    """`name type; ...` for the few types these tests use (fromDDL needs a running JVM)."""
    fields = []
    for column in ddl.split("; "):
        name, type_name = column.split(" ", 1)
        fields.append(StructField(name, TYPES[type_name]))
    return StructType(fields)


def test_columns_are_found_by_name() -> None:
    columns = check_sink_schema(
        schema(
            "partition int; value binary; key string; topic string; "
            "headers array<struct<key: string, value: binary>>"
        ),
        WITHOUT_TOPIC,
    )
    assert (columns.value, columns.key, columns.topic) == (1, 2, 3)
    assert (columns.partition, columns.headers) == (0, 4)


@pytest.mark.parametrize(
    ("ddl", "options", "message"),
    [
        ("key string", WITH_TOPIC, "Required attribute 'value' not found"),
        ("value int", WITH_TOPIC, "value attribute type must be a string or binary"),
        ("value string; key int", WITH_TOPIC, "key attribute type must be a string or binary"),
        ("value string", WITHOUT_TOPIC, "topic option required"),
        ("value string; topic int", WITHOUT_TOPIC, "topic attribute type must be a string"),
        ("value string; partition string", WITH_TOPIC, "partition attribute type must be an int"),
        ("value string; headers array<string>", WITH_TOPIC, "headers attribute type"),
    ],
)
def test_bad_sink_input_is_refused(ddl: str, options: SinkOptions, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        check_sink_schema(schema(ddl), options)
