"""A cluster's ZooKeeper tree as a tool sees it, normalised so that two clusters that went
through the same operations compare equal, and the differences between two such trees.

A snapshot holds every znode under `/` (ZooKeeper's own `/zookeeper` aside): whether it is
ephemeral and its data, null kept apart from empty. Normalising replaces only what differs
between any two clusters however faithful they are: generated ids (cluster and topic ids),
which broker happened to win a race (the controller, the broker that took a producer id
block), wall-clock timestamps, listener ports, and ZooKeeper sequence numbers (renumbered by
rank among their siblings). JSON is parsed into ordered pairs, so field order is compared.
Leader and controller epochs are kept: both clusters start at the same epochs and a faithful
controller bumps them at the same steps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient

IGNORED_SUBTREE = "/zookeeper"  # ZooKeeper's own quota and config znodes, not Kafka's
SEQUENCE_CHILD = re.compile(r"^(?P<prefix>.*\D)(?P<sequence>\d{10})$")
LISTENER_PORT = re.compile(r"(://[^:/]*):\d+$")

# (znode path pattern, top-level JSON field, placeholder): values that legitimately differ.
NORMALISED_FIELDS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"^/cluster/id$"), "id", "<cluster id>"),
    (re.compile(r"^/brokers/topics/[^/]+$"), "topic_id", "<topic id>"),
    (re.compile(r"^/brokers/ids/\d+$"), "timestamp", "<timestamp>"),
    (re.compile(r"^/brokers/ids/\d+$"), "port", "<port>"),
    (re.compile(r"^/controller$"), "brokerid", "<whichever broker won>"),
    (re.compile(r"^/controller$"), "timestamp", "<timestamp>"),
    (re.compile(r"^/latest_producer_id_block$"), "broker", "<broker asked first>"),
)
ENDPOINT_FIELDS = ((re.compile(r"^/brokers/ids/\d+$"), "endpoints"),)


@dataclass(frozen=True)
class Znode:
    ephemeral: bool
    data: bytes | None  # None: the znode holds null data (zkCli prints `null`)


Tree = dict[str, Znode]


def snapshot(zk_connect: str) -> Tree:
    """Every znode of the cluster's ZooKeeper, read with one kazoo session."""
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=30)
    try:
        return dict(_walk(client, "/"))
    finally:
        client.stop()
        client.close()


def _walk(client: KazooClient, path: str) -> Iterator[tuple[str, Znode]]:
    if path == IGNORED_SUBTREE:
        return
    data, stat = client.get(path)
    yield path, Znode(ephemeral=stat.ephemeralOwner != 0, data=data)
    for child in sorted(client.get_children(path)):
        yield from _walk(client, f"{path.rstrip('/')}/{child}")


# --------------------------------------------------------------------------- normalising


class JsonObject(tuple[tuple[str, Any], ...]):
    """A JSON object as its (key, value) pairs in the order they were written."""


@dataclass(frozen=True)
class Normalised:
    ephemeral: bool
    kind: str  # "null", "json" or "text"
    value: Any  # None, parsed JSON (objects as JsonObject), or the text


def normalise(tree: Tree) -> dict[str, Normalised]:
    renamed = _renumber_sequences(tree)
    return {renamed[path]: _normalise_znode(path, znode) for path, znode in tree.items()}


def _renumber_sequences(tree: Tree) -> dict[str, str]:
    """Sequential children (`config_change_0000000007`) renamed by rank among the siblings
    sharing their prefix (`config_change_#0`, `#1`...), oldest first."""
    renamed: dict[str, str] = {}
    siblings: dict[tuple[str, str], list[str]] = {}
    for path in tree:
        parent, _, name = path.rpartition("/")
        match = SEQUENCE_CHILD.match(name)
        if match is not None:
            siblings.setdefault((parent, match["prefix"]), []).append(path)
    for (parent, prefix), paths in siblings.items():
        for rank, path in enumerate(sorted(paths)):
            renamed[path] = f"{parent}/{prefix}#{rank}"
    for path in sorted(tree, key=len):
        if path not in renamed:
            parent, _, name = path.rpartition("/")
            renamed[path] = f"{renamed.get(parent, parent)}/{name}" if parent else path
    return renamed


