"""Differential tests: the same scenario against Apache Kafka 3.9 and against our brokers.

`reference_lib` runs `make reference` once (Maven, offline after the first fetch; a file lock
keeps parallel test workers from fetching twice). `kafka_cluster` and `our_cluster` are
3-broker clusters, each on its own ZooKeeper, shared by the tests of one module. Tests here are
marked `integration` and `reference` by their directory (tests/conftest.py).
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
    make_cluster,
    make_cluster_module,
    pytest_runtest_makereport,
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
