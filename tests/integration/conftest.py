"""Integration fixtures: real ZooKeeper and broker processes driven through scripts/cluster.

Tests never import the launcher; they run it as a subprocess, exactly as a person would.

- `cluster`: 3 brokers, 1 ZooKeeper server, shared by the modules of one xdist worker; a module
  marked `own_cluster` gets one of its own (see the fixture). Every cluster's ports are
  reserved machine-wide (scripts/_cluster/ports.py), so no other worker or session takes them.
- `make_cluster(**options)`: a factory for tests that need their own cluster (destructive
  tests, other sizes). Options are `up` flags: brokers=1, zookeepers=3,
  overrides={"min.insync.replicas": "2"}.
- `zk` (module scope): a kazoo client on `cluster`'s ZooKeeper; `zk_session(handle)` is the
  same as a context manager, for any cluster.

Every cluster is SIGKILLed and removed (`down --wipe`) at teardown. When a test fails, the tail
of every broker log (and ZooKeeper log) of the clusters it used is attached to its report.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from scripts._cluster import netns
from scripts._cluster.ports import ClusterPorts, reserve_cluster_ports
from scripts._cluster.processes import is_alive, send_signal

REPO_ROOT = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = REPO_ROOT / "scripts" / "cluster"
UP_TIMEOUT_S = 120.0
COMMAND_TIMEOUT_S = 120.0
LOG_TAIL_LINES = 40
OWN_CLUSTER_MARKER = "own_cluster"
# Written only by tests that change the whole cluster (dynamic broker configs, quotas and
# SCRAM users, ACLs, a partition reassignment): a shared cluster must have none of them.
DAMAGE_ZNODES = ("/config/brokers", "/config/users", "/config/clients")
ACL_ZNODE = "/kafka-acl"
REASSIGNMENT_ZNODE = "/admin/reassign_partitions"
# Every new group on the shared cluster would wait out Kafka's default 3 s before its first
# rebalance; no module sharing it checks that delay.
SHARED_CLUSTER_OVERRIDES = {"group.initial.rebalance.delay.ms": "0"}


def wait_until(
    condition: Callable[[], bool], timeout_s: float, what: str | Callable[[], str]
) -> None:
    """Poll `condition` until true; fail the test with `what` after `timeout_s` (a callable
    `what` describes the state at that moment)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() >= deadline:
            described = what() if callable(what) else what
            pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {described}")
        time.sleep(0.1)


# Ports held for the life of the worker by callers of `pick_port_bases`, which returns bare
# numbers (a reservation dropped at once would free its ports at once).
_HELD_FOR_THE_SESSION: list[ClusterPorts] = []


def pick_port_bases(broker_count: int, zookeeper_count: int) -> tuple[int, int]:
    """Port bases for a cluster started by hand, reserved until this worker exits. Prefer
    `reserve_cluster_ports` (released when done) or `start_cluster`."""
    ports = reserve_cluster_ports(broker_count, zookeeper_count)
    _HELD_FOR_THE_SESSION.append(ports)
    return ports.port_base, ports.zk_port_base


def run_cluster_command(
    *args: str, timeout_s: float = COMMAND_TIMEOUT_S, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CLUSTER_SCRIPT), *args],
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        check=False,
    )


@dataclass(frozen=True)
class ProcessStatus:
    pid: int | None
    alive: bool
    registered: bool | None = None  # brokers only; None when ZooKeeper was unreachable
    mode: str | None = None  # ZooKeeper servers only


@dataclass(frozen=True)
class ClusterStatus:
    brokers: dict[int, ProcessStatus]
    zookeepers: dict[int, ProcessStatus]
    controller_id: int | None
    controller_epoch: int | None
    text: str


_STATUS_LINE = re.compile(r"^(broker|zookeeper|controller)\b(.*)$")


def _fields(rest: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in rest.split() if "=" in item)


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text is not None and text.lstrip("-").isdigit() else None


def parse_status(text: str) -> ClusterStatus:
    """Parse `scripts/cluster status` output: `broker <id> pid= alive= registered=`,
    `zookeeper <n> pid= alive= mode=`, `controller id= epoch=`."""
    brokers: dict[int, ProcessStatus] = {}
    zookeepers: dict[int, ProcessStatus] = {}
    controller: dict[str, str] = {}
    for line in text.splitlines():
        match = _STATUS_LINE.match(line.strip())
        if match is None:
            continue
        kind, rest = match.groups()
        if kind == "controller":
            controller = _fields(rest)
            continue
        number_text, _, rest = rest.strip().partition(" ")
        values = _fields(rest)
        registered = values.get("registered")
        process = ProcessStatus(
            pid=_int_or_none(values.get("pid")),
            alive=values.get("alive") == "yes",
            registered=None if registered in (None, "unknown") else registered == "yes",
            mode=values.get("mode"),
        )
        (brokers if kind == "broker" else zookeepers)[int(number_text)] = process
    return ClusterStatus(
        brokers=brokers,
        zookeepers=zookeepers,
        controller_id=_int_or_none(controller.get("id")),
        controller_epoch=_int_or_none(controller.get("epoch")),
        text=text,
    )