def _normalise_znode(path: str, znode: Znode) -> Normalised:
    if znode.data is None:
        return Normalised(znode.ephemeral, "null", None)
    text = znode.data.decode("utf-8", errors="replace")
    try:
        value = json.loads(text, object_pairs_hook=JsonObject)
    except json.JSONDecodeError:
        return Normalised(znode.ephemeral, "text", text)
    if isinstance(value, JsonObject):
        value = JsonObject((key, _normalised_field(path, key, item)) for key, item in value)
    return Normalised(znode.ephemeral, "json", value)


def _normalised_field(path: str, key: str, value: Any) -> Any:
    for pattern, name, placeholder in NORMALISED_FIELDS:
        if name == key and pattern.match(path):
            return placeholder
    for pattern, name in ENDPOINT_FIELDS:
        if name == key and pattern.match(path) and isinstance(value, list):
            return [LISTENER_PORT.sub(r"\1:<port>", str(item)) for item in value]
    return value


# --------------------------------------------------------------------------- comparing


@dataclass(frozen=True)
class Difference:
    """One observable difference: the (normalised) znode and what differs about it —
    "only in kafka", "only in ours", "ephemeral", "null data", "data", "fields",
    "field order" or "field <name>". `detail` shows both sides and is not compared."""

    path: str
    aspect: str
    detail: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"{self.path} [{self.aspect}] {self.detail}"


def differences(kafka: Tree, ours: Tree) -> list[Difference]:
    kafka_nodes, our_nodes = normalise(kafka), normalise(ours)
    found: list[Difference] = []
    for path in sorted(kafka_nodes.keys() | our_nodes.keys()):
        theirs, mine = kafka_nodes.get(path), our_nodes.get(path)
        if mine is None:
            found.append(Difference(path, "only in kafka", _show(theirs)))
        elif theirs is None:
            found.append(Difference(path, "only in ours", _show(mine)))
        else:
            found.extend(_znode_differences(path, theirs, mine))
    return found


def _znode_differences(path: str, kafka: Normalised, ours: Normalised) -> list[Difference]:
    found = []
    if kafka.ephemeral != ours.ephemeral:
        found.append(
            Difference(path, "ephemeral", f"kafka={kafka.ephemeral} ours={ours.ephemeral}")
        )
    if kafka == ours or (kafka.kind, kafka.value) == (ours.kind, ours.value):
        return found
    detail = f"kafka={_show(kafka)} ours={_show(ours)}"
    if "null" in (kafka.kind, ours.kind) and "" in (kafka.value, ours.value):
        found.append(Difference(path, "null data", detail))
    elif isinstance(kafka.value, JsonObject) and isinstance(ours.value, JsonObject):
        found.extend(_object_differences(path, kafka.value, ours.value, detail))
    else:
        found.append(Difference(path, "data", detail))
    return found


def _object_differences(
    path: str, kafka: JsonObject, ours: JsonObject, detail: str
) -> list[Difference]:
    kafka_fields, our_fields = dict(kafka), dict(ours)
    if kafka_fields.keys() != our_fields.keys():
        return [Difference(path, "fields", detail)]
    found = [
        Difference(path, f"field {name}", f"kafka={value!r} ours={our_fields[name]!r}")
        for name, value in kafka
        if our_fields[name] != value
    ]
    if [name for name, _ in kafka] != [name for name, _ in ours]:
        found.append(Difference(path, "field order", detail))
    return found


def _show(node: Normalised | None) -> str:
    if node is None or node.kind == "null":
        return "null"
    if node.kind == "text":
        return repr(node.value)
    return json.dumps(_as_json(node.value), separators=(",", ":"))


def _as_json(value: Any) -> Any:
    if isinstance(value, JsonObject):
        return {key: _as_json(item) for key, item in value}
    if isinstance(value, list):
        return [_as_json(item) for item in value]
    return value
