"""The failover benchmark reads each broker's loop stalls from its log, in a window, and gives
the CPU back to its session afterwards."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

import pytest
from _tools import bench_failover
from _tools.bench_failover import logged_stalls


def _at(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds)
    return f"{moment:%Y-%m-%d %H:%M:%S},{moment.microsecond // 1000:03d}"


def test_only_stalls_inside_the_window_count(tmp_path: Path) -> None:
    start = 1_800_000_000.0
    (tmp_path / "broker-1").mkdir()
    (tmp_path / "broker-1" / "broker.log").write_text(
        f"[{_at(start - 5)}] WARNING event loop stalled for 900 ms (broker.process.loop_watchdog)\n"
        f"[{_at(start + 1)}] WARNING event loop stalled for 130 ms (broker.process.loop_watchdog)\n"
        f"[{_at(start + 2)}] WARNING event loop stalled for 250 ms (broker.process.loop_watchdog)\n"
        f"[{_at(start + 3)}] INFO something else (broker.server)\n"
        f"[{_at(start + 20)}] WARNING event loop stalled for 700 ms"
        " (broker.process.loop_watchdog)\n"
    )
    (tmp_path / "broker-2").mkdir()
    (tmp_path / "broker-2" / "broker.log").write_text(f"[{_at(start + 1)}] INFO quiet (x)\n")
    stalls = logged_stalls(tmp_path, [1, 2], start, start + 10)
    assert {b: s.longest for b, s in stalls.items()} == {1: "250", 2: "<100"}
    assert stalls[1].most_ran_ms is None  # an older line: no thread times


def test_a_stall_line_gives_its_thread_time_and_cpu_wait(tmp_path: Path) -> None:
    start = 1_800_000_000.0
    (tmp_path / "broker-1").mkdir()
    prefix = "WARNING event loop stalled for"
    (tmp_path / "broker-1" / "broker.log").write_text(
        f"[{_at(start + 1)}] {prefix} 230 ms (in the 250 ms since it last slept, its thread"
        " ran 40 ms and waited 190 ms for a CPU) (broker.process.loop_watchdog)\n"
        f"[{_at(start + 2)}] {prefix} 120 ms (in the 140 ms since it last slept, its thread"
        " ran 95 ms and waited 10 ms for a CPU) (broker.process.loop_watchdog)\n"
    )
    [(broker, stalls)] = logged_stalls(tmp_path, [1], start, start + 10).items()
    assert broker == 1
    assert stalls.longest == "230 (ran 40, waited 190 for a CPU)"
    assert stalls.most_ran_ms == 95


def test_the_bench_puts_its_sessions_cpu_priority_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The autogroup is the whole session of whoever ran the bench: it must not stay at 19.
    autogroup = tmp_path / "autogroup"
    autogroup.write_text("/autogroup-42 nice 0\n")
    monkeypatch.setattr(bench_failover, "AUTOGROUP_PATH", autogroup)
    monkeypatch.setattr(bench_failover.os, "setpriority", lambda *_args: None)
    with bench_failover._yielding_cpu_to_cluster():
        assert autogroup.read_text() == str(bench_failover.BENCH_NICE)
    assert autogroup.read_text() == "0"
