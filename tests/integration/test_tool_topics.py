"""kafka-topics and zookeeper-shell against a real cluster: Kafka's flags, zkCli's and Kafka's
output lines, and failures. (One module, so that both share one cluster start-up.)"""

from __future__ import annotations

import json
import re

import pytest
from kazoo.client import KazooClient

from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.tool_cli import UNREACHABLE_BOOTSTRAP, assert_one_line_error, ok, run_tool

# Broker 3 is killed here, and --list is checked against every topic.
pytestmark = pytest.mark.own_cluster

WAIT_S = 60.0
PARTITION_LINE = re.compile(
    r"^\tTopic: (\S+)\tPartition: (\d+)\tLeader: (\d+|none)\tReplicas: ([\d,]*)\tIsr: ([\d,]*)$"
)


def topics(cluster: ClusterHandle, *args: str) -> str:
    return ok(run_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap, *args))


def describe(cluster: ClusterHandle, *args: str) -> list[str]:
    return topics(cluster, "--describe", *args).splitlines()


def test_create_then_describe_prints_kafka_lines(cluster: ClusterHandle, zk: KazooClient) -> None:
    created = topics(
        cluster, "--create", "--topic", "described", "--partitions", "3",
        "--replication-factor", "2", "--config", "retention.ms=86400000",
    )  # fmt: skip
    assert created == "Created topic described.\n"
    lines = describe(cluster, "--topic", "described")
    znode = json.loads(zk.get("/brokers/topics/described")[0])
    assert lines[0] == (
        f"Topic: described\tTopicId: {znode['topic_id']}\tPartitionCount: 3\t"
        "ReplicationFactor: 2\tConfigs: retention.ms=86400000"
    )
    assert len(lines) == 4
    for partition, line in enumerate(lines[1:]):
        match = PARTITION_LINE.match(line)
        assert match is not None, line
        topic, number, leader, replicas, isr = match.groups()
        assert (topic, int(number)) == ("described", partition)
        assert replicas.split(",") == [str(b) for b in znode["partitions"][str(partition)]]
        assert leader in replicas.split(",") and sorted(isr.split(",")) == sorted(
            replicas.split(",")
        )


def test_list_filters_by_whole_name_regex(cluster: ClusterHandle) -> None:
    for name in ("list-a", "list-b", "other-list-a"):
        topics(
            cluster, "--create", "--topic", name, "--partitions", "1", "--replication-factor", "1"
        )
    assert topics(cluster, "--list", "--topic", "list-.*").split() == ["list-a", "list-b"]
    assert topics(cluster, "--list", "--topic", "list-a,other-list-a").split() == [
        "list-a",
        "other-list-a",
    ]
    everything = topics(cluster, "--list").split()
    assert {"list-a", "list-b", "other-list-a"} <= set(everything)
    assert everything == sorted(everything)
    without_internal = topics(cluster, "--list", "--exclude-internal").split()
    assert not any(name.startswith("__") for name in without_internal)


def test_existing_and_missing_topics(cluster: ClusterHandle) -> None:
    args = ["--create", "--topic", "twice", "--partitions", "1", "--replication-factor", "1"]
    topics(cluster, *args)
    again = run_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap, *args)
    assert_one_line_error(again, "Topic 'twice' already exists")
    assert topics(cluster, *args, "--if-not-exists") == ""
    missing = run_tool(
        "kafka-topics", "--bootstrap-server", cluster.bootstrap, "--describe", "--topic", "nope"
    )
    assert_one_line_error(missing, "Topic 'nope' does not exist as expected")
    assert topics(cluster, "--describe", "--topic", "nope", "--if-exists") == ""
    deleted = run_tool(
        "kafka-topics", "--bootstrap-server", cluster.bootstrap, "--delete", "--topic", "nope"
    )
    assert_one_line_error(deleted, "Topic 'nope' does not exist as expected")


def test_topics_with_overrides_shows_only_overridden_topics(cluster: ClusterHandle) -> None:
    topics(
        cluster, "--create", "--topic", "plain", "--partitions", "1", "--replication-factor", "1"
    )
    topics(
        cluster, "--create", "--topic", "tuned", "--partitions", "1", "--replication-factor", "1",
        "--config", "cleanup.policy=compact",
    )  # fmt: skip
    lines = describe(cluster, "--topic", "plain,tuned", "--topics-with-overrides")
    assert len(lines) == 1
    assert lines[0].startswith("Topic: tuned\t")
    assert lines[0].endswith("\tConfigs: cleanup.policy=compact")


def test_delete_removes_the_topic(cluster: ClusterHandle) -> None:
    topics(
        cluster, "--create", "--topic", "doomed", "--partitions", "2", "--replication-factor", "2"
    )
    assert topics(cluster, "--delete", "--topic", "doomed") == ""
    wait_until(
        lambda: "doomed" not in topics(cluster, "--list").split(), WAIT_S, "doomed to disappear"
    )


