"""Spark's reader interfaces: plan offset ranges on the driver, read them on executors.

Streaming offsets are Spark's JSON, `{"topic": {"partition": next offset}}`: concrete numbers,
so a micro-batch replayed from the checkpoint reads exactly the records it read before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from pipeline.connector.kafka_lookup import KafkaLookup
from pipeline.connector.offsets import (
    OffsetRange,
    PartitionOffsets,
    describe,
    from_json_dict,
    rate_limit,
    split_ranges,
    to_json_dict,
)
from pipeline.connector.options import SourceOptions
from pipeline.connector.range_reader import DATA_LOSS_ADVICE, DataLossError, read_range

logger = logging.getLogger(__name__)


class KafkaInputPartition(InputPartition):
    """One Spark task: one offset range of one topic partition."""

    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)
        self.offset_range = offset_range


def _read(options: SourceOptions, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
    if not isinstance(partition, KafkaInputPartition):
        raise TypeError(f"expected a KafkaInputPartition from planning, got {partition!r}")
    return read_range(
        options.client_config,
        partition.offset_range,
        options.include_headers,
        options.fail_on_data_loss,
        options.poll_timeout_ms,
    )


def _input_partitions(options: SourceOptions, ranges: list[OffsetRange]) -> list[InputPartition]:
    return [KafkaInputPartition(r) for r in split_ranges(ranges, options.min_partitions)]


def _report_data_loss(options: SourceOptions, message: str) -> None:
    if options.fail_on_data_loss:
        raise DataLossError(f"{message}. {DATA_LOSS_ADVICE}")
    logger.warning("%s. Continuing (failOnDataLoss=false).", message)


class KafkaBatchReader(DataSourceReader):
    """Plans the ranges once, on the driver, when Spark creates the reader."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        lookup = KafkaLookup(options)
        try:
            tps = lookup.partitions()
            if options.ending is None:
                raise ValueError("batch options always carry ending offsets (default latest)")
            starting = lookup.resolve(options.starting, tps)
            ending = lookup.resolve(options.ending, tps)
        finally:
            lookup.close()
        self.ranges: list[OffsetRange] = []
        for tp in tps:
            if ending[tp] < starting[tp]:
                _report_data_loss(
                    options,
                    f"Partition {describe(tp)}'s starting offset {starting[tp]} is after its "
                    f"ending offset {ending[tp]}",
                )
                continue
            self.ranges.append(OffsetRange(tp[0], tp[1], starting[tp], ending[tp]))

    def partitions(self) -> Sequence[InputPartition]:
        return _input_partitions(self.options, self.ranges)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        return _read(self.options, partition)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Lives in one driver-side Python process for the whole query; its AdminClient is
    created on first use and never shipped to executors."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._lookup: KafkaLookup | None = None
        self._available_now_target: PartitionOffsets | None = None
        self._last_latest: PartitionOffsets = {}
        # Fail on bad options (unknown topic in `assign`) before the query starts.
        self.lookup().partitions()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_lookup"] = None
        return state

    def lookup(self) -> KafkaLookup:
        if self._lookup is None:
            self._lookup = KafkaLookup(self.options)
        return self._lookup

    def initialOffset(self) -> dict[str, Any]:
        lookup = self.lookup()
        return to_json_dict(lookup.resolve(self.options.starting, lookup.partitions()))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.options.max_offsets_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        lookup = self.lookup()
        self._available_now_target = lookup.latest(lookup.partitions())

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = from_json_dict(start)
        lookup = self.lookup()
        tps = lookup.partitions()
        self._check_removed(begin, tps)
        new = [tp for tp in tps if tp not in begin]
        begin.update(lookup.earliest(new, allow_missing=True) if new else {})
        latest = lookup.latest([tp for tp in tps if tp in begin], allow_missing=True)
        # No offset (-1001) without an error: a new leader that cannot answer yet (KIP-207).
        latest = {tp: offset for tp, offset in latest.items() if offset >= 0}
        self._last_latest = dict(latest)
        if self._available_now_target is not None:
            target = self._available_now_target
            latest = {tp: min(o, target.get(tp, begin[tp])) for tp, o in latest.items()}
        for tp, offset in list(latest.items()):
            if offset < begin[tp]:
                _report_data_loss(
                    self.options,
                    f"Partition {describe(tp)}'s offset was changed from {begin[tp]} to {offset}",
                )
                latest[tp] = begin[tp] if self.options.fail_on_data_loss else offset
        # A partition whose offsets are unavailable right now (leader moving) stays put.
        end = {tp: latest.get(tp, begin[tp]) for tp in begin}
        if isinstance(limit, ReadMaxRows):
            movable = {tp: o for tp, o in end.items() if o >= begin[tp]}
            end.update(rate_limit({tp: begin[tp] for tp in movable}, movable, limit.max_rows))
        return to_json_dict(end)

    def _check_removed(self, begin: PartitionOffsets, tps: list[tuple[str, int]]) -> None:
        removed = sorted(set(begin) - set(tps))
        if removed:
            names = ", ".join(describe(tp) for tp in removed)
            _report_data_loss(self.options, f"{names} are gone")

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return to_json_dict(self._last_latest) if self._last_latest else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = from_json_dict(start)
        until = from_json_dict(end)
        new = [tp for tp in until if tp not in begin]
        if new:
            # Partitions that appeared in this batch start from their earliest offset.
            begin.update(self.lookup().earliest(new))
        ranges = []
        for tp, until_offset in sorted(until.items()):
            from_offset = begin[tp]
            if until_offset < from_offset:
                _report_data_loss(
                    self.options, f"{describe(tp)} went back from {from_offset} to {until_offset}"
                )
                continue
            ranges.append(OffsetRange(tp[0], tp[1], from_offset, until_offset))
        return _input_partitions(self.options, ranges)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        return _read(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: positions live in Spark's checkpoint, not in Kafka."""

    def stop(self) -> None:
        if self._lookup is not None:
            self._lookup.close()
            self._lookup = None
