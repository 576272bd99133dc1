"""kafka-reassign-partitions: move partition replicas between brokers (KIP-455 APIs).

Actions and output follow Kafka 3.0's ReassignPartitionsCommand: `--generate` (with
`--topics-to-move-json-file` and `--broker-list`) prints the current and a proposed assignment;
`--execute` prints the current assignment (to roll back with) and starts the reassignment with
AlterPartitionReassignments; `--verify` reports each partition's state; `--cancel` and `--list`
as Kafka's. JSON is Kafka's: `{"version":1,"partitions":[{"topic":"t","partition":0,
"replicas":[1,2],"log_dirs":["any","any"]}]}`; a `log_dirs` entry other than "any" also moves
that replica to that log dir of its broker (AlterReplicaLogDirs, see `_log_dir_moves`).
Throttles are not supported (see DEVIATIONS.md). Talks to the brokers with kafka-python's
admin client.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaConnectionError, NodeNotReadyError, RequestTimedOutError
from kio.schema.errors import ErrorCode

from controller.assignment import assign_replicas_to_brokers, enforced_broker_racks
from controller.errors import ApiError
from kafka_cli._log_dir_moves import (
    ANY_LOG_DIR,
    Moves,
    active_moves_back,
    execute_moves,
    move_states_text,
    moves_of,
    replica_dirs,
)
from kafka_cli.common import ToolArgumentParser, ToolError, bootstrap_servers, run_tool

CLIENT_ID = "reassign-partitions-tool"
ACTIONS = ("generate", "execute", "verify", "cancel", "list")
# Kafka's admin client gives up on a call after default.api.timeout.ms (60 s).
REQUEST_TIMEOUT_MS = 60_000
CANNOT_EXECUTE_MESSAGE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one. "
    "The --additional flag can also be used to change the throttle by resubmitting the "
    "current reassignment."
)

# A broker that is stopped (SIGSTOP) but still registered accepts TCP connections and never
# answers; kafka-python then fails the call instead of trying another broker. Java's admin
# client retries until default.api.timeout.ms, and so do we, with this pause between tries.
RETRY_BACKOFF_S = 0.5
RETRIABLE_ERRORS = (KafkaConnectionError, NodeNotReadyError, RequestTimedOutError)

Assignment = dict[tuple[str, int], list[int]]


class _RetryingAdmin:
    """kafka-python's admin client whose calls are retried (on another broker, as the failed
    connection is closed) until REQUEST_TIMEOUT_MS has passed."""

    def __init__(self, admin: Any) -> None:
        self._admin = admin

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._admin, name)
        if not callable(method) or name == "close":
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            deadline = time.monotonic() + REQUEST_TIMEOUT_MS / 1000
            while True:
                try:
                    return method(*args, **kwargs)
                except RETRIABLE_ERRORS:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(RETRY_BACKOFF_S)

        return call


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="kafka-reassign-partitions",
        description="This tool helps to move topic partitions between replicas.",
    )
    for action in ACTIONS:
        parser.add_argument(f"--{action}", action="store_true")
    parser.add_argument("--bootstrap-server", help="REQUIRED: the server(s) to bootstrap from.")
    parser.add_argument("--command-config", help="Admin client property file.")
    parser.add_argument("--reassignment-json-file", help="The partition reassignment JSON.")
    parser.add_argument("--topics-to-move-json-file", help='{"topics":[{"topic":"foo"}],...}')
    parser.add_argument("--broker-list", help='Brokers to move to, as "0,1,2".')
    parser.add_argument("--disable-rack-aware", action="store_true")
    parser.add_argument("--additional", action="store_true")
    parser.add_argument("--preserve-throttles", action="store_true")
    parser.add_argument("--throttle", type=int, default=-1)
    parser.add_argument("--replica-alter-log-dirs-throttle", type=int, default=-1)
    parser.add_argument("--timeout", type=int, default=10_000)
    return parser


def _body(argv: list[str]) -> int:
    options = _parser().parse_args(argv)
    chosen = [action for action in ACTIONS if getattr(options, action)]
    if len(chosen) != 1:
        actions = ", ".join(f"--{action}" for action in ACTIONS)
        raise ToolError(f"Command must include exactly one action: {actions}")
    action = chosen[0]
    if options.throttle >= 0 or options.replica_alter_log_dirs_throttle >= 0:
        raise ToolError("replication throttles are not supported by this broker")
    required = {
        "generate": ("topics_to_move_json_file", "broker_list"),
        "execute": ("reassignment_json_file",),
        "verify": ("reassignment_json_file",),
        "cancel": ("reassignment_json_file",),
        "list": (),
    }[action]
    for name in required:
        if getattr(options, name) is None:
            raise ToolError(f'Missing required argument "[{name.replace("_", "-")}]"')
    admin = _admin(bootstrap_servers(options.bootstrap_server), options.command_config)
    try:
        if action == "generate":
            _generate(
                admin,
                _read(options.topics_to_move_json_file),
                options.broker_list,
                rack_aware=not options.disable_rack_aware,
            )
        elif action == "execute":
            text = _read(options.reassignment_json_file)
            _execute(admin, text, options.additional, options.timeout)
        elif action == "verify":
            _verify(admin, _read(options.reassignment_json_file))
        elif action == "cancel":
            _cancel(admin, _read(options.reassignment_json_file), options.timeout)
        else:
            print(_current_reassignments_text(admin))
    finally:
        admin.close()
    return 0


def _admin(servers: str, config_path: str | None) -> Any:
    settings: dict[str, Any] = {
        "bootstrap_servers": servers.split(","),
        "client_id": CLIENT_ID,
        "request_timeout_ms": REQUEST_TIMEOUT_MS,
    }
    # Java property names map onto kafka-python's by '.' -> '_'; others are not client settings.
    for key, value in _properties(config_path).items():
        name = key.replace(".", "_")
        if name in KafkaAdminClient.DEFAULT_CONFIG:
            settings[name] = value
    return _RetryingAdmin(KafkaAdminClient(**settings))


def _properties(path: str | None) -> dict[str, str]:
    if path is None:
        return {}
    found: dict[str, str] = {}
    for line in _read(path).splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            key, _, value = line.partition("=")
            found[key.strip()] = value.strip()
    return found


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ToolError(f"cannot read {path}: {error.strerror}") from error


# ---------------------------------------------------------------------- JSON


def _parse_json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ToolError(f"The input string is not a valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise ToolError("The input string is not a valid JSON object")
    version = value.get("version", 1)
    if version != 1:
        raise ToolError(f"Not supported version field value {version}")
    return value


def parse_reassignment_json(text: str) -> Assignment:
    """The replicas of each partition (Kafka's parsePartitionReassignmentData and
    parseExecuteAssignmentArgs checks)."""
    return parse_reassignment(text)[0]


def parse_reassignment(text: str) -> tuple[Assignment, Moves]:
    """The replicas of each partition, and the log dirs named for some of them."""
    entries = _parse_json(text).get("partitions")
    if not isinstance(entries, list):
        raise ToolError("Partition reassignment list cannot be empty")
    parsed: list[tuple[tuple[str, int], list[int]]] = []
    moves: Moves = {}
    for entry in entries:
        try:
            key = (str(entry["topic"]), int(entry["partition"]))
            replicas = [int(r) for r in entry["replicas"]]
        except (KeyError, TypeError, ValueError) as error:
            raise ToolError(f"Bad partition entry {entry!r}") from error
        log_dirs = entry.get("log_dirs")
        if log_dirs is not None and len(log_dirs) != len(replicas):
            raise ToolError(
                f"Size of replicas list {replicas} is different from size of log dirs list "
                f"{log_dirs} for partition {_name(key)}"
            )
        moves.update(moves_of(entry, replicas))
        parsed.append((key, replicas))
    if not parsed:
        raise ToolError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in parsed):
        raise ToolError("Partition replica list cannot be empty")
    keys = [key for key, _ in parsed]
    duplicated = sorted({key for key in keys if keys.count(key) > 1})
    if duplicated:
        raise ToolError(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(map(_name, duplicated))
        )
    repeats = [
        f"{_name(key)} contains multiple entries for "
        + ",".join(str(r) for r in sorted({r for r in replicas if replicas.count(r) > 1}))
        for key, replicas in parsed
        if len(set(replicas)) != len(replicas)
    ]
    if repeats:
        raise ToolError(
            "Partition replica lists may not contain duplicate entries: " + ". ".join(repeats)
        )
    return dict(parsed), moves


def format_reassignment_json(assignment: Assignment) -> str:
    """Kafka's formatAsReassignmentJson: compact, partitions sorted by topic then number."""
    partitions = [
        {
            "topic": topic,
            "partition": partition,
            "replicas": replicas,
            "log_dirs": [ANY_LOG_DIR] * len(replicas),
        }
        for (topic, partition), replicas in sorted(assignment.items())
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def _name(key: tuple[str, int]) -> str:
    return f"{key[0]}-{key[1]}"


# ---------------------------------------------------------------------- actions


def _generate(admin: Any, topics_json: str, broker_list: str, rack_aware: bool = True) -> None:
    try:
        brokers = [int(b) for b in broker_list.split(",")]
    except ValueError as error:
        raise ToolError(f"Bad --broker-list {broker_list!r}") from error
    duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
    if duplicates:
        raise ToolError(f"Broker list contains duplicate entries: {','.join(map(str, duplicates))}")
    entries = _parse_json(topics_json).get("topics") or []
    topics = [str(entry["topic"]) for entry in entries]
    repeated = sorted({t for t in topics if topics.count(t) > 1})
    if repeated:
        raise ToolError(
            f"List of topics to reassign contains duplicate entries: {','.join(repeated)}"
        )
    current = _current_assignment(admin, topics)
    known = _broker_racks(admin)
    # Kafka's getBrokerMetadata: the listed brokers that exist, with their racks unless
    # --disable-rack-aware; some with a rack and some without is refused.
    racks = {b: known[b] if rack_aware else None for b in brokers if b in known}
    try:
        enforced_broker_racks(racks)
    except ApiError as error:
        raise ToolError(error.message) from error
    usable = list(racks)
    proposed: Assignment = {}
    for topic in topics:
        partitions = sorted(p for t, p in current if t == topic)
        replication_factor = len(current[(topic, partitions[0])])
        try:
            placed = assign_replicas_to_brokers(
                usable, len(partitions), replication_factor, racks=racks
            )
        except ApiError as error:
            raise ToolError(error.message) from error
        proposed.update({(topic, p): replicas for p, replicas in placed.items()})
    print(f"Current partition replica assignment\n{format_reassignment_json(current)}\n")
    print(f"Proposed partition reassignment configuration\n{format_reassignment_json(proposed)}")


def _execute(admin: Any, reassignment_json: str, additional: bool, timeout_ms: int) -> None:
    proposed, moves = parse_reassignment(reassignment_json)
    if not additional and admin.list_partition_reassignments():
        raise ToolError(CANNOT_EXECUTE_MESSAGE)
    known = _broker_ids(admin)
    for broker in sorted({b for replicas in proposed.values() for b in replicas}):
        if broker not in known:
            raise ToolError(f"Unknown broker id {broker}")
    current = _current_assignment(admin, sorted({topic for topic, _ in proposed}))
    rollback = {key: replicas for key, replicas in current.items() if key in proposed}
    print(
        f"Current partition replica assignment\n\n{format_reassignment_json(rollback)}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback"
    )
    results = admin.alter_partition_reassignments(
        {
            TopicPartition(topic, partition): replicas
            for (topic, partition), replicas in proposed.items()
        }
    )
    _raise_partition_errors("Error reassigning partition(s):", results)
    plural = "" if len(proposed) == 1 else "s"
    names = ",".join(_name(key) for key in sorted(proposed))
    print(f"Successfully started partition reassignment{plural} for {names}")
    if moves:
        execute_moves(admin, moves, timeout_ms)


def _verify(admin: Any, reassignment_json: str) -> None:
    targets, moves = parse_reassignment(reassignment_json)
    ongoing = _ongoing(admin)
    missing = sorted({topic for topic, partition in targets if (topic, partition) not in ongoing})
    current = _current_assignment(admin, missing, allow_missing=True)
    lines = ["Status of partition reassignment:"]
    for key in sorted(targets):
        if key in ongoing:
            lines.append(f"Reassignment of partition {_name(key)} is still in progress.")
        elif current.get(key, []) == targets[key]:
            lines.append(f"Reassignment of partition {_name(key)} is completed.")
        else:
            replicas = ",".join(map(str, current.get(key, [])))
            wanted = ",".join(map(str, targets[key]))
            lines.append(
                f"There is no active reassignment of partition {_name(key)}, but replica set "
                f"is {replicas} rather than {wanted}."
            )
    if moves:
        lines += move_states_text(moves, replica_dirs(admin, moves))
    print("\n".join(lines))


def _cancel(admin: Any, reassignment_json: str, timeout_ms: int) -> None:
    targets, moves = parse_reassignment(reassignment_json)
    ongoing = _ongoing(admin)
    active = sorted(key for key in targets if key in ongoing)
    if active:
        results = admin.alter_partition_reassignments(
            {TopicPartition(topic, partition): None for topic, partition in active}
        )
        plural = "" if len(active) == 1 else "s"
        _raise_partition_errors(f"Error cancelling partition reassignment{plural} for:", results)
        names = ",".join(map(_name, active))
        print(f"Successfully cancelled partition reassignment{plural} for: {names}")
    else:
        print("None of the specified partition reassignments are active.")
    moving_back = active_moves_back(moves, replica_dirs(admin, moves)) if moves else {}
    if moving_back:
        execute_moves(admin, moving_back, timeout_ms)
    else:
        print("None of the specified partition moves are active.")


def _current_reassignments_text(admin: Any) -> str:
    ongoing = _ongoing(admin)
    if not ongoing:
        return "No partition reassignments found."
    lines = ["Current partition reassignments:"]
    for key in sorted(ongoing):
        state = ongoing[key]
        line = f"{_name(key)}: replicas: {','.join(map(str, state['replicas']))}."
        if state["adding_replicas"]:
            line += f" adding: {','.join(map(str, state['adding_replicas']))}."
        if state["removing_replicas"]:
            line += f" removing: {','.join(map(str, state['removing_replicas']))}."
        lines.append(line)
    return "\n".join(lines)


# ---------------------------------------------------------------------- cluster reads


def _ongoing(admin: Any) -> dict[tuple[str, int], dict[str, list[int]]]:
    found = admin.list_partition_reassignments()
    return {(tp.topic, tp.partition): state for tp, state in found.items()}


def _broker_ids(admin: Any) -> set[int]:
    return set(_broker_racks(admin))


def _broker_racks(admin: Any) -> dict[int, str | None]:
    """Each broker of the cluster and its rack (None: it has none)."""
    return {
        int(broker["broker_id"]): broker.get("rack")
        for broker in admin.describe_cluster()["brokers"]
    }


def _current_assignment(admin: Any, topics: list[str], allow_missing: bool = False) -> Assignment:
    """Replicas of every partition of `topics`, from Metadata (as Kafka's describeTopics)."""
    if not topics:
        return {}
    assignment: Assignment = {}
    for topic in admin.describe_topics(topics):
        if topic["error_code"] != ErrorCode.none or not topic["partitions"]:
            if allow_missing:
                continue
            raise ToolError(f"Topic {topic['name']} not found.")
        for partition in topic["partitions"]:
            key = (topic["name"], int(partition["partition_index"]))
            assignment[key] = [int(r) for r in partition["replica_nodes"]]
    return assignment


def _raise_partition_errors(heading: str, results: dict[Any, Any]) -> None:
    failed = sorted(
        (tp.topic, tp.partition, error) for tp, error in results.items() if error is not None
    )
    if failed:
        details = "; ".join(
            f"{topic}-{partition}: {error.__name__}" for topic, partition, error in failed
        )
        raise ToolError(f"{heading} {details}")


def main() -> int:
    return run_tool(_body)
