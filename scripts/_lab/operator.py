"""What the lab does to a cluster, for the action buttons and the guided scenarios alike:
signals and restarts through scripts/cluster, elections, reassignments and topics through the
project's own console tools (so the timeline shows the very command a learner would type),
and produce bursts and partition reads with confluent-kafka. Each call is bounded in time and
noted in the timeline."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from _cluster.layout import ClusterSpec
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from .kafka_reader import CLIENT_PROPERTIES, QUIET_LOG_LEVEL, librdkafka_config

CLUSTER_SCRIPT = Path(__file__).resolve().parents[1] / "cluster"
SIGNALS = {"kill": "KILL", "term": "TERM", "stop": "STOP", "cont": "CONT"}
PARTITION_VERBS = ("cut", "heal")
SIGNAL_TIMEOUT_S = 60.0
START_TIMEOUT_S = 150.0
TOOL_TIMEOUT_S = 60.0
PRODUCE_TIMEOUT_S = 30.0
READ_TIMEOUT_S = 20.0
MAX_BURST_RECORDS = 100_000
MAX_OUTPUT_CHARS = 2000


@dataclass(frozen=True)
class Outcome:
    ok: bool
    output: str


@dataclass
class Delivered:
    """A produce burst's result: (partition, offset, value) of every acknowledged record."""

    records: list[tuple[int, int, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _tool(name: str) -> str:
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    return shutil.which(name) or name


class Operator:
    def __init__(self, directory: Path, spec: ClusterSpec, note: Callable[[str], None]) -> None:
        self.directory = directory
        self.spec = spec
        self._note = note

    async def _run(self, label: str, arguments: list[str], timeout_s: float) -> Outcome:
        self._note(f"action: {label}")
        try:
            process = await asyncio.create_subprocess_exec(
                *arguments,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL,
            )
        except OSError as error:
            self._note(f"action: {label} failed: {error}")
            return Outcome(False, str(error))
        try:
            output, _ = await asyncio.wait_for(process.communicate(), timeout_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            self._note(f"action: {label} timed out after {timeout_s:.0f} s")
            return Outcome(False, f"timed out after {timeout_s:.0f} s")
        text = output.decode("utf-8", errors="replace").strip()[-MAX_OUTPUT_CHARS:]
        ok = process.returncode == 0
        self._note(f"action: {label} {'done' if ok else 'failed'}" + (f": {text}" if text else ""))
        return Outcome(ok, text)

    async def signal(self, target: str, target_id: int, verb: str) -> Outcome:
        """kill -9 / SIGTERM / pause / resume (verbs of SIGNALS) or start a process."""
        if verb == "start":
            arguments = ["start"]
            label = f"start {target} {target_id}"
        else:
            arguments = ["kill", "--signal", SIGNALS[verb]]
            label = f"SIG{SIGNALS[verb]} {target} {target_id}"
        arguments += [f"--{target}", str(target_id), "--dir", str(self.directory)]
        timeout_s = START_TIMEOUT_S if verb == "start" else SIGNAL_TIMEOUT_S
        return await self._run(label, [sys.executable, str(CLUSTER_SCRIPT), *arguments], timeout_s)

    async def partition(self, target: str, target_id: int, verb: str) -> Outcome:
        """`cut` a broker or ZooKeeper server off from every other node (both ways), or
        `heal` every cut link it is on (a `--network netns` cluster; the script says why not
        otherwise)."""
        arguments = [verb, f"--{target}", str(target_id), "--dir", str(self.directory)]
        label = f"{verb} {target} {target_id}"
        return await self._run(
            label, [sys.executable, str(CLUSTER_SCRIPT), *arguments], SIGNAL_TIMEOUT_S
        )

    def _tool_command(self, tool: str, config_flag: str, *arguments: str) -> list[str]:
        command = [_tool(tool), "--bootstrap-server", self.spec.bootstrap_servers, *arguments]
        properties = self.directory / CLIENT_PROPERTIES
        if properties.exists():
            command += [config_flag, str(properties)]
        return command

    async def _console_tool(self, tool: str, config_flag: str, *arguments: str) -> Outcome:
        command = self._tool_command(tool, config_flag, *arguments)
        shown = " ".join([tool, *arguments])
        return await self._run(shown, command, TOOL_TIMEOUT_S)

    async def elect(self, election_type: str, topic: str | None, partition: int | None) -> Outcome:
        """kafka-leader-election: `preferred` or `unclean`, one partition or all of them."""
        where = (
            ["--all-topic-partitions"]
            if topic is None
            else ["--topic", topic, "--partition", str(partition)]
        )
        return await self._console_tool(
            "kafka-leader-election", "--admin.config", "--election-type", election_type, *where
        )

    async def reassign(self, topic: str, partition: int, replicas: list[int]) -> Outcome:
        """kafka-reassign-partitions --execute with a one-partition reassignment JSON."""
        plan = {
            "version": 1,
            "partitions": [{"topic": topic, "partition": partition, "replicas": replicas}],
        }
        with tempfile.NamedTemporaryFile(
            "w", suffix=".json", prefix="lab-reassignment-", delete=False
        ) as file:
            json.dump(plan, file)
        try:
            return await self._console_tool(
                "kafka-reassign-partitions",
                "--command-config",
                "--execute",
                "--reassignment-json-file",
                file.name,
            )
        finally:
            Path(file.name).unlink(missing_ok=True)

    async def create_topic(self, topic: str, assignment: list[list[int]]) -> Outcome:
        replicas = ",".join(":".join(str(r) for r in p) for p in assignment)
        return await self._console_tool(
            "kafka-topics",
            "--command-config",
            "--create",
            "--topic",
            topic,
            "--replica-assignment",
            replicas,
        )

    async def produce(
        self,
        topic: str,
        values: list[str],
        partition: int | None = None,
        acks: str = "all",
    ) -> Delivered:
        where = topic if partition is None else f"{topic}-{partition}"
        self._note(f"action: produce {len(values)} records to {where} (acks={acks})")
        delivered = await asyncio.to_thread(self._produce, topic, values, partition, acks)
        errors = (
            f", {len(delivered.errors)} failed: {delivered.errors[0]}" if delivered.errors else ""
        )
        self._note(f"action: produce to {where}: {len(delivered.records)} acknowledged{errors}")
        return delivered

    def _produce(
        self, topic: str, values: list[str], partition: int | None, acks: str
    ) -> Delivered:
        config = librdkafka_config(
            self.directory,
            self.spec,
            {
                "client.id": "kafka-lab-producer",
                "log_level": QUIET_LOG_LEVEL,
                "acks": acks,
                "linger.ms": 5,
                "message.timeout.ms": int(PRODUCE_TIMEOUT_S * 1000),
                "enable.idempotence": False,
            },
        )
        producer = Producer(config)
        delivered = Delivered()

        def report(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                delivered.errors.append(str(error.str()))
                return
            value = message.value()
            delivered.records.append(
                (
                    int(message.partition() or 0),
                    int(message.offset() or 0),
                    value.decode() if isinstance(value, bytes) else "",
                )
            )

        for produced, value in enumerate(values):
            while True:
                try:
                    if partition is None:
                        # Keyed by position, so that the default partitioner spreads a burst.
                        key = str(produced)
                        producer.produce(topic, value.encode(), key, on_delivery=report)
                    else:
                        producer.produce(
                            topic, value.encode(), partition=partition, on_delivery=report
                        )
                    break
                except BufferError:
                    producer.poll(0.1)
        remaining = producer.flush(PRODUCE_TIMEOUT_S + 5)
        if remaining:
            delivered.errors.append(f"{remaining} records still unacknowledged")
        delivered.records.sort()
        return delivered

    async def read_partition(self, topic: str, partition: int) -> list[tuple[int, str]]:
        """(offset, value) of every record up to the high watermark, from the leader."""
        self._note(f"action: read {topic}-{partition} from its first offset")
        return await asyncio.to_thread(self._read_partition, topic, partition)

    def _read_partition(self, topic: str, partition: int) -> list[tuple[int, str]]:
        config = librdkafka_config(
            self.directory,
            self.spec,
            {
                "group.id": "kafka-lab-reader",
                "client.id": "kafka-lab-reader",
                "log_level": QUIET_LOG_LEVEL,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
            },
        )
        consumer = Consumer(config)
        found: list[tuple[int, str]] = []
        try:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=READ_TIMEOUT_S
            )
            if high <= low:
                return found
            consumer.assign([TopicPartition(topic, partition, low)])
            deadline = time.monotonic() + READ_TIMEOUT_S
            while (not found or found[-1][0] < high - 1) and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is None or message.error() is not None:
                    continue
                value = message.value()
                offset = message.offset()
                found.append((int(offset or 0), value.decode() if isinstance(value, bytes) else ""))
        finally:
            consumer.close()
        return found
