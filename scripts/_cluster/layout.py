"""Where everything of one cluster lives, which ports it uses, and its cluster.json state.

cluster.json is the single record `down`, `status`, `kill` and `start` work from: the
settings `up` was given and, per process, the exact command line, log file and pid.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import netns
from .errors import ClusterError

STATE_FILE_NAME = "cluster.json"
STATE_VERSION = 1
# Quorum and election ports sit this far above the client port base, away from both the
# client ports (Z..) and the broker ports (P..).
QUORUM_PORT_OFFSET = 1000
ELECTION_PORT_OFFSET = 2000
# Each broker's Prometheus endpoint: its port plus this (9192-9194 by default).
METRICS_PORT_OFFSET = 100


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """The settings `up` was run with."""

    directory: str
    broker_count: int
    zookeeper_count: int
    port_base: int
    zk_port_base: int
    overrides: dict[str, str] = field(default_factory=dict)
    # As `up --impl` was given: "ours" (this project's brokers), "kafka" (Apache Kafka 3.9
    # from `make reference`) or one of them per broker ("kafka,ours,ours"). What each broker
    # runs now is its ProcessRecord's `impl` (`start --impl` changes it).
    impl: str = "ours"
    # The client listeners' (and inter-broker) security: "plaintext", "ssl", "sasl_plaintext"
    # or "sasl_ssl".
    security: str = "plaintext"
    # "loopback" (every process on 127.0.0.1) or "netns" (each in a network namespace of its
    # own with its own address on a bridge: scripts/_cluster/netns.py).
    network: str = "loopback"
    # `up --racks N`: broker i gets broker.rack=rack-((i-1) mod N); 0 leaves racks unset.
    racks: int = 0

    def rack(self, broker_id: int) -> str | None:
        """The rack `--racks` gives broker `broker_id` (None without --racks)."""
        return f"rack-{(broker_id - 1) % self.racks}" if self.racks > 0 else None

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.broker_count + 1))

    def initial_impl(self, broker_id: int) -> str:
        """The implementation `up` started broker `broker_id` as."""
        return parse_impls(self.impl, self.broker_count)[broker_id - 1]

    @property
    def zookeeper_ids(self) -> list[int]:
        return list(range(1, self.zookeeper_count + 1))

    def broker_host(self, broker_id: int) -> str:
        """The address broker `broker_id` listens on (and clients reach it at)."""
        if self.network == "netns":
            return netns.node_address(self.port_base, broker_key(broker_id))
        return "127.0.0.1"

    def zookeeper_host(self, server_id: int) -> str:
        if self.network == "netns":
            return netns.node_address(self.port_base, zookeeper_key(server_id))
        return "127.0.0.1"

    def broker_port(self, broker_id: int) -> int:
        return self.port_base + broker_id - 1

    def metrics_port(self, broker_id: int) -> int:
        return self.broker_port(broker_id) + METRICS_PORT_OFFSET

    def zookeeper_client_port(self, server_id: int) -> int:
        return self.zk_port_base + server_id - 1

    def zookeeper_quorum_port(self, server_id: int) -> int:
        return self.zk_port_base + QUORUM_PORT_OFFSET + server_id - 1

    def zookeeper_election_port(self, server_id: int) -> int:
        return self.zk_port_base + ELECTION_PORT_OFFSET + server_id - 1

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{self.broker_host(i)}:{self.broker_port(i)}" for i in self.broker_ids)

    @property
    def zookeeper_connect(self) -> str:
        return ",".join(
            f"{self.zookeeper_host(n)}:{self.zookeeper_client_port(n)}" for n in self.zookeeper_ids
        )

    def all_ports(self) -> list[int]:
        ports = [self.broker_port(i) for i in self.broker_ids]
        ports += [self.metrics_port(i) for i in self.broker_ids if self.initial_impl(i) == "ours"]
        for n in self.zookeeper_ids:
            ports.append(self.zookeeper_client_port(n))
            if self.zookeeper_count > 1:
                ports.append(self.zookeeper_quorum_port(n))
                ports.append(self.zookeeper_election_port(n))
        return ports


@dataclass(slots=True)
class ProcessRecord:
    """How to (re)start one process and which pid it had last."""

    command: list[str]
    log_path: str
    cwd: str
    pid: int | None = None
    # /proc start time of `pid`, so a recycled pid is not mistaken for our process.
    start_ticks: int | None = None
    # Set in the process's environment on top of the launcher's (e.g. KAFKA_OPTS).
    env: dict[str, str] = field(default_factory=dict)
    # Brokers only: the implementation the command runs, "ours" or "kafka" (None in a
    # cluster.json written before mixed clusters: then the spec's `impl` says).
    impl: str | None = None
    # Brokers only: [local time "YYYY-mm-dd HH:MM:SS,mmm", implementation] each time the
    # broker was launched as another implementation than before, so that `events` can name
    # the implementation that wrote each state-change.log line.
    impl_history: list[list[str]] = field(default_factory=list)
    # `--network netns`: the network namespace the process runs in (`ip netns exec`).
    netns: str | None = None


@dataclass(slots=True)
class ClusterState:
    spec: ClusterSpec
    processes: dict[str, ProcessRecord] = field(default_factory=dict)
    # `--network netns`: the links `cut` blackholed, [FROM, TO] each (FROM drops what it sends
    # to TO), in the order they were cut.
    cut_links: list[list[str]] = field(default_factory=list)

    def broker_impl(self, broker_id: int) -> str:
        """What broker `broker_id` runs (or ran last): "ours" or "kafka"."""
        record = self.processes[broker_key(broker_id)]
        return record.impl or self.spec.initial_impl(broker_id)

    def impls_ever_run(self) -> set[str]:
        """Every implementation any broker of the cluster has run."""
        found = {self.broker_impl(i) for i in self.spec.broker_ids}
        for i in self.spec.broker_ids:
            found.update(impl for _, impl in self.processes[broker_key(i)].impl_history)
        return found


IMPLEMENTATIONS = ("ours", "kafka")


def parse_impls(text: str, broker_count: int) -> list[str]:
    """`--impl`: "ours" or "kafka" for every broker, or a comma list with one implementation
    per broker, broker 1 first ("kafka,ours,ours")."""
    names = [name.strip() for name in text.split(",")]
    unknown = sorted({name for name in names if name not in IMPLEMENTATIONS})
    if unknown:
        raise ClusterError(
            f"--impl {text!r}: unknown implementation {', '.join(map(repr, unknown))}"
            f" (choose from {', '.join(IMPLEMENTATIONS)})"
        )
    if len(names) == 1:
        return names * broker_count
    if len(names) != broker_count:
        raise ClusterError(
            f"--impl {text!r} names {len(names)} implementations for {broker_count} brokers;"
            " give one per broker (broker 1 first) or a single one for all"
        )
    return names


def broker_key(broker_id: int) -> str:
    return f"broker-{broker_id}"


def zookeeper_key(server_id: int) -> str:
    return f"zookeeper-{server_id}"


def broker_dir(directory: Path, broker_id: int) -> Path:
    return directory / broker_key(broker_id)


def zookeeper_dir(directory: Path, server_id: int) -> Path:
    return directory / zookeeper_key(server_id)


def state_path(directory: Path) -> Path:
    return directory / STATE_FILE_NAME


def is_cluster_dir(directory: Path) -> bool:
    return state_path(directory).is_file()


def load_state(directory: Path) -> ClusterState:
    path = state_path(directory)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise ClusterError(f"no cluster in {directory} (missing {STATE_FILE_NAME})") from None
    except json.JSONDecodeError as error:
        raise ClusterError(f"{path} is not valid JSON: {error}") from None
    if raw.get("version") != STATE_VERSION:
        raise ClusterError(f"{path} has unsupported version {raw.get('version')!r}")
    spec = ClusterSpec(**raw["spec"])
    processes = {key: ProcessRecord(**value) for key, value in raw["processes"].items()}
    cut_links = [list(link) for link in raw.get("cut_links", [])]
    return ClusterState(spec=spec, processes=processes, cut_links=cut_links)


def save_state(directory: Path, state: ClusterState) -> None:
    """Write atomically: a crash mid-write must not lose the pids of running processes."""
    payload = {
        "version": STATE_VERSION,
        "spec": asdict(state.spec),
        "processes": {key: asdict(record) for key, record in state.processes.items()},
        "cut_links": state.cut_links,
    }
    path = state_path(directory)
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    os.replace(temporary, path)


@contextlib.contextmanager
def state_lock(directory: Path) -> Iterator[None]:
    """Serialise read-modify-write of cluster.json between concurrent launcher runs."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".cluster.lock", "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)
