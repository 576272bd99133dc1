"""What the newer gauges read when Prometheus scrapes: the event loop's idle time, the replica
fetchers' lag, the group and transaction coordinators, the request "queue". Nothing here runs
on the hot path; `broker.metrics.prometheus` copies these on the event loop and renders them.

One asyncio event loop does the work Kafka splits between network processor threads and
request handler threads, so both of Kafka's idle ratios read the same thing here: the share of
wall time the loop's thread was blocked, i.e. waiting for sockets, timers or worker threads.
Blocked is neither running nor runnable: Linux's per-thread schedstat gives the time on a CPU
and the time waiting for one, so a loop starved of CPU by other processes is not called idle.
Without schedstat only the thread's CPU time is known (see DEVIATIONS.md).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

if TYPE_CHECKING:
    from broker.services import MetricsServices

# Kafka's io-wait-ratio (NetworkProcessorAvgIdlePercent) is a rate over metrics.num.samples
# (2) windows of metrics.sample.window.ms (30 s); one 30 s window of 1 s samples is as recent.
IDLE_WINDOW_S = 30
IDLE_SAMPLE_INTERVAL_S = 1.0
# The calling thread's "time on a CPU" and "time runnable, waiting for a CPU" (ns), first.
SCHEDSTAT = Path("/proc/thread-self/schedstat")

# Kafka's group states, in the order of GroupMetadataManager's NumGroups* gauges.
GROUP_STATE_GAUGES = (
    ("PreparingRebalance", "numgroupspreparingrebalance"),
    ("CompletingRebalance", "numgroupscompletingrebalance"),
    ("Stable", "numgroupsstable"),
    ("Dead", "numgroupsdead"),
    ("Empty", "numgroupsempty"),
)


@dataclass(frozen=True, slots=True)
class LoopIdle:
    # Idle share of wall time over the last IDLE_WINDOW_S (NetworkProcessorAvgIdlePercent).
    recent_ratio: float
    # Idle nanoseconds since the meter started (RequestHandlerAvgIdlePercent's Count) ...
    idle_ns: int
    # ... and their share of the wall time since then (the meter's MeanRate).
    mean_ratio: float


class LoopIdleMeter:
    """Samples (wall clock, loop thread busy time) once a second; every reading is taken on
    the loop's own thread, since both sources measure the calling thread."""

    def __init__(self) -> None:
        self._samples: deque[tuple[int, int]] = deque(
            maxlen=int(IDLE_WINDOW_S / IDLE_SAMPLE_INTERVAL_S) + 1
        )
        self._started = _now()
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._started = _now()
        self._samples.append(self._started)
        self._handle = asyncio.get_running_loop().call_later(IDLE_SAMPLE_INTERVAL_S, self._tick)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _tick(self) -> None:
        self._samples.append(_now())
        self._handle = asyncio.get_running_loop().call_later(IDLE_SAMPLE_INTERVAL_S, self._tick)

    def reading(self) -> LoopIdle:
        now = _now()
        oldest = self._samples[0] if self._samples else self._started
        idle_ns = max(0, _idle_ns(self._started, now))
        elapsed_ns = now[0] - self._started[0]
        return LoopIdle(
            _ratio(_idle_ns(oldest, now), now[0] - oldest[0]),
            idle_ns,
            _ratio(idle_ns, elapsed_ns),
        )


def _now() -> tuple[int, int]:
    return time.monotonic_ns(), _busy_ns()


def _schedstat_busy_ns() -> int:
    """Nanoseconds this thread ran or waited to run."""
    running_ns, waiting_ns = SCHEDSTAT.read_text().split()[:2]
    return int(running_ns) + int(waiting_ns)


def _pick_busy_clock() -> Callable[[], int]:
    """One source for the process's life: readings of two sources do not subtract."""
    try:
        _schedstat_busy_ns()
    except (OSError, ValueError):
        return time.thread_time_ns
    return _schedstat_busy_ns


_busy_ns = _pick_busy_clock()


def _idle_ns(since: tuple[int, int], until: tuple[int, int]) -> int:
    return (until[0] - since[0]) - (until[1] - since[1])


def _ratio(idle_ns: int, elapsed_ns: int) -> float:
    if elapsed_ns <= 0:
        return 1.0
    return min(1.0, max(0.0, idle_ns / elapsed_ns))


# (Kafka's clientId for the fetcher, (topic, partition), lag): copied on the loop as the
# fetchers give them, thousands per scrape, and formatted on the render thread.
FetcherLag = tuple[str, tuple[str, int], int]


@dataclass(slots=True)
class CoordinatorCounts:
    groups_by_state: Counter[str] = field(default_factory=Counter)
    offsets: int = 0
    txn_partitions_loaded: int = 0
    txn_partitions_loading: int = 0
    transactional_ids: int = 0
    markers_awaiting_leader: int = 0


def fetcher_lags(services: MetricsServices) -> list[FetcherLag]:
    fetchers = services.replica_manager.fetchers
    if fetchers is None:
        return []
    return list(fetchers.lags())


def coordinator_counts(services: MetricsServices) -> CoordinatorCounts:
    """Kafka's GroupMetadataManager gauges count every group in its cache, a group known only
    by its committed offsets included (as Empty); ListGroups answers the same set."""
    coordinator = services.group_coordinator
    states = {g.group_id: g.state for g in coordinator.membership.list_groups()}
    for group_id in coordinator.offsets.groups():
        states.setdefault(group_id, "Empty")
    transactions = services.transaction_coordinator
    loaded, loading, transactional_ids = transactions.load_summary()
    return CoordinatorCounts(
        Counter(states.values()),
        coordinator.offsets.offset_count(),
        loaded,
        loading,
        transactional_ids,
        transactions.markers.transactions_awaiting_leader(),
    )


