"""`--network netns`: the names, addresses and `ip` commands of a cluster whose ZooKeeper
servers and brokers each run in a network namespace of their own.

Pure functions only (no processes run here; scripts/_cluster/partitions.py runs them), so that
the naming and the commands are tested without root.

Every name and the subnet derive from the cluster's broker port base, which is unique among the
clusters of one machine (tests and tools reserve it machine-wide, scripts/_cluster/ports.py; two
clusters on one port base could not both serve their listeners either): the bridge `pk<P>br`,
per node a namespace `pk<P>-broker-<id>` / `pk<P>-zookeeper-<n>` and the host end of its veth
pair `pk<P>b<id>` / `pk<P>z<n>` (interface names have at most 15 characters), and the subnet
10.<P div 256>.<P mod 256>.0/24: the host at .1, broker `i` at .(10 + i), ZooKeeper server `n`
at .(200 + n).

Each namespace has one veth (`eth0`) on the bridge, which lives in the host's namespace with the
host's address: nodes reach each other at layer 2 through the bridge, and the host (clients,
`status`, the lab) reaches every node directly on the bridge's subnet; nothing is routed, so
neither `ip_forward` nor NAT is involved.

A cut is a set of directed links (FROM, TO): FROM drops every packet it sends to TO's address,
by a blackhole route (`ip route add blackhole TO/32`) in FROM's namespace. A /32 route wins over
the subnet's connected route; the host's address is never blackholed, so the host still reaches
a cut node (as clients outside a partition would).
"""

from __future__ import annotations

import ipaddress

BRIDGE_SUFFIX = "br"
HOST_OCTET = 1
BROKER_OCTET_OFFSET = 10
ZOOKEEPER_OCTET_OFFSET = 200
MAX_ZOOKEEPERS = 254 - ZOOKEEPER_OCTET_OFFSET
MAX_BROKERS = ZOOKEEPER_OCTET_OFFSET - BROKER_OCTET_OFFSET - 1
PREFIX_LENGTH = 24
INSIDE_INTERFACE = "eth0"
MAX_INTERFACE_NAME = 15
BROKER_PREFIX = "broker-"
ZOOKEEPER_PREFIX = "zookeeper-"


def _tag(port_base: int) -> str:
    return f"pk{port_base}"


def subnet(port_base: int) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(f"10.{port_base >> 8 & 255}.{port_base & 255}.0/{PREFIX_LENGTH}")


def _address(port_base: int, octet: int) -> str:
    return str(subnet(port_base).network_address + octet)


def host_address(port_base: int) -> str:
    """The host's address on the cluster's bridge."""
    return _address(port_base, HOST_OCTET)


def node_address(port_base: int, key: str) -> str:
    """The address of node `key` ("broker-2", "zookeeper-1")."""
    kind, number = _split_key(key)
    offset = BROKER_OCTET_OFFSET if kind == "b" else ZOOKEEPER_OCTET_OFFSET
    return _address(port_base, offset + number)


def bridge_name(port_base: int) -> str:
    return f"{_tag(port_base)}{BRIDGE_SUFFIX}"


def namespace_name(port_base: int, key: str) -> str:
    return f"{_tag(port_base)}-{key}"


def veth_name(port_base: int, key: str) -> str:
    """The host end of node `key`'s veth pair (on the bridge)."""
    kind, number = _split_key(key)
    return f"{_tag(port_base)}{kind}{number}"


def _peer_name(port_base: int, key: str) -> str:
    """The namespace end's name until it is moved into the namespace and renamed eth0."""
    return f"{veth_name(port_base, key)}p"


def _split_key(key: str) -> tuple[str, int]:
    if key.startswith(BROKER_PREFIX):
        return "b", int(key.removeprefix(BROKER_PREFIX))
    if key.startswith(ZOOKEEPER_PREFIX):
        return "z", int(key.removeprefix(ZOOKEEPER_PREFIX))
    raise ValueError(f"not a node key: {key!r}")


def check_counts(broker_count: int, zookeeper_count: int) -> str | None:
    """Why the subnet has no room for this many nodes; None when it has."""
    if broker_count > MAX_BROKERS:
        return f"--network netns has room for {MAX_BROKERS} brokers, not {broker_count}"
    if zookeeper_count > MAX_ZOOKEEPERS:
        return f"--network netns has room for {MAX_ZOOKEEPERS} ZooKeeper servers"
    return None


