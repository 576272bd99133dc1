"""What `status --watch` shows, read once a tick: the launcher's processes (cluster.json),
ZooKeeper (registrations and their broker epochs, the controller and its epoch, every
partition's assignment and leader/ISR state) and each broker's Prometheus endpoint.

One ZooKeeper session serves every tick and is opened again after a failure; anything that
cannot be read in time is shown as unknown rather than holding the view.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from zk.client import ZkClient

from . import zookeeper
from .layout import ClusterSpec, ProcessRecord, broker_key, load_state, zookeeper_key
from .runtime import is_running, zookeeper_connect_of
from .zk_view import CONNECTION_TIMEOUT_MS, connect, controller_epoch_of, controller_id_of

ZOOKEEPER_READ_TIMEOUT_S = 5.0
SCRAPE_TIMEOUT_S = 2.0

# Unlabelled samples (all topics) read from each broker's endpoint.
MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin_total"
BYTES_IN = "kafka_server_brokertopicmetrics_bytesin_total"
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"
ISR_SHRINKS = "kafka_server_replicamanager_isrshrinks_total"
ISR_EXPANDS = "kafka_server_replicamanager_isrexpands_total"
LEADERS = "kafka_server_replicamanager_leadercount"
REPLICAS = "kafka_server_replicamanager_partitioncount"
UNDER_REPLICATED = "kafka_server_replicamanager_underreplicatedpartitions"
NETWORK_IDLE = "kafka_network_socketserver_networkprocessoravgidlepercent"
SCRAPED = frozenset(
    {
        MESSAGES_IN,
        BYTES_IN,
        BYTES_OUT,
        ISR_SHRINKS,
        ISR_EXPANDS,
        LEADERS,
        REPLICAS,
        UNDER_REPLICATED,
        NETWORK_IDLE,
    }
)


@dataclass(frozen=True, slots=True)
class BrokerRow:
    broker_id: int
    pid: int | None
    alive: bool
    registered: bool | None  # None: ZooKeeper could not be read
    broker_epoch: int | None  # the czxid of /brokers/ids/<id>, as Kafka's broker epoch
    metrics: dict[str, float] | None  # None: no endpoint (Kafka's brokers) or unreachable
    impl: str = "ours"  # what the broker runs (or ran last): "ours" or "kafka"


@dataclass(frozen=True, slots=True)
class ZookeeperRow:
    server_id: int
    alive: bool
    mode: str


@dataclass(frozen=True, slots=True)
class PartitionProblem:
    topic: str
    partition: int
    leader: int
    isr: list[int]
    replicas: list[int]
    offline: bool  # no live leader; otherwise under-replicated


@dataclass(frozen=True, slots=True)
class ZookeeperView:
    registered: dict[int, int]  # broker id -> czxid of its registration
    controller_id: int | None
    controller_epoch: int | None
    partition_count: int
    problems: list[PartitionProblem]


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    taken_s: float  # time.monotonic(), for rates between two snapshots
    wall_time: str
    brokers: list[BrokerRow]
    zookeepers: list[ZookeeperRow]
    view: ZookeeperView | None  # None: ZooKeeper could not be read


class Collector:
    """Takes snapshots of the cluster in `directory`; `close()` ends its ZooKeeper session."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._client: ZkClient | None = None

    async def take(self) -> ClusterSnapshot:
        state = load_state(self._directory)  # again each tick: `start` records new pids
        spec = state.spec
        view, metrics, zookeepers = await asyncio.gather(
            self._read_zookeeper(zookeeper_connect_of(spec)),
            _scrape_all(spec, [i for i in spec.broker_ids if state.broker_impl(i) == "ours"]),
            _zookeeper_rows(spec, [state.processes[zookeeper_key(n)] for n in spec.zookeeper_ids]),
        )
        brokers = []
        for broker_id in spec.broker_ids:
            record = state.processes[broker_key(broker_id)]
            registered = None if view is None else broker_id in view.registered
            epoch = None if view is None else view.registered.get(broker_id)
            brokers.append(
                BrokerRow(
                    broker_id,
                    record.pid,
                    is_running(record),
                    registered,
                    epoch,
                    metrics.get(broker_id),
                    state.broker_impl(broker_id),
                )
            )
        return ClusterSnapshot(
            time.monotonic(),
            time.strftime("%Y-%m-%d %H:%M:%S"),
            brokers,
            zookeepers,
            view,
        )

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def _read_zookeeper(self, connect_string: str) -> ZookeeperView | None:
        try:
            async with asyncio.timeout(ZOOKEEPER_READ_TIMEOUT_S + CONNECTION_TIMEOUT_MS / 1000):
                if self._client is None:
                    self._client = await connect(connect_string)
                async with asyncio.timeout(ZOOKEEPER_READ_TIMEOUT_S):
                    return await read_view(self._client)
        except Exception:  # unreachable, session lost, timed out: start over next tick
            await self.close()
            return None


