"""The metrics endpoint's text: Prometheus' own parser reads it, and the names and labels are
those the JMX exporter's example Kafka rules give Kafka's MBeans."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from broker.metrics.prometheus import (
    BrokerCounters,
    PartitionSample,
    Snapshot,
    render,
    timed_registry,
)
from broker.metrics.sources import CoordinatorCounts, FetcherLag, LoopIdle, LoopIdleMeter
from controller.stats import ControllerStats


def _snapshot() -> Snapshot:
    counters = BrokerCounters()
    counters.produced("orders", 10, 1_000)
    counters.produced("orders", 5, 500)
    counters.produced("audit", 1, 100)
    counters.fetched("orders", 700, by_follower=False)
    counters.fetched("orders", 1_500, by_follower=True)
    counters.request_done("Produce", 9, 2.0)
    counters.request_done("Produce", 9, 4.0)
    counters.request_done("Fetch", 12, 500.0)
    counters.zookeeper_expires = 1
    counters.zookeeper_disconnects = 2
    counters.zookeeper_sync_connects = 3
    stats = ControllerStats()
    stats.record_event("BrokerChange", 42.0)
    stats.record_event("Reconcile", 1.0)  # not a timed controller state
    partitions = [
        PartitionSample("orders", 0, True, True, 15, 1_500),
        PartitionSample("orders", 1, False, False, 0, 0),
        PartitionSample("audit", 0, True, False, 1, 100),
    ]
    lags: list[FetcherLag] = [("ReplicaFetcherThread-0-2", ("orders", 1), 7)]
    coordinators = CoordinatorCounts(
        groups_by_state=Counter({"Stable": 2, "Empty": 1}),
        offsets=9,
        txn_partitions_loaded=2,
        txn_partitions_loading=1,
        transactional_ids=4,
        markers_awaiting_leader=1,
    )
    idle = LoopIdle(recent_ratio=0.25, idle_ns=5_000_000_000, mean_ratio=0.5)
    return Snapshot(
        counters,
        partitions,
        True,
        3,
        1,
        1,
        stats.timers,
        0,
        True,
        2,
        1,
        lags,
        coordinators,
        4,
        idle,
        3,
    )


def _samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = render(_snapshot()).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_topic_meters_per_topic_and_for_all_topics() -> None:
    samples = _samples()
    messages = "kafka_server_brokertopicmetrics_messagesin_total"
    assert samples[(messages, (("topic", "orders"),))] == 15
    assert samples[(messages, (("topic", "audit"),))] == 1
    assert samples[(messages, ())] == 16
    assert samples[("kafka_server_brokertopicmetrics_bytesin_total", ())] == 1_600
    assert (
        samples[("kafka_server_brokertopicmetrics_bytesout_total", (("topic", "orders"),))] == 700
    )
    replication = "kafka_server_brokertopicmetrics_replicationbytesout_total"
    assert samples[(replication, ())] == 1_500


def test_request_counts_and_time_quantiles() -> None:
    samples = _samples()
    produce = (("request", "Produce"), ("version", "9"))
    assert samples[("kafka_network_requestmetrics_requests_total", produce)] == 2
    total_time = "kafka_network_requestmetrics_totaltimems"
    assert samples[(total_time, (("quantile", "0.99"), ("request", "Fetch")))] == 500.0
    assert samples[(total_time + "_count", (("request", "Produce"),))] == 2


def test_replica_log_and_controller_gauges() -> None:
    samples = _samples()
    assert samples[("kafka_server_replicamanager_partitioncount", ())] == 3
    assert samples[("kafka_server_replicamanager_leadercount", ())] == 2
    assert samples[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 1
    assert samples[("kafka_server_replicamanager_isrshrinks_total", ())] == 2
    assert samples[("kafka_server_replicamanager_isrexpands_total", ())] == 1
    assert samples[("kafka_server_replicamanager_failedisrupdates_total", ())] == 3
    end = "kafka_log_log_logendoffset"
    assert samples[(end, (("partition", "0"), ("topic", "orders")))] == 15
    assert samples[("kafka_controller_kafkacontroller_activecontrollercount", ())] == 1
    assert samples[("kafka_controller_kafkacontroller_offlinepartitionscount", ())] == 1
    election = "kafka_controller_controllerstats_leaderelectionrateandtimems"
    assert samples[(election + "_count", ())] == 1
    assert samples[(election, (("quantile", "0.50"),))] == 42.0


def test_every_api_is_timed_under_its_name() -> None:
    from broker.handlers import build_registry
    from broker.protocol.registry import Registry

    registry: Registry = build_registry()
    timed = timed_registry(registry, BrokerCounters())
    assert [spec.name for spec in timed.all()] == [spec.name for spec in registry.all()]
    assert all(
        spec.handler is not original.handler
        for spec, original in zip(timed.all(), registry.all(), strict=True)
    )


def test_fetcher_lag_with_the_exporters_labels() -> None:
    samples = _samples()
    labels = (("clientId", "ReplicaFetcherThread-0-2"), ("partition", "1"), ("topic", "orders"))
    assert samples[("kafka_server_fetcherlagmetrics_consumerlag", labels)] == 7


def test_group_and_transaction_coordinator_counts() -> None:
    samples = _samples()
    group = "kafka_coordinator_group_groupmetadatamanager_"
    assert samples[(group + "numgroups", ())] == 3
    assert samples[(group + "numgroupsstable", ())] == 2
    assert samples[(group + "numgroupsempty", ())] == 1
    assert samples[(group + "numgroupspreparingrebalance", ())] == 0
    assert samples[(group + "numoffsets", ())] == 9
    markers = "kafka_coordinator_transaction_transactionmarkerchannelmanager_"
    assert samples[(markers + "unknowndestinationqueuesize", ())] == 1
    assert samples[(markers + "logappendretryqueuesize", ())] == 0
    partitions = "pykafka_transaction_coordinator_partitions"
    assert samples[(partitions, (("state", "loaded"),))] == 2
    assert samples[(partitions, (("state", "loading"),))] == 1
    assert samples[("pykafka_transaction_coordinator_transactionalids", ())] == 4


def test_zookeeper_session_meters() -> None:
    samples = _samples()
    prefix = "kafka_server_sessionexpirelistener_"
    assert samples[(prefix + "zookeeperexpires_total", ())] == 1
    assert samples[(prefix + "zookeeperdisconnects_total", ())] == 2
    assert samples[(prefix + "zookeepersyncconnects_total", ())] == 3
    assert samples[(prefix + "sessionstate_connected", ())] == 1


def test_request_queue_and_idle_ratios() -> None:
    samples = _samples()
    assert samples[("kafka_network_requestchannel_requestqueuesize", ())] == 4
    idle = "kafka_network_socketserver_networkprocessoravgidlepercent"
    assert samples[(idle, ())] == 0.25
    handler = "kafka_server_kafkarequesthandlerpool_requesthandleravgidle"
    assert samples[(handler + "percent_count", ())] == 5_000_000_000
    assert samples[(handler + "_percent", ())] == 0.5


def test_loop_idle_meter_sees_a_busy_loop_and_an_idle_one() -> None:
    async def measure() -> tuple[LoopIdle, LoopIdle]:
        meter = LoopIdleMeter()
        meter.start()
        try:
            deadline = time.monotonic() + 0.3
            while time.monotonic() < deadline:  # the loop's thread on the CPU
                sum(range(1000))
            busy = meter.reading()
            await asyncio.sleep(0.6)  # the loop waiting
            return busy, meter.reading()
        finally:
            meter.stop()

    busy, later = asyncio.run(measure())
    # CPU time is counted in scheduler ticks: bounds, not exact values.
    assert busy.recent_ratio < 0.5, busy
    assert later.recent_ratio > busy.recent_ratio, (busy, later)
    assert later.idle_ns > busy.idle_ns
    assert 0.0 <= later.mean_ratio <= 1.0


def test_per_partition_families_are_written_as_prometheus_client_writes_them() -> None:
    """The log and fetcher-lag families skip prometheus_client (a sample per partition), and
    their text is still what it would have written, large values included."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import GaugeMetricFamily

    snapshot = _snapshot()
    snapshot.partitions.append(PartitionSample("big", 3, True, False, 12_345_678, 9_876_543_210))
    text = render(snapshot).decode()

    class Expected:
        def collect(self) -> list[GaugeMetricFamily]:
            end = GaugeMetricFamily(
                "kafka_log_log_logendoffset", "Log end offset", labels=["topic", "partition"]
            )
            size = GaugeMetricFamily(
                "kafka_log_log_size", "Bytes in the log's segments", labels=["topic", "partition"]
            )
            for sample in snapshot.partitions:
                end.add_metric([sample.topic, str(sample.partition)], sample.log_end_offset)
                size.add_metric([sample.topic, str(sample.partition)], sample.size_bytes)
            return [end, size]

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Expected())
    expected = generate_latest(registry).decode()
    assert expected in text
    assert 'kafka_log_log_logendoffset{partition="3",topic="big"} 1.2345678e+07' in text