def bridge_commands(port_base: int) -> list[list[str]]:
    """Create the bridge with the host's address on it."""
    bridge = bridge_name(port_base)
    return [
        ["ip", "link", "add", bridge, "type", "bridge"],
        ["ip", "addr", "add", f"{host_address(port_base)}/{PREFIX_LENGTH}", "dev", bridge],
        ["ip", "link", "set", bridge, "up"],
    ]


def node_commands(port_base: int, key: str) -> list[list[str]]:
    """Create node `key`'s namespace, its veth pair (one end on the bridge, the other its
    eth0 with the node's address) and bring up its loopback."""
    namespace = namespace_name(port_base, key)
    outside, peer = veth_name(port_base, key), _peer_name(port_base, key)
    address = f"{node_address(port_base, key)}/{PREFIX_LENGTH}"
    inside = ["ip", "-n", namespace]
    return [
        ["ip", "netns", "add", namespace],
        ["ip", "link", "add", outside, "type", "veth", "peer", "name", peer],
        ["ip", "link", "set", peer, "netns", namespace],
        ["ip", "link", "set", outside, "master", bridge_name(port_base), "up"],
        [*inside, "link", "set", peer, "name", INSIDE_INTERFACE],
        [*inside, "addr", "add", address, "dev", INSIDE_INTERFACE],
        [*inside, "link", "set", INSIDE_INTERFACE, "up"],
        [*inside, "link", "set", "lo", "up"],
    ]


def teardown_commands(port_base: int, keys: list[str]) -> list[list[str]]:
    """Remove every namespace (its veth pair goes with it, and its routes) and the bridge.
    Each may fail when already gone; the caller ignores that."""
    commands = [["ip", "netns", "delete", namespace_name(port_base, key)] for key in keys]
    # A namespace outlives its name while a process still runs in it; its veth then too.
    commands += [["ip", "link", "delete", veth_name(port_base, key)] for key in keys]
    commands.append(["ip", "link", "delete", bridge_name(port_base)])
    return commands


def exec_prefix(namespace: str) -> list[str]:
    """Run a command inside `namespace` (`ip netns exec` execs it: the pid stays the same)."""
    return ["ip", "netns", "exec", namespace]


def route_command(port_base: int, link: tuple[str, str], add: bool) -> list[str]:
    """The blackhole route that drops what `link[0]` sends to `link[1]` (in link[0]'s
    namespace); `add=False` removes it."""
    source, target = link
    verb = "add" if add else "delete"
    destination = f"{node_address(port_base, target)}/32"
    return ["ip", "-n", namespace_name(port_base, source), "route", verb, "blackhole", destination]


def cut_peers(
    target: str, from_spec: str, broker_ids: list[int], zookeeper_ids: list[int]
) -> list[str]:
    """The nodes `cut` separates `target` from. `from_spec`: "zookeeper" (every ZooKeeper
    server, or for a ZooKeeper server the other servers), "brokers" (every other broker), "all"
    (every other node) or broker ids "1,3". Raises ValueError with a message for the user."""
    brokers = [f"{BROKER_PREFIX}{i}" for i in broker_ids]
    zookeepers = [f"{ZOOKEEPER_PREFIX}{n}" for n in zookeeper_ids]
    if from_spec == "zookeeper":
        peers = zookeepers
    elif from_spec == "brokers":
        peers = brokers
    elif from_spec == "all":
        peers = brokers + zookeepers
    else:
        try:
            ids = [int(part) for part in from_spec.split(",") if part.strip()]
        except ValueError:
            raise ValueError(
                f"--from {from_spec!r}: expected zookeeper, brokers, all or broker ids (1,3)"
            ) from None
        unknown = [i for i in ids if i not in broker_ids]
        if not ids or unknown:
            raise ValueError(
                f"--from {from_spec!r}: no broker {', '.join(map(str, unknown))}"
                f" (brokers are {broker_ids})"
            )
        peers = [f"{BROKER_PREFIX}{i}" for i in ids]
        if target in peers:
            raise ValueError(f"--from {from_spec!r} names {target} itself")
    peers = [peer for peer in peers if peer != target]
    if not peers:
        raise ValueError(f"--from {from_spec!r} leaves nothing to cut {target} from")
    return peers


def cut_links(target: str, peers: list[str], one_way: bool) -> list[tuple[str, str]]:
    """Directed links to blackhole: always target -> peer; peer -> target unless one-way."""
    links = [(target, peer) for peer in peers]
    if not one_way:
        links += [(peer, target) for peer in peers]
    return links


def links_touching(links: list[tuple[str, str]], key: str | None) -> list[tuple[str, str]]:
    """The links `heal` removes: those with `key` at either end, or all when None."""
    return [link for link in links if key is None or key in link]
