"""Transactions end to end with librdkafka (confluent-kafka) against a real 3-broker cluster:
FindCoordinator for the transactional id, InitProducerId, AddPartitionsToTxn, EndTxn and the
coordinator's markers. A read_committed consumer sees committed records only; a
read_uncommitted one sees every record; a second instance with the same transactional id
fences the first and aborts what it left open."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.conftest import ClusterFactory, ClusterHandle, wait_until
from tests.integration.isolated_reads import read_values
from tests.integration.requests import topic_spec
from tests.integration.wire import WireClient, controller_address, create_topics

TIMEOUT_S = 60


def _create(cluster: ClusterHandle, topic: str) -> None:
    with WireClient.to(controller_address(cluster)) as client:
        assert int(create_topics(client, [topic_spec(topic, 3, 3)]).topics[0].error_code) == 0


def _producer(bootstrap: str, transactional_id: str) -> Any:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 60_000,
        }
    )
    producer.init_transactions(TIMEOUT_S)
    return producer


def _send(producer: Any, topic: str, prefix: str, count: int) -> None:
    for i in range(count):
        producer.produce(topic, value=f"{prefix}-{i}".encode(), partition=i % 3)
    producer.flush(TIMEOUT_S)


def _read(bootstrap: str, topic: str, isolation_level: str, expected: int) -> set[bytes]:
    values = read_values(bootstrap, topic, isolation_level, expected)
    assert len(values) == len(set(values)), "a record was read twice"
    return set(values)


def _values(prefix: str, count: int) -> set[bytes]:
    return {f"{prefix}-{i}".encode() for i in range(count)}


def test_read_committed_sees_committed_transactions_only(cluster: ClusterHandle) -> None:
    topic = "txn-e2e"
    _create(cluster, topic)
    producer = _producer(cluster.bootstrap, "txn-e2e-app")
    producer.begin_transaction()
    _send(producer, topic, "committed", 10)
    producer.commit_transaction(TIMEOUT_S)
    producer.begin_transaction()
    _send(producer, topic, "aborted", 5)
    producer.abort_transaction(TIMEOUT_S)
    producer.begin_transaction()
    _send(producer, topic, "committed-later", 4)
    producer.commit_transaction(TIMEOUT_S)
    committed = _values("committed", 10) | _values("committed-later", 4)
    assert _read(cluster.bootstrap, topic, "read_committed", 14) == committed
    assert _read(cluster.bootstrap, topic, "read_uncommitted", 19) == committed | _values(
        "aborted", 5
    )


def test_a_new_instance_fences_the_old_one_and_aborts_its_open_transaction(
    cluster: ClusterHandle,
) -> None:
    from confluent_kafka import KafkaException

    topic = "txn-fence"
    _create(cluster, topic)
    first = _producer(cluster.bootstrap, "txn-fence-app")
    first.begin_transaction()
    _send(first, topic, "left-open", 6)
    second = _producer(cluster.bootstrap, "txn-fence-app")  # aborts the open transaction
    second.begin_transaction()
    _send(second, topic, "second", 3)
    second.commit_transaction(TIMEOUT_S)
    with pytest.raises(KafkaException) as fenced:
        first.commit_transaction(TIMEOUT_S)
    assert fenced.value.args[0].fatal() or not fenced.value.args[0].retriable()
    assert _read(cluster.bootstrap, topic, "read_committed", 3) == _values("second", 3)


@pytest.fixture(scope="module")
def quick_timers(make_cluster_module: ClusterFactory) -> ClusterHandle:
    """One cluster for both tests of the coordinator's timers (each has its own topic and
    transactional ids): timed-out transactions are aborted and expired ids removed within
    0.2 s of being due, and an idle id expires after 3 s."""
    return make_cluster_module(
        brokers=3,
        overrides={
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
            "transactional.id.expiration.ms": "3000",
            "transaction.remove.expired.transaction.cleanup.interval.ms": "200",
        },
    )


def test_a_transaction_left_open_past_its_timeout_is_aborted(quick_timers: ClusterHandle) -> None:
    from confluent_kafka import Producer

    cluster = quick_timers
    topic = "txn-timeout"
    _create(cluster, topic)
    abandoned = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "transactional.id": "txn-timeout-app",
            "transaction.timeout.ms": 2_000,
        }
    )
    abandoned.init_transactions(TIMEOUT_S)
    abandoned.begin_transaction()
    _send(abandoned, topic, "abandoned", 3)  # one record per partition, never committed
    plain = Producer({"bootstrap.servers": cluster.bootstrap})
    _send(plain, topic, "after", 3)
    # Visible to read_committed readers only once the coordinator aborted the transaction.
    assert _read(cluster.bootstrap, topic, "read_committed", 3) == _values("after", 3)


FIND_COORDINATOR, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 10, 65, 66
TRANSACTION_KEY_TYPE = 1


def _coordinator(cluster: ClusterHandle, transactional_id: str) -> str:
    with WireClient.to(controller_address(cluster)) as client:
        found = client.request(
            FIND_COORDINATOR, 3, {"key": transactional_id, "key_type": TRANSACTION_KEY_TYPE}
        )
    assert int(found.error_code) == 0
    return f"{found.host}:{found.port}"


def test_describe_and_list_transactions(cluster: ClusterHandle) -> None:
    topic = "txn-describe"
    _create(cluster, topic)
    producer = _producer(cluster.bootstrap, "txn-describe-app")
    producer.begin_transaction()
    _send(producer, topic, "open", 3)
    with WireClient.to(_coordinator(cluster, "txn-describe-app")) as client:
        described = client.request(
            DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["txn-describe-app", "nobody"]}
        ).transaction_states
        listed = client.request(
            LIST_TRANSACTIONS,
            1,
            {
                "state_filters": ["Ongoing", "Nonsense"],
                "producer_id_filters": [],
                "duration_filter": -1,
            },
        )
    state, unknown = described
    assert (int(state.error_code), state.transaction_state) == (0, "Ongoing")
    assert [(t.topic, sorted(t.partitions)) for t in state.topics] == [(topic, [0, 1, 2])]
    assert int(unknown.error_code) == 105  # TRANSACTIONAL_ID_NOT_FOUND
    assert list(listed.unknown_state_filters) == ["Nonsense"]
    ongoing = [(t.transactional_id, t.transaction_state) for t in listed.transaction_states]
    assert ("txn-describe-app", "Ongoing") in ongoing
    assert all(s == "Ongoing" for _, s in ongoing)
    producer.commit_transaction(TIMEOUT_S)


def _described(cluster: ClusterHandle, transactional_id: str) -> Any:
    with WireClient.to(_coordinator(cluster, transactional_id)) as client:
        request = {"transactional_ids": [transactional_id]}
        (state,) = client.request(DESCRIBE_TRANSACTIONS, 0, request).transaction_states
    return state


def test_an_idle_transactional_id_expires_but_an_open_one_stays(
    quick_timers: ClusterHandle,
) -> None:
    cluster = quick_timers
    topic = "txn-expiry"
    _create(cluster, topic)
    idle = _producer(cluster.bootstrap, "txn-expiry-idle")
    idle.begin_transaction()
    _send(idle, topic, "idle", 3)
    idle.commit_transaction(TIMEOUT_S)
    first_producer_id = int(_described(cluster, "txn-expiry-idle").producer_id)
    held = _producer(cluster.bootstrap, "txn-expiry-held")
    held.begin_transaction()
    _send(held, topic, "held", 3)
    wait_until(
        lambda: int(_described(cluster, "txn-expiry-idle").error_code) == 105,
        TIMEOUT_S,
        "the idle transactional id removed (TRANSACTIONAL_ID_NOT_FOUND)",
    )
    assert _described(cluster, "txn-expiry-held").transaction_state == "Ongoing"
    again = _producer(cluster.bootstrap, "txn-expiry-idle")  # starts afresh
    again.begin_transaction()
    _send(again, topic, "again", 3)
    assert int(_described(cluster, "txn-expiry-idle").producer_id) != first_producer_id
    again.commit_transaction(TIMEOUT_S)
    held.commit_transaction(TIMEOUT_S)
    expected = _values("idle", 3) | _values("held", 3) | _values("again", 3)
    assert _read(cluster.bootstrap, topic, "read_committed", 9) == expected


def test_consume_transform_produce_commits_offsets_in_the_transaction(
    cluster: ClusterHandle,
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    source, sink, group = "ctp-in", "ctp-out", "ctp-app"
    _create(cluster, source)
    _create(cluster, sink)
    _send(Producer({"bootstrap.servers": cluster.bootstrap}), source, "in", 30)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    producer = _producer(cluster.bootstrap, "ctp-app-txn")
    copied: list[bytes] = []
    try:
        consumer.subscribe([source])
        aborted_once = False

        def copy_some() -> bool:
            nonlocal aborted_once
            messages = [m for m in consumer.consume(10, 0.5) if m.error() is None]
            if not messages:
                return len(copied) >= 30
            producer.begin_transaction()
            for message in messages:
                producer.produce(sink, value=b"out-" + message.value(), partition=0)
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()),
                consumer.consumer_group_metadata(),
                TIMEOUT_S,
            )
            if not aborted_once:
                # The first batch is aborted: its output vanishes and its offsets are not
                # committed, so it is read and copied again.
                aborted_once = True
                producer.abort_transaction(TIMEOUT_S)
                for partition in consumer.assignment():
                    committed = consumer.committed([partition], TIMEOUT_S)[0].offset
                    consumer.seek(TopicPartition(source, partition.partition, max(committed, 0)))
                return False
            producer.commit_transaction(TIMEOUT_S)
            copied.extend(m.value() for m in messages)
            return len(copied) >= 30

        wait_until(copy_some, TIMEOUT_S, "30 records copied in transactions")
        committed = consumer.committed([TopicPartition(source, p) for p in range(3)], TIMEOUT_S)
        assert sum(tp.offset for tp in committed) == 30
    finally:
        consumer.close()
    expected = {b"out-" + value for value in _values("in", 30)}
    assert _read(cluster.bootstrap, sink, "read_committed", 30) == expected


def test_aiokafkas_transactional_producer(cluster: ClusterHandle) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer

    topic = "txn-aiokafka"
    _create(cluster, topic)

    async def produce() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap, transactional_id="txn-aiokafka-app"
        )
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(6):
                    await producer.send(topic, f"committed-{i}".encode(), partition=i % 3)
            await producer.begin_transaction()
            for i in range(4):
                await producer.send(topic, f"aborted-{i}".encode(), partition=i % 3)
            await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(asyncio.wait_for(produce(), TIMEOUT_S))
    committed = _values("committed", 6)
    assert _read(cluster.bootstrap, topic, "read_committed", 6) == committed
    assert _read(cluster.bootstrap, topic, "read_uncommitted", 10) == committed | _values(
        "aborted", 4
    )


def test_aiokafka_a_new_instance_fences_the_old_one(cluster: ClusterHandle) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import ProducerFenced

    topic = "txn-aiokafka-fence"
    _create(cluster, topic)

    def producer() -> AIOKafkaProducer:
        return AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap, transactional_id="txn-aiokafka-fence-app"
        )

    async def produce() -> None:
        first, second = producer(), producer()
        await first.start()
        try:
            await first.begin_transaction()
            for i in range(4):
                await first.send_and_wait(topic, f"left-open-{i}".encode(), partition=i % 3)
            await second.start()  # its InitProducerId aborts the first's transaction
            async with second.transaction():
                for i in range(5):
                    await second.send(topic, f"second-{i}".encode(), partition=i % 3)
            with pytest.raises(ProducerFenced):
                await first.commit_transaction()
        finally:
            await asyncio.gather(first.stop(), second.stop(), return_exceptions=True)

    asyncio.run(asyncio.wait_for(produce(), TIMEOUT_S))
    assert _read(cluster.bootstrap, topic, "read_committed", 5) == _values("second", 5)
    assert _read(cluster.bootstrap, topic, "read_uncommitted", 9) == _values("second", 5) | _values(
        "left-open", 4
    )