@dataclass
class ClusterHandle:
    """One cluster started by scripts/cluster, and the operations tests need on it."""

    dir: Path
    broker_count: int
    zookeeper_count: int
    port_base: int
    zk_port_base: int
    up_stdout: str = ""
    stopped: bool = field(default=False)
    # Every port of the cluster, reserved machine-wide until it is wiped (see ports.py).
    ports: ClusterPorts | None = None
    # `up --network`: loopback, or netns (each node at its own address, scripts/_cluster/netns.py).
    network: str = "loopback"

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.broker_count + 1))

    def broker_port(self, broker_id: int) -> int:
        return self.port_base + broker_id - 1

    def host_of(self, key: str) -> str:
        """Where node `key` ("broker-2", "zookeeper-1") is reached."""
        if self.network == "netns":
            return netns.node_address(self.port_base, key)
        return "127.0.0.1"

    @property
    def bootstrap(self) -> str:
        return ",".join(
            f"{self.host_of(f'broker-{i}')}:{self.broker_port(i)}" for i in self.broker_ids
        )

    @property
    def zk_connect(self) -> str:
        return ",".join(
            f"{self.host_of(f'zookeeper-{n + 1}')}:{self.zk_port_base + n}"
            for n in range(self.zookeeper_count)
        )

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = run_cluster_command(*args, "--dir", str(self.dir))
        if check and result.returncode != 0:
            pytest.fail(
                f"scripts/cluster {' '.join(args)} exited {result.returncode}\n"
                f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}\n{self.log_tails()}"
            )
        return result

    def kill(self, broker_id: int, signal: str = "TERM") -> None:
        self.run("kill", "--broker", str(broker_id), "--signal", signal)

    def start(self, broker_id: int) -> None:
        self.run("start", "--broker", str(broker_id))

    def kill_zookeeper(self, server_id: int, signal: str = "TERM") -> None:
        self.run("kill", "--zookeeper", str(server_id), "--signal", signal)

    def start_zookeeper(self, server_id: int) -> None:
        self.run("start", "--zookeeper", str(server_id))

    def status(self) -> ClusterStatus:
        return parse_status(self.run("status").stdout)

    def broker_alive(self, broker_id: int) -> bool:
        """`status`'s alive=yes (the recorded process runs), read from cluster.json here: for
        polling, as each `status` is a Python start-up and a ZooKeeper session."""
        record = json.loads((self.dir / "cluster.json").read_text())["processes"][
            f"broker-{broker_id}"
        ]
        return is_alive(record.get("pid"), record.get("start_ticks"))

    def down(self, wipe: bool = True) -> subprocess.CompletedProcess[str]:
        result = self.run("down", *(["--wipe"] if wipe else []), check=False)
        self.stopped = wipe and result.returncode == 0
        if self.stopped:
            self.release_ports()
        return result

    def release_ports(self) -> None:
        if self.ports is not None:
            self.ports.release()

    def tear_down(self) -> None:
        """SIGKILL every process, then `down --wipe` (which finds them gone) and release the
        ports: at a fixture's teardown nothing reads the cluster again, and a clean stop cost
        a Kafka 3.9 cluster 12 s and 3 s of CPU (controlled shutdowns, JVM exits). Tests of
        `down` itself call `down`."""
        state = self.dir / "cluster.json"
        with contextlib.suppress(OSError, ValueError, KeyError):
            for record in json.loads(state.read_text())["processes"].values():
                pid, start_ticks = record.get("pid"), record.get("start_ticks")
                if is_alive(pid, start_ticks):
                    send_signal(pid, signal.SIGKILL)
        if self.dir.exists():
            self.down()
        self.release_ports()

    def broker_log(self, broker_id: int) -> Path:
        return self.dir / f"broker-{broker_id}" / "broker.log"

    def zookeeper_log(self, server_id: int) -> Path:
        return self.dir / f"zookeeper-{server_id}" / "zookeeper.log"

    def log_tails(self, line_count: int = LOG_TAIL_LINES) -> str:
        logs = [self.broker_log(i) for i in self.broker_ids]
        logs += [self.zookeeper_log(n) for n in range(1, self.zookeeper_count + 1)]
        sections = []
        for path in logs:
            if path.exists():
                lines = path.read_text(errors="replace").splitlines()[-line_count:]
                sections.append(f"----- {path} (last {len(lines)} lines)\n" + "\n".join(lines))
        return "\n".join(sections)


