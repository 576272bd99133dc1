"""Source and sink options, named and checked as Spark's Kafka connector does.

Spark hands a data source its options in a case-insensitive map (lower-cased keys). Every
check happens here, before any task runs, and every message names the offending option.
`kafka.*` options go to the librdkafka client with the prefix removed.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from pipeline.connector.offsets import (
    EARLIEST_OFFSET,
    LATEST_OFFSET,
    TIMESTAMPS_EXAMPLE,
    OffsetsError,
    PartitionOffsets,
    TopicPartition,
    describe,
    parse_assign,
    parse_partition_offsets,
)

KAFKA_PREFIX = "kafka."
STRATEGY_OPTIONS = ("assign", "subscribe", "subscribePattern")
DEFAULT_POLL_TIMEOUT_MS = 120_000  # Spark's default: spark.network.timeout
DEFAULT_FETCH_OFFSET_RETRIES = 3
DEFAULT_FETCH_OFFSET_RETRY_INTERVAL_MS = 1000
# Topics a Java consumer leaves out of pattern subscriptions (exclude.internal.topics=true).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

_UNSUPPORTED_SOURCE_KAFKA = {
    "auto.offset.reset": "Instead set the source option 'startingOffsets' to 'earliest' or "
    "'latest' to specify where to start.",
    "key.deserializer": "Keys are always read as byte arrays; use DataFrame operations to "
    "deserialize them.",
    "value.deserializer": "Values are always read as byte arrays; use DataFrame operations to "
    "deserialize them.",
    "enable.auto.commit": "The source manages offsets itself and commits none to Kafka.",
    "interceptor.classes": "Interceptors cannot see the source's records.",
}
_UNSUPPORTED_SINK_KAFKA = {
    "key.serializer": "Keys are written as they are (string or binary).",
    "value.serializer": "Values are written as they are (string or binary).",
}


class OptionError(ValueError):
    """A bad option; the message names it (Spark raises IllegalArgumentException)."""


@dataclass(frozen=True)
class Subscribe:
    topics: tuple[str, ...]


@dataclass(frozen=True)
class SubscribePattern:
    pattern: str

    def matches(self, topic: str) -> bool:
        return topic not in INTERNAL_TOPICS and re.fullmatch(self.pattern, topic) is not None


@dataclass(frozen=True)
class Assign:
    partitions: tuple[TopicPartition, ...]


Strategy = Subscribe | SubscribePattern | Assign


@dataclass(frozen=True)
class OffsetChoice:
    """Where to start or end: `earliest`, `latest`, per-partition offsets, or timestamps
    (one for all partitions, or per partition); `by_timestamp_strategy` says what to do when
    no record is at or after a timestamp ('error', Spark's default, or 'latest')."""

    kind: str  # "earliest" | "latest" | "offsets" | "timestamp" | "timestamps"
    offsets: PartitionOffsets = field(default_factory=dict)
    timestamp_ms: int = 0
    by_timestamp_strategy: str = "error"
    option: str = ""


@dataclass(frozen=True)
class SourceOptions:
    client_config: dict[str, str]
    strategy: Strategy
    starting: OffsetChoice
    ending: OffsetChoice | None
    max_offsets_per_trigger: int | None
    min_partitions: int | None
    fail_on_data_loss: bool
    include_headers: bool
    poll_timeout_ms: int
    fetch_offset_retries: int
    fetch_offset_retry_interval_ms: int


@dataclass(frozen=True)
class SinkOptions:
    client_config: dict[str, str]
    topic: str | None


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {key.lower(): value for key, value in options.items()}


def _client_config(options: dict[str, str], purpose: str) -> dict[str, str]:
    # An empty or blank list is refused here too: librdkafka would accept it and only report
    # a transport error once the query runs.
    servers = options.get("kafka.bootstrap.servers", "")
    if not any(server.strip() for server in servers.split(",")):
        raise OptionError(
            f"Option 'kafka.bootstrap.servers' must be specified for configuring Kafka {purpose}"
        )
    return {
        key[len(KAFKA_PREFIX) :]: value
        for key, value in options.items()
        if key.startswith(KAFKA_PREFIX)
    }


def _reject_unsupported(config: dict[str, str], unsupported: dict[str, str]) -> None:
    for name, reason in unsupported.items():
        if name in config:
            raise OptionError(f"Kafka option 'kafka.{name}' is not supported. {reason}")


def _strategy(options: dict[str, str]) -> Strategy:
    given = [name for name in STRATEGY_OPTIONS if name.lower() in options]
    names = ", ".join(STRATEGY_OPTIONS)
    if not given:
        raise OptionError(
            f"One of the following options must be specified for Kafka source: {names}. "
            "See the docs for more details."
        )
    if len(given) > 1:
        raise OptionError(
            f"Only one of the following options can be specified for Kafka source: {names}. "
            f"Given: {', '.join(given)}."
        )
    name = given[0]
    value = options[name.lower()]
    if name == "assign":
        try:
            return Assign(tuple(parse_assign(value)))
        except OffsetsError as error:
            raise OptionError(f"Invalid value for option 'assign': {error}") from None
    if name == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError(
                f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'"
            )
        return Subscribe(topics)
    pattern = value.strip()
    if not pattern:
        raise OptionError(
            f"Pattern to subscribe is empty as specified value for option 'subscribePattern' "
            f"is '{value}'"
        )
    try:
        re.compile(pattern)
    except re.error as error:
        raise OptionError(f"Invalid value for option 'subscribePattern': {error}") from None
    return SubscribePattern(pattern)


def _integer(
    options: dict[str, str], name: str, minimum: int, default: int | None = None
) -> int | None:
    text = options.get(name.lower())
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        value = minimum - 1
    if value < minimum:
        kind = "a positive" if minimum > 0 else "a non-negative"
        raise OptionError(f"Invalid value '{text}' for option '{name}', must be {kind} integer")
    return value


def _required_integer(options: dict[str, str], name: str, minimum: int, default: int) -> int:
    value = _integer(options, name, minimum)
    return default if value is None else value


def _boolean(options: dict[str, str], name: str, default: bool) -> bool:
    text = options.get(name.lower())
    if text is None:
        return default
    if text.strip().lower() not in ("true", "false"):
        raise OptionError(f"Invalid value '{text}' for option '{name}', must be true or false")
    return text.strip().lower() == "true"


def _offset_choice(options: dict[str, str], edge: str) -> OffsetChoice | None:
    """startingTimestamp > startingOffsetsByTimestamp > startingOffsets, as in Spark."""
    strategy_name = f"{edge}OffsetsByTimestampStrategy"
    strategy = options.get(strategy_name.lower(), "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError(
            f"Invalid value '{strategy}' for option '{strategy_name}', must be error or latest"
        )
    timestamp_name = f"{edge}Timestamp"
    if timestamp_name.lower() in options:
        timestamp = _required_integer(options, timestamp_name, 0, 0)
        return OffsetChoice(
            "timestamp",
            timestamp_ms=timestamp,
            by_timestamp_strategy=strategy,
            option=timestamp_name,
        )
    by_timestamp_name = f"{edge}OffsetsByTimestamp"
    if by_timestamp_name.lower() in options:
        try:
            stamps = parse_partition_offsets(options[by_timestamp_name.lower()], TIMESTAMPS_EXAMPLE)
        except OffsetsError as error:
            raise OptionError(f"Invalid value for option '{by_timestamp_name}': {error}") from None
        return OffsetChoice(
            "timestamps", offsets=stamps, by_timestamp_strategy=strategy, option=by_timestamp_name
        )
    offsets_name = f"{edge}Offsets"
    text = options.get(offsets_name.lower())
    if text is None:
        return None
    if text.strip().lower() in ("earliest", "latest"):
        return OffsetChoice(text.strip().lower(), option=offsets_name)
    try:
        offsets = parse_partition_offsets(text)
    except OffsetsError as error:
        raise OptionError(f"Invalid value for option '{offsets_name}': {error}") from None
    bad = [tp for tp, offset in offsets.items() if offset < EARLIEST_OFFSET]
    if bad:
        raise OptionError(
            f"Invalid value for option '{offsets_name}': offset {offsets[bad[0]]} for "
            f"{describe(bad[0])}; use an offset >= 0, -1 for latest or -2 for earliest"
        )
    return OffsetChoice("offsets", offsets=offsets, option=offsets_name)


def parse_source_options(raw: Mapping[str, str]) -> SourceOptions:
    """The checks shared by batch and streaming reads."""
    options = _lower(raw)
    strategy = _strategy(options)
    config = _client_config(options, "consumer")
    _reject_unsupported(config, _UNSUPPORTED_SOURCE_KAFKA)
    return SourceOptions(
        client_config=config,
        strategy=strategy,
        starting=_offset_choice(options, "starting") or OffsetChoice("default"),
        ending=_offset_choice(options, "ending"),
        max_offsets_per_trigger=_integer(options, "maxOffsetsPerTrigger", 1),
        min_partitions=_integer(options, "minPartitions", 1),
        fail_on_data_loss=_boolean(options, "failOnDataLoss", True),
        include_headers=_boolean(options, "includeHeaders", False),
        poll_timeout_ms=_required_integer(
            options, "kafkaConsumer.pollTimeoutMs", 1, DEFAULT_POLL_TIMEOUT_MS
        ),
        fetch_offset_retries=_required_integer(
            options, "fetchOffset.numRetries", 0, DEFAULT_FETCH_OFFSET_RETRIES
        ),
        fetch_offset_retry_interval_ms=_required_integer(
            options, "fetchOffset.retryIntervalMs", 0, DEFAULT_FETCH_OFFSET_RETRY_INTERVAL_MS
        ),
    )


def batch_source_options(raw: Mapping[str, str]) -> SourceOptions:
    """Batch reads default to earliest..latest; latest cannot start, earliest cannot end."""
    parsed = parse_source_options(raw)
    starting = parsed.starting
    if starting.kind == "default":
        starting = OffsetChoice("earliest", option="startingOffsets")
    _refuse_marker(starting, "latest", LATEST_OFFSET, "starting")
    ending = parsed.ending or OffsetChoice("latest", option="endingOffsets")
    _refuse_marker(ending, "earliest", EARLIEST_OFFSET, "ending")
    return _replace(parsed, starting=starting, ending=ending)


def stream_source_options(raw: Mapping[str, str]) -> SourceOptions:
    """Streaming reads default to latest and take no ending offsets."""
    parsed = parse_source_options(raw)
    if parsed.ending is not None:
        raise OptionError(f"Option '{parsed.ending.option}' is not valid in streaming queries")
    starting = parsed.starting
    if starting.kind == "default":
        starting = OffsetChoice("latest", option="startingOffsets")
    return _replace(parsed, starting=starting)


def _refuse_marker(choice: OffsetChoice, word: str, marker: int, edge: str) -> None:
    if choice.kind == word:
        raise OptionError(f"{edge} offset can't be {word} for batch queries on Kafka")
    for tp, offset in choice.offsets.items():
        if choice.kind == "offsets" and offset == marker:
            raise OptionError(
                f"{edge}Offsets for {describe(tp)} can't be {word} for batch queries on Kafka"
            )


def _replace(parsed: SourceOptions, **changes: OffsetChoice) -> SourceOptions:
    values = {name: getattr(parsed, name) for name in SourceOptions.__dataclass_fields__}
    values.update(changes)
    return SourceOptions(**values)


def parse_sink_options(raw: Mapping[str, str]) -> SinkOptions:
    options = _lower(raw)
    config = _client_config(options, "producer")
    _reject_unsupported(config, _UNSUPPORTED_SINK_KAFKA)
    topic = options.get("topic")
    return SinkOptions(client_config=config, topic=topic.strip() if topic else None)


def consumer_group_id() -> str:
    """A group id no one else uses: the source assigns partitions itself and commits nothing,
    but librdkafka wants a group id to create a consumer."""
    return f"spark-kafka-source-{uuid.uuid4()}"
