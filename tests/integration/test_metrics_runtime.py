"""The metrics beyond the topic meters, read from every broker of a running cluster: each
follower's ConsumerLag settles at 0 once producing stops; the group coordinator counts a live
consumer group as Stable with its committed offsets, then Empty once the consumer leaves; the
transaction coordinator counts its loaded partitions and a transactional id; every Fetch is
also counted as FetchConsumer or FetchFollower, as Kafka's RequestMetrics do; the request
queue, the event loop's idle ratios and the ZooKeeper meters are there and sane."""

from __future__ import annotations

import re
from typing import Any

from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.metrics_scrape import Samples, produce_spread, sample, scrape, total, value
from tests.integration.wire import create_topic

TIMEOUT_S = 120
TOPIC = "runtime-metrics"
PARTITIONS = 3
RECORDS = 300
GROUP = "runtime-metrics-group"
TRANSACTIONAL_ID = "runtime-metrics-txn"
INTERNAL_PARTITIONS = 4
CONSUMER_LAG = "kafka_server_fetcherlagmetrics_consumerlag"
GROUPS = "kafka_coordinator_group_groupmetadatamanager_"
TXN_PARTITIONS = "pykafka_transaction_coordinator_partitions"
TXN_IDS = "pykafka_transaction_coordinator_transactionalids"
NETWORK_IDLE = "kafka_network_socketserver_networkprocessoravgidlepercent"
HANDLER_IDLE_NS = "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count"
HANDLER_IDLE = "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent"
QUEUE_SIZE = "kafka_network_requestchannel_requestqueuesize"
SYNC_CONNECTS = "kafka_server_sessionexpirelistener_zookeepersyncconnects_total"
REQUEST_TIMES = "kafka_network_requestmetrics_totaltimems_count"


def _replicas(bootstrap: str) -> dict[int, tuple[int, list[int]]]:
    """partition -> (leader, replicas) of TOPIC."""
    from confluent_kafka.admin import AdminClient

    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(TOPIC, timeout=30).topics
    return {p.id: (p.leader, list(p.replicas)) for p in topics[TOPIC].partitions.values()}


def _lags(samples: Samples, partition: int) -> dict[str, float]:
    """clientId -> ConsumerLag of TOPIC-partition on one broker."""
    return {
        dict(labels)["clientId"]: sample_value
        for (name, labels), sample_value in samples.items()
        if name == CONSUMER_LAG
        and dict(labels).get("topic") == TOPIC
        and dict(labels).get("partition") == str(partition)
    }


def _follower_lags(cluster: ClusterHandle, replicas: dict[int, tuple[int, list[int]]]) -> str:
    """'' once every follower of every partition reports lag 0 from its leader's fetcher;
    otherwise what is not there yet."""
    scraped = {b: scrape(cluster, b) for b in cluster.broker_ids}
    missing = []
    for partition, (leader, members) in sorted(replicas.items()):
        fetcher = re.compile(rf"ReplicaFetcherThread-\d+-{leader}")
        for follower in members:
            if follower == leader:
                continue
            lags = _lags(scraped[follower], partition)
            if [v for c, v in lags.items() if fetcher.fullmatch(c)] != [0.0]:
                missing.append(f"{TOPIC}-{partition} on broker {follower}: {lags}")
    return "; ".join(missing)


def _consume_and_commit(bootstrap: str) -> Any:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([TOPIC])
    seen: set[int] = set()

    def read_every_partition() -> bool:
        message = consumer.poll(0.5)
        partition = None if message is None or message.error() else message.partition()
        if partition is not None:
            seen.add(partition)
        return len(seen) == PARTITIONS

    wait_until(read_every_partition, TIMEOUT_S, f"records of all {PARTITIONS} partitions")
    consumer.commit(asynchronous=False)
    return consumer


def _commit_a_transaction(bootstrap: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TRANSACTIONAL_ID})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"in a transaction", partition=0)
    producer.commit_transaction(TIMEOUT_S)


