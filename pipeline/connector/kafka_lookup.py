"""Driver-side questions to the cluster: which partitions a query reads, and their offsets.

One librdkafka AdminClient answers them (Metadata and batched ListOffsets). Offsets are
retried `fetchOffset.numRetries` times, `fetchOffset.retryIntervalMs` apart, as Spark's
offset reader does; a streaming query may instead hold back partitions whose leader is
moving (`allow_missing`), so that one unavailable partition does not stop it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from confluent_kafka import IsolationLevel, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from pipeline.connector.offsets import (
    EARLIEST_OFFSET,
    LATEST_OFFSET,
    PartitionOffsets,
    TopicPartition,
    describe,
)
from pipeline.connector.options import (
    Assign,
    OffsetChoice,
    OptionError,
    SourceOptions,
    Subscribe,
)

logger = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 30.0
NO_MATCHING_OFFSET = -1  # ListOffsets' answer when no record is at or after the timestamp
_EARLIEST: OffsetSpec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
_LATEST: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]


class KafkaLookup:
    """Owns one AdminClient; `close` releases it. Not picklable on purpose: drop it before
    Spark ships the reader to executors."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._admin = AdminClient(dict(options.client_config))
        read_committed = options.client_config.get("isolation.level") == "read_committed"
        self._isolation = (
            IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        )

    def close(self) -> None:
        # AdminClient has no close(); dropping the last reference stops its threads.
        self._admin = None  # type: ignore[assignment]

    def _topics(self) -> dict[str, list[int]]:
        metadata = self._admin.list_topics(timeout=REQUEST_TIMEOUT_S)
        return {
            name: sorted(topic.partitions)
            for name, topic in metadata.topics.items()
            if topic.error is None
        }

    def partitions(self) -> list[TopicPartition]:
        """The partitions the strategy names right now (subscriptions grow with the topics)."""
        strategy = self.options.strategy
        topics = self._topics()
        if isinstance(strategy, Assign):
            self._check_assignment(strategy, topics)
            return list(strategy.partitions)
        if isinstance(strategy, Subscribe):
            names: Iterable[str] = (t for t in strategy.topics if t in topics)
        else:
            names = (t for t in topics if strategy.matches(t))
        return sorted((name, p) for name in names for p in topics[name])

    @staticmethod
    def _check_assignment(strategy: Assign, topics: dict[str, list[int]]) -> None:
        for topic, partition in strategy.partitions:
            if topic not in topics:
                raise OptionError(f"Option 'assign' names topic '{topic}', which does not exist")
            if partition not in topics[topic]:
                raise OptionError(
                    f"Option 'assign' names partition {describe((topic, partition))}, which "
                    f"does not exist (the topic has {len(topics[topic])} partitions)"
                )

    def earliest(
        self, tps: Iterable[TopicPartition], allow_missing: bool = False
    ) -> PartitionOffsets:
        return self._list({tp: _EARLIEST for tp in tps}, allow_missing)

    def latest(
        self, tps: Iterable[TopicPartition], allow_missing: bool = False
    ) -> PartitionOffsets:
        return self._list({tp: _LATEST for tp in tps}, allow_missing)

    def _list(
        self, specs: dict[TopicPartition, OffsetSpec], allow_missing: bool
    ) -> PartitionOffsets:
        found: PartitionOffsets = {}
        errors: dict[TopicPartition, str] = {}
        for attempt in range(self.options.fetch_offset_retries + 1):
            if attempt:
                time.sleep(self.options.fetch_offset_retry_interval_ms / 1000)
            pending = {tp: spec for tp, spec in specs.items() if tp not in found}
            errors = self._list_once(pending, found)
            if not errors:
                return found
        if allow_missing:
            logger.warning("offsets unavailable, holding back: %s", errors)
            return found
        first = next(iter(errors.items()))
        raise RuntimeError(f"Failed to fetch offsets of {describe(first[0])}: {first[1]}")

    def _list_once(
        self, specs: dict[TopicPartition, OffsetSpec], found: PartitionOffsets
    ) -> dict[TopicPartition, str]:
        if not specs:
            return {}
        request = {KafkaTopicPartition(t, p): spec for (t, p), spec in specs.items()}
        errors: dict[TopicPartition, str] = {}
        try:
            futures = self._admin.list_offsets(
                request, isolation_level=self._isolation, request_timeout=REQUEST_TIMEOUT_S
            )
        except KafkaException as error:
            return {tp: str(error) for tp in specs}
        for kafka_tp, future in futures.items():
            tp = (kafka_tp.topic, kafka_tp.partition)
            try:
                found[tp] = future.result().offset
            except KafkaException as error:
                errors[tp] = str(error)
        return errors

    def resolve(self, choice: OffsetChoice, tps: list[TopicPartition]) -> PartitionOffsets:
        """Concrete offsets for `tps`, as Spark writes into its initial offset log."""
        if choice.kind == "earliest":
            return self.earliest(tps)
        if choice.kind == "latest":
            return self.latest(tps)
        if choice.kind == "offsets":
            return self._specific(choice, tps)
        return self._by_timestamp(choice, tps)

    def _specific(self, choice: OffsetChoice, tps: list[TopicPartition]) -> PartitionOffsets:
        if set(choice.offsets) != set(tps):
            specified = ", ".join(describe(tp) for tp in sorted(choice.offsets))
            assigned = ", ".join(describe(tp) for tp in tps)
            raise OptionError(
                f"If {choice.option} contains specific offsets, you must specify all "
                f"TopicPartitions. Use -1 for latest, -2 for earliest. "
                f"Specified: {specified} Assigned: {assigned}"
            )
        offsets = dict(choice.offsets)
        earliest = self.earliest([tp for tp, o in offsets.items() if o == EARLIEST_OFFSET])
        latest = self.latest([tp for tp, o in offsets.items() if o == LATEST_OFFSET])
        offsets.update(earliest)
        offsets.update(latest)
        return offsets

    def _by_timestamp(self, choice: OffsetChoice, tps: list[TopicPartition]) -> PartitionOffsets:
        if choice.kind == "timestamp":
            stamps = {tp: choice.timestamp_ms for tp in tps}
        else:
            missing = set(tps) - set(choice.offsets)
            if missing:
                raise OptionError(
                    f"Option '{choice.option}' has no timestamp for "
                    f"{', '.join(describe(tp) for tp in sorted(missing))}"
                )
            stamps = {tp: choice.offsets[tp] for tp in tps}
        offsets = self._list({tp: OffsetSpec.for_timestamp(ts) for tp, ts in stamps.items()}, False)
        unmatched = [tp for tp, offset in offsets.items() if offset == NO_MATCHING_OFFSET]
        if unmatched and choice.by_timestamp_strategy == "error":
            tp = unmatched[0]
            raise OptionError(
                f"No offset matched from request of topic-partition {describe(tp)} and "
                f"timestamp {stamps[tp]} (option '{choice.option}'; set "
                f"'{choice.option.removesuffix('Timestamp').removesuffix('OffsetsBy')}"
                "OffsetsByTimestampStrategy' to 'latest' to start from the end instead)"
            )
        offsets.update(self.latest(unmatched))
        return offsets