def start_cluster(
    directory: Path,
    brokers: int = 3,
    zookeepers: int = 1,
    overrides: dict[str, str] | None = None,
    impl: str = "ours",
    security: str = "plaintext",
    network: str = "loopback",
    racks: int = 0,
) -> ClusterHandle:
    """`scripts/cluster up` on free ports; fails the test (with logs) if it does not come up.
    `impl="kafka"` starts Apache Kafka 3.9 (`make reference`) instead of our brokers;
    `security="ssl"` makes every listener TLS (`up --security`); `racks` > 0 spreads the
    brokers over that many racks (`up --racks`)."""
    ports = reserve_cluster_ports(brokers, zookeepers)
    port_base, zk_port_base = ports.port_base, ports.zk_port_base
    handle = ClusterHandle(
        directory, brokers, zookeepers, port_base, zk_port_base, ports=ports, network=network
    )
    args = ["up", "--dir", str(directory), "--brokers", str(brokers), "--network", network]
    args += ["--zookeepers", str(zookeepers), "--port-base", str(port_base)]
    args += ["--zk-port-base", str(zk_port_base), "--impl", impl, "--security", security]
    for key, value in (overrides or {}).items():
        args += ["--set", f"{key}={value}"]
    if racks > 0:
        args += ["--racks", str(racks)]
    result = run_cluster_command(*args, timeout_s=UP_TIMEOUT_S)
    if result.returncode != 0:
        details = handle.log_tails()
        handle.down()
        handle.release_ports()
        pytest.fail(
            f"scripts/cluster up exited {result.returncode}\nstderr:\n{result.stderr}\n{details}"
        )
    handle.up_stdout = result.stdout
    if "kafka" in impl and network == "loopback":
        # `up` returns once every broker is registered; a Kafka broker opens its listeners
        # only after registering, so a client connecting at once could be refused.
        for port in map(handle.broker_port, handle.broker_ids):
            wait_until(
                _accepting(port),
                UP_TIMEOUT_S,
                f"the broker on port {port} of {directory} to accept connections",
            )
    return handle


def _accepting(port: int) -> Callable[[], bool]:
    def accepts() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
        except OSError:
            return False
        return True

    return accepts


class ClusterFactory:
    """Callable behind `make_cluster`; remembers its clusters for teardown and failure logs."""

    def __init__(self, base_dir: Path) -> None:
        self.base_dir = base_dir
        self.handles: list[ClusterHandle] = []

    def __call__(
        self,
        brokers: int = 3,
        zookeepers: int = 1,
        overrides: dict[str, str] | None = None,
        impl: str = "ours",
        security: str = "plaintext",
        racks: int = 0,
    ) -> ClusterHandle:
        directory = self.base_dir / f"cluster-{len(self.handles) + 1}"
        handle = ClusterHandle(directory, brokers, zookeepers, 0, 0)
        self.handles.append(handle)  # before `up`, so a half-started cluster is torn down too
        started = start_cluster(
            directory, brokers, zookeepers, overrides, impl, security, racks=racks
        )
        self.handles[-1] = started
        return started

    def tear_down(self) -> None:
        for handle in self.handles:
            handle.tear_down()
        _remove_if_empty(self.base_dir)


def _short_tmp_dir(prefix: str) -> Path:
    # pytest's tmp_path can be long; keep cluster paths short and readable in logs.
    return Path(tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("CLUSTER_TEST_TMP")))


def _remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):
        directory.rmdir()


def _process_ids(handle: ClusterHandle) -> dict[str, int | None]:
    state = json.loads((handle.dir / "cluster.json").read_text())
    return {name: record.get("pid") for name, record in state["processes"].items()}


