"""kafka-transactions against a real cluster, with a transaction held open by librdkafka:
`list`, `describe` and `describe-producers` show it as Kafka's tool does, `find-hanging` does
not call it hanging (its coordinator still lists the partition), and `abort --start-offset`
ends it on one partition, which read_committed readers then see past."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import topic_spec
from tests.integration.tool_cli import ok, run_tool
from tests.integration.txn_wire import (
    create_led,
    new_producer_id,
    produce_transactional,
    transactional_batch,
)
from tests.integration.wire import WireClient, controller_address, create_topics

# find-hanging is checked against every transaction of broker 1.
pytestmark = pytest.mark.own_cluster

TIMEOUT_S = 60


def _table(output: str) -> list[dict[str, str]]:
    """Kafka's prettyPrintTable: cells padded to their column, each followed by a tab."""
    lines = output.splitlines()
    headers = [cell.strip() for cell in lines[0].split("\t")[:-1]]
    for line in lines:
        assert line.endswith("\t"), repr(line)
    return [
        dict(zip(headers, (c.strip() for c in line.split("\t")[:-1]), strict=True))
        for line in lines[1:]
    ]


def _transactions(cluster: ClusterHandle, *args: str) -> str:
    return ok(run_tool("kafka-transactions", "--bootstrap-server", cluster.bootstrap, *args))


@dataclass(frozen=True)
class OpenTransaction:
    topic: str
    transactional_id: str
    began_s: float  # time.monotonic() before begin_transaction


@pytest.fixture
def open_transaction(
    cluster: ClusterHandle, request: pytest.FixtureRequest
) -> Iterator[OpenTransaction]:
    """Two records on each of a new topic's two partitions, in a transaction left open."""
    from confluent_kafka import Producer

    name = f"tool-{request.function.__name__[5:25].replace('_', '-')}"
    transactional_id = f"{name}-app"
    with WireClient.to(controller_address(cluster)) as client:
        assert int(create_topics(client, [topic_spec(name, 2, 3)]).topics[0].error_code) == 0
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "transactional.id": transactional_id}
    )
    producer.init_transactions(TIMEOUT_S)
    opened = OpenTransaction(name, transactional_id, time.monotonic())
    producer.begin_transaction()
    for i in range(4):
        producer.produce(name, value=f"open-{i}".encode(), partition=i % 2)
    assert producer.flush(TIMEOUT_S) == 0
    yield opened
    producer.abort_transaction(TIMEOUT_S)


def _producers_on(cluster: ClusterHandle, topic: str, broker_id: int) -> list[dict[str, str]]:
    args = ["describe-producers", "--topic", topic, "--partition", "0"]
    return _table(_transactions(cluster, *args, "--broker-id", str(broker_id)))


def _stable_end(cluster: ClusterHandle, topic: str, partition: int) -> tuple[int, int]:
    """(last stable offset, high watermark) of the partition."""
    from confluent_kafka import Consumer, TopicPartition

    ends = []
    for level in ("read_committed", "read_uncommitted"):
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "group.id": "txn-tool-reader",
                "isolation.level": level,
            }
        )
        try:
            ends.append(
                consumer.get_watermark_offsets(TopicPartition(topic, partition), TIMEOUT_S, False)[
                    1
                ]
            )
        finally:
            consumer.close()
    return ends[0], ends[1]


