"""The cluster under test, as scripts/cluster left it: addresses and data directories from
cluster.json and each broker's server.properties, and signals sent through the launcher.

Faults go through `scripts/cluster kill/start` (CLUSTER_CONTRACT.md) rather than raw pids, so
the launcher's record of every process stays right and `start` waits for what it always waits
for (a broker's stale registration to expire, then its new one). `start` without `--impl`
relaunches a broker as the implementation it ran last, so a mixed cluster (`up --impl
kafka,kafka,ours`) keeps its mix through every fault.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from _cluster import netns

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = ROOT / "scripts" / "cluster"
# `start` waits up to the session timeout plus margins, then up to 60 s for registration.
LAUNCHER_TIMEOUT_S = 240.0
DEFAULT_SESSION_TIMEOUT_MS = 18000


class LauncherError(Exception):
    """A scripts/cluster command failed; the message holds its output."""


@dataclass(frozen=True, slots=True)
class Cluster:
    directory: Path
    broker_ids: list[int]
    zookeeper_ids: list[int]
    bootstrap: str
    zookeeper_connect: str
    overrides: dict[str, str]
    # Broker id -> "ours" or "kafka" (Apache Kafka 3.9), as cluster.json records it.
    impls: dict[int, str]
    # `up --network`: "loopback", or "netns" (each node at its own address; cuts possible).
    network: str = "loopback"

    @property
    def session_timeout_s(self) -> float:
        timeout_ms = self.overrides.get("zookeeper.session.timeout.ms")
        return int(timeout_ms or DEFAULT_SESSION_TIMEOUT_MS) / 1000

    def log_dirs(self, broker_id: int) -> list[Path]:
        """The broker's `log.dirs` (or `log.dir`), read from the properties it runs with."""
        properties = _read_properties(self.directory / f"broker-{broker_id}" / "server.properties")
        value = properties.get("log.dirs") or properties.get("log.dir") or ""
        return [Path(entry.strip()) for entry in value.split(",") if entry.strip()]


def _read_properties(path: Path) -> dict[str, str]:
    properties: dict[str, str] = {}
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "!")) and "=" in stripped:
            key, _, value = stripped.partition("=")
            properties[key.strip()] = value.strip()
    return properties


def load_cluster(directory: Path) -> Cluster:
    path = directory / "cluster.json"
    try:
        state = json.loads(path.read_text())
        spec = state["spec"]
    except (OSError, ValueError, KeyError) as error:
        raise SystemExit(f"chaos: no usable cluster.json in {directory}: {error}") from None
    port_base, zk_port_base = int(spec["port_base"]), int(spec["zk_port_base"])
    broker_ids = list(range(1, int(spec["broker_count"]) + 1))
    zookeeper_ids = list(range(1, int(spec["zookeeper_count"]) + 1))
    overrides = {str(k): str(v) for k, v in dict(spec.get("overrides") or {}).items()}
    network = str(spec.get("network", "loopback"))

    def host(key: str) -> str:
        return netns.node_address(port_base, key) if network == "netns" else "127.0.0.1"

    bootstrap = ",".join(f"{host(f'broker-{i}')}:{port_base + i - 1}" for i in broker_ids)
    default_connect = ",".join(
        f"{host(f'zookeeper-{n}')}:{zk_port_base + n - 1}" for n in zookeeper_ids
    )
    # A zookeeper.connect override (e.g. with a chroot) is what the brokers really use.
    connect = overrides.get("zookeeper.connect", default_connect)
    processes = dict(state.get("processes") or {})
    impls = {
        i: str(dict(processes.get(f"broker-{i}") or {}).get("impl", "ours")) for i in broker_ids
    }
    return Cluster(
        directory, broker_ids, zookeeper_ids, bootstrap, connect, overrides, impls, network
    )


def describe_broker(cluster: Cluster, broker_id: int, role: str) -> str:
    """ "broker 2 (controller)"; in a mixed cluster "broker 2 (kafka, controller)"."""
    if len(set(cluster.impls.values())) > 1:
        role = f"{cluster.impls.get(broker_id, 'ours')}, {role}"
    return f"broker {broker_id} ({role})"


def launcher(cluster: Cluster, *args: str) -> None:
    """Run one scripts/cluster command on `cluster`; raise LauncherError if it fails."""
    command = [str(CLUSTER_SCRIPT), *args, "--dir", str(cluster.directory)]
    try:
        result = subprocess.run(
            command,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=LAUNCHER_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise LauncherError(f"{' '.join(args)}: no answer in {LAUNCHER_TIMEOUT_S:.0f} s") from None
    if result.returncode != 0:
        output = (result.stderr or result.stdout).strip()
        raise LauncherError(f"{' '.join(args)} exited {result.returncode}: {output}")


def target_args(role: str, number: int) -> list[str]:
    return ["--zookeeper" if role == "zookeeper" else "--broker", str(number)]


def send_signal(cluster: Cluster, role: str, number: int, signal_name: str) -> None:
    launcher(cluster, "kill", *target_args(role, number), "--signal", signal_name)


def start(cluster: Cluster, role: str, number: int) -> None:
    launcher(cluster, "start", *target_args(role, number))
