"""`--network netns` at work: create and remove a cluster's namespaces and bridge, and `cut` /
`heal` network partitions with blackhole routes (names and commands: netns.py)."""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import netns
from .errors import ClusterError, NeedsRoot
from .layout import (
    ClusterSpec,
    ClusterState,
    broker_key,
    load_state,
    save_state,
    state_lock,
    zookeeper_key,
)

BRIDGE_NF_CALL_IPTABLES = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
IPTABLES_NAMES = Path("/proc/net/ip_tables_names")
PROC_MODULES = Path("/proc/modules")
COMMAND_TIMEOUT_S = 10.0


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise NeedsRoot(
            f"{what} needs root (network namespaces, veths and routes are made with `ip`); "
            "run it as root, e.g. with sudo"
        )


def node_keys(spec: ClusterSpec) -> list[str]:
    return [zookeeper_key(n) for n in spec.zookeeper_ids] + [broker_key(i) for i in spec.broker_ids]


def _run(command: list[str]) -> None:
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        raise ClusterError(f"`{command[0]}` not found (iproute2 is needed)") from None
    if result.returncode != 0:
        raise ClusterError(f"`{' '.join(command)}` failed: {result.stderr.strip()}")


def _run_ignoring_errors(command: list[str]) -> None:
    subprocess.run(command, capture_output=True, timeout=COMMAND_TIMEOUT_S, check=False)


def _check_free(spec: ClusterSpec) -> None:
    """The bridge's name and subnet must be this cluster's alone."""
    bridge = netns.bridge_name(spec.port_base)
    if Path(f"/sys/class/net/{bridge}").exists():
        raise ClusterError(
            f"network bridge {bridge} exists: another --network netns cluster runs on port base "
            f"{spec.port_base}, or one was not taken down (`scripts/cluster down --dir` it, or "
            f"`ip link delete {bridge}` and `ip netns delete` its pk{spec.port_base}-* "
            "namespaces); or choose another --port-base"
        )
    subnet = netns.subnet(spec.port_base)
    routes = subprocess.run(
        ["ip", "-4", "route", "show"], capture_output=True, text=True, check=False
    ).stdout
    for line in routes.splitlines():
        destination = line.split()[0] if line.split() else ""
        try:
            network = ipaddress.IPv4Network(destination, strict=False)
        except ValueError:
            continue  # "default", "blackhole", ...
        if network.overlaps(subnet):
            raise ClusterError(
                f"the subnet of port base {spec.port_base}, {subnet}, overlaps a route of this "
                f"host ({line.strip()}); choose another --port-base"
            )


def bridge_filtered() -> bool:
    """Whether frames the bridge forwards between two namespaces pass iptables' FORWARD chain:
    only when br_netfilter is loaded with bridge-nf-call-iptables=1 and a firewall table
    exists (Docker's engine sets that chain's policy to DROP). Without br_netfilter, bridged
    frames never reach iptables."""
    try:
        if BRIDGE_NF_CALL_IPTABLES.read_text().strip() != "1":
            return False
    except OSError:
        return False
    try:
        if IPTABLES_NAMES.read_text().strip():
            return True
    except OSError:
        pass
    try:
        return any(line.startswith("nf_tables ") for line in PROC_MODULES.read_text().splitlines())
    except OSError:
        return False


def _forward_rule(bridge: str, verb: str) -> list[str]:
    return ["iptables", verb, "FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT"]


def _accept_bridged(bridge: str) -> None:
    if not bridge_filtered():
        return
    if shutil.which("iptables") is not None:
        _run(_forward_rule(bridge, "-I"))
        return
    print(
        f"scripts/cluster: bridged traffic passes iptables' FORWARD chain here (br_netfilter "
        f"loaded); if its policy is DROP (Docker), the nodes cannot reach each other until "
        f"it accepts the bridge: {' '.join(_forward_rule(bridge, '-I'))}",
        file=sys.stderr,
    )


def create(spec: ClusterSpec) -> None:
    """The bridge with the host's address, and each node's namespace on it; on failure, what
    was made is removed again."""
    _check_free(spec)
    try:
        for command in netns.bridge_commands(spec.port_base):
            _run(command)
        for key in node_keys(spec):
            for command in netns.node_commands(spec.port_base, key):
                _run(command)
        _accept_bridged(netns.bridge_name(spec.port_base))
    except BaseException:
        destroy(spec)
        raise


def destroy(spec: ClusterSpec) -> None:
    """Remove the namespaces (with their veths and routes) and the bridge; what is already
    gone is skipped."""
    for command in netns.teardown_commands(spec.port_base, node_keys(spec)):
        _run_ignoring_errors(command)
    if shutil.which("iptables") is not None:
        _run_ignoring_errors(_forward_rule(netns.bridge_name(spec.port_base), "-D"))


def _require_netns(state: ClusterState, command: str) -> None:
    if state.spec.network != "netns":
        raise ClusterError(
            f"`{command}` needs a cluster started with `up --network netns`; "
            f"this one runs on {state.spec.network}"
        )
    require_root(f"scripts/cluster {command}")


def _target(state: ClusterState, broker_id: int | None, server_id: int | None) -> str | None:
    if broker_id is not None:
        if broker_id not in state.spec.broker_ids:
            raise ClusterError(f"no broker {broker_id} (brokers are {state.spec.broker_ids})")
        return broker_key(broker_id)
    if server_id is not None:
        if server_id not in state.spec.zookeeper_ids:
            raise ClusterError(
                f"no ZooKeeper server {server_id} (servers are {state.spec.zookeeper_ids})"
            )
        return zookeeper_key(server_id)
    return None


def cut(
    directory: Path,
    broker_id: int | None,
    server_id: int | None,
    from_spec: str,
    one_way: bool,
) -> None:
    with state_lock(directory):
        state = load_state(directory)
        _require_netns(state, "cut")
        target = _target(state, broker_id, server_id)
        if target is None:
            raise ClusterError("name a broker (--broker ID) or a ZooKeeper server (--zookeeper N)")
        spec = state.spec
        try:
            peers = netns.cut_peers(target, from_spec, spec.broker_ids, spec.zookeeper_ids)
        except ValueError as error:
            raise ClusterError(str(error)) from None
        existing = {(link[0], link[1]) for link in state.cut_links}
        added = []
        for link in netns.cut_links(target, peers, one_way):
            if link in existing:
                continue
            _run(netns.route_command(spec.port_base, link, add=True))
            state.cut_links.append(list(link))
            existing.add(link)
            added.append(link)
            save_state(directory, state)  # every route made is on record, even if one fails
    direction = "one way: what it sends is dropped" if one_way else "both ways"
    print(f"cut {target} from {', '.join(peers)} ({direction}); {len(added)} new link(s) cut")


def heal(directory: Path, broker_id: int | None, server_id: int | None) -> None:
    with state_lock(directory):
        state = load_state(directory)
        _require_netns(state, "heal")
        key = _target(state, broker_id, server_id)
        links = [(link[0], link[1]) for link in state.cut_links]
        for link in netns.links_touching(links, key):
            command = netns.route_command(state.spec.port_base, link, add=False)
            _run_ignoring_errors(command)  # a namespace remade by `up` has no old routes
            state.cut_links.remove(list(link))
            save_state(directory, state)
    print(f"healed {key or 'every cut'}; links still cut: {len(state.cut_links)}")


def describe_links(state: ClusterState) -> list[str]:
    """`status`'s lines for the cut links, FROM -> TO (FROM's packets to TO are dropped)."""
    return [f"cut from={source} to={target}" for source, target in state.cut_links]
