"""scripts/chaos's network cuts without a cluster: a --network netns cluster's addresses are
what the checker connects to, the cut kinds need --network-partitions (or a bare
--partitions), and each kind runs `scripts/cluster cut` with its --from and always heals."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _tools import chaos, chaos_faults
from _tools.chaos_cluster import Cluster, LauncherError, load_cluster


def _write_cluster(directory: Path, network: str) -> None:
    spec = {
        "port_base": 18500,
        "zk_port_base": 28500,
        "broker_count": 3,
        "zookeeper_count": 1,
        "network": network,
    }
    processes = {f"broker-{i}": {"impl": "ours"} for i in (1, 2, 3)}
    (directory / "cluster.json").write_text(json.dumps({"spec": spec, "processes": processes}))


def test_a_netns_cluster_is_reached_at_its_namespace_addresses(tmp_path: Path) -> None:
    _write_cluster(tmp_path, "netns")
    cluster = load_cluster(tmp_path)
    assert cluster.network == "netns"
    assert cluster.bootstrap == "10.72.68.11:18500,10.72.68.12:18501,10.72.68.13:18502"
    assert cluster.zookeeper_connect == "10.72.68.201:28500"
    _write_cluster(tmp_path, "loopback")
    assert load_cluster(tmp_path).bootstrap.startswith("127.0.0.1:18500,")


def test_cut_kinds_need_the_flag_and_a_bare_partitions_is_that_flag() -> None:
    with pytest.raises(SystemExit):
        chaos._parse_args(["--kinds", "leader-cut"])
    args = chaos._parse_args(["--partitions", "--faults", "3"])
    assert args.network_partitions and args.partitions == 6
    assert set(chaos_faults.PARTITION_KINDS) <= set(args.kinds)
    args = chaos._parse_args(["--partitions", "4"])
    assert not args.network_partitions and args.partitions == 4
    assert not set(chaos_faults.PARTITION_KINDS) & set(args.kinds)


def _recording(monkeypatch: pytest.MonkeyPatch, fail_on: str | None = None) -> list[list[str]]:
    calls: list[list[str]] = []

    def launcher(cluster: Cluster, *args: str) -> None:
        calls.append(list(args))
        if args[0] == fail_on:
            raise LauncherError(f"{args[0]} failed")

    monkeypatch.setattr(chaos_faults, "launcher", launcher)
    monkeypatch.setattr(chaos_faults.time, "sleep", lambda _: None)
    return calls


@pytest.mark.parametrize(
    ("kind", "victim", "cut"),
    [
        ("leader-cut", 2, ["cut", "--broker", "2", "--from", "all"]),
        ("controller-cut", 1, ["cut", "--broker", "1", "--from", "zookeeper"]),
        ("follower-cut", 3, ["cut", "--broker", "3", "--from", "brokers"]),
        ("zookeeper-cut", 1, ["cut", "--zookeeper", "1", "--from", "all"]),
        ("leader-oneway", 2, ["cut", "--broker", "2", "--from", "all", "--one-way"]),
        ("controller-oneway", 2, ["cut", "--broker", "2", "--from", "zookeeper", "--one-way"]),
    ],
)
def test_each_cut_kind_cuts_then_heals(
    kind: str, victim: int, cut: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = _recording(monkeypatch)
    _write_cluster(tmp_path, "netns")
    assert chaos_faults.inject(load_cluster(tmp_path), kind, victim, 5.0) is None
    heal = ["heal", "--zookeeper" if kind.startswith("zookeeper") else "--broker", str(victim)]
    assert calls == [cut, heal]


def test_a_flapping_link_is_cut_and_healed_until_its_time_is_up(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = _recording(monkeypatch)
    clock = iter([0.0, 0.0, 2.0, 4.0, 100.0])
    monkeypatch.setattr(chaos_faults.time, "monotonic", lambda: next(clock))
    _write_cluster(tmp_path, "netns")
    chaos_faults.inject(load_cluster(tmp_path), "leader-flap", 2, 5.0)
    cut = ["cut", "--broker", "2", "--from", "all"]
    heal = ["heal", "--broker", "2"]
    assert calls == [cut, heal, cut, heal, cut, heal, heal]


def test_a_cut_is_healed_even_when_the_wait_is_interrupted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = _recording(monkeypatch)

    def interrupted(_: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(chaos_faults.time, "sleep", interrupted)
    _write_cluster(tmp_path, "netns")
    with pytest.raises(KeyboardInterrupt):
        chaos_faults.inject(load_cluster(tmp_path), "leader-cut", 2, 5.0)
    assert calls[-1] == ["heal", "--broker", "2"]
