"""Kafka Streams' WordCount (tests/integration/jvm/WordCount.java) as test_streams.py runs it:
the application's JVM, a feeder that produces the text, topic creation and the readers of
committed offsets and of the output topic."""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.integration.admin_client import java_tool
from tests.integration.conftest import ClusterHandle
from tests.integration.jvm_tools import FAST_START_JVM_OPTS, TAIL_LINES, JvmProcess

MAIN_CLASS = "WordCount"
PARTITIONS = 3  # of every topic the tests create
CHUNK_LINES = 20  # the feeder produces, flushes and pauses per chunk
CHUNK_PAUSE_S = 0.05
APP_HEAP_OPTS = "-Xmx256m"
PROGRESS_TIMEOUT_S = 150.0  # includes a dead member's session timeout and a broker failover
READ_TIMEOUT_S = 60.0
CREATE_TIMEOUT_S = 120.0


class Timeline:
    """What the test did when, written beside the application's output."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def note(self, what: str) -> None:
        with open(self.path, "a") as timeline:
            timeline.write(f"{datetime.now().isoformat(sep=' ', timespec='milliseconds')} {what}\n")


class StreamsApp(JvmProcess):
    """One WordCount JVM; its stdout lines are collected as they come."""

    def __init__(
        self,
        name: str,
        classes: Path,
        reference_lib: Path,
        cluster: ClusterHandle,
        app_id: str,
        state_dir: Path,
        guarantee: str,
        topics: tuple[str, str],
        replication: int,
        log_dir: Path,
    ) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()
        jvm_tmp = log_dir / "jvm-tmp"
        jvm_tmp.mkdir(exist_ok=True)
        command = [
            java_tool("java"),
            *FAST_START_JVM_OPTS.split(),
            APP_HEAP_OPTS,
            # RocksDB unpacks its native library there, and a SIGKILLed JVM leaves it behind.
            f"-Djava.io.tmpdir={jvm_tmp}",
            f"-Dlog4j.configuration=file:{classes / 'log4j.properties'}",
            "-cp",
            f"{classes}:{reference_lib}/*",
            MAIN_CLASS,
            cluster.bootstrap,
            app_id,
            str(state_dir),
            guarantee,
            *topics,
            str(replication),
        ]
        super().__init__(command, None, log_dir, name, self._collect)

    def _collect(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)

    def printed(self, prefix: str) -> list[str]:
        with self._lock:
            return [line for line in self.lines if line.startswith(prefix)]

    @property
    def running(self) -> bool:
        with self._lock:
            states = [line for line in self.lines if line.startswith("state ")]
        return bool(states) and states[-1].endswith(" RUNNING")

    def check_alive(self) -> None:
        """Fails the test if the application exited or a stream thread died."""
        errors = self.printed("thread-error ")
        if errors or not self.alive:
            pytest.fail(f"{self.name} failed: {errors}\n{self.diagnostics()}")

    def restored_records(self) -> int:
        return sum(int(line.split()[-1]) for line in self.printed("restore-end "))

    def diagnostics(self) -> str:
        with self._lock:
            stdout = self.lines[-TAIL_LINES:]
        return (
            f"--- {self.name}: exit {self.process.poll()}\nstdout (tail):\n"
            + "\n".join(stdout)
            + "\nstderr (tail):\n"
            + self.stderr_tail()
        )


class Feeder:
    """Produces lines of the text to the input topic in a thread, in order, one release at a
    time, paced in chunks so that the application works while the test acts."""

    def __init__(self, bootstrap: str, topic: str, text: list[str]) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.text = text
        self.producer: Any = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
        )
        self.errors: list[str] = []
        self.produced = 0
        self._released = 0
        self._chunk_lines = CHUNK_LINES
        self._condition = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="feeder", daemon=True)
        self._thread.start()

    def release(self, lines: int, chunk_lines: int = CHUNK_LINES) -> None:
        """Let the feeder produce the text's first `lines` lines, `chunk_lines` at a time."""
        with self._condition:
            self._released = lines
            self._chunk_lines = chunk_lines
            self._condition.notify_all()

    def done(self, lines: int) -> bool:
        with self._condition:
            return self.produced >= lines

    def close(self) -> None:
        self.release(-1)
        self._thread.join(timeout=60)
        self.producer = None  # librdkafka's threads stop when it is destroyed

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self.errors.append(str(error))

    def _run(self) -> None:
        while True:
            with self._condition:
                self._condition.wait_for(lambda: self._released != self.produced)
                if self._released < 0:
                    return
                start = self.produced
                end = min(self._released, start + self._chunk_lines)
            for line in self.text[start:end]:
                self.producer.produce(self.topic, value=line.encode(), on_delivery=self._delivered)
            remaining = self.producer.flush(PROGRESS_TIMEOUT_S)
            if remaining:
                self.errors.append(f"{remaining} lines not delivered")
            with self._condition:
                self.produced = end
                self._condition.notify_all()
            time.sleep(CHUNK_PAUSE_S)


