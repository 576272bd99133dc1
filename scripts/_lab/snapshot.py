"""One view of the cluster, built from what ZooKeeper, the processes and the metrics say.

Everything here is pure: ZooKeeper is read through the small `ZnodeReader` protocol (kazoo in
the lab, a dict in the tests) and the result is plain JSON-able data that the page renders.
`changes` turns two consecutive views into timeline entries (brokers registered and lost,
controller moves, leader and ISR changes, ZooKeeper servers going down).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ZnodeStat:
    """A znode's stat, with ZooKeeper's field names in snake case."""

    czxid: int
    mzxid: int
    pzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int
    data_length: int
    num_children: int

    def as_json(self) -> JsonObject:
        return asdict(self)


class ZnodeReader(Protocol):
    def children(self, path: str) -> list[str] | None:
        """The children's names, or None when the znode does not exist."""

    def get(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        """The data exactly as stored and the stat, or None when the znode does not exist."""


@dataclass(frozen=True, slots=True)
class ProcessView:
    """One process of cluster.json: which broker or ZooKeeper server, its pid, alive or not."""

    id: int
    port: int
    pid: int | None
    alive: bool
    paused: bool = False  # stopped by SIGSTOP
    impl: str = "ours"  # brokers: what it runs (or ran last), "ours" or "kafka"
    address: str = "127.0.0.1"  # its own namespace's with `up --network netns`


@dataclass(frozen=True, slots=True)
class ZookeeperServerView:
    id: int
    port: int
    pid: int | None
    alive: bool
    mode: str  # leader, follower, standalone, observer, down, unreachable, not-serving
    address: str = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class BrokerMetrics:
    """What the lab takes from one broker's /metrics."""

    messages_in_total: float
    log_end_offsets: Mapping[tuple[str, int], int]
    bytes_in_total: float = 0.0
    bytes_out_total: float = 0.0
    # The charted request times: series name (produce_p50, produce_p99) -> milliseconds.
    request_times_ms: Mapping[str, float] = field(default_factory=dict)
    zookeeper_expires: float | None = None  # the broker's ZooKeeper sessions lost


@dataclass(frozen=True, slots=True)
class KafkaObservations:
    """What the lab read through Kafka's interfaces (see kafka_reader), at `read_at`."""

    # Each partition leader's high watermark: ListOffsets(latest), what consumers see.
    high_watermarks: Mapping[tuple[str, int], int] = field(default_factory=dict)
    # broker -> its replication-offset-checkpoint: each replica's high watermark as last written.
    checkpoints: Mapping[int, Mapping[tuple[str, int], int]] = field(default_factory=dict)
    groups: list[JsonObject] = field(default_factory=list)
    read_at: str | None = None
    error: str | None = None


def _json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def read_zookeeper(reader: ZnodeReader) -> JsonObject:
    """Registrations, controller and partition states, as the page shows them."""
    registrations: dict[int, JsonObject] = {}
    for child in sorted(reader.children("/brokers/ids") or [], key=lambda c: (len(c), c)):
        found = reader.get(f"/brokers/ids/{child}")
        broker_id = _int_or_none(child)
        if found is None or broker_id is None:
            continue
        data, stat = found
        decoded = _json_or_none(data)
        registration = decoded if isinstance(decoded, dict) else {}
        registrations[broker_id] = {
            # Kafka's broker epoch is the czxid of the broker's registration.
            "epoch": stat.czxid,
            "session": f"0x{stat.ephemeral_owner:x}",
            "endpoints": [str(e) for e in registration.get("endpoints", [])],
            "host": registration.get("host"),
            "port": registration.get("port"),
            "rack": registration.get("rack"),
        }
    controller_id = None
    controller = reader.get("/controller")
    if controller is not None:
        decoded = _json_or_none(controller[0])
        if isinstance(decoded, dict):
            controller_id = _int_or_none(decoded.get("brokerid"))
    controller_epoch = None
    epoch = reader.get("/controller_epoch")
    if epoch is not None:
        controller_epoch = _int_or_none(epoch[0].decode("utf-8", errors="replace").strip())
    topics = []
    for topic in sorted(reader.children("/brokers/topics") or []):
        topics.append({"name": topic, "partitions": _read_partitions(reader, topic)})
    return {
        "registrations": registrations,
        "controller_id": controller_id,
        "controller_epoch": controller_epoch,
        "topics": topics,
    }


def _read_partitions(reader: ZnodeReader, topic: str) -> list[JsonObject]:
    found = reader.get(f"/brokers/topics/{topic}")
    decoded = _json_or_none(found[0]) if found is not None else None
    assignment = decoded.get("partitions", {}) if isinstance(decoded, dict) else {}
    partitions = []
    for key in sorted(assignment, key=lambda k: _int_or_none(k) or 0):
        partition = _int_or_none(key)
        if partition is None:
            continue
        replicas = [r for r in (_int_or_none(x) for x in assignment[key]) if r is not None]
        state_found = reader.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        state = _json_or_none(state_found[0]) if state_found is not None else None
        state = state if isinstance(state, dict) else {}
        leader = _int_or_none(state.get("leader"))
        partitions.append(
            {
                "partition": partition,
                "replicas": replicas,
                "leader": -1 if leader is None else leader,
                "leader_epoch": _int_or_none(state.get("leader_epoch")),
                "isr": [
                    i for i in (_int_or_none(x) for x in state.get("isr", [])) if i is not None
                ],
                # The state znode's version is Kafka's partition epoch.
                "partition_epoch": state_found[1].version if state_found is not None else None,
                "has_state": state_found is not None,
            }
        )
    return partitions


def build_snapshot(
    zookeeper: JsonObject | None,
    brokers: list[ProcessView],
    servers: list[ZookeeperServerView],
    metrics: Mapping[int, BrokerMetrics],
    metrics_ports: Mapping[int, int],
    series: JsonObject,
    now_s: float,
    kafka: KafkaObservations | None = None,
    cut_links: list[list[str]] | None = None,
) -> JsonObject:
    """The whole view; `zookeeper` is `read_zookeeper`'s result, None when unreachable;
    `series` the charts' history (prometheus.SeriesTracker.as_json); `cut_links` the links
    `scripts/cluster cut` blackholed ([FROM, TO]: FROM's packets to TO are dropped) on a
    `--network netns` cluster, None on a loopback one."""
    kafka = kafka or KafkaObservations()
    reachable = zookeeper is not None
    registrations: Mapping[int, JsonObject] = zookeeper["registrations"] if zookeeper else {}
    controller_id = zookeeper["controller_id"] if zookeeper else None
    live = {b.id for b in brokers if b.alive and b.id in registrations}
    broker_rows = []
    for broker in brokers:
        registration = registrations.get(broker.id)
        broker_rows.append(
            {
                "id": broker.id,
                "impl": broker.impl,
                "port": broker.port,
                "address": broker.address,
                "pid": broker.pid,
                "alive": broker.alive,
                "paused": broker.paused,
                "registered": (registration is not None) if reachable else None,
                "controller": reachable and controller_id == broker.id,
                "epoch": registration["epoch"] if registration else None,
                "session": registration["session"] if registration else None,
                "endpoints": registration["endpoints"] if registration else [],
                "metrics_url": f"http://{broker.address}:{metrics_ports[broker.id]}/metrics"
                if broker.id in metrics_ports
                else None,
                "metrics_ok": broker.id in metrics,
                "zookeeper_expires": metrics[broker.id].zookeeper_expires
                if broker.id in metrics
                else None,
            }
        )
    topics = []
    for topic in zookeeper["topics"] if zookeeper else []:
        rows = []
        for partition in topic["partitions"]:
            key = (topic["name"], partition["partition"])
            log_end = {
                str(r): metrics[r].log_end_offsets.get(key)
                for r in partition["replicas"]
                if r in metrics
            }
            rows.append(
                {
                    **partition,
                    "log_end": log_end,
                    "high_watermark": _high_watermarks(partition, key, kafka, live),
                    "under_replicated": len(partition["isr"]) < len(partition["replicas"]),
                    "offline": partition["leader"] not in live,
                }
            )
        topics.append({"name": topic["name"], "partitions": rows})
    return {
        "time": format_time(now_s),
        "zookeeper": {
            "reachable": reachable,
            "servers": [asdict(server) for server in servers],
        },
        "controller": {
            "id": controller_id,
            "epoch": zookeeper["controller_epoch"] if zookeeper else None,
        },
        "brokers": broker_rows,
        "topics": topics,
        "series": series,
        "groups": kafka.groups,
        "kafka": {"read_at": kafka.read_at, "error": kafka.error},
        "network": {
            "netns": cut_links is not None,
            "cuts": [list(link) for link in cut_links or []],
        },
    }


def _high_watermarks(
    partition: JsonObject, key: tuple[str, int], kafka: KafkaObservations, live: set[int]
) -> JsonObject:
    """replica -> {offset, source}: the live leader's from ListOffsets ("live"), every other
    replica's from its broker's replication-offset-checkpoint ("checkpoint")."""
    found: JsonObject = {}
    for replica in partition["replicas"]:
        if replica == partition["leader"] and replica in live and key in kafka.high_watermarks:
            found[str(replica)] = {"offset": kafka.high_watermarks[key], "source": "live"}
            continue
        checkpointed = kafka.checkpoints.get(replica, {}).get(key)
        if checkpointed is not None:
            found[str(replica)] = {"offset": checkpointed, "source": "checkpoint"}
    return found


def format_time(seconds: float) -> str:
    """The state-change log's timestamp format, so the timeline sorts as text."""
    moment = datetime.datetime.fromtimestamp(seconds)
    return f"{moment:%Y-%m-%d %H:%M:%S},{moment.microsecond // 1000:03d}"


def entry(time: str, source: str, message: str, kind: str = "zookeeper") -> JsonObject:
    """One timeline entry as the page shows it."""
    return {"time": time, "source": source, "kind": kind, "message": message}


def changes(before: JsonObject | None, after: JsonObject) -> list[JsonObject]:
    """Timeline entries for what changed between two snapshots (none for the first)."""
    if before is None:
        return []
    time = after["time"]
    found: list[JsonObject] = []
    cuts_before = {tuple(link) for link in before.get("network", {}).get("cuts", [])}
    cuts_after = {tuple(link) for link in after.get("network", {}).get("cuts", [])}
    for source, target in sorted(cuts_after - cuts_before):
        found.append(entry(time, "network", f"cut: {source}'s packets to {target} dropped"))
    for source, target in sorted(cuts_before - cuts_after):
        found.append(entry(time, "network", f"healed: {source} reaches {target} again"))
    if before["zookeeper"]["reachable"] != after["zookeeper"]["reachable"]:
        state = "reachable again" if after["zookeeper"]["reachable"] else "unreachable"
        found.append(entry(time, "lab", f"ZooKeeper is {state}"))
    modes_before = {s["id"]: s["mode"] for s in before["zookeeper"]["servers"]}
    for server in after["zookeeper"]["servers"]:
        previous = modes_before.get(server["id"])
        if previous is not None and previous != server["mode"]:
            found.append(
                entry(
                    time,
                    f"zookeeper-{server['id']}",
                    f"ZooKeeper server {server['id']}: {previous} -> {server['mode']}",
                )
            )
    if not (before["zookeeper"]["reachable"] and after["zookeeper"]["reachable"]):
        return found  # what ZooKeeper says is unknown on one side: no registration diffs
    brokers_before = {b["id"]: b for b in before["brokers"]}
    for broker in after["brokers"]:
        old = brokers_before.get(broker["id"])
        if old is None:
            continue
        if broker["registered"] and not old["registered"]:
            found.append(
                entry(
                    time,
                    "zookeeper",
                    f"broker {broker['id']} registered (/brokers/ids/{broker['id']}, "
                    f"broker epoch {broker['epoch']})",
                )
            )
        elif old["registered"] and not broker["registered"]:
            found.append(
                entry(
                    time,
                    "zookeeper",
                    f"broker {broker['id']} lost: /brokers/ids/{broker['id']} deleted",
                )
            )
        elif old["registered"] and broker["epoch"] != old["epoch"]:
            found.append(
                entry(
                    time,
                    "zookeeper",
                    f"broker {broker['id']} re-registered (broker epoch {old['epoch']} -> "
                    f"{broker['epoch']})",
                )
            )
    old_controller = before["controller"]
    new_controller = after["controller"]
    if old_controller["id"] != new_controller["id"]:
        if new_controller["id"] is None:
            message = f"/controller deleted (was broker {old_controller['id']})"
        elif old_controller["id"] is None:
            message = (
                f"controller elected: broker {new_controller['id']} "
                f"(controller epoch {new_controller['epoch']})"
            )
        else:
            message = (
                f"controller changed: broker {old_controller['id']} -> broker "
                f"{new_controller['id']} (controller epoch {new_controller['epoch']})"
            )
        found.append(entry(time, "zookeeper", message))
    elif old_controller["epoch"] != new_controller["epoch"]:
        found.append(
            entry(
                time,
                "zookeeper",
                f"controller epoch {old_controller['epoch']} -> {new_controller['epoch']} "
                f"(broker {new_controller['id']})",
            )
        )
    found.extend(_partition_changes(before, after, time))
    return found


def _partition_changes(before: JsonObject, after: JsonObject, time: str) -> list[JsonObject]:
    old_states = {(t["name"], p["partition"]): p for t in before["topics"] for p in t["partitions"]}
    found = []
    for topic in after["topics"]:
        for partition in topic["partitions"]:
            name = f"{topic['name']}-{partition['partition']}"
            old = old_states.get((topic["name"], partition["partition"]))
            if old is None:
                found.append(
                    entry(time, "zookeeper", f"{name} created, replicas {partition['replicas']}")
                )
                continue
            if old["replicas"] != partition["replicas"]:
                found.append(
                    entry(
                        time,
                        "zookeeper",
                        f"{name} replicas {old['replicas']} -> {partition['replicas']} "
                        f"(reassigned in /brokers/topics/{topic['name']})",
                    )
                )
            if old["leader"] != partition["leader"]:
                found.append(
                    entry(
                        time,
                        "zookeeper",
                        f"{name} leader {old['leader']} -> {partition['leader']} "
                        f"(leader epoch {partition['leader_epoch']})",
                    )
                )
            if old["isr"] != partition["isr"]:
                verb = "shrank" if len(partition["isr"]) < len(old["isr"]) else "changed"
                if len(partition["isr"]) > len(old["isr"]):
                    verb = "expanded"
                found.append(
                    entry(
                        time,
                        "zookeeper",
                        f"{name} ISR {verb}: {old['isr']} -> {partition['isr']}",
                    )
                )
    return found
