"""The sink: each Spark task produces its rows with acks=all and waits for every delivery.

Columns as Spark's Kafka sink takes them: `value` (string or binary, required), optional
`key` (string or binary), `topic` (string), `partition` (int) and `headers`
(array<struct<key: string, value: binary>>). The `topic` option, when given, is the topic of
every row (Spark's rule); without it each row's `topic` column decides and a row whose topic
is null fails the write. Delivery is at least once, as with Spark's sink.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, Message, Producer
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import IntegerType, StringType, StructType

from pipeline.connector.options import OptionError, SinkOptions
from pipeline.connector.schema import is_headers_type, is_text_or_binary

FLUSH_TIMEOUT_S = 120.0
QUEUE_FULL_WAIT_S = 0.1
UNASSIGNED_PARTITION = -1  # librdkafka: let the partitioner choose


@dataclass(frozen=True)
class ColumnPositions:
    value: int
    key: int | None
    topic: int | None
    partition: int | None
    headers: int | None


def check_sink_schema(schema: StructType, options: SinkOptions) -> ColumnPositions:
    """Spark's analysis-time checks of the sink's input, with Spark's messages."""
    names = schema.fieldNames()

    def position(name: str) -> int | None:
        return names.index(name) if name in names else None

    value = position("value")
    if value is None:
        raise OptionError("Required attribute 'value' not found")
    if not is_text_or_binary(schema["value"].dataType):
        raise OptionError("value attribute type must be a string or binary")
    key, topic = position("key"), position("topic")
    if key is not None and not is_text_or_binary(schema["key"].dataType):
        raise OptionError("key attribute type must be a string or binary")
    if topic is None and options.topic is None:
        raise OptionError(
            "topic option required when no 'topic' attribute is present. "
            "Use the topic option for setting a topic."
        )
    if topic is not None and not isinstance(schema["topic"].dataType, StringType):
        raise OptionError("topic attribute type must be a string")
    partition, headers = position("partition"), position("headers")
    if partition is not None and not isinstance(schema["partition"].dataType, IntegerType):
        raise OptionError("partition attribute type must be an int")
    if headers is not None and not is_headers_type(schema["headers"].dataType):
        raise OptionError(
            "headers attribute type must be an array of struct<key: string, value: binary>"
        )
    return ColumnPositions(value, key, topic, partition, headers)


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def producer_config(client_config: dict[str, str]) -> dict[str, Any]:
    config: dict[str, Any] = {
        "acks": "all",
        # The Java producer's key hashing, so keyed rows land where Spark's sink puts them.
        "partitioner": "murmur2_random",
    }
    config.update(client_config)
    return config


class _Delivery:
    """Counts acknowledgements and keeps the first failure."""

    def __init__(self) -> None:
        self.delivered = 0
        self.error: KafkaError | None = None

    def __call__(self, error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            self.error = self.error or error
        else:
            self.delivered += 1


def produce_rows(options: SinkOptions, columns: ColumnPositions, rows: Iterator[Any]) -> int:
    producer = Producer(producer_config(options.client_config))
    delivery = _Delivery()
    sent = 0
    for row in rows:
        if delivery.error is not None:
            break
        _produce(producer, options, columns, row, delivery)
        sent += 1
        producer.poll(0)
    remaining = producer.flush(FLUSH_TIMEOUT_S)
    if delivery.error is not None:
        raise RuntimeError(f"Failed to send a record to Kafka: {delivery.error}")
    if remaining:
        raise TimeoutError(f"{remaining} records were not acknowledged in {FLUSH_TIMEOUT_S} s")
    if delivery.delivered != sent:
        # flush() returned with nothing queued and no error: every record must be confirmed.
        raise RuntimeError(f"{sent} records were sent but {delivery.delivered} confirmed")
    return sent


def _produce(
    producer: Producer,
    options: SinkOptions,
    columns: ColumnPositions,
    row: Any,
    delivery: _Delivery,
) -> None:
    topic = options.topic or (row[columns.topic] if columns.topic is not None else None)
    if topic is None:
        raise ValueError(
            "null topic present in the data. Use the topic option for setting a topic."
        )
    arguments: dict[str, Any] = {"value": _as_bytes(row[columns.value]), "on_delivery": delivery}
    if columns.key is not None:
        arguments["key"] = _as_bytes(row[columns.key])
    if columns.partition is not None and row[columns.partition] is not None:
        arguments["partition"] = row[columns.partition]
    if columns.headers is not None and row[columns.headers]:
        arguments["headers"] = [(h[0], _as_bytes(h[1])) for h in row[columns.headers]]
    while True:
        try:
            producer.produce(topic, **arguments)
            return
        except BufferError:
            producer.poll(QUEUE_FULL_WAIT_S)  # local queue full: let deliveries drain


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    records: int


class KafkaBatchWriter(DataSourceWriter):
    def __init__(self, options: SinkOptions, columns: ColumnPositions) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return KafkaCommitMessage(produce_rows(self.options, self.columns, iterator))


class KafkaStreamWriter(DataSourceStreamWriter):
    def __init__(self, options: SinkOptions, columns: ColumnPositions) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return KafkaCommitMessage(produce_rows(self.options, self.columns, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records are in Kafka once `write` returns; nothing is staged to publish."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records already acknowledged stay: Kafka has no way to take them back."""
