"""kafka-topics: create, list, describe, alter (add partitions) and delete topics.

Flags, checks and output follow Kafka 3.0's TopicCommand with `--bootstrap-server`:
`--describe` prints `Topic: t<TAB>TopicId: ...<TAB>PartitionCount: ...` and one tab-indented
line per partition; `--topic` is a regular expression that must match whole names (commas
mean "or"). `--alter` only adds partitions (CreatePartitions); topic configs are changed with
kafka-configs, as in Kafka.
"""

from __future__ import annotations

import argparse
import re
import sys
from concurrent.futures import Future
from typing import Any

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewPartitions, NewTopic

from kafka_cli._client import admin_client, error_code, result_of
from kafka_cli._topic_describe import describe_topics
from kafka_cli.common import ToolArgumentParser, ToolError, run_tool

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
ACTIONS = ("create", "list", "describe", "alter", "delete")
REPORT_FLAGS = (
    "under_replicated_partitions",
    "unavailable_partitions",
    "under_min_isr_partitions",
    "at_min_isr_partitions",
)
REPLICATION_FACTOR_MAX = 32767  # a Java short
LIST_TIMEOUT_S = 60.0


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="kafka-topics", description="Create, delete, describe, or change a topic."
    )
    parser.add_argument("--bootstrap-server", help="REQUIRED: The Kafka server to connect to.")
    parser.add_argument("--command-config", help="Property file passed to the admin client.")
    for action in ACTIONS:
        parser.add_argument(f"--{action}", action="store_true", help=f"{action.title()} topics.")
    parser.add_argument("--topic", help="Topic name, or a regular expression except for --create.")
    parser.add_argument("--partitions", type=int, help="Number of partitions (create, alter).")
    parser.add_argument("--replication-factor", type=int, help="Replication factor (create).")
    parser.add_argument(
        "--replica-assignment",
        help="Manual assignment: broker1:broker2,broker1:broker2,... one group per partition.",
    )
    parser.add_argument("--config", action="append", default=[], help="name=value (create).")
    parser.add_argument("--delete-config", action="append", default=[], help=argparse.SUPPRESS)
    for flag in REPORT_FLAGS:
        parser.add_argument(f"--{flag.replace('_', '-')}", action="store_true")
    parser.add_argument("--topics-with-overrides", action="store_true")
    parser.add_argument("--if-exists", action="store_true")
    parser.add_argument("--if-not-exists", action="store_true")
    parser.add_argument("--exclude-internal", action="store_true")
    parser.add_argument("--disable-rack-aware", action="store_true", help=argparse.SUPPRESS)
    return parser


def _check_args(options: argparse.Namespace) -> str:
    """Kafka's checkArgs, in its order; returns the one action."""
    actions = [action for action in ACTIONS if getattr(options, action)]
    if len(actions) != 1:
        raise ToolError(
            "Command must include exactly one action: --list, --describe, --create, --alter "
            "or --delete"
        )
    action = actions[0]
    if not options.bootstrap_server:
        raise ToolError("--bootstrap-server must be specified")
    if action not in ("list", "describe") and not options.topic:
        raise ToolError(f'Missing required argument "[topic]" for --{action}')
    if options.if_exists and action == "describe" and not options.topic:
        raise ToolError('Missing required argument "[topic]"')
    _check_create_and_alter(options, action)
    _check_only_with(options, action)
    return action


def _check_create_and_alter(options: argparse.Namespace, action: str) -> None:
    sized = options.partitions is not None or options.replication_factor is not None
    if action == "create" and options.replica_assignment and sized:
        raise ToolError(
            "Option --replica-assignment can't be used with --partitions or --replication-factor"
        )
    if action == "alter":
        if options.config:
            raise ToolError(
                "Option --config can't be used with --alter and --bootstrap-server (the "
                "kafka-configs CLI supports altering topic configs with a --bootstrap-server "
                "option)"
            )
        if options.partitions is None:
            raise ToolError('Missing required argument "[partitions]"')


def _check_only_with(options: argparse.Namespace, action: str) -> None:
    """Options that make sense only with some actions (Kafka's checkInvalidArgs)."""
    allowed = {
        "config": ("create",),
        "delete_config": (),
        "partitions": ("create", "alter"),
        "replication_factor": ("create",),
        "replica_assignment": ("create", "alter"),
        "if_exists": ("alter", "delete", "describe"),
        "if_not_exists": ("create",),
        "exclude_internal": ("list", "describe"),
        "topics_with_overrides": ("describe",),
        **dict.fromkeys(REPORT_FLAGS, ("describe",)),
    }
    for name, actions in allowed.items():
        value = getattr(options, name)
        if value not in (None, False, []) and action not in actions:
            raise ToolError(f"Option --{name.replace('_', '-')} can't be used with --{action}")
    reports = [flag for flag in REPORT_FLAGS if getattr(options, flag)]
    if len(reports) > 1 or (reports and options.topics_with_overrides):
        raise ToolError("Only one of the partition report options may be given")


def topic_filter(pattern: str) -> re.Pattern[str]:
    """Kafka's IncludeList: commas mean "or", spaces and surrounding quotes are dropped, and
    the expression must match a whole topic name."""
    regex = pattern.strip().replace(",", "|").replace(" ", "").strip("\"'")
    try:
        return re.compile(regex)
    except re.error as error:
        raise ToolError(f"{regex} is an invalid regex.") from error