def test_alter_adds_partitions(cluster: ClusterHandle) -> None:
    """Needs CreatePartitions (API key 37) in the broker."""
    topics(
        cluster, "--create", "--topic", "grows", "--partitions", "1", "--replication-factor", "2"
    )
    assert topics(cluster, "--alter", "--topic", "grows", "--partitions", "3") == ""
    wait_until(
        lambda: "PartitionCount: 3\t" in describe(cluster, "--topic", "grows")[0],
        WAIT_S,
        "three partitions",
    )
    assert len(describe(cluster, "--topic", "grows")) == 4


def test_usage_errors_are_one_line(cluster: ClusterHandle) -> None:
    bad_flag = run_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap, "--frobnicate")
    assert_one_line_error(bad_flag, "--frobnicate")
    no_action = run_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap)
    assert_one_line_error(no_action, "exactly one action")
    two_actions = run_tool(
        "kafka-topics", "--bootstrap-server", cluster.bootstrap, "--list", "--delete"
    )
    assert_one_line_error(two_actions, "exactly one action")
    no_server = run_tool("kafka-topics", "--list")
    assert_one_line_error(no_server, "--bootstrap-server must be specified")
    unreachable = run_tool("kafka-topics", "--bootstrap-server", UNREACHABLE_BOOTSTRAP, "--list")
    assert_one_line_error(unreachable, "Could not connect", UNREACHABLE_BOOTSTRAP)


# ---- zookeeper-shell ----------------------------------------------------------------------

STAT_FIELDS = [
    "cZxid", "ctime", "mZxid", "mtime", "pZxid", "cversion", "dataVersion", "aclVersion",
    "ephemeralOwner", "dataLength", "numChildren",
]  # fmt: skip


def shell(cluster: ClusterHandle, *args: str, stdin: str | None = None) -> str:
    return ok(run_tool("zookeeper-shell", cluster.zk_connect, *args, stdin=stdin))


def test_ls_prints_children_like_zkcli(cluster: ClusterHandle) -> None:
    assert shell(cluster, "ls", "/brokers/ids") == "[1, 2, 3]\n"


def test_get_prints_raw_data_and_pretty_json(cluster: ClusterHandle, zk: KazooClient) -> None:
    raw = shell(cluster, "get", "/controller")
    assert raw == zk.get("/controller")[0].decode() + "\n"
    pretty = shell(cluster, "get", "--pretty", "/brokers/ids/1")
    assert json.loads(pretty)["port"] == cluster.broker_port(1)
    assert pretty.startswith("{\n  ")


def test_stat_prints_zkcli_field_names(cluster: ClusterHandle, zk: KazooClient) -> None:
    lines = shell(cluster, "stat", "/controller").splitlines()
    assert [line.split(" = ")[0] for line in lines] == STAT_FIELDS
    fields = dict(line.split(" = ", 1) for line in lines)
    stat = zk.exists("/controller")
    assert stat is not None
    assert fields["ephemeralOwner"] == hex(stat.ephemeralOwner)
    assert fields["dataLength"] == str(stat.dataLength)
    assert fields["cZxid"] == hex(stat.czxid)


def test_chroot_and_commands_from_stdin(cluster: ClusterHandle) -> None:
    chrooted = ok(run_tool("zookeeper-shell", f"{cluster.zk_connect}/brokers", "ls", "/ids"))
    assert chrooted == "[1, 2, 3]\n"
    assert shell(cluster, stdin="ls /brokers/ids\n\nls -s /brokers\n").startswith(
        "[1, 2, 3]\n[ids, seqid, topics]\ncZxid = "
    )


def test_missing_node_and_bad_command_fail_with_one_line(cluster: ClusterHandle) -> None:
    missing = run_tool("zookeeper-shell", cluster.zk_connect, "get", "/no/such/node")
    assert_one_line_error(missing, "Node does not exist: /no/such/node")
    bad = run_tool("zookeeper-shell", cluster.zk_connect, "rmr", "/")
    assert_one_line_error(bad, "invalid choice: 'rmr'")


# ---- last: stops a broker -------------------------------------------------------------------


def test_partition_reports_after_a_broker_stops(cluster: ClusterHandle) -> None:
    """Last in this module: stops broker 3 (and starts it again)."""
    topics(cluster, "--create", "--topic", "on-three", "--replica-assignment", "3")
    topics(cluster, "--create", "--topic", "one-and-three", "--replica-assignment", "1:3")
    assert describe(cluster, "--under-replicated-partitions") == []
    assert describe(cluster, "--unavailable-partitions") == []
    cluster.kill(3)
    try:
        wait_until(
            lambda: any(
                "on-three" in line for line in describe(cluster, "--unavailable-partitions")
            ),
            WAIT_S,
            "on-three to be reported unavailable",
        )
        [unavailable] = describe(cluster, "--unavailable-partitions", "--topic", "on-three")
        assert unavailable == "\tTopic: on-three\tPartition: 0\tLeader: none\tReplicas: 3\tIsr: 3"
        wait_until(
            lambda: (
                describe(cluster, "--under-replicated-partitions", "--topic", "one-and-three") != []
            ),
            WAIT_S,
            "one-and-three to be reported under-replicated",
        )
        [under] = describe(cluster, "--under-replicated-partitions", "--topic", "one-and-three")
        assert under == "\tTopic: one-and-three\tPartition: 0\tLeader: 1\tReplicas: 1,3\tIsr: 1"
    finally:
        cluster.start(3)
