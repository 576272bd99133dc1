"""kafka-console-producer: one record per line of standard input (Kafka's ConsoleProducer).

Line format: see `_line_reader` (`--property parse.key=true key.separator=: parse.headers=true`).
Producer settings come from `--producer.config`, then `--producer-property`, then the tool's
own flags with Kafka's defaults (acks=-1, linger 1000 ms, request timeout 1500 ms, client id
`console-producer`); as in Kafka, a flag's default does not override a property given in a
file or with --producer-property, an explicit flag does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

from confluent_kafka import KafkaError, Message, Producer

from kafka_cli._client import (
    ClientConfig,
    client_config,
    ensure_reachable,
    load_properties,
    parse_key_values,
)
from kafka_cli._line_reader import LineReader, LineRecord
from kafka_cli.common import ToolArgumentParser, ToolError, run_tool

# (flag, producer property, Kafka's default for the flag)
FLAG_PROPERTIES: tuple[tuple[str, str, str], ...] = (
    ("timeout", "linger.ms", "1000"),
    ("request_required_acks", "acks", "-1"),
    ("request_timeout_ms", "request.timeout.ms", "1500"),
    ("message_send_max_retries", "retries", "3"),
    ("retry_backoff_ms", "retry.backoff.ms", "100"),
    ("socket_buffer_size", "socket.send.buffer.bytes", "102400"),
    ("max_partition_memory_bytes", "batch.size", "16384"),
    ("metadata_expiry_ms", "metadata.max.age.ms", "300000"),
    ("batch_size", "batch.num.messages", "200"),
)
# Java's delivery.timeout.ms default; librdkafka's own (message.timeout.ms) is 300 s.
DELIVERY_TIMEOUT_MS_DEFAULT = "120000"
# How long to wait for outstanding deliveries at the end (beyond the delivery timeout).
FLUSH_GRACE_S = 5.0
QUEUE_FULL_POLL_S = 0.1


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="kafka-console-producer",
        description="Read data from standard input and publish it to Kafka.",
    )
    parser.add_argument("--bootstrap-server", help="REQUIRED: The server(s) to connect to.")
    parser.add_argument("--broker-list", help="DEPRECATED, use --bootstrap-server instead.")
    parser.add_argument("--topic", help="REQUIRED: The topic to produce messages to.")
    parser.add_argument("--sync", action="store_true", help="Send each message synchronously.")
    parser.add_argument(
        "--compression-codec", nargs="?", const="gzip", help="none, gzip, snappy, lz4 or zstd."
    )
    for flag, key, default in FLAG_PROPERTIES:
        parser.add_argument(f"--{flag.replace('_', '-')}", help=f"{key} (default {default}).")
    parser.add_argument("--max-block-ms", help=argparse.SUPPRESS)  # no librdkafka equivalent
    parser.add_argument("--max-memory-bytes", type=int, help="Total memory for buffering.")
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        help="Line reader property: parse.key, key.separator, parse.headers, headers.delimiter, "
        "headers.separator, headers.key.separator, ignore.error, null.marker.",
    )
    parser.add_argument("--producer-property", action="append", default=[])
    parser.add_argument("--producer.config", dest="producer_config")
    parser.add_argument("--line-reader", help=argparse.SUPPRESS)
    return parser


def producer_config(options: argparse.Namespace) -> ClientConfig:
    """Kafka's ConsoleProducer.producerProps, in librdkafka's names."""
    properties = load_properties(options.producer_config)
    properties.update(parse_key_values(options.producer_property, "--producer-property"))
    for flag, key, default in FLAG_PROPERTIES:
        explicit = getattr(options, flag)
        if explicit is not None or key not in properties:
            properties[key] = default if explicit is None else str(explicit)
    properties["compression.type"] = options.compression_codec or "none"
    if options.max_memory_bytes is not None:
        properties["queue.buffering.max.kbytes"] = str(max(1, options.max_memory_bytes // 1024))
    properties.setdefault("client.id", "console-producer")
    if "message.timeout.ms" not in properties:
        properties.setdefault("delivery.timeout.ms", DELIVERY_TIMEOUT_MS_DEFAULT)
    return client_config(options.bootstrap_server or options.broker_list, properties)


@dataclass
class Deliveries:
    """Delivery reports: the tool fails (after sending the rest) if any record was lost."""

    failed: int = 0
    first_error: str = ""

    def on_delivery(self, error: KafkaError | None, _message: Message) -> None:
        if error is None:
            return
        self.failed += 1
        if not self.first_error:
            self.first_error = str(error.str())


def _lines(stream: TextIO, prompt: bool) -> Iterator[str]:
    while True:
        if prompt:
            print(">", end="", flush=True)
        line = stream.readline()
        if not line:
            return
        yield line.rstrip("\n").removesuffix("\r")


def _send(producer: Producer, topic: str, record: LineRecord, deliveries: Deliveries) -> None:
    headers: list[tuple[str, str | bytes | None]] = list(record.headers)
    while True:
        try:
            producer.produce(
                topic,
                value=record.value,
                key=record.key,
                headers=headers or None,
                on_delivery=deliveries.on_delivery,
            )
            return
        except BufferError:
            producer.poll(QUEUE_FULL_POLL_S)  # the local queue is full: let deliveries drain


def _body(args: list[str]) -> int:
    options = _parser().parse_args(args)
    if not options.topic:
        raise ToolError('Missing required argument "[topic]"')
    config = producer_config(options)
    reader = LineReader(parse_key_values(options.property, "--property"))
    ensure_reachable(str(config["bootstrap.servers"]))
    producer = Producer(config)
    deliveries = Deliveries()
    timeout_ms = config.get("delivery.timeout.ms", config.get("message.timeout.ms", "300000"))
    delivery_timeout_s = int(timeout_ms) / 1000
    prompt = sys.stdin.isatty() and sys.stdout.isatty()
    try:
        for line in _lines(sys.stdin, prompt):
            _send(producer, options.topic, reader.read(line), deliveries)
            if options.sync:
                producer.flush(delivery_timeout_s + FLUSH_GRACE_S)
            producer.poll(0)
    finally:
        remaining = producer.flush(delivery_timeout_s + FLUSH_GRACE_S)
    if remaining:
        raise ToolError(f"{remaining} messages were not delivered before the timeout")
    if deliveries.failed:
        raise ToolError(
            f"{deliveries.failed} messages could not be delivered: {deliveries.first_error}"
        )
    return 0


def main() -> int:
    return run_tool(_body)
