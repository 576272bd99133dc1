"""What the lab reads through Kafka's own interfaces rather than ZooKeeper: each partition
leader's high watermark (ListOffsets, as consumers see it), every broker's
replication-offset-checkpoint (each replica's high watermark as it last wrote it) and the
consumer groups (members, assignments, committed offsets and lag), with confluent-kafka's
admin client. Every call is bounded; a failed read leaves that part out of the view.

The admin client runs in a worker process (`KafkaWorker`, one JSON line per read each way):
librdkafka can abort the whole process on an assertion while brokers die and its admin
requests time out, and the lab must outlive that. A dead or silent worker is started again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, cast

from _cluster.brokers import broker_properties
from _cluster.layout import ClusterSpec, load_state
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec

from broker.log.checkpoints import (
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointError,
    read_offset_checkpoint,
)
from kafka_cli._client import client_config, load_properties

from .snapshot import JsonObject, KafkaObservations, format_time

REQUEST_TIMEOUT_S = 3.0
RESULT_TIMEOUT_S = 5.0
CLIENT_PROPERTIES = "client.properties"
QUIET_LOG_LEVEL = 2  # syslog's critical: librdkafka's connection errors are not worth a line
WORKER_ANSWER_TIMEOUT_S = 30.0
WORKER_LINE_LIMIT_BYTES = 64 * 1024 * 1024
WORKER_CODE = (
    "import sys; sys.path[:0] = sys.argv[1:3]; "
    "from _lab.kafka_reader import serve; serve(sys.argv[3])"
)
Partition = tuple[str, int]


def librdkafka_config(
    directory: Path, spec: ClusterSpec, extra: Mapping[str, str | int | bool]
) -> Any:
    """A client config for the cluster: its bootstrap servers and, on a TLS or SASL cluster,
    the launcher's client.properties (as every console tool takes it)."""
    properties_path = directory / CLIENT_PROPERTIES
    layers = [load_properties(str(properties_path))] if properties_path.exists() else []
    config = client_config(spec.bootstrap_servers, *layers)
    config.update(extra)
    return config


def read_checkpoint(path: Path) -> dict[Partition, int]:
    """A broker's offset checkpoint; a missing or unreadable one reads as empty (the broker
    writes a temporary file and renames it, so a half-written one is never seen)."""
    try:
        return read_offset_checkpoint(path)
    except (CheckpointError, OSError):
        return {}


def read_checkpoints(spec: ClusterSpec) -> dict[int, dict[Partition, int]]:
    """Each broker's replication-offset-checkpoint over all its log dirs."""
    found: dict[int, dict[Partition, int]] = {}
    for broker_id in spec.broker_ids:
        merged: dict[Partition, int] = {}
        log_dirs = broker_properties(spec, broker_id).get("log.dirs", "")
        for log_dir in log_dirs.split(","):
            if log_dir.strip():
                merged.update(
                    read_checkpoint(Path(log_dir.strip()) / REPLICATION_OFFSET_CHECKPOINT)
                )
        found[broker_id] = merged
    return found


def _result(future: Future[Any]) -> Any:
    return future.result(timeout=RESULT_TIMEOUT_S)


def group_view(
    description: JsonObject, committed: Mapping[Partition, int], log_ends: Mapping[Partition, int]
) -> JsonObject:
    """One group as the page shows it: members with their assignments, and per partition
    (assigned or committed) the committed offset, the leader's high watermark and the lag."""
    owners: dict[Partition, str] = {}
    for member in description["members"]:
        for topic, partition in member["assignment"]:
            owners[(topic, partition)] = member["client_id"]
    rows = []
    for key in sorted(set(owners) | set(committed)):
        current = committed.get(key)
        log_end = log_ends.get(key)
        rows.append(
            {
                "topic": key[0],
                "partition": key[1],
                "committed": current,
                "log_end": log_end,
                "lag": None if current is None or log_end is None else max(log_end - current, 0),
                "owner": owners.get(key),
            }
        )
    return {**description, "partitions": rows}


