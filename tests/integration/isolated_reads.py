"""Reading a topic back with librdkafka at an isolation level, for the transaction tests."""

from __future__ import annotations

import uuid

from tests.integration.conftest import wait_until

READ_TIMEOUT_S = 60


def read_values(bootstrap: str, topic: str, isolation_level: str, expected: int) -> list[bytes]:
    """The values of the topic's first `expected` records, read from the start of every
    partition at `isolation_level`; fails if fewer arrive in time or more follow. Partitions
    are assigned, not subscribed: a new group's join waits out group.initial.rebalance.delay.ms
    (3 s), and a group is not what these tests check."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"isolated-read-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "isolation.level": isolation_level,
            "enable.auto.commit": False,
        }
    )
    values: list[bytes] = []
    try:
        partitions: list[int] = []

        def partitions_known() -> bool:
            found = consumer.list_topics(topic, timeout=5).topics.get(topic)
            if found is None or found.error is not None:
                return False
            partitions[:] = sorted(found.partitions)
            return bool(partitions)

        wait_until(partitions_known, READ_TIMEOUT_S, f"{topic}'s partitions")
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])

        def read_enough() -> bool:
            # All that arrived, not one record per call: each call is followed by a pause.
            wanted = expected - len(values)
            for message in consumer.consume(wanted, 0.5):
                if message.error() is None:
                    value = message.value()
                    assert value is not None, "a record without a value"
                    values.append(value)
            return len(values) >= expected

        wait_until(read_enough, READ_TIMEOUT_S, f"{expected} records read {isolation_level}")
        extra = consumer.poll(2.0)  # nothing else may follow
        assert extra is None or extra.error() is not None, extra.value()
    finally:
        consumer.close()
    return values
