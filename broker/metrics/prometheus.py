"""Prometheus metrics, named as the Prometheus JMX exporter's example Kafka rules name Kafka's
own MBeans (lower case, `PerSec` meters as `_total` counters, timers as quantiles), so that
dashboards and alerts made for Kafka work unchanged.

Served over HTTP at `metrics.prometheus.listener` (host:port; unset: no endpoint), path
`/metrics`. The hot path only increments integers (per request and partition, never per
record); everything else is read when Prometheus scrapes. A scrape first copies what it
reports on the event loop (one pass over the partitions), then renders the text on a thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.samples import Sample

from broker.handlers.fetch import replica_id_of
from broker.metrics.sources import (
    CoordinatorCounts,
    FetcherLag,
    LoopIdle,
    LoopIdleMeter,
    coordinator_counts,
    coordinator_metrics,
    fetcher_lag_lines,
    fetcher_lags,
    float_text,
    gauge_header,
    loop_metrics,
    request_queue_size,
    zookeeper_metrics,
)
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import ApiSpec, Registry
from broker.quotas.manager import now_ms
from controller.stats import Timer

if TYPE_CHECKING:
    from broker.network.context import RequestContext
    from broker.services import MetricsServices

log = logging.getLogger(__name__)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MAX_REQUEST_HEAD_BYTES = 8192
HTTP_TIMEOUT_S = 10.0
# The exporter's labels for a Yammer timer's 50thPercentile ... 999thPercentile.
QUANTILE_LABELS = {
    0.5: "0.50",
    0.75: "0.75",
    0.95: "0.95",
    0.98: "0.98",
    0.99: "0.99",
    0.999: "0.999",
}


@dataclass
class TopicCounters:
    messages_in: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    replication_bytes_out: int = 0


@dataclass
class BrokerCounters:
    """Everything the broker counts as it works; read at scrape time."""

    topics: dict[str, TopicCounters] = field(default_factory=dict)
    requests: dict[tuple[str, int], int] = field(default_factory=dict)
    request_times: dict[str, Timer] = field(default_factory=dict)
    zookeeper_expires: int = 0
    zookeeper_disconnects: int = 0
    zookeeper_sync_connects: int = 0
    # Self-fencing from ZooKeeper (broker.cluster.session_fence): times fenced, and now.
    zookeeper_session_fences: int = 0
    zookeeper_fenced: bool = False
    # Requests inside a handler, and acks=all produces among them waiting for replication.
    requests_in_flight: int = 0
    delayed_produces: int = 0

    def produced(self, topic: str, records: int, size_bytes: int) -> None:
        counters = self._topic(topic)
        counters.messages_in += records
        counters.bytes_in += size_bytes

    def fetched(self, topic: str, size_bytes: int, by_follower: bool) -> None:
        counters = self._topic(topic)
        if by_follower:
            counters.replication_bytes_out += size_bytes
        else:
            counters.bytes_out += size_bytes

    def request_done(self, name: str, version: int, elapsed_ms: float) -> None:
        key = (name, version)
        self.requests[key] = self.requests.get(key, 0) + 1
        timer = self.request_times.get(name)
        if timer is None:
            timer = self.request_times[name] = Timer()
        timer.record(elapsed_ms)

    def _topic(self, topic: str) -> TopicCounters:
        counters = self.topics.get(topic)
        if counters is None:
            counters = self.topics[topic] = TopicCounters()
        return counters


def timed_registry(registry: Registry, counters: BrokerCounters) -> Registry:
    """The same APIs, each handler timed into `counters` (Kafka's RequestMetrics; the time
    is the handler's, from decoded request to response, see DEVIATIONS.md)."""
    return Registry([replace(spec, handler=_timed(spec, counters)) for spec in registry.all()])


def _timed(spec: ApiSpec, counters: BrokerCounters) -> Callable[..., Awaitable[Any]]:
    handler = spec.handler
    name = spec.name
    is_fetch = spec.api_key == ApiKey.FETCH

    async def timed(context: RequestContext, request: Any) -> Any:
        started = time.perf_counter()
        counters.requests_in_flight += 1
        try:
            return await handler(context, request)
        finally:
            counters.requests_in_flight -= 1
            elapsed_ms = (time.perf_counter() - started) * 1000
            counters.request_done(name, context.api_version, elapsed_ms)
            if is_fetch:
                counters.request_done(fetch_metric_name(request), context.api_version, elapsed_ms)

    return timed


def fetch_metric_name(request: Any) -> str:
    """Kafka also counts and times a Fetch as FetchFollower or FetchConsumer (RequestMetrics;
    its dashboards chart those two)."""
    return "FetchFollower" if replica_id_of(request) >= 0 else "FetchConsumer"


class PartitionSample(NamedTuple):
    """One replica, copied on the loop at a scrape (a tuple: thousands per scrape)."""

    topic: str
    partition: int
    is_leader: bool
    under_replicated: bool
    log_end_offset: int
    size_bytes: int


@dataclass
class Snapshot:
    """What one scrape reports, copied on the event loop."""

    counters: BrokerCounters
    partitions: list[PartitionSample]
    active_controller: bool
    global_partitions: int
    offline_partitions: int
    preferred_imbalance: int
    controller_timers: dict[str, Timer]
    unclean_elections: int
    zookeeper_connected: bool
    isr_shrinks: int
    isr_expands: int
    fetcher_lags: list[FetcherLag] = field(default_factory=list)
    coordinators: CoordinatorCounts = field(default_factory=CoordinatorCounts)
    request_queue_size: int = 0
    # None where no meter runs (a snapshot taken without the endpoint).
    loop_idle: LoopIdle | None = None
    failed_isr_updates: int = 0
    # (resource, user, client id, byte rate, average throttle time) per client quota sensor.
    quota_samples: list[tuple[str, str, str, float, float]] = field(default_factory=list)


def _quota_samples(services: MetricsServices) -> list[tuple[str, str, str, float, float]]:
    now = now_ms()
    return [
        (manager.quota_type.value, user, client_id, byte_rate, throttle_time)
        for manager in (services.quotas.produce, services.quotas.fetch)
        for user, client_id, byte_rate, throttle_time in manager.snapshot(now)
    ]


def take_snapshot(services: MetricsServices, loop_idle: LoopIdle | None = None) -> Snapshot:
    counters = services.metrics
    copied = BrokerCounters(
        topics={t: replace(c) for t, c in counters.topics.items()},
        requests=dict(counters.requests),
        request_times={n: _copy(t) for n, t in counters.request_times.items()},
        zookeeper_expires=counters.zookeeper_expires,
        zookeeper_disconnects=counters.zookeeper_disconnects,
        zookeeper_sync_connects=counters.zookeeper_sync_connects,
        zookeeper_session_fences=counters.zookeeper_session_fences,
        zookeeper_fenced=counters.zookeeper_fenced,
    )
    isr_writer = services.replica_manager.isr_writer
    partitions = [
        PartitionSample(
            p.topic,
            p.partition,
            p.is_leader,
            p.is_leader and len(p.isr) < len(p.replicas),
            p.log.log_end_offset,
            p.log.size_bytes,
        )
        for p in services.replica_manager.all_partitions()
    ]
    controller = services.controller
    context = controller.context
    offline = imbalance = total = 0
    if context is not None:
        for (topic, index), (state, _) in context.partition_states.items():
            total += 1
            if state.leader < 0 or state.leader not in context.live_brokers:
                offline += 1
            replicas = context.assignments.get(topic)
            preferred = replicas.partitions.get(index) if replicas is not None else None
            if preferred and state.leader != preferred[0]:
                imbalance += 1
    stats = controller.stats
    return Snapshot(
        copied,
        partitions,
        context is not None,
        total,
        offline,
        imbalance,
        {n: _copy(t) for n, t in stats.timers.items()},
        stats.unclean_leader_elections,
        services.zk_client.connected,
        isr_writer.shrinks if isr_writer is not None else 0,
        isr_writer.expands if isr_writer is not None else 0,
        fetcher_lags(services),
        coordinator_counts(services),
        request_queue_size(services),
        loop_idle,
        isr_writer.failed if isr_writer is not None else 0,
        _quota_samples(services),
    )


def _copy(timer: Timer) -> Timer:
    return Timer(timer.count, timer.samples_ms.copy())


class _SnapshotCollector:
    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        snapshot = self._snapshot
        yield from _topic_metrics(snapshot.counters)
        yield from _request_metrics(snapshot.counters)
        yield from _replica_metrics(snapshot)
        yield from _controller_metrics(snapshot)
        yield from coordinator_metrics(snapshot.coordinators)
        yield from loop_metrics(snapshot.loop_idle, snapshot.request_queue_size)
        counters = snapshot.counters
        yield from zookeeper_metrics(
            counters.zookeeper_expires,
            counters.zookeeper_disconnects,
            counters.zookeeper_sync_connects,
            snapshot.zookeeper_connected,
            counters.zookeeper_session_fences,
            counters.zookeeper_fenced,
        )
        yield from _quota_metrics(snapshot.quota_samples)


def _quota_metrics(samples: list[tuple[str, str, str, float, float]]) -> Iterator[Metric]:
    """Kafka's kafka.server:type=Produce|Fetch,user=U,client-id=C byte-rate and
    throttle-time, as the JMX exporter's quota rule names them."""
    labels = ["resource", "user", "clientId"]
    byte_rate = GaugeMetricFamily(
        "kafka_server_quota_byte_rate", "Tracking byte-rate per user/client-id", labels=labels
    )
    throttle_time = GaugeMetricFamily(
        "kafka_server_quota_throttle_time",
        "Tracking average throttle-time per user/client-id",
        labels=labels,
    )
    for resource, user, client_id, rate, throttle in samples:
        byte_rate.add_metric([resource, user, client_id], rate)
        throttle_time.add_metric([resource, user, client_id], throttle)
    yield byte_rate
    yield throttle_time


def render(snapshot: Snapshot) -> bytes:
    """The exposition text. The families with a sample per partition are written here
    directly, labels in name order as prometheus_client writes them (it spends ~20 us a
    sample: a broker hosting 5,000 replicas has ~13,000 such samples), the others through
    prometheus_client."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_SnapshotCollector(snapshot))
    per_partition = [*_log_lines(snapshot.partitions), *fetcher_lag_lines(snapshot.fetcher_lags)]
    return generate_latest(registry) + "".join(per_partition).encode()


def _log_lines(partitions: list[PartitionSample]) -> Iterator[str]:
    yield from gauge_header("kafka_log_log_logendoffset", "Log end offset")
    for sample in partitions:
        yield (
            f'kafka_log_log_logendoffset{{partition="{sample.partition}",'
            f'topic="{sample.topic}"}} {float_text(sample.log_end_offset)}\n'
        )
    yield from gauge_header("kafka_log_log_size", "Bytes in the log's segments")
    for sample in partitions:
        yield (
            f'kafka_log_log_size{{partition="{sample.partition}",'
            f'topic="{sample.topic}"}} {float_text(sample.size_bytes)}\n'
        )


_TOPIC_METERS = (
    ("messagesin", "messages_in", "Records appended as leader"),
    ("bytesin", "bytes_in", "Bytes of record batches appended as leader"),
    ("bytesout", "bytes_out", "Bytes of records sent to consumers"),
    ("replicationbytesout", "replication_bytes_out", "Bytes of records sent to followers"),
)


def _topic_metrics(counters: BrokerCounters) -> Iterator[Metric]:
    """Per topic (label `topic`) and for all topics (no label), as the exporter gives them."""
    for meter, attribute, documentation in _TOPIC_METERS:
        family = CounterMetricFamily(
            f"kafka_server_brokertopicmetrics_{meter}", documentation, labels=["topic"]
        )
        total = 0
        for topic, topic_counters in sorted(counters.topics.items()):
            value = getattr(topic_counters, attribute)
            total += value
            family.add_metric([topic], value)
        family.samples.append(Sample(family.name + "_total", {}, total))
        yield family


def _request_metrics(counters: BrokerCounters) -> Iterator[Metric]:
    requests = CounterMetricFamily(
        "kafka_network_requestmetrics_requests",
        "Requests handled",
        labels=["request", "version"],
    )
    for (name, version), count in sorted(counters.requests.items()):
        requests.add_metric([name, str(version)], count)
    yield requests
    yield _timer_family(
        "kafka_network_requestmetrics_totaltimems",
        "Request handling time in milliseconds",
        {name: timer for name, timer in sorted(counters.request_times.items())},
        label="request",
    )


def _replica_metrics(snapshot: Snapshot) -> Iterator[Metric]:
    partitions = snapshot.partitions
    yield _gauge(
        "kafka_server_replicamanager_partitioncount",
        "Partitions with a replica on this broker",
        len(partitions),
    )
    yield _gauge(
        "kafka_server_replicamanager_leadercount",
        "Partitions this broker leads",
        sum(1 for p in partitions if p.is_leader),
    )
    yield _gauge(
        "kafka_server_replicamanager_underreplicatedpartitions",
        "Partitions led here whose ISR is smaller than their replica list",
        sum(1 for p in partitions if p.under_replicated),
    )
    yield _counter(
        "kafka_server_replicamanager_isrshrinks",
        "ISR shrinks written by this broker's leaders",
        snapshot.isr_shrinks,
    )
    yield _counter(
        "kafka_server_replicamanager_isrexpands",
        "ISR expansions written by this broker's leaders",
        snapshot.isr_expands,
    )
    yield _counter(
        "kafka_server_replicamanager_failedisrupdates",
        "ISR changes of this broker's leaders that the controller (or ZooKeeper) refused",
        snapshot.failed_isr_updates,
    )


def _controller_metrics(snapshot: Snapshot) -> Iterator[Metric]:
    active = snapshot.active_controller
    yield _gauge(
        "kafka_controller_kafkacontroller_activecontrollercount",
        "1 on the active controller",
        1 if active else 0,
    )
    yield _gauge(
        "kafka_controller_kafkacontroller_globalpartitioncount",
        "Partitions in the cluster (active controller only)",
        snapshot.global_partitions,
    )
    yield _gauge(
        "kafka_controller_kafkacontroller_offlinepartitionscount",
        "Partitions without a live leader (active controller only)",
        snapshot.offline_partitions,
    )
    yield _gauge(
        "kafka_controller_kafkacontroller_preferredreplicaimbalancecount",
        "Partitions not led by their preferred replica (active controller only)",
        snapshot.preferred_imbalance,
    )
    for name, timer in sorted(snapshot.controller_timers.items()):
        yield _timer_family(
            f"kafka_controller_controllerstats_{name.lower()}",
            f"Controller {name} in milliseconds",
            {"": timer},
            label=None,
        )
    if "LeaderElectionRateAndTimeMs" not in snapshot.controller_timers:
        yield _timer_family(
            "kafka_controller_controllerstats_leaderelectionrateandtimems",
            "Controller LeaderElectionRateAndTimeMs in milliseconds",
            {"": Timer()},
            label=None,
        )
    yield _counter(
        "kafka_controller_controllerstats_uncleanleaderelections",
        "Unclean leader elections",
        snapshot.unclean_elections,
    )


def _timer_family(
    name: str, documentation: str, timers: dict[str, Timer], label: str | None
) -> Metric:
    """Quantiles and a `_count`, as the exporter turns a Yammer timer's percentiles."""
    family = Metric(name, documentation, "summary")
    for key, timer in timers.items():
        labels = {} if label is None else {label: key}
        for quantile, value in timer.quantiles():
            quantile_label = QUANTILE_LABELS[quantile]
            family.samples.append(Sample(name, {**labels, "quantile": quantile_label}, value))
        family.samples.append(Sample(name + "_count", labels, timer.count))
    return family


def _gauge(name: str, documentation: str, value: float) -> Metric:
    return GaugeMetricFamily(name, documentation, value=value)


def _counter(name: str, documentation: str, value: float) -> Metric:
    return CounterMetricFamily(name, documentation, value=value)


class MetricsEndpoint:
    """GET /metrics on `metrics.prometheus.listener`: a minimal HTTP/1.0 server on the loop
    (each scrape is one request; the connection closes after the answer)."""

    def __init__(self, services: MetricsServices, host: str, port: int) -> None:
        self._services = services
        self._host = host
        self._port = port
        self._asyncio_server: asyncio.Server | None = None
        self._loop_idle = LoopIdleMeter()

    async def start(self) -> None:
        self._loop_idle.start()
        self._asyncio_server = await asyncio.start_server(
            self._serve, self._host or None, self._port, reuse_address=True
        )
        log.info("serving Prometheus metrics on http://%s:%d/metrics", self._host, self._port)

    async def stop(self) -> None:
        self._loop_idle.stop()
        if self._asyncio_server is not None:
            self._asyncio_server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(HTTP_TIMEOUT_S):
                head = await reader.readuntil(b"\r\n\r\n")
            if len(head) > MAX_REQUEST_HEAD_BYTES:
                return
            parts = head.split(b" ", 2)
            if len(parts) < 2 or parts[0] != b"GET" or parts[1].split(b"?")[0] != b"/metrics":
                writer.write(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            snapshot = take_snapshot(self._services, self._loop_idle.reading())
            body = await asyncio.to_thread(render, snapshot)
            header = (
                f"HTTP/1.0 200 OK\r\nContent-Type: {CONTENT_TYPE}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            writer.write(header.encode() + body)
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass
        finally:
            writer.close()


def parse_listener(text: str) -> tuple[str, int]:
    """`host:port` of metrics.prometheus.listener."""
    host, separator, port = text.strip().rpartition(":")
    if not separator or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not host:port")
    return host, int(port)
