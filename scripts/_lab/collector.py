"""The lab's I/O: ZooKeeper through kazoo, four-letter words, each broker's /metrics and
cluster.json, polled off the event loop with every call bounded by a timeout."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _cluster import zookeeper
from _cluster.layout import ClusterState, broker_key, load_state, zookeeper_key
from _cluster.runtime import is_running, zookeeper_connect_of
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat as KazooStat
from kazoo.retry import KazooRetry

from . import prometheus, snapshot
from .kafka_reader import KafkaWorker
from .members import MemberPool
from .security import is_secret_znode, redact_znode
from .snapshot import JsonObject, KafkaObservations, ProcessView, ZnodeStat, ZookeeperServerView
from .timeline import StateChangeTail

ZOOKEEPER_OPERATION_TIMEOUT_S = 3.0
ZOOKEEPER_CONNECT_TIMEOUT_S = 3.0
ZOOKEEPER_SESSION_TIMEOUT_S = 10.0
METRICS_TIMEOUT_S = 1.5
POLL_INTERVAL_S = 1.0
# Offsets and groups through the admin client: less often, and never holding up a poll.
KAFKA_POLL_INTERVAL_S = 2.0
MINIMUM_POLL_GAP_S = 0.1
THROUGHPUT_HISTORY_POINTS = 180
TIMELINE_HISTORY_ENTRIES = 1000
SUBSCRIBER_QUEUE_MESSAGES = 256

logger = logging.getLogger(__name__)


# Watched (by the reads of each poll) so that the lab looks again as soon as they change
# rather than at the next tick (a missing /controller is not watched: the tick finds it).
WATCHED_CHILDREN = ("/brokers/ids", "/brokers/topics")
WATCHED_DATA = ("/controller", "/controller_epoch")


def _stat(stat: KazooStat) -> ZnodeStat:
    return ZnodeStat(
        czxid=stat.czxid,
        mzxid=stat.mzxid,
        pzxid=stat.pzxid,
        ctime=stat.ctime,
        mtime=stat.mtime,
        version=stat.version,
        cversion=stat.cversion,
        aversion=stat.aversion,
        ephemeral_owner=stat.ephemeralOwner,
        data_length=stat.dataLength,
        num_children=stat.numChildren,
    )


class KazooReader:
    """`snapshot.ZnodeReader` on a connected kazoo client; every read bounded in time."""

    def __init__(
        self, client: KazooClient, watcher: Callable[[object], None] | None = None
    ) -> None:
        self._client = client
        self._watcher = watcher

    def children(self, path: str) -> list[str] | None:
        watch = self._watcher if path in WATCHED_CHILDREN else None
        try:
            found: list[str] = self._client.get_children_async(path, watch=watch).get(
                timeout=ZOOKEEPER_OPERATION_TIMEOUT_S
            )
        except NoNodeError:
            return None
        return found

    def get(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        try:
            watch = self._watcher if path in WATCHED_DATA else None
            data, stat = self._client.get_async(path, watch=watch).get(
                timeout=ZOOKEEPER_OPERATION_TIMEOUT_S
            )
        except NoNodeError:
            return None
        return bytes(data or b""), _stat(stat)


class ZookeeperSession:
    """One kazoo client, (re)started on demand: while ZooKeeper is down `reader()` says None
    and the next call tries again; kazoo reconnects an established client by itself. Each
    poll's reads re-arm the watches; `on_change` runs on a kazoo thread when one fires."""

    def __init__(self, connect: str, on_change: Callable[[], None] | None = None) -> None:
        self._connect = connect
        self._on_change = on_change
        self._client: KazooClient | None = None
        self._lock = threading.Lock()

    def _changed(self, _event: object) -> None:
        # One bound method for every watch: kazoo keeps a set of watchers per path, so the
        # reads of every poll re-arm the watch without piling up duplicates.
        if self._on_change is not None:
            self._on_change()

    def reader(self) -> KazooReader | None:
        with self._lock:
            if self._client is None:
                client = KazooClient(
                    hosts=self._connect,
                    timeout=ZOOKEEPER_SESSION_TIMEOUT_S,
                    connection_retry=KazooRetry(max_tries=-1, max_delay=2.0),
                    read_only=False,
                )
                try:
                    client.start(timeout=ZOOKEEPER_CONNECT_TIMEOUT_S)
                except Exception:
                    _close(client)
                    return None
                self._client = client
            if not self._client.connected:
                return None
            return KazooReader(self._client, self._changed)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                _close(self._client)
                self._client = None


