"""kafka-console-consumer: print records to standard output (Kafka's ConsoleConsumer).

`--topic` subscribes through a group; `--include` (or the deprecated `--whitelist`) subscribes
to every topic whose whole name matches a regular expression; `--partition` (with `--offset`
earliest|latest|N) reads one partition without a group. Without `--group` the group is
`console-consumer-<random>` and commits nothing. `--from-beginning` sets
auto.offset.reset=earliest. Output format: see `_formatter`. At the end, `Processed a total of
N messages` goes to standard error.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    Message,
    TopicPartition,
)

from kafka_cli._client import (
    ClientConfig,
    client_config,
    ensure_reachable,
    load_properties,
    parse_key_values,
)
from kafka_cli._formatter import ConsumedRecord, MessageFormatter
from kafka_cli.common import ToolArgumentParser, ToolError, run_tool

GENERATED_GROUP_RANGE = 100000  # Kafka: console-consumer-<Random.nextInt(100000)>
# How long one poll may block when no --timeout-ms bounds it; short so Ctrl-C is prompt.
IDLE_POLL_S = 1.0


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="kafka-console-consumer",
        description="Read data from Kafka topics and write it to standard output.",
    )
    parser.add_argument("--bootstrap-server", help="REQUIRED: The server(s) to connect to.")
    parser.add_argument("--topic", help="The topic to consume on.")
    parser.add_argument("--include", help="Regular expression of the topics to consume.")
    parser.add_argument("--whitelist", help="DEPRECATED, use --include instead.")
    parser.add_argument("--partition", type=int, help="The partition to consume from.")
    parser.add_argument("--offset", help="earliest, latest (the default) or an offset.")
    parser.add_argument("--group", help="The consumer group id of the consumer.")
    parser.add_argument("--from-beginning", action="store_true")
    parser.add_argument("--max-messages", type=int, help="Exit after this many messages.")
    parser.add_argument("--timeout-ms", type=int, help="Exit after this long without messages.")
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        help="Formatter property: print.key, print.value, print.timestamp, print.partition, "
        "print.offset, print.headers, key.separator, line.separator, headers.separator, "
        "null.literal.",
    )
    parser.add_argument("--consumer-property", action="append", default=[])
    parser.add_argument("--consumer.config", dest="consumer_config")
    parser.add_argument("--isolation-level", help="read_uncommitted (default) or read_committed")
    parser.add_argument("--skip-message-on-error", action="store_true")
    for hidden in ("--formatter", "--key-deserializer", "--value-deserializer"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    parser.add_argument("--enable-systest-events", action="store_true", help=argparse.SUPPRESS)
    return parser


def _start_offset(options: argparse.Namespace) -> int:
    """Kafka's offsetArg checks: --offset needs --partition and excludes --from-beginning."""
    if options.partition is None:
        if options.offset is not None:
            raise ToolError("The partition is required when offset is specified.")
        return OFFSET_END
    if options.topic is None:
        raise ToolError("The topic is required when partition is specified.")
    if options.offset is None:
        return OFFSET_BEGINNING if options.from_beginning else OFFSET_END
    if options.from_beginning:
        raise ToolError("Options from-beginning and offset cannot be specified together.")
    text = options.offset.lower()
    if text in ("earliest", "latest"):
        return OFFSET_BEGINNING if text == "earliest" else OFFSET_END
    if not text.isdigit():
        raise ToolError(
            f"The provided offset value '{options.offset}' is incorrect. Valid values are "
            "'earliest', 'latest', or a non-negative long."
        )
    return int(text)


def _subscription(options: argparse.Namespace) -> str:
    """The topic, or a librdkafka regex subscription (`^...`) matching whole names."""
    include = options.include or options.whitelist
    if (options.topic is None) == (include is None):
        raise ToolError("Exactly one of --include/--topic is required.")
    if options.topic is not None:
        return str(options.topic)
    return f"^({include})$"