def test_a_fetch_is_also_counted_as_fetchconsumer_or_fetchfollower() -> None:
    from broker.handlers import build_registry
    from broker.protocol.registry import Registry

    counters = BrokerCounters()
    registry: Registry = build_registry()
    spec = next(spec for spec in registry.all() if spec.name == "Fetch")

    async def answered(_context: object, _request: object) -> str:
        return "answered"

    timed = timed_registry(Registry([replace(spec, handler=answered)]), counters).all()[0]

    async def fetch(api_version: int, request: object) -> object:
        context: Any = SimpleNamespace(api_version=api_version)
        return await timed.handler(context, request)

    for replica_id in (-1, 2, -1):
        assert asyncio.run(fetch(12, SimpleNamespace(replica_id=replica_id))) == "answered"
    # v15+ names the follower in replica_state.
    asyncio.run(fetch(15, SimpleNamespace(replica_state=SimpleNamespace(replica_id=3))))
    assert counters.requests == {
        ("Fetch", 12): 3,
        ("FetchConsumer", 12): 2,
        ("FetchFollower", 12): 1,
        ("Fetch", 15): 1,
        ("FetchFollower", 15): 1,
    }
    assert sorted(counters.request_times) == ["Fetch", "FetchConsumer", "FetchFollower"]