def request_queue_size(services: MetricsServices) -> int:
    """Requests read off a socket whose handler has not answered yet, less those parked as
    Kafka parks them in its purgatories (long-polling fetches, acks=all produces)."""
    counters = services.metrics
    parked = services.replica_manager.delayed_fetches + counters.delayed_produces
    return max(0, counters.requests_in_flight - parked)


def loop_metrics(idle: LoopIdle | None, queue_size: int) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "kafka_network_requestchannel_requestqueuesize",
        "Requests being handled that are not parked in a delayed operation",
        value=queue_size,
    )
    if idle is None:
        return
    yield GaugeMetricFamily(
        "kafka_network_socketserver_networkprocessoravgidlepercent",
        "Share of the last 30 s the event loop's thread was blocked (0 to 1)",
        value=idle.recent_ratio,
    )
    # The exporter turns the RequestHandlerAvgIdlePercent meter's Count (idle nanoseconds)
    # into `..._requesthandleravgidlepercent_count` and its MeanRate into
    # `..._requesthandleravgidle_percent`.
    handler = "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent"
    count = Metric(handler, "Nanoseconds the event loop's thread was blocked", "summary")
    count.samples.append(Sample(handler + "_count", {}, idle.idle_ns))
    yield count
    yield GaugeMetricFamily(
        "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent",
        "Share of the time since start the event loop's thread was blocked (0 to 1)",
        value=idle.mean_ratio,
    )


def gauge_header(name: str, documentation: str) -> Iterator[str]:
    yield f"# HELP {name} {documentation}\n"
    yield f"# TYPE {name} gauge\n"


def float_text(value: int) -> str:
    """A sample's value as prometheus_client writes it."""
    text: str = floatToGoString(value)  # type: ignore[no-untyped-call]
    return text


def fetcher_lag_lines(lags: list[FetcherLag]) -> Iterator[str]:
    """Written as text directly (see `broker.metrics.prometheus.render`). Topic names and fetcher
    names hold only characters that need no escaping in a label value."""
    name = "kafka_server_fetcherlagmetrics_consumerlag"
    yield from gauge_header(
        name, "The leader's high watermark less this follower's next fetch offset"
    )
    for client_id, (topic, partition), lag in sorted(lags, key=lambda f: f[1]):
        yield (
            f'{name}{{clientId="{client_id}",partition="{partition}",'
            f'topic="{topic}"}} {float_text(lag)}\n'
        )


def coordinator_metrics(counts: CoordinatorCounts) -> Iterator[Metric]:
    prefix = "kafka_coordinator_group_groupmetadatamanager_"
    groups = counts.groups_by_state
    yield GaugeMetricFamily(
        prefix + "numgroups", "Groups this coordinator holds", sum(groups.values())
    )
    for state, gauge in GROUP_STATE_GAUGES:
        yield GaugeMetricFamily(prefix + gauge, f"Groups in state {state}", groups.get(state, 0))
    yield GaugeMetricFamily(prefix + "numoffsets", "Committed offsets held", counts.offsets)
    markers = "kafka_coordinator_transaction_transactionmarkerchannelmanager_"
    yield GaugeMetricFamily(
        markers + "unknowndestinationqueuesize",
        "Transactions whose markers wait for a partition leader to be known",
        counts.markers_awaiting_leader,
    )
    yield GaugeMetricFamily(
        markers + "logappendretryqueuesize",
        "Completion records waiting to be appended again (never: not retried here)",
        0,
    )
    # Not Kafka's (its transaction state manager has no such MBean): what a learner asks.
    partitions = GaugeMetricFamily(
        "pykafka_transaction_coordinator_partitions",
        "__transaction_state partitions this broker coordinates, by load state",
        labels=["state"],
    )
    partitions.add_metric(["loaded"], counts.txn_partitions_loaded)
    partitions.add_metric(["loading"], counts.txn_partitions_loading)
    yield partitions
    yield GaugeMetricFamily(
        "pykafka_transaction_coordinator_transactionalids",
        "Transactional ids in the loaded partitions",
        counts.transactional_ids,
    )


def zookeeper_metrics(
    expires: int,
    disconnects: int,
    sync_connects: int,
    connected: bool,
    fences: int = 0,
    fenced: bool = False,
) -> Iterator[Metric]:
    prefix = "kafka_server_sessionexpirelistener_"
    for meter, documentation, value in (
        ("zookeeperexpires", "ZooKeeper sessions this broker lost", expires),
        ("zookeeperdisconnects", "Connections to ZooKeeper lost (session kept)", disconnects),
        ("zookeepersyncconnects", "Connections to ZooKeeper made", sync_connects),
        # Not in Kafka (zookeeper.session.fencing.enable, DEVIATIONS.md).
        ("zookeepersessionfences", "Times this broker fenced itself from ZooKeeper", fences),
    ):
        yield CounterMetricFamily(prefix + meter, documentation, value=value)
    yield GaugeMetricFamily(
        prefix + "sessionstate_connected",
        "1 while the ZooKeeper session is connected",
        1 if connected else 0,
    )
    yield GaugeMetricFamily(
        prefix + "sessionstate_fenced",
        "1 while this broker is fenced: no answer from ZooKeeper for a session timeout",
        1 if fenced else 0,
    )
