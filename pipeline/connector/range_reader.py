"""Executor side: the records of one offset range, as rows of Spark's Kafka schema.

A consumer with no group membership is assigned the one partition at the range's start and
reads until the range's end (exclusive). The same range always yields the same records,
which is what lets Spark replay a micro-batch after a restart. Leader moves are librdkafka's
business (it refreshes metadata and refetches); a range that makes no progress for
`kafkaConsumer.pollTimeoutMs` fails the task.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition

from pipeline.connector.offsets import OffsetRange, describe
from pipeline.connector.options import consumer_group_id
from pipeline.connector.schema import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE

logger = logging.getLogger(__name__)

CONSUME_BATCH_RECORDS = 1000
CONSUME_WAIT_S = 0.5
WATERMARK_TIMEOUT_S = 10.0
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TIMESTAMP_TYPES = {TIMESTAMP_CREATE_TIME: CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME: LOG_APPEND_TIME}

DATA_LOSS_ADVICE = (
    "Some data may have been lost because they are not available in Kafka any more; either the "
    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
    "topic was processed. If you don't want your streaming query to fail on such cases, set "
    'the source option "failOnDataLoss" to "false".'
)


class DataLossError(RuntimeError):
    """Offsets the query needs are gone (retention, deletion) and failOnDataLoss is true."""


def consumer_config(client_config: dict[str, str]) -> dict[str, Any]:
    config: dict[str, Any] = {
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": False,
        # Report out-of-range offsets instead of silently jumping: that is data loss.
        "auto.offset.reset": "error",
        "isolation.level": "read_uncommitted",  # Spark's (Java's) default
    }
    config.update(client_config)
    config["group.id"] = consumer_group_id()
    return config


def read_range(
    client_config: dict[str, str],
    offset_range: OffsetRange,
    include_headers: bool,
    fail_on_data_loss: bool,
    poll_timeout_ms: int,
) -> Iterator[tuple[Any, ...]]:
    if offset_range.size == 0:
        return
    consumer = Consumer(consumer_config(client_config))
    try:
        yield from _RangeCursor(
            consumer, offset_range, include_headers, fail_on_data_loss, poll_timeout_ms
        ).rows()
    finally:
        consumer.close()


class _RangeCursor:
    def __init__(
        self,
        consumer: Consumer,
        offset_range: OffsetRange,
        include_headers: bool,
        fail_on_data_loss: bool,
        poll_timeout_ms: int,
    ) -> None:
        self.consumer = consumer
        self.range = offset_range
        self.include_headers = include_headers
        self.fail_on_data_loss = fail_on_data_loss
        self.poll_timeout_s = poll_timeout_ms / 1000
        self.next_offset = offset_range.from_offset

    def _kafka_tp(self, offset: int) -> KafkaTopicPartition:
        return KafkaTopicPartition(self.range.topic, self.range.partition, offset)

    def rows(self) -> Iterator[tuple[Any, ...]]:
        self.consumer.assign([self._kafka_tp(self.next_offset)])
        last_progress = time.monotonic()
        while self.next_offset < self.range.until_offset:
            messages = self.consumer.consume(CONSUME_BATCH_RECORDS, CONSUME_WAIT_S)
            before = self.next_offset
            for message in messages:
                error = message.error()
                if error is not None:
                    self._on_error(error)
                    break
                offset = message.offset()
                if offset is None:
                    raise RuntimeError("a record without an offset (only error events lack one)")
                if offset < self.next_offset:
                    continue  # a refetch after a leader move may repeat what we have
                if offset >= self.range.until_offset:
                    self.next_offset = offset
                    break
                yield self._row(message)
                self.next_offset = offset + 1
            if self.next_offset != before:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > self.poll_timeout_s:
                self._on_stall()
                last_progress = time.monotonic()

    def _row(self, message: Any) -> tuple[Any, ...]:
        timestamp_type, timestamp_ms = message.timestamp()
        row: tuple[Any, ...] = (
            message.key(),
            message.value(),
            self.range.topic,
            self.range.partition,
            message.offset(),
            EPOCH + timedelta(milliseconds=timestamp_ms) if timestamp_ms >= 0 else None,
            _TIMESTAMP_TYPES.get(timestamp_type, NO_TIMESTAMP_TYPE),
        )
        if self.include_headers:
            headers = message.headers()
            row += ([(key, value) for key, value in headers] if headers else [],)
        return row

    def _on_error(self, error: KafkaError) -> None:
        if error.code() not in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
            if error.fatal() or not error.retriable():
                raise RuntimeError(f"reading {describe(self._tp())}: {error}")
            logger.warning("reading %s: %s (retrying)", describe(self._tp()), error)
            return
        low, _high = self.consumer.get_watermark_offsets(
            self._kafka_tp(0), timeout=WATERMARK_TIMEOUT_S, cached=False
        )
        if low <= self.next_offset:
            raise RuntimeError(f"reading {describe(self._tp())}: {error}")
        self._lose(f"Cannot fetch offset {self.next_offset} (earliest available is {low})", low)

    def _on_stall(self) -> None:
        low, high = self.consumer.get_watermark_offsets(
            self._kafka_tp(0), timeout=WATERMARK_TIMEOUT_S, cached=False
        )
        if low > self.next_offset:
            self._lose(f"Cannot fetch offset {self.next_offset} (earliest is {low})", low)
        elif high >= self.range.until_offset:
            # The log holds the whole range, yet nothing more came for a full poll timeout:
            # the rest are offsets without records (transaction markers), not lost data.
            logger.warning(
                "no records in [%d, %d) of %s; taking them as gaps",
                self.next_offset,
                self.range.until_offset,
                describe(self._tp()),
            )
            self.next_offset = self.range.until_offset
        else:
            raise TimeoutError(
                f"Cannot fetch records in [{self.next_offset}, {self.range.until_offset}) of "
                f"{describe(self._tp())} within {self.poll_timeout_s:.0f} s "
                "(kafkaConsumer.pollTimeoutMs)"
            )

    def _lose(self, what: str, resume_at: int) -> None:
        message = f"{what} of {describe(self._tp())}. {DATA_LOSS_ADVICE}"
        if self.fail_on_data_loss:
            raise DataLossError(message)
        logger.warning("%s Skipping to offset %d.", message, resume_at)
        self.next_offset = min(resume_at, self.range.until_offset)
        if self.next_offset < self.range.until_offset:
            self.consumer.assign([self._kafka_tp(self.next_offset)])

    def _tp(self) -> tuple[str, int]:
        return (self.range.topic, self.range.partition)