def _close(client: KazooClient) -> None:
    with contextlib.suppress(Exception):
        client.stop()
    with contextlib.suppress(Exception):
        client.close()


def fetch_metrics(url: str) -> snapshot.BrokerMetrics | None:
    try:
        with urllib.request.urlopen(url, timeout=METRICS_TIMEOUT_S) as response:
            text = response.read().decode("utf-8", errors="replace")
        return prometheus.parse(text)
    except Exception:
        return None


def read_znode(session: ZookeeperSession, path: str) -> JsonObject:
    """The znode browser: children, the data exactly as stored, and the stat."""
    reader = session.reader()
    if reader is None:
        return {"path": path, "error": "ZooKeeper is unreachable"}
    found = reader.get(path)
    if found is None:
        return {"path": path, "error": "no such znode"}
    data, stat = found
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    secret = is_secret_znode(path)
    return {
        "path": path,
        "children": sorted(reader.children(path) or []),
        "data": redact_znode(text) if secret else text,
        "data_hex": data.hex() if text is None and not secret else None,
        "redacted": secret,
        "stat": stat.as_json(),
    }


@dataclass
class Hub:
    """Fans server-sent events out to every open page; a page too slow to keep up is dropped."""

    subscribers: set[asyncio.Queue[tuple[str, Any] | None]] = field(default_factory=set)

    def publish(self, event: str, data: Any) -> None:
        for queue in list(self.subscribers):
            try:
                queue.put_nowait((event, data))
            except asyncio.QueueFull:
                # Too slow: drop what it has not read and tell its stream to end (the page's
                # EventSource reconnects and starts again from the current view).
                self.subscribers.discard(queue)
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait(None)

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[asyncio.Queue[tuple[str, Any] | None]]:
        queue: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue(SUBSCRIBER_QUEUE_MESSAGES)
        self.subscribers.add(queue)
        try:
            yield queue
        finally:
            self.subscribers.discard(queue)


