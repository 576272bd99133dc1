"""`status --watch` views of two made-up snapshots: rates between them, the controller's
mark, a lost broker, and the partitions without a full ISR or a live leader, as plain lines
and in the Rich view."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from scripts._cluster.watch import plain_view, rich_view
from scripts._cluster.watch_data import (
    BYTES_IN,
    ISR_SHRINKS,
    MESSAGES_IN,
    BrokerRow,
    ClusterSnapshot,
    PartitionProblem,
    ZookeeperRow,
    ZookeeperView,
)

PROBLEMS = [
    PartitionProblem("orders", 0, 1, [1, 2], [1, 2, 3], offline=False),
    PartitionProblem("orders", 1, -1, [3], [3], offline=True),
]


def _snapshot(taken_s: float, messages: float, shrinks: float) -> ClusterSnapshot:
    brokers = [
        BrokerRow(1, 101, True, True, 40, {MESSAGES_IN: messages, BYTES_IN: 10 * messages}),
        BrokerRow(2, 102, True, True, 41, {MESSAGES_IN: 0.0, ISR_SHRINKS: shrinks}),
        BrokerRow(3, 103, False, False, None, None),
    ]
    view = ZookeeperView({1: 40, 2: 41}, 2, 7, 12, PROBLEMS)
    return ClusterSnapshot(
        taken_s, "2026-01-01 00:00:00", brokers, [ZookeeperRow(1, True, "standalone")], view
    )


def _fields(text: str, key: str) -> dict[str, str]:
    line = next(line for line in text.splitlines() if line.startswith(key + " "))
    return dict(word.split("=", 1) for word in line.split() if "=" in word)


def test_plain_snapshot_lines() -> None:
    text = plain_view(2, _snapshot(12.0, 150.0, 3.0), _snapshot(10.0, 50.0, 1.0))
    assert text.startswith("snapshot 2 at 2026-01-01 00:00:00\n")
    assert text.endswith("\n\n")
    assert _fields(text, "controller") == {"id": "2", "epoch": "7"}
    first = _fields(text, "broker 1")
    assert first["messages_in_per_s"] == "50.0"
    assert first["bytes_in_per_s"] == "500.0"
    assert first["controller"] == "no"
    assert _fields(text, "broker 2")["controller"] == "yes"
    assert _fields(text, "broker 2")["isr_shrinks"] == "3"
    lost = _fields(text, "broker 3")
    assert (lost["alive"], lost["registered"], lost["messages_in_per_s"]) == ("no", "no", "-")
    assert _fields(text, "partitions") == {
        "total": "12",
        "under_replicated": "1",
        "offline": "1",
    }
    assert _fields(text, "under_replicated orders-0") == {
        "leader": "1",
        "isr": "1,2",
        "replicas": "1,2,3",
    }
    assert _fields(text, "offline orders-1")["leader"] == "-1"


def test_no_rates_without_a_previous_snapshot_or_after_a_restart() -> None:
    first = plain_view(1, _snapshot(10.0, 50.0, 1.0), None)
    assert _fields(first, "broker 1")["messages_in_per_s"] == "-"
    restarted = plain_view(2, _snapshot(12.0, 5.0, 0.0), _snapshot(10.0, 50.0, 1.0))
    assert _fields(restarted, "broker 1")["messages_in_per_s"] == "-"


def test_zookeeper_unreachable_is_unknown_not_wrong() -> None:
    snapshot = _snapshot(10.0, 50.0, 1.0)
    blind = ClusterSnapshot(10.0, snapshot.wall_time, snapshot.brokers, snapshot.zookeepers, None)
    text = plain_view(1, blind, None)
    assert _fields(text, "controller") == {"id": "unknown", "epoch": "unknown"}
    assert _fields(text, "partitions")["total"] == "unknown"


def test_rich_view_marks_the_controller_and_lists_problems() -> None:
    console = Console(width=160, record=True, color_system=None)
    console.print(
        rich_view(Path("/c"), _snapshot(12.0, 150.0, 3.0), _snapshot(10.0, 50.0, 1.0), 1.0)
    )
    shown = console.export_text()
    assert "controller 2" in shown and "controller epoch 7" in shown
    assert "2 ♛" in shown
    assert "3 (+2)" in shown  # ISR shrinks since the previous refresh
    assert "12 total, 1 under-replicated, 1 offline" in shown
    assert "orders-0" in shown and "orders-1" in shown