def test_list_describe_and_describe_producers(
    cluster: ClusterHandle, open_transaction: OpenTransaction
) -> None:
    topic, transactional_id = open_transaction.topic, open_transaction.transactional_id
    listed = [
        row
        for row in _table(_transactions(cluster, "list"))
        if row["TransactionalId"] == transactional_id
    ]
    assert len(listed) == 1 and listed[0]["TransactionState"] == "Ongoing", listed
    (described,) = _table(
        _transactions(cluster, "describe", "--transactional-id", transactional_id)
    )
    assert described["CoordinatorId"] == listed[0]["Coordinator"]
    assert described["ProducerId"] == listed[0]["ProducerId"]
    assert described["TransactionState"] == "Ongoing"
    assert described["TransactionTimeoutMs"] == "60000"  # librdkafka's default
    open_for_ms = (time.monotonic() - open_transaction.began_s) * 1000
    assert 0 <= int(described["TransactionDurationMs"]) <= open_for_ms + 1000, described
    assert sorted(described["TopicPartitions"].split(",")) == [f"{topic}-0", f"{topic}-1"]
    (producer,) = _table(
        _transactions(cluster, "describe-producers", "--topic", topic, "--partition", "0")
    )
    assert producer["ProducerId"] == described["ProducerId"]
    assert producer["CurrentTransactionStartOffset"] == "0"
    assert producer["LastSequence"] == "1"  # two records, one batch or two
    # A follower answers from its own replica too (--broker-id).
    for broker_id in cluster.broker_ids:
        wait_until(
            lambda replica=broker_id: _producers_on(cluster, topic, replica) != [],
            TIMEOUT_S,
            f"broker {broker_id} replicating the open transaction",
        )


def test_an_ongoing_transaction_is_not_hanging_and_abort_ends_it(
    cluster: ClusterHandle, open_transaction: OpenTransaction
) -> None:
    topic = open_transaction.topic
    hanging = _transactions(
        cluster, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0"
    )
    assert _table(hanging) == []
    assert (
        _table(
            _transactions(
                cluster, "find-hanging", "--broker-id", "1", "--max-transaction-timeout", "0"
            )
        )
        == []
    )
    stable, high = _stable_end(cluster, topic, 0)
    assert stable < high, "the open transaction should hold back the last stable offset"
    ok(
        run_tool(
            "kafka-transactions",
            "--bootstrap-server",
            cluster.bootstrap,
            "abort",
            "--topic",
            topic,
            "--partition",
            "0",
            "--start-offset",
            str(stable),
        )
    )
    (producer,) = _table(
        _transactions(cluster, "describe-producers", "--topic", topic, "--partition", "0")
    )
    assert producer["CurrentTransactionStartOffset"] == "None"
    stable, high = _stable_end(cluster, topic, 0)
    assert stable == high
    assert (
        _stable_end(cluster, topic, 1)[0] < _stable_end(cluster, topic, 1)[1]
    )  # the other partition waits


def test_errors_are_one_line_and_exit_one(cluster: ClusterHandle) -> None:
    unknown = run_tool(
        "kafka-transactions",
        "--bootstrap-server",
        cluster.bootstrap,
        "describe",
        "--transactional-id",
        "no-such-id",
    )
    assert unknown.returncode == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1
    unidentified = run_tool(
        "kafka-transactions",
        "--bootstrap-server",
        cluster.bootstrap,
        "abort",
        "--topic",
        "t",
        "--partition",
        "0",
    )
    assert unidentified.returncode == 1 and "--start-offset" in unidentified.stderr
    unscoped = run_tool(
        "kafka-transactions", "--bootstrap-server", cluster.bootstrap, "find-hanging"
    )
    assert unscoped.returncode == 1 and "--broker-id" in unscoped.stderr


def test_a_transaction_no_coordinator_knows_is_found_hanging_and_aborted(
    cluster: ClusterHandle,
) -> None:
    """A transactional batch written straight to the leader by a producer id no transaction
    coordinator knows (as after a lost coordinator state): find-hanging lists it, and abort
    --start-offset ends it, so read_committed readers get past it."""
    topic = "tool-hanging"
    with WireClient.to(create_led(cluster, topic)) as client:
        producer_id = new_producer_id(client)
        batch = transactional_batch(producer_id, 0, [b"hanging"])  # timestamps of 1970
        produce_transactional(client, topic, batch)
    args = ["find-hanging", "--topic", topic, "--max-transaction-timeout", "0"]
    (hanging,) = _table(_transactions(cluster, *args))
    assert (hanging["Topic"], hanging["Partition"]) == (topic, "0")
    assert (hanging["ProducerId"], hanging["StartOffset"]) == (str(producer_id), "0")
    assert _stable_end(cluster, topic, 0) == (0, 1)
    _transactions(cluster, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
    assert _table(_transactions(cluster, *args)) == []
    assert _stable_end(cluster, topic, 0) == (2, 2)  # past the record and the abort marker