class KafkaReader:
    """One admin client, made anew after a read that failed (librdkafka reconnects by itself,
    but a client that saw brokers die and topics go can keep failing on what it cached)."""

    def __init__(self, directory: Path, spec: ClusterSpec) -> None:
        self._directory = directory
        self._spec = spec
        self._admin = self._new_admin()

    def _new_admin(self) -> AdminClient:
        # Brokers that died refuse connections: expected here, and shown by the page.
        return AdminClient(
            librdkafka_config(
                self._directory,
                self._spec,
                {"client.id": "kafka-lab", "log_level": QUIET_LOG_LEVEL},
            )
        )

    def read(self, partitions: Iterable[Partition]) -> KafkaObservations:
        started = time.time()
        errors: list[str] = []
        log_ends = self._log_ends(list(partitions), errors)
        groups = self._groups(log_ends, errors)
        if errors:
            self._admin = self._new_admin()
        return KafkaObservations(
            high_watermarks=log_ends,
            groups=groups,
            read_at=format_time(started),
            error="; ".join(errors) or None,
        )

    def _log_ends(self, partitions: list[Partition], errors: list[str]) -> dict[Partition, int]:
        if not partitions:
            return {}
        latest = cast(Any, OffsetSpec).latest()
        requests = {TopicPartition(t, p): latest for t, p in partitions}
        found: dict[Partition, int] = {}
        try:
            futures = self._admin.list_offsets(requests, request_timeout=REQUEST_TIMEOUT_S)
        except Exception as error:
            errors.append(f"ListOffsets: {error}")
            return found
        failed = 0
        for tp, future in futures.items():
            try:
                offset = int(_result(future).offset)
            except Exception:
                failed += 1
                continue
            if offset >= 0:
                found[(tp.topic, tp.partition)] = offset
        if failed:
            errors.append(f"ListOffsets failed for {failed} partition(s)")
        return found

    def _groups(self, log_ends: dict[Partition, int], errors: list[str]) -> list[JsonObject]:
        try:
            listing = _result(self._admin.list_consumer_groups(request_timeout=REQUEST_TIMEOUT_S))
            group_ids = sorted(g.group_id for g in listing.valid)
            if not group_ids:
                return []
            described = self._admin.describe_consumer_groups(
                group_ids, request_timeout=REQUEST_TIMEOUT_S
            )
        except Exception as error:
            errors.append(f"consumer groups: {error}")
            return []
        groups = []
        for group_id, future in sorted(described.items()):
            try:
                raw = _result(future)
                committed = self._committed(group_id)
            except Exception as error:
                errors.append(f"group {group_id}: {error}")
                continue
            groups.append(group_view(_description(raw), committed, log_ends))
        return groups

    def _committed(self, group_id: str) -> dict[Partition, int]:
        futures = self._admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group_id)], request_timeout=REQUEST_TIMEOUT_S
        )
        committed: dict[Partition, int] = {}
        for future in futures.values():
            for tp in _result(future).topic_partitions or []:
                if tp.offset >= 0:
                    committed[(tp.topic, tp.partition)] = tp.offset
        return committed


def _description(raw: Any) -> JsonObject:
    node = raw.coordinator
    return {
        "group": raw.group_id,
        "state": getattr(raw.state, "name", str(raw.state)).lower(),
        "assignor": raw.partition_assignor or "",
        "coordinator": node.id if node is not None else None,
        "members": [
            {
                "member_id": member.member_id,
                "client_id": member.client_id,
                "host": member.host,
                "assignment": sorted(
                    (tp.topic, tp.partition)
                    for tp in (member.assignment.topic_partitions if member.assignment else [])
                ),
            }
            for member in raw.members
        ],
    }


def _to_json(observations: KafkaObservations) -> JsonObject:
    return {
        "high_watermarks": [[t, p, o] for (t, p), o in observations.high_watermarks.items()],
        "groups": observations.groups,
        "read_at": observations.read_at,
        "error": observations.error,
    }


def _from_json(found: JsonObject, spec: ClusterSpec) -> KafkaObservations:
    return KafkaObservations(
        high_watermarks={(t, int(p)): int(o) for t, p, o in found["high_watermarks"]},
        checkpoints=read_checkpoints(spec),
        groups=[
            {
                **g,
                "members": [
                    {**m, "assignment": [tuple(a) for a in m["assignment"]]} for m in g["members"]
                ],
            }
            for g in found["groups"]
        ],
        read_at=found["read_at"],
        error=found["error"],
    )


def serve(directory: str) -> None:
    """The worker: one line of JSON partitions in, one line of observations out, until EOF."""
    path = Path(directory)
    reader = KafkaReader(path, load_state(path).spec)
    for line in sys.stdin:
        wanted = [(str(t), int(p)) for t, p in json.loads(line)]
        sys.stdout.write(json.dumps(_to_json(reader.read(wanted))) + "\n")
        sys.stdout.flush()


class KafkaWorker:
    """The parent's side: starts the worker when needed, asks it for one read at a time."""

    def __init__(self, directory: Path, spec: ClusterSpec) -> None:
        self._directory = directory
        self._spec = spec
        self._process: asyncio.subprocess.Process | None = None

    async def read(self, partitions: list[Partition]) -> KafkaObservations:
        process = await self._started()
        if process.stdin is None or process.stdout is None:
            raise RuntimeError("the admin worker has no pipes")
        try:
            process.stdin.write((json.dumps(partitions) + "\n").encode())
            await process.stdin.drain()
            line = await asyncio.wait_for(process.stdout.readline(), WORKER_ANSWER_TIMEOUT_S)
        except (TimeoutError, ConnectionError) as error:
            await self.close()
            raise RuntimeError(f"the admin worker did not answer ({error!r})") from error
        if not line:
            code = await process.wait()
            self._process = None
            raise RuntimeError(f"the admin worker exited with code {code}; starting another")
        return _from_json(json.loads(line), self._spec)

    async def _started(self) -> asyncio.subprocess.Process:
        if self._process is None or self._process.returncode is not None:
            scripts_dir = Path(__file__).resolve().parents[1]
            self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                WORKER_CODE,
                str(scripts_dir),
                str(scripts_dir.parent),
                str(self._directory),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                limit=WORKER_LINE_LIMIT_BYTES,
            )
        return self._process

    async def close(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
