"""Settings shared by every test session: markers from the directory, and module order."""

from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
# Every test below tests/integration needs real processes; below tests/reference, Apache
# Kafka 3.9 as well. `-m "not integration"` is then exactly tests/unit. A module outside
# tests/reference that also starts Kafka's JVM tools marks itself `reference` by hand.
DIRECTORY_MARKERS = {
    "integration": ("integration",),
    "reference": ("integration", "reference"),
}

# The longest modules (seconds of one run of `make test`, 2026-11-27), longest first. With
# `--dist loadfile --no-loadscope-reorder` xdist hands modules out in collection order, so
# these start first and the many short ones fill the gaps at the end. (xdist's own reorder,
# by test count, left one-test modules such as the walkthrough, 150 s, for last, with the
# other worker idle.) Ordering only: a module missing here runs after them.
LONGEST_MODULES = (
    "tests/integration/test_jvm_tools.py",  # 238
    "tests/integration/test_chaos.py",  # 151
    "tests/integration/test_walkthrough.py",  # 148
    "tests/integration/test_streams.py",  # 123
    "tests/integration/test_launcher.py",  # 122
    "tests/reference/test_zookeeper_tree.py",  # 121
    "tests/integration/test_transactions.py",  # 119
    "tests/integration/test_verifiable_clients.py",  # 114
    "tests/integration/test_fuzz.py",  # 103
    "tests/integration/test_lab.py",  # 100
    "tests/integration/test_groups.py",  # 96
    "tests/integration/test_failover.py",  # 95
    "tests/integration/test_zk_acls.py",  # 81
    "tests/integration/test_replication.py",  # 80
    "tests/integration/test_acls.py",  # 75
    "tests/reference/test_reference_cluster.py",  # 75
    "tests/integration/test_tool_console.py",  # 70
)
_MODULE_RANK = {path: rank for rank, path in enumerate(LONGEST_MODULES)}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        relative = item.path.relative_to(TESTS_DIR).parts
        for name in DIRECTORY_MARKERS.get(relative[0], ()) if len(relative) > 1 else ():
            item.add_marker(name)
    items.sort(key=lambda item: _MODULE_RANK.get(item.nodeid.split("::", 1)[0], len(_MODULE_RANK)))
