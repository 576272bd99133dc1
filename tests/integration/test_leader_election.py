"""Preferred and unclean leader election on a live cluster: kafka-leader-election, the
/admin/preferred_replica_election znode, ElectLeaders from a client, and the automatic
leader rebalance (auto.leader.rebalance.enable)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tests.integration.conftest import ClusterFactory, ClusterHandle, wait_until, zk_session
from tests.integration.wire import WireClient, broker_address

TIMEOUT_S = 60
TOOL = Path(sys.executable).parent / "kafka-leader-election"
ELECT_LEADERS = 43
NOT_CONTROLLER = 41
# Manual elections must not race the automatic ones in the tests that check them.
NO_AUTO_REBALANCE = {"auto.leader.rebalance.enable": "false"}
PREFERRED_ELECTION_PATH = "/admin/preferred_replica_election"


def _state(zk: KazooClient, topic: str, partition: int = 0) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    result: dict[str, Any] = json.loads(data)
    return result


def _has_state(zk: KazooClient, topic: str) -> bool:
    return zk.exists(f"/brokers/topics/{topic}/partitions/0/state") is not None


def _controller(zk: KazooClient) -> int:
    data, _ = zk.get("/controller")
    return int(json.loads(data)["brokerid"])


def _create(cluster: ClusterHandle, topic: str, replicas: list[int]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new = NewTopic(topic, 1, replica_assignment=[replicas])
    admin.create_topics([new])[topic].result(timeout=TIMEOUT_S)


def _run_tool(cluster: ClusterHandle, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOL), "--bootstrap-server", cluster.bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def _bounce(cluster: ClusterHandle, zk: KazooClient, broker: int, topics: list[str]) -> None:
    """Stop `broker` until leadership of `topics` moves away, start it again, and wait until it
    is back in every ISR."""
    cluster.kill(broker)
    wait_until(
        lambda: all(broker not in _state(zk, t)["isr"] for t in topics),
        TIMEOUT_S,
        f"broker {broker} out of the ISRs",
    )
    cluster.start(broker)
    wait_until(
        lambda: all(broker in _state(zk, t)["isr"] for t in topics),
        TIMEOUT_S,
        f"broker {broker} back in the ISRs",
    )


@pytest.fixture(scope="module")
def cluster(make_cluster_module: ClusterFactory) -> ClusterHandle:
    return make_cluster_module(overrides=NO_AUTO_REBALANCE)


@pytest.fixture(scope="module")
def zk(cluster: ClusterHandle) -> Iterator[KazooClient]:
    with zk_session(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def preferred(cluster: ClusterHandle, zk: KazooClient) -> int:
    """A broker (not the controller) that is the preferred leader of `tool-pref` and `zk-pref`
    but leads neither: it was stopped and started again."""
    broker = next(b for b in cluster.broker_ids if b != _controller(zk))
    others = [b for b in cluster.broker_ids if b != broker]
    topics = ["tool-pref", "zk-pref"]
    for topic in topics:
        _create(cluster, topic, [broker, *others])
    wait_until(
        lambda: all(_has_state(zk, t) and _state(zk, t)["leader"] == broker for t in topics),
        TIMEOUT_S,
        "preferred leaders",
    )
    _bounce(cluster, zk, broker, topics)
    return broker


def test_tool_preferred_election_moves_leadership_back(
    cluster: ClusterHandle, zk: KazooClient, preferred: int
) -> None:
    before = _state(zk, "tool-pref")
    assert before["leader"] != preferred
    result = _run_tool(cluster, "--election-type", "PREFERRED", "--topic", "tool-pref")
    assert result.returncode == 1  # --partition missing
    assert "Missing required option(s): partition" in result.stderr

    result = _run_tool(
        cluster, "--election-type", "PREFERRED", "--topic", "tool-pref", "--partition", "0"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "Successfully completed leader election (PREFERRED) for partitions tool-pref-0\n"
    )
    after = _state(zk, "tool-pref")
    assert after["leader"] == preferred
    assert after["isr"] == before["isr"]
    assert after["leader_epoch"] == before["leader_epoch"] + 1
    log = (cluster.dir / f"broker-{_controller(zk)}" / "state-change.log").read_text()
    assert "Changed partition tool-pref-0" in log
    assert "reason: preferred leader election" in log

    again = _run_tool(
        cluster, "--election-type", "preferred", "--topic", "tool-pref", "--partition", "0"
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == "Valid replica already elected for partitions tool-pref-0\n"


def test_znode_request_elects_preferred_replica_and_is_deleted(
    zk: KazooClient, preferred: int
) -> None:
    assert _state(zk, "zk-pref")["leader"] != preferred
    request = {"version": 1, "partitions": [{"topic": "zk-pref", "partition": 0}]}
    zk.create(PREFERRED_ELECTION_PATH, json.dumps(request).encode())
    wait_until(
        lambda: _state(zk, "zk-pref")["leader"] == preferred,
        TIMEOUT_S,
        "the preferred leader back",
    )
    wait_until(lambda: zk.exists(PREFERRED_ELECTION_PATH) is None, TIMEOUT_S, "the request deleted")


def test_tool_reports_unknown_partitions_as_failures(cluster: ClusterHandle) -> None:
    result = _run_tool(
        cluster, "--election-type", "PREFERRED", "--topic", "nope", "--partition", "0"
    )
    assert result.returncode == 1
    assert result.stdout.startswith(
        "Error completing leader election (PREFERRED) for partition: nope-0: "
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"
    )
    assert "1 replica(s) could not be elected" in result.stderr


def test_tool_reads_partitions_from_a_json_file(
    cluster: ClusterHandle, preferred: int, tmp_path: Path
) -> None:
    duplicated = tmp_path / "duplicated.json"
    entry = {"topic": "tool-pref", "partition": 0}
    duplicated.write_text(json.dumps({"partitions": [entry, entry]}))
    result = _run_tool(
        cluster, "--election-type", "PREFERRED", "--path-to-json-file", str(duplicated)
    )
    assert result.returncode == 1
    assert "Replica election data contains duplicate partitions: tool-pref-0" in result.stderr

    partitions = tmp_path / "partitions.json"
    partitions.write_text(json.dumps({"partitions": [entry]}))
    result = _run_tool(
        cluster, "--election-type", "PREFERRED", "--path-to-json-file", str(partitions)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout in (
        "Successfully completed leader election (PREFERRED) for partitions tool-pref-0\n",
        "Valid replica already elected for partitions tool-pref-0\n",
    )


def test_elect_leaders_sent_to_another_broker_answers_not_controller(
    cluster: ClusterHandle, zk: KazooClient
) -> None:
    other = next(b for b in cluster.broker_ids if b != _controller(zk))
    request = {
        "election_type": 0,
        "topic_partitions": [{"topic": "tool-pref", "partitions": [0]}],
        "timeout": 5000,
    }
    with WireClient.to(broker_address(cluster, other)) as client:
        response = client.request(ELECT_LEADERS, 2, request)
    assert int(response.error_code) == 0
    [topic] = response.replica_election_results
    assert [int(p.error_code) for p in topic.partition_result] == [NOT_CONTROLLER]


def test_unclean_election_elects_the_only_live_replica_outside_the_isr(
    cluster: ClusterHandle, zk: KazooClient
) -> None:
    first, second = [b for b in cluster.broker_ids if b != _controller(zk)]
    _create(cluster, "unclean", [first, second])
    wait_until(lambda: _has_state(zk, "unclean"), TIMEOUT_S, "the partition state")
    wait_until(lambda: len(_state(zk, "unclean")["isr"]) == 2, TIMEOUT_S, "a full ISR")
    cluster.kill(second)
    wait_until(lambda: _state(zk, "unclean")["isr"] == [first], TIMEOUT_S, "ISR shrunk")
    cluster.kill(first)
    wait_until(lambda: _state(zk, "unclean")["leader"] == -1, TIMEOUT_S, "partition offline")
    cluster.start(second)  # alive, but not in the ISR: no clean election can pick it
    assert _state(zk, "unclean")["leader"] == -1
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    partition = TopicPartition("unclean", 0)
    results = admin.elect_leaders(ElectionType.UNCLEAN, [partition]).result(timeout=TIMEOUT_S)
    assert list(results.values()) == [None]
    state = _state(zk, "unclean")
    assert (state["leader"], state["isr"]) == (second, [second])
    cluster.start(first)


def test_auto_rebalance_moves_leadership_back(make_cluster: ClusterFactory) -> None:
    cluster = make_cluster(overrides={"leader.imbalance.check.interval.seconds": "2"})
    with zk_session(cluster) as zk:
        broker = next(b for b in cluster.broker_ids if b != _controller(zk))
        others = [b for b in cluster.broker_ids if b != broker]
        _create(cluster, "auto", [broker, *others])
        wait_until(
            lambda: _has_state(zk, "auto") and _state(zk, "auto")["leader"] == broker,
            TIMEOUT_S,
            "the preferred leader",
        )
        _bounce(cluster, zk, broker, ["auto"])
        wait_until(
            lambda: _state(zk, "auto")["leader"] == broker,
            TIMEOUT_S,
            "the automatic rebalance",
        )