def _running(pid: int | None) -> bool:
    """Alive and not stopped (SIGSTOP) or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, TypeError):
        return False
    return stat.rpartition(")")[2].split()[0] not in ("T", "t", "Z", "X")


def _damage(handle: ClusterHandle, process_ids: dict[str, int | None]) -> str | None:
    """What a module changed that the next module would notice, or None."""
    now = _process_ids(handle)
    if now != process_ids:
        return f"processes restarted: {process_ids} -> {now}"
    stopped = sorted(name for name, pid in now.items() if not _running(pid))
    if stopped:
        return f"not running: {', '.join(stopped)}"
    with zk_session(handle) as client:
        for path in DAMAGE_ZNODES:
            if client.exists(path) is not None and client.get_children(path):
                return f"{path} is not empty: {client.get_children(path)}"
        for resource_type in _children(client, ACL_ZNODE):
            if _children(client, f"{ACL_ZNODE}/{resource_type}"):
                return f"ACLs left on {resource_type}"
        if client.exists(REASSIGNMENT_ZNODE) is not None:
            return "a partition reassignment in progress"
    return None


def _children(client: KazooClient, path: str) -> list[str]:
    return list(client.get_children(path)) if client.exists(path) is not None else []


class SharedCluster:
    """The cluster of one xdist worker (or of a run without xdist), started on first use and
    replaced when a module left it damaged."""

    def __init__(self) -> None:
        self.handle: ClusterHandle | None = None

    def get(self) -> ClusterHandle:
        if self.handle is None:
            directory = _short_tmp_dir("shared-") / "cluster"
            self.handle = start_cluster(directory, overrides=SHARED_CLUSTER_OVERRIDES)
        return self.handle

    def discard(self) -> None:
        if self.handle is not None:
            self.handle.tear_down()
            _remove_if_empty(self.handle.dir.parent)
            self.handle = None


@pytest.fixture(scope="session")
def shared_cluster() -> Iterator[SharedCluster]:
    shared = SharedCluster()
    try:
        yield shared
    finally:
        shared.discard()


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[ClusterHandle]:
    """3 brokers + 1 ZooKeeper server. Shared by every module of an xdist worker, unless the
    module is marked `own_cluster` (`pytestmark = pytest.mark.own_cluster`): a module that kills
    or stops brokers, changes broker configs, writes ZooKeeper behind the brokers' back, or
    needs the cluster as it was started (`own_cluster(overrides={...})` starts it with those
    broker configs). A module sharing it names its topics, groups and transactional ids after
    itself. Whether it left the cluster as it found it is checked after each module
    (processes, dynamic broker configs, ACLs, quotas); a module that did not fails, and the
    next module gets a new cluster."""
    # Spark's modules, in a pytest of their own (Makefile), share that session's cluster: each
    # names its topics uniquely and kills brokers only of clusters of its own (make_cluster).
    own = request.node.get_closest_marker(OWN_CLUSTER_MARKER)
    if own is not None:
        directory = _short_tmp_dir("cluster-") / "cluster"
        handle = start_cluster(directory, overrides=own.kwargs.get("overrides"))
        try:
            yield handle
        finally:
            handle.tear_down()
            _remove_if_empty(directory.parent)
        return
    shared: SharedCluster = request.getfixturevalue("shared_cluster")
    handle = shared.get()
    process_ids = _process_ids(handle)
    yield handle
    damage = _damage(handle, process_ids)
    if damage is not None:
        shared.discard()
        pytest.fail(
            f"{request.node.nodeid} left the shared cluster changed ({damage}); "
            "mark it own_cluster (tests/integration/conftest.py)"
        )


@contextlib.contextmanager
def zk_session(cluster: ClusterHandle) -> Iterator[KazooClient]:
    """A kazoo client connected to the cluster's ZooKeeper, stopped and closed on exit."""
    client = KazooClient(hosts=cluster.zk_connect)
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture(scope="module")
def zk(cluster: ClusterHandle) -> Iterator[KazooClient]:
    with zk_session(cluster) as client:
        yield client


def _cluster_factory() -> Iterator[ClusterFactory]:
    factory = ClusterFactory(_short_tmp_dir("clusters-"))
    try:
        yield factory
    finally:
        factory.tear_down()


make_cluster = pytest.fixture(_cluster_factory, name="make_cluster")
# Like `make_cluster`, for clusters shared by the tests of one module.
make_cluster_module = pytest.fixture(_cluster_factory, scope="module", name="make_cluster_module")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[Any]
) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    funcargs = getattr(item, "funcargs", {})
    handles: list[ClusterHandle] = []
    if isinstance(funcargs.get("cluster"), ClusterHandle):
        handles.append(funcargs["cluster"])
    for name in ("make_cluster", "make_cluster_module"):
        if isinstance(funcargs.get(name), ClusterFactory):
            handles.extend(funcargs[name].handles)
    for handle in handles:
        tails = handle.log_tails()
        if tails:
            report.sections.append((f"cluster logs ({handle.dir})", tails))
