"""Differential tests: the same scenario against Apache Kafka 3.9 and against our brokers.

`reference_lib` runs `make reference` once (Maven, offline after the first fetch; a file lock
keeps parallel test workers from fetching twice). `kafka_cluster` and `our_cluster` are
3-broker clusters, each on its own ZooKeeper, shared by the tests of one module.
`one_broker` gives a one-broker cluster of either kind shared by every module of the worker
that uses it (tests/conftest.py puts those modules on one worker). Tests here are marked
`integration` and `reference` by their directory (tests/conftest.py).
"""

from __future__ import annotations

import fcntl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import (
    ClusterFactory,
    ClusterHandle,
    _damage,
    _process_ids,
    _remove_if_empty,
    _short_tmp_dir,
    make_cluster,
    make_cluster_module,
    pytest_runtest_makereport,
    start_cluster,
)

# Fixtures and the failure-log hook of the integration tests, shared here.
__all__ = ["make_cluster", "make_cluster_module", "pytest_runtest_makereport"]

REPO_ROOT = Path(__file__).resolve().parents[2]
REFERENCE_LIB = REPO_ROOT / "reference" / "lib"
MAKE_REFERENCE_TIMEOUT_S = 900.0


@pytest.fixture(scope="session")
def reference_lib() -> Path:
    """Apache Kafka 3.9's jars, fetched by `make reference` if they are not there yet."""
    REFERENCE_LIB.parent.mkdir(exist_ok=True)
    with open(REFERENCE_LIB.parent / ".make-reference.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(
            ["make", "--no-print-directory", "reference"],
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=MAKE_REFERENCE_TIMEOUT_S,
            check=False,
        )
    if result.returncode != 0:
        pytest.fail(
            "`make reference` failed, so Apache Kafka 3.9 is missing (needs mvn and Maven "
            f"Central):\n{result.stdout}\n{result.stderr}"
        )
    return REFERENCE_LIB


# A SIGKILLed broker's registration lasts until its ZooKeeper session expires, and `start`
# waits it out: 6 s instead of Kafka's default 18 s.
SESSION_OVERRIDES = {"zookeeper.session.timeout.ms": "6000"}


@pytest.fixture(scope="module")
def kafka_cluster(reference_lib: Path, make_cluster_module: ClusterFactory) -> ClusterHandle:
    """Apache Kafka 3.9: 3 brokers in ZooKeeper mode."""
    return make_cluster_module(impl="kafka", overrides=SESSION_OVERRIDES)


@pytest.fixture(scope="module")
def our_cluster(make_cluster_module: ClusterFactory) -> ClusterHandle:
    """Our brokers: 3 of them, configured as `kafka_cluster` is."""
    return make_cluster_module(overrides=SESSION_OVERRIDES)


@pytest.fixture(scope="module")
def both_clusters(
    kafka_cluster: ClusterHandle, our_cluster: ClusterHandle
) -> Iterator[dict[str, ClusterHandle]]:
    yield {"kafka": kafka_cluster, "ours": our_cluster}


# The one-broker clusters of `one_broker`. A Kafka 3.9 broker costs about 10 s of CPU to start,
# and its first group 50 offsets partitions unless told otherwise; no module sharing them
# checks either default.
ONE_BROKER_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
}


class SharedOneBroker:
    """One-broker clusters of each kind (`ours`, `kafka`), started on first use and shared by
    the modules of one xdist worker; replaced when a module left one changed."""

    def __init__(self) -> None:
        self.handles: dict[str, ClusterHandle] = {}

    def get(self, impl: str) -> ClusterHandle:
        if impl not in self.handles:
            directory = _short_tmp_dir(f"one-{impl}-") / "cluster"
            self.handles[impl] = start_cluster(
                directory, brokers=1, overrides=ONE_BROKER_OVERRIDES, impl=impl
            )
        return self.handles[impl]

    def discard(self, impl: str) -> None:
        handle = self.handles.pop(impl, None)
        if handle is not None:
            handle.tear_down()
            _remove_if_empty(handle.dir.parent)


# One per worker process. A module outside tests/reference imports the fixtures below, and
# pytest then holds a definition of its own for that module: both hand out this object.
_SHARED_ONE_BROKER = SharedOneBroker()


@pytest.fixture(scope="session")
def shared_one_broker(reference_lib: Path) -> Iterator[SharedOneBroker]:
    try:
        yield _SHARED_ONE_BROKER
    finally:
        for impl in list(_SHARED_ONE_BROKER.handles):
            _SHARED_ONE_BROKER.discard(impl)


class OneBroker:
    """What a module asked of `shared_one_broker`, with each cluster's processes when first
    handed out, to check at the module's end that it left them as it found them."""

    def __init__(self, shared: SharedOneBroker) -> None:
        self.shared = shared
        self.used: dict[str, tuple[ClusterHandle, dict[str, int | None]]] = {}

    def __call__(self, impl: str) -> ClusterHandle:
        handle = self.shared.get(impl)
        if impl not in self.used:
            self.used[impl] = (handle, _process_ids(handle))
        return handle

    def damage(self) -> dict[str, str]:
        found = {}
        for impl, (handle, process_ids) in self.used.items():
            what = _damage(handle, process_ids)
            if what is not None:
                found[impl] = what
        return found


@pytest.fixture(scope="module")
def one_broker(
    request: pytest.FixtureRequest, shared_one_broker: SharedOneBroker
) -> Iterator[OneBroker]:
    """`one_broker("kafka")` or `one_broker("ours")`: a one-broker cluster (ONE_BROKER_OVERRIDES)
    shared with the worker's other modules that use it. A module may add topics, groups and
    records named after itself; one that changes broker configs, ACLs or quotas, or restarts
    the broker, must start its own (`make_cluster_module`): that is checked after the module,
    which then fails, and the next module gets a new cluster."""
    clusters = OneBroker(shared_one_broker)
    yield clusters
    damage = clusters.damage()
    for impl in damage:
        shared_one_broker.discard(impl)
    if damage:
        pytest.fail(
            f"{request.node.nodeid} left the shared one-broker clusters changed ({damage}); "
            "give it clusters of its own (make_cluster_module)"
        )


@pytest.fixture(scope="module")
def one_broker_to_change(shared_one_broker: SharedOneBroker) -> Iterator[OneBroker]:
    """As `one_broker`, for a module that changes the brokers (dynamic broker configs): the
    clusters it used are discarded after it, so the worker's next module gets new ones.
    tests/conftest.py runs such a module after the other modules sharing them."""
    clusters = OneBroker(shared_one_broker)
    yield clusters
    for impl in clusters.used:
        shared_one_broker.discard(impl)