def create_topics(bootstrap: str, names: list[str], replication: int) -> None:
    """CreateTopics, again for what is still missing after an error or a request that got no
    answer (a broker that has just started may not know the controller yet), bounded."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    missing = list(names)
    attempts: list[str] = []
    deadline = time.monotonic() + CREATE_TIMEOUT_S
    while missing:
        if time.monotonic() > deadline:
            pytest.fail(f"topics {missing} not created in {CREATE_TIMEOUT_S:.0f} s: {attempts}")
        futures = admin.create_topics(
            [NewTopic(name, PARTITIONS, replication) for name in missing],
            operation_timeout=30,
            request_timeout=40,
        )
        for name, future in futures.items():
            try:
                future.result(timeout=45)
            except KafkaException as error:
                if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    attempts.append(f"{name}: {error}")
                    continue
            except TimeoutError:
                attempts.append(f"{name}: no answer in 45 s")
                continue
            missing.remove(name)


def committed_reader(bootstrap: str, group: str) -> Any:
    """A consumer that only reads the group's committed offsets (it never joins the group);
    read_committed, so it asks for stable offsets (those of committed transactions)."""
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )


def committed_offsets(reader: Any, topic: str) -> list[int] | None:
    """The group's committed offset of each partition (0 for none); None if the coordinator
    did not answer (it may be moving): the caller polls again."""
    from confluent_kafka import KafkaException, TopicPartition

    try:
        found = reader.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
    except KafkaException:
        return None
    return [max(tp.offset, 0) for tp in sorted(found, key=lambda tp: tp.partition)]


def end_offsets(reader: Any, topic: str) -> list[int] | None:
    from confluent_kafka import KafkaException, TopicPartition

    try:
        return [
            reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
            for p in range(PARTITIONS)
        ]
    except KafkaException:
        return None


def committed_lines(reader: Any, topic: str) -> int:
    offsets = committed_offsets(reader, topic)
    return -1 if offsets is None else sum(offsets)


def read_outputs(bootstrap: str, topic: str, isolation_level: str) -> dict[str, list[int]]:
    """Every value of `topic` (to its end, or its last stable offset), per word, in order."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-reader",
            "enable.auto.commit": False,
            "isolation.level": isolation_level,
            "enable.partition.eof": True,
        }
    )
    values: dict[str, list[int]] = {}
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        at_end: set[int] = set()
        deadline = time.monotonic() + READ_TIMEOUT_S
        while len(at_end) < PARTITIONS:
            assert time.monotonic() < deadline, f"{topic} not read to its end: {at_end} done"
            for message in consumer.consume(500, timeout=1.0):
                error = message.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(int(message.partition() or 0))
                    continue
                key, value = message.key(), message.value()
                if error is not None or key is None or value is None:
                    raise AssertionError(
                        f"reading {topic}: {error or 'a record without key or value'}"
                    )
                values.setdefault(key.decode(), []).append(int(value))
    finally:
        consumer.close()
    return values


def not_one_to_n(outputs: dict[str, list[int]], expected: Counter[str]) -> dict[str, str]:
    """Words whose outputs are not exactly 1, 2, ..., their count (shown shortened)."""
    wrong = {}
    for word in sorted(set(outputs) | set(expected)):
        seen = outputs.get(word, [])
        if seen != list(range(1, expected[word] + 1)):
            wrong[word] = f"expected 1..{expected[word]}, got {len(seen)} values ending {seen[-5:]}"
    return wrong


def latest(outputs: dict[str, list[int]]) -> dict[str, int]:
    return {word: values[-1] for word, values in outputs.items()}
