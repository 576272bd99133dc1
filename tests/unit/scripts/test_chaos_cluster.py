"""scripts/chaos on a mixed cluster: it reads each broker's implementation from cluster.json
and names it beside every victim, and its controller fault hits the /controller znode's
broker whatever that broker runs."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _tools.chaos_cluster import load_cluster
from _tools.chaos_faults import choose_victim
from _tools.chaos_zk import ClusterView, PartitionState


def _write_cluster(directory: Path, impls: list[str]) -> None:
    spec: dict[str, object] = {"port_base": 9092, "zk_port_base": 2181, "broker_count": 3}
    spec["zookeeper_count"] = 1
    spec["impl"] = impls[0] if len(set(impls)) == 1 else ",".join(impls)
    processes = {f"broker-{i}": {"impl": impl} for i, impl in enumerate(impls, start=1)}
    processes["zookeeper-1"] = {}
    (directory / "cluster.json").write_text(json.dumps({"spec": spec, "processes": processes}))


def _view(controller: int) -> ClusterView:
    partitions = {0: PartitionState(leader=2, isr=[2, 3, 1], replicas=[2, 3, 1])}
    return ClusterView(registered={1, 2, 3}, controller=controller, partitions=partitions)


def test_a_mixed_clusters_victims_are_named_with_their_implementation(tmp_path: Path) -> None:
    _write_cluster(tmp_path, ["kafka", "kafka", "ours"])
    cluster = load_cluster(tmp_path)
    assert cluster.impls == {1: "kafka", 2: "kafka", 3: "ours"}
    rng = random.Random(1)
    assert choose_victim("controller", _view(3), cluster, rng) == (
        3,
        "broker 3 (ours, controller)",
    )
    assert choose_victim("controller", _view(1), cluster, rng) == (
        1,
        "broker 1 (kafka, controller)",
    )
    assert choose_victim("leader", _view(1), cluster, rng) == (
        2,
        "broker 2 (kafka, leader of partition 0)",
    )


def test_one_implementation_keeps_the_short_names(tmp_path: Path) -> None:
    _write_cluster(tmp_path, ["ours", "ours", "ours"])
    cluster = load_cluster(tmp_path)
    assert choose_victim("controller", _view(2), cluster, random.Random(1)) == (
        2,
        "broker 2 (controller)",
    )
