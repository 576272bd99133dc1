"""kafka-console-producer, kafka-console-consumer, kafka-consumer-groups (and kafka-dump-log on
a broker's segment) against a real cluster; one module, so that they share one cluster start-up."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator

import pytest

from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.tool_cli import (
    BIN_DIR,
    UNREACHABLE_BOOTSTRAP,
    assert_one_line_error,
    ok,
    run_tool,
)

WAIT_S = 60.0
# Long enough for a group join on a loaded machine, short enough to keep the tests quick.
CONSUMER_IDLE_MS = "15000"


def create_topic(cluster: ClusterHandle, name: str, partitions: int = 1, replicas: int = 3) -> None:
    args = ["--create", "--topic", name, "--partitions", str(partitions)]
    args += ["--replication-factor", str(replicas)]
    ok(run_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap, *args))


def produce(cluster: ClusterHandle, topic: str, text: str, *args: str) -> None:
    result = run_tool(
        "kafka-console-producer", "--bootstrap-server", cluster.bootstrap, "--topic", topic,
        *args, stdin=text,
    )  # fmt: skip
    assert ok(result) == ""


def consume(cluster: ClusterHandle, topic: str, *args: str) -> tuple[list[str], str]:
    result = run_tool(
        "kafka-console-consumer", "--bootstrap-server", cluster.bootstrap, "--topic", topic,
        "--timeout-ms", CONSUMER_IDLE_MS, *args,
    )  # fmt: skip
    return ok(result).splitlines(), result.stderr


def test_keys_and_headers_round_trip(cluster: ClusterHandle) -> None:
    create_topic(cluster, "console-keys")
    produce(
        cluster, "console-keys", "h1:a,h2:b\tk1:one\nh3:c\tk2:two\n",
        "--property", "parse.key=true", "--property", "key.separator=:",
        "--property", "parse.headers=true",
    )  # fmt: skip
    lines, err = consume(
        cluster, "console-keys", "--from-beginning", "--max-messages", "2",
        "--property", "print.key=true", "--property", "print.headers=true",
        "--property", "print.partition=true", "--property", "print.offset=true",
    )  # fmt: skip
    assert lines == [
        "Partition:0\tOffset:0\th1:a,h2:b\tk1\tone",
        "Partition:0\tOffset:1\th3:c\tk2\ttwo",
    ]
    assert err.strip().endswith("Processed a total of 2 messages")


def test_values_and_timestamps_with_custom_separators(cluster: ClusterHandle) -> None:
    create_topic(cluster, "console-plain")
    produce(cluster, "console-plain", "first\nsecond\nthird\n", "--sync")
    lines, _ = consume(
        cluster, "console-plain", "--from-beginning", "--max-messages", "3",
        "--property", "print.timestamp=true", "--property", "print.key=true",
        "--property", "key.separator= | ",
    )  # fmt: skip
    assert [line.split(" | ", 1)[1] for line in lines] == [
        "null | first",
        "null | second",
        "null | third",
    ]
    assert all(line.startswith("CreateTime:") for line in lines)


def test_group_resumes_where_it_stopped(cluster: ClusterHandle) -> None:
    create_topic(cluster, "console-group")
    produce(cluster, "console-group", "".join(f"m{n}\n" for n in range(5)))
    first, _ = consume(
        cluster, "console-group", "--group", "resumer", "--from-beginning", "--max-messages", "3"
    )
    assert first == ["m0", "m1", "m2"]
    rest, err = consume(cluster, "console-group", "--group", "resumer", "--max-messages", "2")
    assert rest == ["m3", "m4"]
    assert err.strip().endswith("Processed a total of 2 messages")


def test_partition_and_offset_and_include(cluster: ClusterHandle) -> None:
    create_topic(cluster, "console-offsets")
    produce(cluster, "console-offsets", "a\nb\nc\nd\n")
    from_two, _ = consume(
        cluster, "console-offsets", "--partition", "0", "--offset", "2", "--max-messages", "2"
    )
    assert from_two == ["c", "d"]
    result = run_tool(
        "kafka-console-consumer", "--bootstrap-server", cluster.bootstrap,
        "--include", "console-off.*", "--from-beginning", "--max-messages", "4",
        "--timeout-ms", CONSUMER_IDLE_MS,
    )  # fmt: skip
    assert ok(result).splitlines() == ["a", "b", "c", "d"]


def test_dump_log_reads_a_brokers_segment(cluster: ClusterHandle) -> None:
    create_topic(cluster, "console-dump")
    produce(cluster, "console-dump", "k:dumped\n", "--property", "parse.key=true",
            "--property", "key.separator=:")  # fmt: skip
    segment = cluster.dir / "broker-1" / "data" / "console-dump-0" / "00000000000000000000.log"
    # Every broker holds a replica; broker 1's copy may still be on its way.
    wait_until(lambda: segment.exists() and segment.stat().st_size > 0, WAIT_S, "the replica")
    lines = ok(run_tool("kafka-dump-log", "--files", str(segment), "--print-data-log"))
    assert lines.splitlines()[:2] == [f"Dumping {segment}", "Log starting offset: 0"]
    assert "| offset: 0 CreateTime: " in lines
    assert lines.rstrip().endswith("headerKeys: [] key: k payload: dumped")


def test_failures_are_one_line(cluster: ClusterHandle) -> None:
    create_topic(cluster, "console-errors")
    no_key = run_tool(
        "kafka-console-producer", "--bootstrap-server", cluster.bootstrap,
        "--topic", "console-errors", "--property", "parse.key=true", stdin="no separator\n",
    )  # fmt: skip
    assert_one_line_error(no_key, "No key separator found on line number 1")
    bad_offset = run_tool(
        "kafka-console-consumer", "--bootstrap-server", cluster.bootstrap,
        "--topic", "console-errors", "--partition", "0", "--offset", "soon",
    )  # fmt: skip
    assert_one_line_error(bad_offset, "The provided offset value 'soon' is incorrect")
    both = run_tool("kafka-console-consumer", "--bootstrap-server", cluster.bootstrap,
                    "--topic", "a", "--include", "b")  # fmt: skip
    assert_one_line_error(both, "Exactly one of --include/--topic is required")
    unreachable = run_tool(
        "kafka-console-producer", "--bootstrap-server", UNREACHABLE_BOOTSTRAP, "--topic", "x",
        stdin="lost\n",
    )  # fmt: skip
    assert_one_line_error(unreachable, "Could not connect", UNREACHABLE_BOOTSTRAP)
    bad_flag = run_tool("kafka-console-consumer", "--no-such-flag")
    assert_one_line_error(bad_flag, "--no-such-flag")


# ---- kafka-consumer-groups --------------------------------------------------------------------

GROUPS_TOPIC = "groups-topic"
MESSAGE_COUNT = 10
CONSUMED = 4
OFFSETS_HEADER = (
    "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             "
    "CONSUMER-ID     HOST            CLIENT-ID"
)


def groups(cluster: ClusterHandle, *args: str) -> subprocess.CompletedProcess[str]:
    return run_tool("kafka-consumer-groups", "--bootstrap-server", cluster.bootstrap, *args)


def columns(line: str) -> list[str]:
    return line.split()


@pytest.fixture(scope="module")
def idle_group(cluster: ClusterHandle) -> str:
    """`idle` consumed CONSUMED of MESSAGE_COUNT records of a one-partition topic and left."""
    create_topic(cluster, GROUPS_TOPIC, replicas=2)
    lines = "".join(f"m{n}\n" for n in range(MESSAGE_COUNT))
    produce = ["--bootstrap-server", cluster.bootstrap, "--topic", GROUPS_TOPIC]
    ok(run_tool("kafka-console-producer", *produce, stdin=lines))
    consume = [*produce, "--group", "idle", "--from-beginning", "--max-messages", str(CONSUMED)]
    ok(run_tool("kafka-console-consumer", *consume, "--timeout-ms", "20000"))
    return "idle"


@pytest.fixture
def active_member(cluster: ClusterHandle) -> Iterator[str]:
    """A console consumer in group `active`, running until the test ends."""
    command = [str(BIN_DIR / "kafka-console-consumer"), "--bootstrap-server", cluster.bootstrap]
    command += ["--topic", GROUPS_TOPIC, "--group", "active"]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield "active"
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=WAIT_S)
        assert "Traceback" not in err, err


def test_describe_shows_offsets_and_lag(cluster: ClusterHandle, idle_group: str) -> None:
    result = groups(cluster, "--describe", "--group", idle_group)
    lines = ok(result).splitlines()
    assert lines[0] == ""
    assert lines[1] == OFFSETS_HEADER
    assert columns(lines[2]) == [
        "idle", GROUPS_TOPIC, "0", str(CONSUMED), str(MESSAGE_COUNT), str(MESSAGE_COUNT - CONSUMED),
        "-", "-", "-",
    ]  # fmt: skip
    assert result.stderr == "\nConsumer group 'idle' has no active members.\n"


def test_list_and_state(cluster: ClusterHandle, idle_group: str) -> None:
    assert idle_group in ok(groups(cluster, "--list")).split()
    listed = ok(groups(cluster, "--list", "--state", "empty")).splitlines()
    assert columns(listed[0]) == ["GROUP", "STATE"]
    assert [idle_group, "Empty"] in [columns(line) for line in listed[1:]]
    state = ok(groups(cluster, "--describe", "--group", idle_group, "--state")).splitlines()
    assert state[0] == ""
    assert columns(state[1]) == [
        "GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS",
    ]  # fmt: skip
    row = columns(state[2])
    assert (row[0], row[-2], row[-1]) == (idle_group, "Empty", "0")


def test_members_of_an_active_group(cluster: ClusterHandle, active_member: str) -> None:
    def members() -> list[str]:
        result = groups(cluster, "--describe", "--group", active_member, "--members", "--verbose")
        return result.stdout.splitlines() if result.returncode == 0 else []

    def assigned() -> bool:
        lines = members()
        return len(lines) == 3 and lines[2].rstrip().endswith(f"{GROUPS_TOPIC}(0)")

    wait_until(assigned, WAIT_S, "the member to join and get the partition")
    header, row = members()[1:]
    assert columns(header) == [
        "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT",
    ]  # fmt: skip
    assert columns(row)[0] == active_member
    assert columns(row)[-2:] == ["1", f"{GROUPS_TOPIC}(0)"]
    busy = groups(
        cluster, "--reset-offsets", "--group", active_member, "--topic", GROUPS_TOPIC,
        "--to-earliest", "--execute",
    )  # fmt: skip
    assert_one_line_error(busy, "can only be reset if the group is inactive", "Stable")


def _current_offset(cluster: ClusterHandle, group: str) -> str:
    return columns(ok(groups(cluster, "--describe", "--group", group)).splitlines()[2])[3]


def _reset(cluster: ClusterHandle, group: str, *scenario: str) -> list[str]:
    args = ["--reset-offsets", "--group", group, "--topic", GROUPS_TOPIC, *scenario]
    return ok(groups(cluster, *args)).splitlines()


def test_reset_offsets_dry_run_and_execute(cluster: ClusterHandle, idle_group: str) -> None:
    planned = _reset(cluster, idle_group, "--to-earliest", "--dry-run")
    assert planned[0] == ""
    assert columns(planned[1]) == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert columns(planned[2]) == [idle_group, GROUPS_TOPIC, "0", "0"]
    assert _current_offset(cluster, idle_group) == str(CONSUMED), "a dry run changes nothing"
    _reset(cluster, idle_group, "--to-offset", "7", "--execute")
    assert _current_offset(cluster, idle_group) == "7"
    _reset(cluster, idle_group, "--shift-by", "-2", "--execute")
    assert _current_offset(cluster, idle_group) == "5"
    _reset(cluster, idle_group, "--to-offset", "1000", "--execute")  # clamped to the log end
    assert _current_offset(cluster, idle_group) == str(MESSAGE_COUNT)
    _reset(cluster, idle_group, "--to-datetime", "2000-01-01T00:00:00.000", "--execute")
    assert _current_offset(cluster, idle_group) == "0"
    topic_and_partition = ["--topic", f"{GROUPS_TOPIC}:0", "--to-latest", "--execute"]
    ok(groups(cluster, "--reset-offsets", "--group", idle_group, *topic_and_partition))
    assert _current_offset(cluster, idle_group) == str(MESSAGE_COUNT)


def test_delete_group(cluster: ClusterHandle) -> None:
    consume = [
        "--bootstrap-server",
        cluster.bootstrap,
        "--topic",
        GROUPS_TOPIC,
        "--group",
        "doomed",
    ]
    consume += ["--from-beginning", "--max-messages", "1", "--timeout-ms", "20000"]
    ok(run_tool("kafka-console-consumer", *consume))
    deleted = ok(groups(cluster, "--delete", "--group", "doomed"))
    assert deleted == "Deletion of requested consumer groups ('doomed') was successful.\n"
    gone = groups(cluster, "--describe", "--group", "doomed")
    assert_one_line_error(gone, "Consumer group 'doomed' does not exist.")


def test_consumer_groups_failures_are_one_line(cluster: ClusterHandle) -> None:
    assert_one_line_error(groups(cluster, "--describe"), "[group], [all-groups]")
    assert_one_line_error(groups(cluster, "--list", "--describe"), "exactly one action")
    assert_one_line_error(groups(cluster, "--wat"), "--wat")
    no_scenario = groups(cluster, "--reset-offsets", "--group", "x", "--topic", GROUPS_TOPIC)
    assert_one_line_error(no_scenario, "requires exactly one of")
    unreachable = run_tool(
        "kafka-consumer-groups", "--bootstrap-server", UNREACHABLE_BOOTSTRAP, "--list"
    )
    assert_one_line_error(unreachable, "Could not connect", UNREACHABLE_BOOTSTRAP)