def _check_fetches_by_kind(cluster: ClusterHandle) -> None:
    """The consumer's fetches and the followers' were counted apart, and each Fetch once as
    either (one scrape per broker: the three timers move together)."""
    counts = {}
    for broker_id in cluster.broker_ids:
        samples = scrape(cluster, broker_id)
        counts[broker_id] = {
            kind: value(samples, REQUEST_TIMES, request=kind)
            for kind in ("Fetch", "FetchConsumer", "FetchFollower")
        }
    for by_kind in counts.values():
        assert by_kind["Fetch"] == by_kind["FetchConsumer"] + by_kind["FetchFollower"], counts
    assert sum(c["FetchConsumer"] for c in counts.values()) > 0, counts
    assert sum(c["FetchFollower"] for c in counts.values()) > 0, counts


def test_lag_coordinators_and_loop_metrics(make_cluster: Any) -> None:
    cluster: ClusterHandle = make_cluster(
        brokers=3,
        overrides={
            "offsets.topic.num.partitions": str(INTERNAL_PARTITIONS),
            "transaction.state.log.num.partitions": str(INTERNAL_PARTITIONS),
        },
    )
    create_topic(cluster, TOPIC, PARTITIONS, 3)

    produce_spread(cluster.bootstrap, TOPIC, RECORDS, PARTITIONS)
    replicas = _replicas(cluster.bootstrap)
    wait_until(
        lambda: _follower_lags(cluster, replicas) == "",
        TIMEOUT_S,
        lambda: f"every follower's ConsumerLag at 0: {_follower_lags(cluster, replicas)}",
    )

    consumer = _consume_and_commit(cluster.bootstrap)
    try:
        wait_until(
            lambda: (
                total(cluster, GROUPS + "numgroupsstable") == 1
                and total(cluster, GROUPS + "numgroups") == 1
                and total(cluster, GROUPS + "numoffsets") == PARTITIONS
            ),
            TIMEOUT_S,
            lambda: (
                "one Stable group with its offsets: "
                + str({s: total(cluster, GROUPS + s) for s in ("numgroups", "numoffsets")})
            ),
        )
    finally:
        consumer.close()
    _check_fetches_by_kind(cluster)
    wait_until(
        lambda: (
            total(cluster, GROUPS + "numgroupsempty") == 1
            and total(cluster, GROUPS + "numgroupsstable") == 0
        ),
        TIMEOUT_S,
        "the group counted as Empty once its consumer left",
    )

    _commit_a_transaction(cluster.bootstrap)
    wait_until(
        lambda: (
            total(cluster, TXN_IDS) == 1
            and total(cluster, TXN_PARTITIONS, state="loaded") == INTERNAL_PARTITIONS
        ),
        TIMEOUT_S,
        lambda: (
            f"one transactional id in {INTERNAL_PARTITIONS} loaded partitions: "
            f"{total(cluster, TXN_IDS)}, {total(cluster, TXN_PARTITIONS, state='loaded')}"
        ),
    )

    before = {b: scrape(cluster, b) for b in cluster.broker_ids}
    for broker_id, samples in before.items():
        assert 0.0 <= sample(samples, NETWORK_IDLE) <= 1.0, (broker_id, samples)
        assert 0.0 <= sample(samples, HANDLER_IDLE) <= 1.0, (broker_id, samples)
        assert sample(samples, QUEUE_SIZE) >= 0, (broker_id, samples)
        assert sample(samples, SYNC_CONNECTS) >= 1, (broker_id, samples)
    wait_until(
        lambda: all(
            value(scrape(cluster, b), HANDLER_IDLE_NS) > value(before[b], HANDLER_IDLE_NS)
            for b in cluster.broker_ids
        ),
        TIMEOUT_S,
        "every broker's idle nanoseconds growing while it waits",
    )
