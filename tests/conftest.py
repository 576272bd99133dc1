"""Settings shared by every test session: markers from the directory, and module order."""

import os
import signal
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent
# Every test below tests/integration needs real processes; below tests/reference, Apache
# Kafka 3.9 as well. `-m "not integration"` is then exactly tests/unit. A module outside
# tests/reference that also starts Kafka's JVM tools marks itself `reference` by hand.
DIRECTORY_MARKERS = {
    "integration": ("integration",),
    "reference": ("integration", "reference"),
}

# The longest modules (seconds of one run of `make test`'s first pytest run, 3 workers,
# 2026-11-29, beside other work at load 3-7), longest first. With `--dist loadfile
# --no-loadscope-reorder` xdist hands modules out in collection order, so these start first
# and the many short ones fill the gaps at the end. (xdist's own reorder, by test count, left
# one-test modules such as the walkthrough for last, with the other workers idle.) Ordering
# only: a module missing here runs after them.
LONGEST_MODULES = (
    "tests/integration/test_chaos.py",  # 100
    "tests/integration/test_groups.py",  # 93
    "tests/integration/test_verifiable_clients.py",  # 87
    "tests/integration/test_streams.py",  # 83, then the rest of ONE_BROKER_MODULES (~30)
    "tests/integration/test_lab.py",  # 76
    "tests/integration/test_mixed_migration.py",  # 50-95 alone (a helper's runs)
    "tests/integration/test_launcher.py",  # 69
    "tests/integration/test_network_cuts.py",  # 54-95 beside two chaos runs
    "tests/integration/test_mixed_coordinators.py",  # 55-70 alone
    "tests/integration/test_failover.py",  # 55
    # 27-54 alone; 56-67 beside other runs (a deletion waiting for Kafka's broker added ~3 s).
    "tests/integration/test_our_controller_drives_kafka.py",
    # 105 before its tools shared one JVM per cluster; alone, quiet: 75 s then, 46 s now.
    "tests/integration/test_jvm_tools.py",  # about 55
    "tests/reference/test_zookeeper_tree.py",  # 53
    "tests/integration/test_zk_acls.py",  # 50
    "tests/integration/test_log_dir_failure.py",  # 47
    "tests/integration/test_fuzz.py",  # 46
    "tests/integration/test_replication.py",  # 45
    "tests/integration/test_session_fencing.py",  # 32-45 alone
    "tests/integration/test_transactions.py",  # 41
    "tests/integration/test_kafka_brokers_under_our_controller.py",  # 22-56 alone
    "tests/integration/test_walkthrough.py",  # 36
    "tests/reference/test_reference_cluster.py",  # 35
    "tests/integration/test_mixed_launcher.py",  # 34
    "tests/integration/test_clients.py",  # 32
    "tests/integration/test_acls.py",  # 32
    "tests/integration/test_metrics_runtime.py",  # 31
)
_MODULE_RANK = {path: rank for rank, path in enumerate(LONGEST_MODULES)}

# The modules that share one worker's one-broker Kafka 3.9 and ours (tests/reference/conftest.py,
# `one_broker`): `--dist loadfile` hands them to one worker together, as one unit, when the
# first of them comes up in the order above, instead of a Kafka cluster on each of 4 workers.
# They run in this order: the last changes the brokers (`one_broker_to_change`).
ONE_BROKER_MODULES = (
    "tests/integration/test_streams.py",
    "tests/reference/test_api_versions.py",
    "tests/reference/test_error_codes.py",
    "tests/reference/test_metadata_offsets.py",
    "tests/reference/test_describe_configs.py",
)
ONE_BROKER_SCOPE = "one-broker reference modules"

# The Apache Kafka brokers the tests start (`--impl kafka` and mixed clusters) live a minute or
# less: C2's compiling does not pay back there, and the tests share 2 cores. The launcher takes
# KAFKA_JVM_PERFORMANCE_OPTS as kafka-run-class.sh does; a value already set wins.
TEST_KAFKA_JVM_OPTIONS = "-server -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true"


# `make test`'s class-data-sharing archive for ZooKeeper servers (Makefile, ZOOKEEPER_CDS). The
# launcher appends SERVER_JVMFLAGS to a server's JVM options, as zkServer.sh does; a value
# already set wins.
ZOOKEEPER_CDS = TESTS_DIR.parent / ".venv" / "zookeeper.jsa"


def pytest_configure(config: pytest.Config) -> None:
    # A make test started in the background of a non-interactive shell (and make's own `&` for
    # Spark's tests) inherits SIGINT ignored, and so would every tool the tests start: then a
    # Ctrl-C that a test sends (a console consumer's end, `status --watch`) does nothing. A
    # handled signal is reset to the default in a child at exec; an ignored one stays ignored.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.setdefault("KAFKA_JVM_PERFORMANCE_OPTS", TEST_KAFKA_JVM_OPTIONS)
    if ZOOKEEPER_CDS.exists():
        os.environ.setdefault("SERVER_JVMFLAGS", f"-XX:SharedArchiveFile={ZOOKEEPER_CDS}")


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile`, with ONE_BROKER_MODULES as one unit."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class OneBrokerModulesTogether(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            return ONE_BROKER_SCOPE if module in ONE_BROKER_MODULES else module

    return OneBrokerModulesTogether(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        relative = item.path.relative_to(TESTS_DIR).parts
        for name in DIRECTORY_MARKERS.get(relative[0], ()) if len(relative) > 1 else ():
            item.add_marker(name)
    items.sort(key=_order)


def _order(item: pytest.Item) -> tuple[int, int]:
    module = item.nodeid.split("::", 1)[0]
    together = ONE_BROKER_MODULES.index(module) if module in ONE_BROKER_MODULES else 0
    return _MODULE_RANK.get(module, len(_MODULE_RANK)), together