def matching_topics(admin: AdminClient, pattern: str | None, exclude_internal: bool) -> list[str]:
    metadata = admin.list_topics(timeout=LIST_TIMEOUT_S)
    names = sorted(metadata.topics)
    if exclude_internal:
        names = [name for name in names if name not in INTERNAL_TOPICS]
    if pattern is None:
        return names
    matcher = topic_filter(pattern)
    return [name for name in names if matcher.fullmatch(name)]


def _ensure_found(found: list[str], options: argparse.Namespace) -> None:
    if options.topic and not found and not options.if_exists:
        raise ToolError(f"Topic '{options.topic}' does not exist as expected")


def parse_replica_assignment(text: str) -> list[list[int]]:
    """`1:2,2:3` -> [[1, 2], [2, 3]] (partition 0, partition 1); Kafka's checks."""
    assignment: list[list[int]] = []
    for partition, group in enumerate(text.split(",")):
        try:
            brokers = [int(broker.strip()) for broker in group.split(":")]
        except ValueError as error:
            raise ToolError(f"Invalid replica assignment '{text}'") from error
        duplicates = sorted({broker for broker in brokers if brokers.count(broker) > 1})
        if duplicates:
            raise ToolError(
                "Partition replica lists may not contain duplicate entries: "
                + ",".join(map(str, duplicates))
            )
        if assignment and len(brokers) != len(assignment[0]):
            raise ToolError(f"Partition {partition} has different replication factor: {brokers}")
        assignment.append(brokers)
    return assignment


def parse_topic_configs(items: list[str]) -> dict[str, str]:
    configs: dict[str, str] = {}
    for item in items:
        parts = re.split(r"\s*=\s*", item)
        if len(parts) != 2:
            raise ToolError(
                'Invalid topic config: all configs to be added must be in the format "key=val".'
            )
        configs[parts[0].strip()] = parts[1].strip()
    return configs


def _create(admin: AdminClient, options: argparse.Namespace) -> None:
    name = options.topic
    if options.replication_factor is not None and not (
        1 <= options.replication_factor <= REPLICATION_FACTOR_MAX
    ):
        raise ToolError(
            f"The replication factor must be between 1 and {REPLICATION_FACTOR_MAX} inclusive"
        )
    if options.partitions is not None and options.partitions < 1:
        raise ToolError("The partitions must be greater than 0")
    if "." in name or "_" in name:
        print(
            "WARNING: Due to limitations in metric names, topics with a period ('.') or "
            "underscore ('_') could collide. To avoid issues it is best to use either, but "
            "not both."
        )
    configs = parse_topic_configs(options.config)
    if options.replica_assignment:
        assignment = parse_replica_assignment(options.replica_assignment)
        # librdkafka wants the partition count spelled out next to an assignment.
        new_topic = NewTopic(name, len(assignment), replica_assignment=assignment, config=configs)
    else:
        # -1 asks the broker for num.partitions / default.replication.factor.
        partitions = -1 if options.partitions is None else options.partitions
        replication = -1 if options.replication_factor is None else options.replication_factor
        new_topic = NewTopic(name, partitions, replication, config=configs)
    future = admin.create_topics([new_topic])[name]
    try:
        result_of(future)
    except ToolError:
        if options.if_not_exists and _failed_with(future, KafkaError.TOPIC_ALREADY_EXISTS):
            return
        raise
    print(f"Created topic {name}.")


def _failed_with(future: Future[Any], code: int) -> bool:
    failure = future.exception()
    return failure is not None and error_code(failure) == code


def _alter(admin: AdminClient, options: argparse.Namespace) -> None:
    topics = matching_topics(admin, options.topic, options.exclude_internal)
    _ensure_found(topics, options)
    if not topics:
        return
    assignment = (
        parse_replica_assignment(options.replica_assignment) if options.replica_assignment else None
    )
    requests = []
    for topic in topics:
        if assignment is None:
            requests.append(NewPartitions(topic, options.partitions))
            continue
        current = len(admin.list_topics(topic, timeout=LIST_TIMEOUT_S).topics[topic].partitions)
        requests.append(NewPartitions(topic, options.partitions, assignment[current:]))
    for future in admin.create_partitions(requests).values():
        result_of(future)


def _delete(admin: AdminClient, options: argparse.Namespace) -> None:
    topics = matching_topics(admin, options.topic, options.exclude_internal)
    _ensure_found(topics, options)
    if not topics:
        return
    for future in admin.delete_topics(topics).values():
        result_of(future)


def _body(args: list[str]) -> int:
    if not args:
        _parser().print_usage(sys.stderr)
        raise ToolError("Create, delete, describe, or change a topic.")
    options = _parser().parse_args(args)
    action = _check_args(options)
    admin = admin_client(options.bootstrap_server, options.command_config)
    if action == "create":
        _create(admin, options)
    elif action == "list":
        topics = matching_topics(admin, options.topic, options.exclude_internal)
        print("\n".join(topics))
    elif action == "describe":
        topics = matching_topics(admin, options.topic, options.exclude_internal)
        _ensure_found(topics, options)
        describe_topics(admin, topics, options)
    elif action == "alter":
        _alter(admin, options)
    else:
        _delete(admin, options)
    return 0


def main() -> int:
    return run_tool(_body)
