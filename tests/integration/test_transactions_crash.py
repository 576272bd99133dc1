"""Exactly-once through crashes: a consume-transform-produce application (`eos_app.py`,
confluent-kafka, read_committed, its input offsets sent to each transaction) copies a stream
while it is SIGKILLed with a transaction open, the transaction coordinator's broker is
SIGKILLed with another one open, and a second instance with the same transactional id fences
the first. A read_committed reader then sees every input record exactly once, in order per
partition; a read_uncommitted reader also sees the aborted records.

The application's consumer group is placed on another broker than its transaction coordinator.
librdkafka (2.10 to at least 2.16) drops a broker that leaves the metadata together with its
thread, and `send_offsets_to_transaction` then waits without bound for a group coordinator on
that broker (librdkafka issue 5511). It hangs against Apache Kafka 3.9 just as against us, so
the test keeps the killed broker away from the group's coordinator."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.conftest import ClusterHandle, wait_until
from tests.integration.requests import topic_spec
from tests.integration.wire import WireClient, controller_address, create_topics

APP_SCRIPT = Path(__file__).with_name("eos_app.py")
REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120
PARTITIONS = 3
RECORDS_PER_PARTITION = 100
EXPECTED = PARTITIONS * RECORDS_PER_PARTITION
TRANSACTIONAL_ID = "eos-crash-app"
EXIT_FENCED = 3
CONSUME_BATCH = 500
STDERR_TAIL_LINES = 60
FIND_COORDINATOR, GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE = 10, 0, 1
GROUP_CANDIDATES = 50
CLUSTER_SETTINGS = {
    # A SIGKILLed broker's partitions move once its ZooKeeper session expires.
    "zookeeper.session.timeout.ms": "6000",
    "transaction.state.log.num.partitions": "10",
}


@dataclass
class App:
    """One instance of eos_app.py, its stdout lines collected by a thread."""

    name: str
    process: subprocess.Popen[str]
    stderr_path: Path
    lines: list[str] = field(default_factory=list)

    def follow(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, what: str, matches: Callable[[list[str]], bool]) -> None:
        def seen() -> bool:
            if self.process.poll() is not None and not matches(self.lines):
                raise AssertionError(f"{self.name} exited {self.process.returncode}: {self.lines}")
            return matches(self.lines)

        def state() -> str:
            return (
                f"{self.name}: {what}\noutput so far: {self.lines[-10:]}\n"
                f"end of its stderr:\n{self.stderr_tail()}"
            )

        wait_until(seen, TIMEOUT_S, state)

    def stderr_tail(self) -> str:
        """librdkafka's debug log and any stack dump: where a stalled app stood."""
        lines = self.stderr_path.read_text(errors="replace").splitlines()
        return "\n".join(lines[-STDERR_TAIL_LINES:])

    def wait_holding(self, count: int) -> int:
        """Waits for its `count`-th open transaction; the number of records it holds."""
        self.wait_for(f"holding #{count}", lambda lines: len(_held(lines)) >= count)
        return _held(self.lines)[count - 1]

    def release(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def exit_code(self) -> int:
        return self.process.wait(timeout=TIMEOUT_S)


def _held(lines: list[str]) -> list[int]:
    return [int(line.split()[1]) for line in lines if line.startswith("holding ")]


def _committed_after(transaction: int) -> Callable[[list[str]], bool]:
    def matches(lines: list[str]) -> bool:
        return any(
            line.startswith("committed ") and int(line.split()[1]) >= transaction for line in lines
        )

    return matches


def _start_app(bootstrap: str, name: str, work_dir: Path, group: str, hold_at: str) -> App:
    command = [sys.executable, str(APP_SCRIPT), "--bootstrap", bootstrap, "--debug"]
    command += ["--input", "eos-in", "--output", "eos-out", "--group", group]
    command += ["--transactional-id", TRANSACTIONAL_ID, "--partitions", str(PARTITIONS)]
    command += ["--expected", str(EXPECTED), "--hold-at", hold_at]
    stderr_path = work_dir / f"{name}.stderr"
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    app = App(name, process, stderr_path)
    threading.Thread(target=app.follow, daemon=True).start()
    return app


def _create_topics(cluster: ClusterHandle) -> None:
    specs = [topic_spec(name, PARTITIONS, 3) for name in ("eos-in", "eos-out")]
    with WireClient.to(controller_address(cluster)) as client:
        assert all(int(t.error_code) == 0 for t in create_topics(client, specs).topics)


def _produce_input(bootstrap: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for partition in range(PARTITIONS):
        for i in range(RECORDS_PER_PARTITION):
            producer.produce("eos-in", value=f"in-{partition}-{i}".encode(), partition=partition)
    assert producer.flush(TIMEOUT_S) == 0


def _coordinator_id(cluster: ClusterHandle, key: str, key_type: int) -> int:
    """The coordinator's broker id, once its internal topic exists (the first FindCoordinator
    creates it and answers COORDINATOR_NOT_AVAILABLE)."""
    found: list[int] = []

    def answered() -> bool:
        with WireClient.to(controller_address(cluster)) as client:
            reply = client.request(FIND_COORDINATOR, 3, {"key": key, "key_type": key_type})
        if int(reply.error_code) == 0:
            found.append(int(reply.node_id))
        return bool(found)

    wait_until(answered, TIMEOUT_S, f"a coordinator for {key!r} (key type {key_type})")
    return found[0]


def _group_away_from(cluster: ClusterHandle, broker_id: int) -> str:
    """A group id whose coordinator is not on `broker_id` (see the module's docstring)."""
    for i in range(GROUP_CANDIDATES):
        group = f"eos-app-{i}"
        if _coordinator_id(cluster, group, GROUP_KEY_TYPE) != broker_id:
            return group
    raise AssertionError(f"all {GROUP_CANDIDATES} candidate groups are on broker {broker_id}")


def _consumer(bootstrap: str, isolation_level: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"eos-reader-{uuid.uuid4()}",
            "isolation.level": isolation_level,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )


def _read_to_end(bootstrap: str, isolation_level: str) -> dict[int, list[bytes]]:
    """Every record of eos-out each partition shows at `isolation_level`, in offset order."""
    from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

    consumer = _consumer(bootstrap, isolation_level)
    consumer.assign([TopicPartition("eos-out", p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    read: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    at_end: set[int] = set()

    def all_read() -> bool:
        for message in consumer.consume(CONSUME_BATCH, 0.5):
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                at_end.add(message.partition())
            elif error is None:
                read[message.partition()].append(message.value())
        return len(at_end) == PARTITIONS

    try:
        wait_until(all_read, TIMEOUT_S, f"eos-out read to its end ({isolation_level})")
    finally:
        consumer.close()
    return read


def _stable_ends_behind(bootstrap: str) -> bool:
    """Whether some partition's last stable offset (read_committed's end) is behind its high
    watermark: records of an open transaction, hidden from read_committed readers."""
    from confluent_kafka import TopicPartition

    ends: dict[str, list[int]] = {}
    for level in ("read_committed", "read_uncommitted"):
        consumer = _consumer(bootstrap, level)
        try:
            ends[level] = [
                consumer.get_watermark_offsets(TopicPartition("eos-out", p), TIMEOUT_S, False)[1]
                for p in range(PARTITIONS)
            ]
        finally:
            consumer.close()
    stable, high = ends["read_committed"], ends["read_uncommitted"]
    assert all(s <= h for s, h in zip(stable, high, strict=True)), ends
    return stable != high


def test_exactly_once_through_app_kills_a_coordinator_kill_and_fencing(
    make_cluster: Any, tmp_path: Path
) -> None:
    cluster = make_cluster(brokers=3, overrides=CLUSTER_SETTINGS)
    _create_topics(cluster)
    _produce_input(cluster.bootstrap)
    coordinator = _coordinator_id(cluster, TRANSACTIONAL_ID, TRANSACTION_KEY_TYPE)
    group = _group_away_from(cluster, coordinator)

    first = _start_app(cluster.bootstrap, "first", tmp_path, group, hold_at="3")
    held_by_first = first.wait_holding(1)
    assert _stable_ends_behind(cluster.bootstrap), "an open transaction's records were visible"
    first.process.kill()  # SIGKILL with the transaction open
    first.exit_code()

    # Its init_transactions aborts what the first left open.
    second = _start_app(cluster.bootstrap, "second", tmp_path, group, hold_at="2,8")
    second.wait_holding(1)
    assert _coordinator_id(cluster, TRANSACTIONAL_ID, TRANSACTION_KEY_TYPE) == coordinator
    cluster.kill(coordinator, "KILL")
    second.release()  # commits through the coordinator that takes over
    second.wait_for("a commit after the coordinator's death", _committed_after(2))
    cluster.start(coordinator)
    held_by_second = second.wait_holding(2)

    third = _start_app(cluster.bootstrap, "third", tmp_path, group, hold_at="")  # fences the second
    third.wait_for("ready", lambda lines: "ready" in lines)
    second.release()
    assert second.exit_code() == EXIT_FENCED, second.lines
    assert any(line.startswith("fatal ") for line in second.lines), second.lines
    assert third.exit_code() == 0, third.lines

    committed = _read_to_end(cluster.bootstrap, "read_committed")
    for partition in range(PARTITIONS):
        expected = [f"out-in-{partition}-{i}".encode() for i in range(RECORDS_PER_PARTITION)]
        assert committed[partition] == expected, f"partition {partition}: {committed[partition]}"
    uncommitted = _read_to_end(cluster.bootstrap, "read_uncommitted")
    every = [value for values in uncommitted.values() for value in values]
    assert {value for values in committed.values() for value in values} == set(every)
    assert len(every) >= EXPECTED + held_by_first + held_by_second, len(every)
