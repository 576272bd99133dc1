"""The lab's view of a `--network netns` cluster: each node's address (its metrics link
included), the cut links, and a timeline entry for each link cut and healed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _lab import snapshot
from _lab.snapshot import ProcessView, ZookeeperServerView

NOW_S = 1_800_000_000.0


def _view(cut_links: list[list[str]] | None) -> dict[str, Any]:
    brokers = [
        ProcessView(i, 18499 + i, 1000 + i, True, address=f"10.72.68.{10 + i}") for i in (1, 2)
    ]
    servers = [ZookeeperServerView(1, 28500, 999, True, "standalone", "10.72.68.201")]
    ports = {i: 18599 + i for i in (1, 2)}
    return snapshot.build_snapshot(None, brokers, servers, {}, ports, {}, NOW_S, None, cut_links)


def test_a_netns_view_names_addresses_and_cut_links() -> None:
    view = _view([["broker-2", "zookeeper-1"], ["zookeeper-1", "broker-2"]])
    assert view["network"] == {
        "netns": True,
        "cuts": [["broker-2", "zookeeper-1"], ["zookeeper-1", "broker-2"]],
    }
    assert view["brokers"][1]["address"] == "10.72.68.12"
    assert view["brokers"][1]["metrics_url"] == "http://10.72.68.12:18601/metrics"
    assert view["zookeeper"]["servers"][0]["address"] == "10.72.68.201"


def test_a_loopback_view_has_no_network_section_to_show() -> None:
    brokers = [ProcessView(1, 9092, 1001, True)]
    view = snapshot.build_snapshot(None, brokers, [], {}, {1: 9192}, {}, NOW_S)
    assert view["network"] == {"netns": False, "cuts": []}
    assert view["brokers"][0]["metrics_url"] == "http://127.0.0.1:9192/metrics"


def test_cuts_and_heals_reach_the_timeline() -> None:
    whole = _view([])
    cut = _view([["broker-2", "zookeeper-1"]])
    messages = [entry["message"] for entry in snapshot.changes(whole, cut)]
    assert "cut: broker-2's packets to zookeeper-1 dropped" in messages
    messages = [entry["message"] for entry in snapshot.changes(cut, whole)]
    assert "healed: broker-2 reaches zookeeper-1 again" in messages
