"""`down`, `status` and `kill`: commands that act on a cluster without waiting for it."""

from __future__ import annotations

import shutil
from pathlib import Path

from . import partitions, processes, zk_view, zookeeper
from .errors import ClusterError
from .layout import broker_key, is_cluster_dir, load_state, save_state, state_lock, zookeeper_key
from .runtime import (
    is_running,
    keys_in_stop_order,
    stop_processes,
    target_key,
    zookeeper_connect_of,
)


def down(directory: Path, wipe: bool) -> None:
    if not directory.exists():
        print(f"no cluster in {directory}: nothing to stop")
        return
    if not is_cluster_dir(directory):
        if wipe:
            raise ClusterError(
                f"{directory} is not a cluster directory (no cluster.json); not removing it"
            )
        print(f"no cluster in {directory}: nothing to stop")
        return
    state = load_state(directory)
    if state.spec.network == "netns":  # its processes are root's, and so is its network
        partitions.require_root("scripts/cluster down of a --network netns cluster")
    broker_keys, zookeeper_keys = keys_in_stop_order(state)
    # Brokers first: their clean shutdown needs ZooKeeper.
    stop_processes(state, broker_keys)
    stop_processes(state, zookeeper_keys)
    with state_lock(directory):
        state = load_state(directory)
        for record in state.processes.values():
            record.pid = None
            record.start_ticks = None
        if state.spec.network == "netns":
            partitions.destroy(state.spec)  # its routes, so its cuts, go with it
            state.cut_links = []
        save_state(directory, state)
    if wipe:
        shutil.rmtree(directory)
        print(f"stopped and removed {directory}")
    else:
        print(f"stopped the cluster in {directory}")


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def status(directory: Path) -> None:
    state = load_state(directory)
    spec = state.spec
    view = zk_view.query(zookeeper_connect_of(spec))
    netns = spec.network == "netns"
    for i in spec.broker_ids:
        record = state.processes[broker_key(i)]
        address = f" address={spec.broker_host(i)}" if netns else ""
        registered = "unknown" if view is None else _yes_no(i in view.registered)
        running = _yes_no(is_running(record))
        impl = state.broker_impl(i)
        metrics = f" metrics=http://{spec.broker_host(i)}:{spec.metrics_port(i)}/metrics"
        shown = metrics if impl == "ours" else ""
        print(
            f"broker {i} pid={record.pid} alive={running} registered={registered}{shown}"
            f" impl={impl}{address}"
        )
    for n in spec.zookeeper_ids:
        record = state.processes[zookeeper_key(n)]
        alive = is_running(record)
        host = spec.zookeeper_host(n)
        mode = zookeeper.server_mode(spec.zookeeper_client_port(n), host) if alive else "down"
        address = f" address={host}" if netns else ""
        print(f"zookeeper {n} pid={record.pid} alive={_yes_no(alive)} mode={mode}{address}")
    if view is None:
        print("controller id=unknown epoch=unknown")
    else:
        controller_id = "none" if view.controller_id is None else view.controller_id
        epoch = "none" if view.controller_epoch is None else view.controller_epoch
        print(f"controller id={controller_id} epoch={epoch}")
    for line in partitions.describe_links(state):
        print(line)


def kill(directory: Path, broker_id: int | None, server_id: int | None, signal_name: str) -> None:
    state = load_state(directory)
    key = target_key(state, broker_id, server_id)
    record = state.processes[key]
    if record.pid is None or not is_running(record):
        raise ClusterError(f"{key} is not running")
    processes.send_signal(record.pid, processes.SIGNALS_BY_NAME[signal_name])
    print(f"sent SIG{signal_name} to {key} (pid {record.pid})")
