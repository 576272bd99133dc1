"""`up`: start ZooKeeper, then the brokers, and wait (bounded) until the cluster is healthy."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from . import (
    brokers,
    kafka_reference,
    netns,
    partitions,
    sasl_material,
    tls_material,
    zk_sasl_material,
    zk_view,
    zookeeper,
)
from .errors import ClusterError
from .layout import (
    ClusterSpec,
    ClusterState,
    ProcessRecord,
    broker_dir,
    broker_key,
    is_cluster_dir,
    load_state,
    parse_impls,
    save_state,
    state_lock,
    zookeeper_dir,
    zookeeper_key,
)
from .runtime import (
    HEALTH_TIMEOUT_S,
    REPO_ROOT,
    SERVING_MODES,
    ensure_alive,
    is_running,
    keys_in_stop_order,
    launch,
    stop_processes,
    zookeeper_connect_of,
)


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _check_ports_free(spec: ClusterSpec) -> None:
    busy = [port for port in spec.all_ports() if _port_in_use(port)]
    if busy:
        raise ClusterError(
            f"port(s) {', '.join(map(str, busy))} on 127.0.0.1 already in use; "
            "choose other --port-base / --zk-port-base or stop what holds them"
        )


def _refuse_if_running(directory: Path) -> None:
    if is_cluster_dir(directory):
        state = load_state(directory)
        running = [f"{key} (pid {r.pid})" for key, r in state.processes.items() if is_running(r)]
        if running:
            raise ClusterError(
                f"a cluster is already running in {directory}: {', '.join(running)}; "
                f"stop it first with: scripts/cluster down --dir {directory}"
            )
    elif directory.exists() and any(directory.iterdir()):
        raise ClusterError(f"{directory} exists and is not a cluster directory (no cluster.json)")


def _namespace(spec: ClusterSpec, key: str) -> str | None:
    return netns.namespace_name(spec.port_base, key) if spec.network == "netns" else None


def _initial_state(
    spec: ClusterSpec, java: str, installation: zookeeper.Installation
) -> ClusterState:
    directory = Path(spec.directory)
    state = ClusterState(spec=spec)
    for n in spec.zookeeper_ids:
        command = zookeeper.prepare_server(spec, n, java, installation)
        log_path = zookeeper_dir(directory, n) / "zookeeper.log"
        state.processes[zookeeper_key(n)] = ProcessRecord(
            command,
            str(log_path),
            str(zookeeper_dir(directory, n)),
            netns=_namespace(spec, zookeeper_key(n)),
        )
    for i in spec.broker_ids:
        impl = spec.initial_impl(i)
        command = brokers.prepare_broker(spec, i, java, impl)
        log_path = broker_dir(directory, i) / "broker.log"
        state.processes[broker_key(i)] = ProcessRecord(
            command,
            str(log_path),
            str(REPO_ROOT),
            env=brokers.broker_env(spec, impl),
            impl=impl,
            netns=_namespace(spec, broker_key(i)),
        )
    return state


def _wait_for_zookeepers(state: ClusterState, deadline: float) -> None:
    spec = state.spec
    while True:
        modes = {}
        for n in spec.zookeeper_ids:
            ensure_alive(state, zookeeper_key(n))
            modes[n] = zookeeper.server_mode(spec.zookeeper_client_port(n), spec.zookeeper_host(n))
        if all(mode in SERVING_MODES for mode in modes.values()):
            return
        if time.monotonic() >= deadline:
            described = ", ".join(f"zookeeper-{n}: {mode}" for n, mode in modes.items())
            raise ClusterError(
                f"ZooKeeper not serving within {HEALTH_TIMEOUT_S:.0f} s ({described})"
            )
        time.sleep(0.2)


def _wait_for_brokers(
    state: ClusterState, deadline: float, wanted_ids: list[int] | None = None
) -> None:
    spec = state.spec
    wanted = set(spec.broker_ids if wanted_ids is None else wanted_ids)

    def healthy(view: zk_view.ClusterView) -> bool:
        return wanted <= set(view.registered) and view.controller_id is not None

    def check() -> None:
        for i in sorted(wanted):
            ensure_alive(state, broker_key(i))

    remaining_s = max(0.0, deadline - time.monotonic())
    try:
        zk_view.wait_for(zookeeper_connect_of(spec), healthy, check, remaining_s)
    except TimeoutError as timeout:
        view = timeout.args[0] if timeout.args else None
        if view is None:
            why = "could not read the cluster from ZooKeeper"
        else:
            missing = sorted(wanted - set(view.registered))
            why = f"brokers not registered: {missing}; controller: {view.controller_id}"
        raise ClusterError(f"cluster not healthy within {HEALTH_TIMEOUT_S:.0f} s: {why}") from None


def _check_network(spec: ClusterSpec) -> None:
    if spec.network != "netns":
        return
    partitions.require_root("scripts/cluster up --network netns")
    why = netns.check_counts(spec.broker_count, spec.zookeeper_count)
    if why is not None:
        raise ClusterError(why)
    if spec.security != "plaintext":
        # The certificates name 127.0.0.1 and localhost only, and SASL's listeners too.
        raise ClusterError("--network netns runs plaintext listeners only (--security plaintext)")


def up(spec: ClusterSpec) -> None:
    directory = Path(spec.directory)
    _check_network(spec)
    _refuse_if_running(directory)
    java = zookeeper.check_java()
    installation = zookeeper.find_installation()
    impls = parse_impls(spec.impl, spec.broker_count)
    if "kafka" in impls:
        kafka_reference.reference_classpath()  # fail before starting anything
    if spec.network == "loopback":  # a namespace's address is the cluster's alone
        _check_ports_free(spec)
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    directory.mkdir(parents=True, exist_ok=True)
    client_config = _prepare_security(spec)
    if zk_sasl_material.enabled(spec.overrides):
        zk_sasl_material.write(directory)
    with state_lock(directory):
        state = _initial_state(spec, java, installation)
        save_state(directory, state)
    broker_keys, zookeeper_keys = keys_in_stop_order(state)
    if spec.network == "netns":
        partitions.create(spec)  # removes what it made if it fails
    try:
        for key in zookeeper_keys:
            launch(directory, key)
        state = load_state(directory)
        _wait_for_zookeepers(state, deadline)
        if spec.security in sasl_material.PROTOCOLS:
            sasl_material.write_admin_credentials(
                spec.zookeeper_connect, zk_sasl_material.enabled(spec.overrides)
            )
        remaining_keys = broker_keys
        if len(set(impls)) > 1:
            # The first broker up becomes the controller; in a mixed cluster, which
            # implementation that is matters, so it is broker 1's, deterministically.
            launch(directory, broker_keys[0])
            _wait_for_brokers(load_state(directory), deadline, [spec.broker_ids[0]])
            remaining_keys = broker_keys[1:]
        for key in remaining_keys:
            launch(directory, key)
        state = load_state(directory)
        _wait_for_brokers(state, deadline)
    except BaseException:
        state = load_state(directory)
        stop_processes(state, broker_keys)
        stop_processes(state, zookeeper_keys)
        if spec.network == "netns":
            partitions.destroy(spec)
        raise
    print(f"bootstrap.servers={spec.bootstrap_servers}")
    print(f"zookeeper.connect={spec.zookeeper_connect}")
    if client_config is not None:
        print(f"client.config={client_config}")


def _prepare_security(spec: ClusterSpec) -> Path | None:
    """TLS material (ssl, sasl_ssl) and client.properties; None for plaintext."""
    if spec.security == "plaintext":
        return None
    directory = Path(spec.directory)
    if spec.security in ("ssl", "sasl_ssl"):
        tls_material.make(directory, spec.broker_ids)
    if spec.security in sasl_material.PROTOCOLS:
        return sasl_material.write_client_properties(directory, spec.security)
    client_auth = spec.overrides.get("ssl.client.auth", "none")
    return tls_material.write_client_properties(directory, mutual=client_auth != "none")
