"""The network-partition benchmark's pure parts: the longest gap between acknowledgements in
a window, the replica assignment that puts each cut's victim in its role, its arguments and
the side-by-side table."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

import pytest
from _tools.bench_partitions import arrange, longest_gap_s, parse_args, table


def test_the_longest_gap_inside_the_window_is_found() -> None:
    acks = [1.0, 2.0, 3.0, 10.0, 10.5, 11.0]
    assert longest_gap_s(acks, 2.5, 12.0) == pytest.approx(7.0)


def test_a_gap_open_when_the_window_starts_counts_from_the_last_ack_before_it() -> None:
    # The producer last heard at 1.0; the cut at 5.0 finds it already waiting until 20.0.
    assert longest_gap_s([0.5, 1.0, 20.0, 20.1], 5.0, 21.0) == pytest.approx(19.0)


def test_a_gap_still_open_when_the_window_ends_counts_up_to_its_end() -> None:
    assert longest_gap_s([1.0, 2.0, 3.0], 2.5, 30.0) == pytest.approx(27.0)


def test_gaps_outside_the_window_do_not_count() -> None:
    acks = [0.0, 50.0, 50.1, 50.2, 50.3, 100.0]
    assert longest_gap_s(acks, 50.05, 50.35) == pytest.approx(0.1)


def test_no_ack_at_all_is_one_gap_as_long_as_the_window() -> None:
    assert longest_gap_s([], 3.0, 28.0) == pytest.approx(25.0)


def test_the_leader_cut_hits_a_leader_that_is_not_the_controller() -> None:
    arrangement = arrange("leader", [1, 2, 3], controller=2)
    assert arrangement.replicas == [1, 3, 2]
    assert (arrangement.victim, arrangement.cut_from) == (1, "all")


def test_the_controller_cut_hits_the_controller_leading_the_partition() -> None:
    arrangement = arrange("controller", [1, 2, 3], controller=3)
    assert arrangement.replicas[0] == 3
    assert sorted(arrangement.replicas) == [1, 2, 3]
    assert (arrangement.victim, arrangement.cut_from) == (3, "zookeeper")


def test_the_follower_cut_separates_a_follower_from_its_leader_only() -> None:
    arrangement = arrange("follower", [1, 2, 3], controller=1)
    leader = arrangement.replicas[0]
    assert arrangement.victim in arrangement.replicas[1:]
    assert arrangement.victim != 1  # not the controller either
    assert arrangement.cut_from == str(leader)


def test_the_isolated_follower_is_cut_from_everything() -> None:
    arrangement = arrange("isolated-follower", [1, 2, 3], controller=1)
    assert arrangement.victim in arrangement.replicas[1:]
    assert arrangement.victim != 1
    assert arrangement.cut_from == "all"


def test_impls_and_cuts_are_checked() -> None:
    args = parse_args(["--impl", "kafka", "--cut-s", "5", "--cuts", "follower,leader"])
    assert (args.impls, args.cut_list, args.cut_s) == (["kafka"], ["follower", "leader"], 5.0)
    assert parse_args([]).impls == ["ours", "kafka"]
    assert parse_args([]).cut_list == ["leader", "controller", "follower"]
    with pytest.raises(SystemExit):
        parse_args(["--impl", "redpanda"])
    with pytest.raises(SystemExit):
        parse_args(["--cuts", "zookeeper"])


def _figures(lost: int, gap: float, isr: float | None, resent: int = 0) -> dict[str, object]:
    return {
        "lost": lost,
        "duplicated": 0,
        "resent_after_epoch_bump": resent,
        "longest_gap_s": gap,
        "isr_whole_after_heal_s": isr,
    }


def test_the_table_puts_both_implementations_side_by_side_per_cut() -> None:
    by_impl = {
        "ours": {"cuts": {"leader": _figures(0, 7.4, 2.5), "follower": _figures(0, 5.6, None)}},
        "kafka": {"cuts": {"leader": _figures(0, 26.9, 3.0, resent=2)}},
    }
    lines = table(by_impl, ["leader", "follower"]).splitlines()
    assert lines[0].split()[-3:] == ["ours", "Kafka", "3.9"]
    gap_rows = [line for line in lines if "longest ack gap s" in line]
    assert [row.split()[-2:] for row in gap_rows] == [["7.4", "26.9"], ["5.6", "-"]]
    assert lines[1].startswith("the leader, from ZooKeeper and its peers")
    assert "0 (+2 resent)" in next(line for line in lines if "duplicates" in line)
    isr_rows = [line for line in lines if "ISR whole after heal s" in line]
    assert isr_rows[1].split()[-2:] == ["never", "-"]