class Collector:
    """Polls the cluster once a second and publishes the snapshot and new timeline entries."""

    def __init__(self, directory: Path, members: MemberPool | None = None) -> None:
        self.directory = directory
        self._members = members
        state = load_state(directory)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._poke = asyncio.Event()
        self.session = ZookeeperSession(zookeeper_connect_of(state.spec), self._poked)
        self.hub = Hub()
        self.latest: JsonObject | None = None
        self.timeline: list[JsonObject] = []
        self._tail = StateChangeTail(directory)
        self._series = prometheus.SeriesTracker(THROUGHPUT_HISTORY_POINTS)
        self._kafka_worker = KafkaWorker(directory, state.spec)
        self._kafka = KafkaObservations()
        self._changed = asyncio.Event()
        self._last_error: str | None = None

    def add_timeline(self, entries: list[JsonObject]) -> None:
        if not entries:
            return
        self.timeline.extend(entries)
        del self.timeline[:-TIMELINE_HISTORY_ENTRIES]
        self.hub.publish("timeline", entries)

    def _poked(self) -> None:
        """A watch fired (on a kazoo thread): poll now rather than at the next tick."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closing
                loop.call_soon_threadsafe(self._poke.set)

    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        kafka_task = asyncio.create_task(self._read_kafka_forever())
        try:
            await self._poll_forever()
        finally:
            kafka_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await kafka_task

    async def _read_kafka_forever(self) -> None:
        try:
            await self._read_kafka_loop()
        finally:
            await self._kafka_worker.close()

    async def _read_kafka_loop(self) -> None:
        last_error = None
        while True:
            latest = self.latest
            partitions = [
                (topic["name"], p["partition"])
                for topic in (latest["topics"] if latest else [])
                for p in topic["partitions"]
            ]
            try:
                self._kafka = await self._kafka_worker.read(partitions)
                last_error = None
            except Exception as error:  # the lab must outlive any one bad read
                if str(error) != last_error:
                    logger.warning("reading offsets and groups failed: %s", error)
                    last_error = str(error)
            await asyncio.sleep(KAFKA_POLL_INTERVAL_S)

    async def _poll_forever(self) -> None:
        while True:
            started = time.monotonic()
            self._poke.clear()
            try:
                await self.poll_once()
                self._last_error = None
            except Exception as error:  # the lab must outlive any one bad poll
                if str(error) != self._last_error:  # once per distinct failure, not per second
                    logger.warning("polling %s failed: %s", self.directory, error)
                    self._last_error = str(error)
            await asyncio.sleep(MINIMUM_POLL_GAP_S)
            remaining = POLL_INTERVAL_S - (time.monotonic() - started)
            if remaining > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._poke.wait(), remaining)

    async def wait_for_poll(self) -> None:
        self._changed.clear()
        await self._changed.wait()

    async def poll_once(self) -> None:
        state = await asyncio.to_thread(load_state, self.directory)
        brokers, servers = await asyncio.to_thread(_processes, state)
        zookeeper_task = asyncio.to_thread(self._read_zookeeper)
        # Only ours serve Prometheus; Kafka's brokers have JMX instead.
        metrics_ports = {b.id: state.spec.metrics_port(b.id) for b in brokers if b.impl == "ours"}
        metric_tasks = {
            b.id: asyncio.to_thread(
                fetch_metrics, f"http://{b.address}:{metrics_ports[b.id]}/metrics"
            )
            for b in brokers
            if b.alive and b.id in metrics_ports
        }
        zookeeper_data, *scraped = await asyncio.gather(zookeeper_task, *metric_tasks.values())
        metrics = {
            broker_id: found
            for broker_id, found in zip(metric_tasks, scraped, strict=True)
            if isinstance(found, snapshot.BrokerMetrics)
        }
        now_s = time.time()
        self._series.observe(now_s, metrics)
        zookeeper_view = zookeeper_data if isinstance(zookeeper_data, dict) else None
        view = snapshot.build_snapshot(
            zookeeper_view,
            brokers,
            servers,
            metrics,
            metrics_ports,
            self._series.as_json(),
            now_s,
            self._kafka,
            state.cut_links if state.spec.network == "netns" else None,
        )
        view["lab_members"] = self._members.as_json() if self._members else []
        fresh = [
            snapshot.entry(e.timestamp, e.source, e.message, kind="state-change")
            for e in await asyncio.to_thread(self._tail.poll)
        ]
        fresh.extend(snapshot.changes(self.latest, view))
        self.latest = view
        self.hub.publish("snapshot", view)
        self.add_timeline(fresh)
        self._changed.set()

    def _read_zookeeper(self) -> JsonObject | None:
        reader = self.session.reader()
        if reader is None:
            return None
        try:
            return snapshot.read_zookeeper(reader)
        except Exception:
            return None


def _paused(pid: int | None) -> bool:
    """Stopped by SIGSTOP: state T in /proc/PID/stat (after the parenthesised name)."""
    if pid is None:
        return False
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = text[text.rfind(")") + 2 :].split()
    return bool(fields) and fields[0] == "T"


def _processes(state: ClusterState) -> tuple[list[ProcessView], list[ZookeeperServerView]]:
    spec = state.spec
    brokers = []
    for i in spec.broker_ids:
        record = state.processes[broker_key(i)]
        alive = is_running(record)
        paused = alive and _paused(record.pid)
        brokers.append(
            ProcessView(
                i,
                spec.broker_port(i),
                record.pid,
                alive,
                paused,
                state.broker_impl(i),
                spec.broker_host(i),
            )
        )
    servers = []
    for n in spec.zookeeper_ids:
        record = state.processes[zookeeper_key(n)]
        alive = is_running(record)
        port = spec.zookeeper_client_port(n)
        host = spec.zookeeper_host(n)
        mode = zookeeper.server_mode(port, host) if alive else "down"
        servers.append(ZookeeperServerView(n, port, record.pid, alive, mode, host))
    return brokers, servers
