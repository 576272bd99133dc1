"""What the launcher commands share: timeouts, process records, liveness, (re)launching."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from . import netns, processes
from .errors import ClusterError
from .layout import (
    ClusterSpec,
    ClusterState,
    ProcessRecord,
    broker_key,
    load_state,
    save_state,
    state_lock,
    zookeeper_key,
)

HEALTH_TIMEOUT_S = 60.0
# How long a SIGTERMed process may take to exit before it counts as hung (and `down` kills
# it). A broker first asks the controller to move its leaderships, up to
# controlled.shutdown.max.retries times; on a loaded machine, or while the controller itself
# moves, that alone can take well over 10 s.
STOP_GRACE_S = 30.0
# After a broker dies its registration lives until its ZooKeeper session expires.
STALE_REGISTRATION_MARGIN_S = 10.0
SERVING_MODES = ("leader", "follower", "standalone", "observer")
REPO_ROOT = Path(__file__).resolve().parents[2]


def log_timestamp(moment: datetime.datetime | None = None) -> str:
    """Local time as the brokers' state-change.log lines start: `YYYY-mm-dd HH:MM:SS,mmm`."""
    moment = moment or datetime.datetime.now()
    return f"{moment:%Y-%m-%d %H:%M:%S},{moment.microsecond // 1000:03d}"


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"  # broker.log must be current when someone reads it
    return env


def zookeeper_connect_of(spec: ClusterSpec) -> str:
    return spec.overrides.get("zookeeper.connect", spec.zookeeper_connect)


def is_running(record: ProcessRecord) -> bool:
    return processes.is_alive(record.pid, record.start_ticks)


def ensure_alive(state: ClusterState, key: str) -> None:
    record = state.processes[key]
    if record.pid is not None:
        processes.reap_if_child(record.pid)
    if not is_running(record):
        log_tail = processes.tail(Path(record.log_path))
        raise ClusterError(
            f"{key} (pid {record.pid}) exited; end of {record.log_path}:\n{log_tail}"
        )


def launch(directory: Path, key: str) -> int:
    """Spawn process `key` from its cluster.json record and store its new pid."""
    with state_lock(directory):
        state = load_state(directory)
        record = state.processes[key]
        env = child_env() | record.env
        # Kafka's kafka.logs.dir: a broker writes state-change.log there, next to broker.log.
        env["LOG_DIR"] = str(Path(record.log_path).parent)
        if record.impl is not None and (
            not record.impl_history or record.impl_history[-1][1] != record.impl
        ):
            record.impl_history.append([log_timestamp(), record.impl])
        command = record.command
        if record.netns is not None:
            command = netns.exec_prefix(record.netns) + command
        pid = processes.spawn(command, Path(record.log_path), Path(record.cwd), env)
        record.pid = pid
        record.start_ticks = processes.start_ticks_of(pid)
        save_state(directory, state)
    return pid


def stop_processes(state: ClusterState, keys: list[str]) -> None:
    targets = []
    for key in keys:
        record = state.processes[key]
        if record.pid is not None:
            targets.append((record.pid, record.start_ticks))
    processes.stop_all(targets, STOP_GRACE_S)


def keys_in_stop_order(state: ClusterState) -> tuple[list[str], list[str]]:
    broker_keys = [broker_key(i) for i in state.spec.broker_ids]
    zookeeper_keys = [zookeeper_key(n) for n in state.spec.zookeeper_ids]
    return broker_keys, zookeeper_keys


def target_key(state: ClusterState, broker_id: int | None, server_id: int | None) -> str:
    if broker_id is not None:
        if broker_id not in state.spec.broker_ids:
            raise ClusterError(f"no broker {broker_id} (brokers are {state.spec.broker_ids})")
        return broker_key(broker_id)
    if server_id is None:
        raise ClusterError("name a broker or a ZooKeeper server")
    if server_id not in state.spec.zookeeper_ids:
        raise ClusterError(
            f"no ZooKeeper server {server_id} (servers are {state.spec.zookeeper_ids})"
        )
    return zookeeper_key(server_id)