def consumer_config(options: argparse.Namespace) -> ClientConfig:
    """Kafka's consumerProps: file, then --consumer-property, group and offset reset rules."""
    file_properties = load_properties(options.consumer_config)
    extra = parse_key_values(options.consumer_property, "--consumer-property")
    properties = {**file_properties, **extra}
    reset = properties.get("auto.offset.reset")
    if reset is not None and options.from_beginning and reset != "earliest":
        raise ToolError(
            f"Can't simultaneously specify --from-beginning and 'auto.offset.reset={reset}', "
            "please remove one option"
        )
    properties.setdefault("auto.offset.reset", "earliest" if options.from_beginning else "latest")
    if options.isolation_level is not None or "isolation.level" not in properties:
        properties["isolation.level"] = options.isolation_level or "read_uncommitted"
    groups = {
        group
        for group in (options.group, file_properties.get("group.id"), extra.get("group.id"))
        if group is not None
    }
    if len(groups) > 1:
        raise ToolError(
            "The group ids provided in different places (directly using '--group', via "
            "'--consumer-property', or via '--consumer.config') do not match. Detected group "
            "ids: " + ", ".join(f"'{group}'" for group in sorted(groups))
        )
    if groups:
        if options.partition is not None:
            raise ToolError("Options group and partition cannot be specified together.")
        properties["group.id"] = groups.pop()
    else:
        properties["group.id"] = f"console-consumer-{random.randrange(GENERATED_GROUP_RANGE)}"
        properties.setdefault("enable.auto.commit", "false")
    return client_config(options.bootstrap_server, properties)


def _record(message: Message) -> ConsumedRecord:
    timestamp_type, timestamp_ms = message.timestamp()
    return ConsumedRecord(
        topic=message.topic() or "",
        partition=message.partition() or 0,
        offset=message.offset() or 0,
        timestamp_type=timestamp_type,
        timestamp_ms=timestamp_ms,
        key=message.key(),
        value=message.value(),
        headers=_headers(message.headers()),
    )


def _headers(raw: object) -> list[tuple[str, bytes | None]]:
    """A consumed message's headers: librdkafka gives (key, bytes-or-None) pairs."""
    pairs: Iterable[tuple[Any, Any]] = []
    if isinstance(raw, dict):
        pairs = raw.items()
    elif isinstance(raw, list):
        pairs = raw
    headers: list[tuple[str, bytes | None]] = []
    for key, value in pairs:
        headers.append((str(key), value.encode() if isinstance(value, str) else value))
    return headers


@dataclass
class Progress:
    printed: int = 0


def _consume(
    consumer: Consumer, options: argparse.Namespace, formatter: MessageFormatter, progress: Progress
) -> None:
    """Print records until --max-messages, --timeout-ms of silence, or Ctrl-C."""
    output = sys.stdout.buffer
    silence_s = None if options.timeout_ms is None else options.timeout_ms / 1000
    last_record = time.monotonic()
    while options.max_messages is None or progress.printed < options.max_messages:
        wait_s = IDLE_POLL_S
        if silence_s is not None:
            wait_s = min(wait_s, max(0.0, last_record + silence_s - time.monotonic()))
        message = consumer.poll(wait_s)
        if message is None:
            if silence_s is not None and time.monotonic() - last_record >= silence_s:
                break
            continue
        error = message.error()
        if error is not None:
            _report(error)
            continue
        output.write(formatter.format(_record(message)))
        output.flush()
        progress.printed += 1
        last_record = time.monotonic()


def _report(error: KafkaError) -> None:
    """Fatal client errors end the tool; others (a topic not there yet) are warnings, as the
    Java consumer logs them and keeps polling."""
    if error.fatal():
        raise ToolError(str(error.str()))
    print(f"WARN {error.str()}", file=sys.stderr)


def _body(args: list[str]) -> int:
    options = _parser().parse_args(args)
    subscription = _subscription(options)
    start_offset = _start_offset(options)
    config = consumer_config(options)
    formatter = MessageFormatter(parse_key_values(options.property, "--property"))
    ensure_reachable(str(config["bootstrap.servers"]))
    consumer = Consumer(config)
    progress = Progress()
    try:
        if options.partition is None:
            consumer.subscribe([subscription])
        else:
            consumer.assign([TopicPartition(options.topic, options.partition, start_offset)])
        _consume(consumer, options, formatter, progress)
    finally:
        consumer.close()  # commits the offsets of printed records (auto commit)
        print(f"Processed a total of {progress.printed} messages", file=sys.stderr)
    return 0


def main() -> int:
    return run_tool(_body)
