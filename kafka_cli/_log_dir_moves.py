"""Log-directory moves of kafka-reassign-partitions: the non-"any" entries of `log_dirs`.

As Kafka's ReassignPartitionsCommand: `--execute` sends AlterReplicaLogDirs for each replica
and retries those whose broker answers REPLICA_NOT_AVAILABLE (the replica is not there yet:
the broker remembers the directory for when it creates it) every 100 ms until `--timeout`
ms; `--verify` describes where each replica is (DescribeLogDirs) and says whether its move
completed, is under way, goes elsewhere or was not made; `--cancel` moves replicas being
moved back to the directory they are in.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka import TopicPartitionReplica
from kafka.errors import NoError, ReplicaNotAvailableError
from kio.schema.errors import ErrorCode

from kafka_cli.common import ToolError

ANY_LOG_DIR = "any"
RETRY_BACKOFF_S = 0.1  # Kafka's tool sleeps 100 ms between tries

# (topic, partition, broker) -> the absolute log dir the replica should be in.
Moves = dict[tuple[str, int, int], str]


@dataclass(frozen=True, slots=True)
class ReplicaDirs:
    """Where a replica's log and its future log are (None: nowhere online)."""

    current: str | None
    future: str | None


def moves_of(entry: Mapping[str, Any], replicas: list[int]) -> Moves:
    """The moves one partition entry of the reassignment JSON asks for."""
    log_dirs = entry.get("log_dirs")
    if log_dirs is None:
        return {}
    key = (str(entry["topic"]), int(entry["partition"]))
    return {
        (*key, replica): str(log_dir)
        for replica, log_dir in zip(replicas, log_dirs, strict=True)
        if log_dir != ANY_LOG_DIR
    }


def replica_name(replica: tuple[str, int, int]) -> str:
    """Java's TopicPartitionReplica.toString: topic-partition-broker."""
    topic, partition, broker = replica
    return f"{topic}-{partition}-{broker}"


def _order(replica: tuple[str, int, int]) -> tuple[int, str, int]:
    topic, partition, broker = replica
    return broker, topic, partition


def execute_moves(admin: Any, moves: Moves, timeout_ms: int) -> None:
    """Start every move; Kafka's executeMoves."""
    pending = dict(moves)
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        started = _alter_replica_log_dirs(admin, pending)
        for replica in sorted(started, key=_order):
            topic, partition, broker = replica
            print(
                f"Successfully started moving log directory to {pending[replica]} for replica "
                f"{topic}-{partition} with broker {broker} "
            )
            del pending[replica]
        if not pending:
            return
        if time.monotonic() >= deadline:
            plural = "" if len(pending) == 1 else "s"
            names = ",".join(replica_name(r) for r in sorted(pending, key=_order))
            raise ToolError(
                f"Timed out before log directory move{plural} could be started for: {names}"
            )
        time.sleep(RETRY_BACKOFF_S)


def _alter_replica_log_dirs(admin: Any, moves: Moves) -> set[tuple[str, int, int]]:
    """The replicas whose move started; REPLICA_NOT_AVAILABLE ones are left to retry."""
    results = admin.alter_replica_log_dirs(
        {TopicPartitionReplica(t, p, b): log_dir for (t, p, b), log_dir in moves.items()}
    )
    started = set()
    for replica, error in results.items():
        key = (replica.topic, replica.partition, replica.broker_id)
        if error is NoError:
            started.add(key)
        elif error is not ReplicaNotAvailableError:
            raise ToolError(f"Failed to alter dir for {replica_name(key)}: {error.__name__}")
    return started


def replica_dirs(admin: Any, moves: Moves) -> dict[tuple[str, int, int], ReplicaDirs]:
    """Where each replica of `moves` is, by DescribeLogDirs to its broker (Kafka's
    describeReplicaLogDirs)."""
    found: dict[tuple[str, int, int], ReplicaDirs] = {}
    for broker in sorted({b for _, _, b in moves}):
        wanted: dict[str, list[int]] = {}
        for topic, partition, replica_broker in moves:
            if replica_broker == broker:
                wanted.setdefault(topic, []).append(partition)
        current: dict[tuple[str, int], str] = {}
        future: dict[tuple[str, int], str] = {}
        for described in admin.describe_log_dirs(wanted, brokers=[broker]):
            for log_dir in described["log_dirs"]:
                if log_dir["error_code"] != ErrorCode.none:
                    continue
                for topic in log_dir["topics"]:
                    for partition in topic["partitions"]:
                        key = (topic["name"], int(partition["partition_index"]))
                        target = future if partition["is_future_key"] else current
                        target[key] = log_dir["log_dir"]
        for topic, partitions in wanted.items():
            for partition in partitions:
                key = (topic, partition)
                found[(topic, partition, broker)] = ReplicaDirs(current.get(key), future.get(key))
    return found


def move_states_text(moves: Moves, dirs: dict[tuple[str, int, int], ReplicaDirs]) -> list[str]:
    """Kafka's replicaMoveStatesToString, one line per replica."""
    lines = []
    for replica in sorted(moves, key=_order):
        target = moves[replica]
        topic, partition, broker = replica
        where = dirs.get(replica, ReplicaDirs(None, None))
        if where.current is None:
            lines.append(
                f"Partition {topic}-{partition} is not found in any live log dir on broker "
                f"{broker}. There is likely an offline log directory on the broker."
            )
        elif where.future is not None and where.future == target:
            lines.append(f"Reassignment of replica {replica_name(replica)} is still in progress.")
        elif where.future is not None:
            lines.append(
                f"Partition {topic}-{partition} on broker {broker} is being moved to log dir "
                f"{where.future} instead of {target}."
            )
        elif where.current == target:
            lines.append(f"Reassignment of replica {replica_name(replica)} completed successfully.")
        else:
            lines.append(
                f"Partition {topic}-{partition} on broker {broker} is not being moved from log "
                f"dir {where.current} to {target}."
            )
    return lines


def active_moves_back(moves: Moves, dirs: dict[tuple[str, int, int], ReplicaDirs]) -> Moves:
    """For `--cancel`: each replica being moved, to the directory it is in now."""
    return {
        replica: where.current
        for replica in moves
        if (where := dirs.get(replica)) is not None
        and where.current is not None
        and where.future is not None
    }
