"""The lab's view of a cluster, built from fake ZooKeeper data: brokers, controller, partition
grid and its highlights, and the timeline entries two views differ by."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from _lab import snapshot
from _lab.snapshot import (
    BrokerMetrics,
    KafkaObservations,
    ProcessView,
    ZnodeStat,
    ZookeeperServerView,
)

NOW_S = 1_800_000_000.0


def _stat(czxid: int = 1, version: int = 0, ephemeral_owner: int = 0) -> ZnodeStat:
    return ZnodeStat(czxid, czxid, czxid, 0, 0, version, 0, 0, ephemeral_owner, 0, 0)


class FakeZookeeper:
    """A dict of znodes: path -> (data, stat); children are derived from the paths."""

    def __init__(self, znodes: dict[str, tuple[bytes, ZnodeStat]]) -> None:
        self.znodes = znodes

    def children(self, path: str) -> list[str] | None:
        if path not in self.znodes:
            return None
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix) :].split("/")[0] for p in self.znodes if p.startswith(prefix)})

    def get(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        return self.znodes.get(path)


def _registration(broker_id: int) -> bytes:
    return json.dumps(
        {
            "version": 5,
            "host": "127.0.0.1",
            "port": 9091 + broker_id,
            "endpoints": [f"PLAINTEXT://127.0.0.1:{9091 + broker_id}"],
        }
    ).encode()


def _cluster(
    registered: list[int], controller: int | None, leader: int, isr: list[int]
) -> FakeZookeeper:
    znodes: dict[str, tuple[bytes, ZnodeStat]] = {
        "/brokers/ids": (b"", _stat()),
        "/brokers/topics": (b"", _stat()),
        "/controller_epoch": (b"4", _stat(version=3)),
        "/brokers/topics/t": (
            b'{"version":3,"partitions":{"0":[1,2,3],"1":[2,3,1]}}',
            _stat(),
        ),
        "/brokers/topics/t/partitions": (b"", _stat()),
        "/brokers/topics/t/partitions/0": (b"", _stat()),
        "/brokers/topics/t/partitions/0/state": (
            json.dumps({"leader": leader, "leader_epoch": 7, "isr": isr}).encode(),
            _stat(version=9),
        ),
        "/brokers/topics/t/partitions/1": (b"", _stat()),
        "/brokers/topics/t/partitions/1/state": (
            b'{"leader":2,"leader_epoch":1,"isr":[2,3,1]}',
            _stat(version=1),
        ),
    }
    for broker_id in registered:
        znodes[f"/brokers/ids/{broker_id}"] = (
            _registration(broker_id),
            _stat(czxid=100 + broker_id, ephemeral_owner=0xABC + broker_id),
        )
    if controller is not None:
        znodes["/controller"] = (
            f'{{"version":1,"brokerid":{controller},"timestamp":"1"}}'.encode(),
            _stat(),
        )
    return FakeZookeeper(znodes)


def _view(
    zookeeper: FakeZookeeper | None,
    alive: tuple[int, ...] = (1, 2, 3),
    metrics: dict[int, BrokerMetrics] | None = None,
    now_s: float = NOW_S,
    kafka: KafkaObservations | None = None,
) -> dict[str, Any]:
    brokers = [ProcessView(i, 9091 + i, 1000 + i, i in alive) for i in (1, 2, 3)]
    servers = [ZookeeperServerView(1, 2181, 999, True, "standalone")]
    data = None if zookeeper is None else snapshot.read_zookeeper(zookeeper)
    ports = {i: 9191 + i for i in (1, 2, 3)}
    return snapshot.build_snapshot(data, brokers, servers, metrics or {}, ports, {}, now_s, kafka)


def test_brokers_show_registration_epoch_endpoints_and_the_controller_crown() -> None:
    view = _view(_cluster([1, 2, 3], controller=2, leader=1, isr=[1, 2, 3]))
    brokers = {b["id"]: b for b in view["brokers"]}
    assert view["controller"] == {"id": 2, "epoch": 4}
    assert [b["controller"] for b in view["brokers"]] == [False, True, False]
    assert brokers[1]["epoch"] == 101  # the czxid of /brokers/ids/1
    assert brokers[1]["session"] == f"0x{0xABC + 1:x}"
    assert brokers[3]["endpoints"] == ["PLAINTEXT://127.0.0.1:9094"]
    assert brokers[2]["metrics_url"] == "http://127.0.0.1:9193/metrics"
    assert view["zookeeper"]["reachable"] is True


def test_partition_grid_has_replicas_leader_isr_epochs_and_log_ends_from_metrics() -> None:
    metrics = {
        1: BrokerMetrics(10.0, {("t", 0): 42, ("t", 1): 5}),
        2: BrokerMetrics(0.0, {("t", 0): 40}),
    }
    view = _view(_cluster([1, 2, 3], 1, leader=1, isr=[1, 2, 3]), metrics=metrics)
    first = view["topics"][0]["partitions"][0]
    assert first["replicas"] == [1, 2, 3]
    assert (first["leader"], first["leader_epoch"], first["partition_epoch"]) == (1, 7, 9)
    assert first["isr"] == [1, 2, 3]
    assert first["log_end"] == {"1": 42, "2": 40}  # broker 3's metrics were not read
    assert not first["under_replicated"] and not first["offline"]


def test_high_watermarks_are_the_leaders_live_and_the_followers_checkpointed() -> None:
    kafka = KafkaObservations(
        high_watermarks={("t", 0): 42},
        checkpoints={1: {("t", 0): 30}, 2: {("t", 0): 41}, 3: {}},
    )
    view = _view(_cluster([1, 2, 3], 1, leader=1, isr=[1, 2, 3]), kafka=kafka)
    first = view["topics"][0]["partitions"][0]
    assert first["high_watermark"] == {
        "1": {"offset": 42, "source": "live"},
        "2": {"offset": 41, "source": "checkpoint"},
    }
    # A dead leader's live value is not taken: its checkpoint is all the lab has.
    dead = _view(_cluster([1, 2, 3], 1, leader=1, isr=[1, 2, 3]), alive=(2, 3), kafka=kafka)
    assert dead["topics"][0]["partitions"][0]["high_watermark"]["1"] == {
        "offset": 30,
        "source": "checkpoint",
    }


def test_a_partition_with_a_short_isr_is_under_replicated() -> None:
    view = _view(_cluster([1, 2, 3], 1, leader=1, isr=[1, 3]))
    first = view["topics"][0]["partitions"][0]
    assert first["under_replicated"] and not first["offline"]


def test_a_partition_without_leader_or_with_a_dead_leader_is_offline() -> None:
    no_leader = _view(_cluster([2, 3], 2, leader=-1, isr=[1]))
    assert no_leader["topics"][0]["partitions"][0]["offline"]
    # Killed with -9: the process is gone but its registration lives until the session expires.
    dead_leader = _view(_cluster([1, 2, 3], 2, leader=1, isr=[1, 2, 3]), alive=(2, 3))
    assert dead_leader["topics"][0]["partitions"][0]["offline"]
    assert not dead_leader["topics"][0]["partitions"][1]["offline"]


def test_unreachable_zookeeper_gives_a_view_without_registrations() -> None:
    view = _view(None)
    assert view["zookeeper"]["reachable"] is False
    assert [b["registered"] for b in view["brokers"]] == [None, None, None]
    assert view["controller"] == {"id": None, "epoch": None}
    assert view["topics"] == []


def test_garbage_in_znodes_does_not_break_the_view() -> None:
    zookeeper = _cluster([1], controller=None, leader=1, isr=[1])
    zookeeper.znodes["/controller"] = (b"\xff not json", _stat())
    zookeeper.znodes["/brokers/topics/t/partitions/1/state"] = (b"[]", _stat())
    view = _view(zookeeper)
    assert view["controller"]["id"] is None
    assert view["topics"][0]["partitions"][1]["leader"] == -1


def _messages(entries: list[dict[str, Any]]) -> list[str]:
    return [e["message"] for e in entries]


def test_changes_name_the_lost_broker_the_new_controller_and_moved_leaders() -> None:
    before = _view(_cluster([1, 2, 3], controller=1, leader=1, isr=[1, 2, 3]))
    after = _view(_cluster([2, 3], controller=2, leader=2, isr=[2, 3]), alive=(2, 3))
    messages = _messages(snapshot.changes(before, after))
    assert "broker 1 lost: /brokers/ids/1 deleted" in messages
    assert "controller changed: broker 1 -> broker 2 (controller epoch 4)" in messages
    assert "t-0 leader 1 -> 2 (leader epoch 7)" in messages
    assert "t-0 ISR shrank: [1, 2, 3] -> [2, 3]" in messages


def test_changes_name_a_registered_broker_and_zookeeper_loss() -> None:
    before = _view(_cluster([2, 3], controller=2, leader=2, isr=[2, 3]))
    after = _view(_cluster([1, 2, 3], controller=2, leader=2, isr=[2, 3, 1]))
    messages = _messages(snapshot.changes(before, after))
    assert "broker 1 registered (/brokers/ids/1, broker epoch 101)" in messages
    assert "t-0 ISR expanded: [2, 3] -> [2, 3, 1]" in messages
    assert _messages(snapshot.changes(after, _view(None))) == ["ZooKeeper is unreachable"]
    assert snapshot.changes(None, after) == []


def test_changes_name_a_reassignment() -> None:
    before = _view(_cluster([1, 2, 3], controller=1, leader=1, isr=[1, 2, 3]))
    moved = _cluster([1, 2, 3], controller=1, leader=1, isr=[1, 2, 3])
    moved.znodes["/brokers/topics/t"] = (
        b'{"version":3,"partitions":{"0":[1,2],"1":[2,3,1]}}',
        _stat(),
    )
    messages = _messages(snapshot.changes(before, _view(moved)))
    assert messages == ["t-0 replicas [1, 2, 3] -> [1, 2] (reassigned in /brokers/topics/t)"]
