"""`--network netns` without root: the names, subnet and addresses derive from the port base
(unique per cluster, within Linux's limits), the `ip` commands that build and cut the network,
and the configs that then name each node's address instead of 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts._cluster import netns, partitions
from scripts._cluster.brokers import render_properties
from scripts._cluster.cli import main
from scripts._cluster.layout import ClusterSpec, ClusterState, load_state, save_state
from scripts._cluster.zookeeper import zoo_cfg


def netns_spec(tmp_path: Path, port_base: int = 18500, zookeepers: int = 3) -> ClusterSpec:
    return ClusterSpec(
        directory=str(tmp_path),
        broker_count=3,
        zookeeper_count=zookeepers,
        port_base=port_base,
        zk_port_base=28500,
        network="netns",
    )


def test_addresses_and_names_derive_from_the_port_base() -> None:
    assert str(netns.subnet(18500)) == "10.72.68.0/24"  # 18500 = 72 * 256 + 68
    assert netns.host_address(18500) == "10.72.68.1"
    assert netns.node_address(18500, "broker-3") == "10.72.68.13"
    assert netns.node_address(18500, "zookeeper-1") == "10.72.68.201"
    assert netns.bridge_name(18500) == "pk18500br"
    assert netns.namespace_name(18500, "broker-2") == "pk18500-broker-2"
    assert netns.veth_name(18500, "zookeeper-2") == "pk18500z2"


def test_every_port_base_gets_its_own_subnet_and_names_fit_linux() -> None:
    subnets = {netns.subnet(base) for base in range(1, 65536)}
    assert len(subnets) == 65535
    longest = [
        netns.veth_name(65535, f"broker-{netns.MAX_BROKERS}") + "p",
        netns.bridge_name(65535),
    ]
    assert all(len(name) <= netns.MAX_INTERFACE_NAME for name in longest)


def test_node_addresses_are_distinct_and_inside_the_subnet() -> None:
    keys = [f"broker-{i}" for i in range(1, netns.MAX_BROKERS + 1)]
    keys += [f"zookeeper-{n}" for n in range(1, netns.MAX_ZOOKEEPERS + 1)]
    addresses = [netns.node_address(9092, key) for key in keys] + [netns.host_address(9092)]
    assert len(set(addresses)) == len(addresses)
    subnet = netns.subnet(9092)
    assert all(netns.ipaddress.IPv4Address(a) in subnet for a in addresses)
    assert netns.check_counts(netns.MAX_BROKERS + 1, 1) is not None
    assert netns.check_counts(3, 3) is None


def test_node_commands_put_a_veth_in_the_namespace_on_the_bridge() -> None:
    commands = netns.node_commands(18500, "broker-1")
    assert commands[0] == ["ip", "netns", "add", "pk18500-broker-1"]
    assert ["ip", "link", "set", "pk18500b1", "master", "pk18500br", "up"] in commands
    assert [
        "ip",
        "-n",
        "pk18500-broker-1",
        "addr",
        "add",
        "10.72.68.11/24",
        "dev",
        "eth0",
    ] in commands
    bridge = netns.bridge_commands(18500)
    assert ["ip", "addr", "add", "10.72.68.1/24", "dev", "pk18500br"] in bridge
    teardown = netns.teardown_commands(18500, ["broker-1"])
    assert teardown[0] == ["ip", "netns", "delete", "pk18500-broker-1"]
    assert teardown[-1] == ["ip", "link", "delete", "pk18500br"]


def test_route_command_blackholes_the_target_in_the_source_namespace() -> None:
    add = netns.route_command(18500, ("broker-2", "zookeeper-1"), add=True)
    assert add == [
        "ip",
        "-n",
        "pk18500-broker-2",
        "route",
        "add",
        "blackhole",
        "10.72.68.201/32",
    ]
    remove = netns.route_command(18500, ("broker-2", "zookeeper-1"), add=False)
    assert remove[4] == "delete"


@pytest.mark.parametrize(
    ("target", "from_spec", "expected"),
    [
        ("broker-2", "zookeeper", ["zookeeper-1", "zookeeper-2"]),
        ("broker-2", "brokers", ["broker-1", "broker-3"]),
        ("broker-2", "all", ["broker-1", "broker-3", "zookeeper-1", "zookeeper-2"]),
        ("broker-2", "1,3", ["broker-1", "broker-3"]),
        ("zookeeper-1", "brokers", ["broker-1", "broker-2", "broker-3"]),
        ("zookeeper-1", "zookeeper", ["zookeeper-2"]),
        ("zookeeper-1", "all", ["broker-1", "broker-2", "broker-3", "zookeeper-2"]),
    ],
)
def test_cut_peers(target: str, from_spec: str, expected: list[str]) -> None:
    assert netns.cut_peers(target, from_spec, [1, 2, 3], [1, 2]) == expected


@pytest.mark.parametrize(
    ("from_spec", "message"),
    [("1,4", "no broker 4"), ("2", "itself"), ("x", "expected zookeeper"), ("", "no broker")],
)
def test_cut_peers_refuses_unknown_ids(from_spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        netns.cut_peers("broker-2", from_spec, [1, 2, 3], [1])


def test_one_way_cuts_only_what_the_node_sends() -> None:
    peers = ["broker-1", "zookeeper-1"]
    assert netns.cut_links("broker-2", peers, one_way=True) == [
        ("broker-2", "broker-1"),
        ("broker-2", "zookeeper-1"),
    ]
    both = netns.cut_links("broker-2", peers, one_way=False)
    assert ("broker-1", "broker-2") in both and ("zookeeper-1", "broker-2") in both
    assert len(both) == 4


def test_heal_of_one_node_takes_every_link_touching_it() -> None:
    links = [("broker-2", "zookeeper-1"), ("zookeeper-1", "broker-2"), ("broker-1", "broker-3")]
    assert netns.links_touching(links, "broker-2") == links[:2]
    assert netns.links_touching(links, "broker-3") == links[2:]
    assert netns.links_touching(links, None) == links


def test_configs_name_the_namespace_addresses(tmp_path: Path) -> None:
    spec = netns_spec(tmp_path)
    assert spec.bootstrap_servers == "10.72.68.11:18500,10.72.68.12:18501,10.72.68.13:18502"
    assert spec.zookeeper_connect.startswith("10.72.68.201:28500,10.72.68.202:28501")
    properties = render_properties(spec, 2)
    assert "listeners=PLAINTEXT://10.72.68.12:18501" in properties
    assert "zookeeper.connect=10.72.68.201:28500," in properties
    assert "metrics.prometheus.listener=10.72.68.12:18601" in properties
    config = zoo_cfg(spec, 2, tmp_path)
    assert "clientPortAddress=10.72.68.202" in config
    assert "server.3=10.72.68.203:29502:30502" in config
    loopback = ClusterSpec(str(tmp_path), 1, 1, 18500, 28500)
    assert loopback.bootstrap_servers == "127.0.0.1:18500"


def test_cut_links_survive_a_state_round_trip(tmp_path: Path) -> None:
    state = ClusterState(spec=netns_spec(tmp_path), cut_links=[["broker-1", "zookeeper-1"]])
    save_state(tmp_path, state)
    loaded = load_state(tmp_path)
    assert loaded.cut_links == [["broker-1", "zookeeper-1"]]
    assert loaded.spec.network == "netns"


def test_cut_on_a_loopback_cluster_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    save_state(tmp_path, ClusterState(spec=ClusterSpec(str(tmp_path), 3, 1, 18500, 28500)))
    assert main(["cut", "--broker", "1", "--dir", str(tmp_path)]) == 1
    assert "needs a cluster started with `up --network netns`" in capsys.readouterr().err


def test_up_netns_without_root_exits_2_before_starting_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(partitions.os, "geteuid", lambda: 1000)
    directory = tmp_path / "cluster"
    assert main(["up", "--network", "netns", "--dir", str(directory)]) == 2
    assert "needs root" in capsys.readouterr().err
    assert not directory.exists()


@pytest.mark.parametrize(
    "command", [["down"], ["down", "--wipe"], ["start", "--broker", "1"], ["heal"]]
)
def test_commands_that_touch_a_netns_cluster_need_root(
    command: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(partitions.os, "geteuid", lambda: 1000)
    save_state(tmp_path, ClusterState(spec=netns_spec(tmp_path)))
    assert main([*command, "--dir", str(tmp_path)]) == 2
    assert "needs root" in capsys.readouterr().err
    assert (tmp_path / "cluster.json").exists()
