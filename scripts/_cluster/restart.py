"""`start`: bring one broker or ZooKeeper server back with its previous config and data,
a broker optionally as the other implementation (`--impl`: a rolling migration)."""

from __future__ import annotations

import time
from pathlib import Path

from . import brokers, kafka_reference, partitions, processes, zk_view, zookeeper
from .errors import ClusterError
from .layout import (
    IMPLEMENTATIONS,
    ClusterSpec,
    ClusterState,
    ProcessRecord,
    broker_key,
    load_state,
    save_state,
    state_lock,
    zookeeper_key,
)
from .runtime import (
    HEALTH_TIMEOUT_S,
    STALE_REGISTRATION_MARGIN_S,
    STOP_GRACE_S,
    ensure_alive,
    is_running,
    launch,
    target_key,
    zookeeper_connect_of,
)


def _wait_for_previous_exit(key: str, record: ProcessRecord) -> None:
    """A process just sent SIGTERM may still be shutting down; give it the grace period."""
    if record.pid is None or not is_running(record):
        return
    if not processes.wait_for_exit(record.pid, record.start_ticks, STOP_GRACE_S):
        raise ClusterError(f"{key} is still running (pid {record.pid}); kill it first")


def _wait_for_stale_registration(spec: ClusterSpec, broker_id: int) -> None:
    """Kafka refuses to register over another session's /brokers/ids/<id>: wait it out."""
    timeout_s = brokers.session_timeout_ms(spec) / 1000 + STALE_REGISTRATION_MARGIN_S
    try:
        zk_view.wait_for(
            zookeeper_connect_of(spec),
            lambda view: broker_id not in view.registered,
            lambda: None,
            timeout_s,
        )
    except TimeoutError:
        raise ClusterError(
            f"broker {broker_id} is still registered in ZooKeeper after {timeout_s:.0f} s"
            " (or ZooKeeper is unreachable)"
        ) from None


def _start_broker(directory: Path, state: ClusterState, broker_id: int) -> int:
    key = broker_key(broker_id)
    _wait_for_stale_registration(state.spec, broker_id)
    pid = launch(directory, key)
    state = load_state(directory)
    try:
        zk_view.wait_for(
            zookeeper_connect_of(state.spec),
            lambda view: broker_id in view.registered,
            lambda: ensure_alive(state, key),
            HEALTH_TIMEOUT_S,
        )
    except TimeoutError:
        raise ClusterError(
            f"{key} (pid {pid}) did not register within {HEALTH_TIMEOUT_S:.0f} s"
        ) from None
    return pid


def _start_zookeeper(directory: Path, state: ClusterState, server_id: int) -> int:
    key = zookeeper_key(server_id)
    pid = launch(directory, key)
    state = load_state(directory)
    port = state.spec.zookeeper_client_port(server_id)
    host = state.spec.zookeeper_host(server_id)
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    while not zookeeper.is_ok(port, host):
        ensure_alive(state, key)
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"{key} (pid {pid}) did not answer ruok within {HEALTH_TIMEOUT_S:.0f} s"
            )
        time.sleep(0.2)
    return pid


def switch_impl(directory: Path, broker_id: int, impl: str, java: str) -> None:
    """Make broker `broker_id` run as `impl` from its next launch: its server.properties
    rewritten as `up` writes it for that implementation (same keys, same log.dirs) and its
    command in cluster.json replaced."""
    with state_lock(directory):
        state = load_state(directory)
        record = state.processes[broker_key(broker_id)]
        record.command = brokers.prepare_broker(state.spec, broker_id, java, impl)
        record.env = brokers.broker_env(state.spec, impl)
        record.impl = impl
        save_state(directory, state)


def start(
    directory: Path, broker_id: int | None, server_id: int | None, impl: str | None = None
) -> None:
    state = load_state(directory)
    key = target_key(state, broker_id, server_id)
    if state.spec.network == "netns":  # `ip netns exec` needs root
        partitions.require_root("scripts/cluster start on a --network netns cluster")
    if impl is not None:
        if broker_id is None:
            raise ClusterError("--impl applies to a broker, not a ZooKeeper server")
        if impl not in IMPLEMENTATIONS:
            raise ClusterError(f"--impl {impl!r}: choose from {', '.join(IMPLEMENTATIONS)}")
    _wait_for_previous_exit(key, state.processes[key])
    if broker_id is not None and impl is not None and impl != state.broker_impl(broker_id):
        if impl == "kafka":
            kafka_reference.reference_classpath()  # a clear error before touching the config
        switch_impl(directory, broker_id, impl, zookeeper.check_java())
        state = load_state(directory)
    if broker_id is not None:
        pid = _start_broker(directory, state, broker_id)
    elif server_id is not None:
        pid = _start_zookeeper(directory, state, server_id)
    else:
        raise ClusterError("name a broker or a ZooKeeper server")
    shown = "" if impl is None else f" as {impl}"
    print(f"started {key}{shown} (pid {pid})")