async def read_view(client: ZkClient) -> ZookeeperView:
    ids = sorted(int(c) for c in await client.get_children("/brokers/ids") or [] if c.isdigit())
    registrations = await client.get_many([f"/brokers/ids/{i}" for i in ids])
    registered = {i: found[1].czxid for i, found in zip(ids, registrations, strict=True) if found}
    controller = await client.get("/controller")
    epoch = await client.get("/controller_epoch")
    partition_count, problems = await _partition_problems(client, set(registered))
    return ZookeeperView(
        registered,
        controller_id_of(controller[0]) if controller else None,
        controller_epoch_of(epoch[0]) if epoch else None,
        partition_count,
        problems,
    )


async def _partition_problems(
    client: ZkClient, live: set[int]
) -> tuple[int, list[PartitionProblem]]:
    """How many partitions there are, and those without a live leader or a full ISR."""
    topics = sorted(await client.get_children("/brokers/topics") or [])
    assignments = await client.get_many([f"/brokers/topics/{t}" for t in topics])
    replicas: dict[tuple[str, int], list[int]] = {}
    for topic, found in zip(topics, assignments, strict=True):
        for partition, members in _assignment(found[0] if found else b"").items():
            replicas[(topic, partition)] = members
    keys = sorted(replicas)
    states = await client.get_many([f"/brokers/topics/{t}/partitions/{p}/state" for t, p in keys])
    problems = []
    for (topic, partition), found in zip(keys, states, strict=True):
        leader, isr = _leader_and_isr(found[0] if found else b"")
        members = replicas[(topic, partition)]
        offline = leader < 0 or leader not in live
        if offline or len(isr) < len(members):
            problems.append(PartitionProblem(topic, partition, leader, isr, members, offline))
    return len(keys), problems


def _assignment(data: bytes) -> dict[int, list[int]]:
    try:
        partitions = json.loads(data)["partitions"]
        return {int(p): [int(b) for b in members] for p, members in partitions.items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}


def _leader_and_isr(data: bytes) -> tuple[int, list[int]]:
    try:
        state = json.loads(data)
        return int(state["leader"]), [int(b) for b in state["isr"]]
    except (ValueError, KeyError, TypeError):
        return -1, []


async def _scrape_all(spec: ClusterSpec, broker_ids: list[int]) -> dict[int, dict[str, float]]:
    """The endpoints of `broker_ids` (ours: Kafka's brokers have none)."""
    scraped = await asyncio.gather(
        *(asyncio.to_thread(_scrape, spec.metrics_port(i), spec.broker_host(i)) for i in broker_ids)
    )
    return {i: s for i, s in zip(broker_ids, scraped, strict=True) if s is not None}


def _scrape(port: int, host: str = "127.0.0.1") -> dict[str, float] | None:
    try:
        url = f"http://{host}:{port}/metrics"
        with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S) as response:
            text = response.read().decode()
        return {
            sample.name: sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name in SCRAPED and not sample.labels
        }
    except (OSError, ValueError):
        return None


async def _zookeeper_rows(spec: ClusterSpec, records: list[ProcessRecord]) -> list[ZookeeperRow]:
    alive = [is_running(record) for record in records]
    modes = await asyncio.gather(
        *(
            asyncio.to_thread(
                zookeeper.server_mode, spec.zookeeper_client_port(n), spec.zookeeper_host(n)
            )
            for n, up in zip(spec.zookeeper_ids, alive, strict=True)
            if up
        )
    )
    found = iter(modes)
    return [
        ZookeeperRow(n, up, next(found) if up else "down")
        for n, up in zip(spec.zookeeper_ids, alive, strict=True)
    ]
