"""kafka-leader-election: preferred or unclean leader election through the ElectLeaders API.

Flags, checks and output follow Kafka 3.0's LeaderElectionCommand: exactly one of `--topic`
(with `--partition`), `--all-topic-partitions` and `--path-to-json-file`; one line each for the
partitions elected, those whose leader was already right, and every failure, which also makes
the tool exit 1 ("N replica(s) could not be elected"). Failures show Kafka's exception class
names so that scripts matching them keep working.
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import TimeoutError as FutureTimeoutError
from pathlib import Path
from typing import Any

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition

from kafka_cli._client import admin_client, kafka_error_message
from kafka_cli.common import ToolArgumentParser, ToolError, run_tool

# Kafka's tool gives up waiting for the election results after 30 s.
ELECTION_TIMEOUT_S = 30.0
ELECTION_TYPES = {"PREFERRED": ElectionType.PREFERRED, "UNCLEAN": ElectionType.UNCLEAN}
# The Java exceptions Kafka's tool prints for the error codes an election can end with.
_JAVA_EXCEPTIONS: dict[int, str] = {
    KafkaError.UNKNOWN_TOPIC_OR_PART: "UnknownTopicOrPartitionException",
    KafkaError.REQUEST_TIMED_OUT: "TimeoutException",
    KafkaError.TOPIC_EXCEPTION: "InvalidTopicException",
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: "ClusterAuthorizationException",
    KafkaError.NOT_CONTROLLER: "NotControllerException",
    KafkaError.INVALID_REQUEST: "InvalidRequestException",
    KafkaError.PREFERRED_LEADER_NOT_AVAILABLE: "PreferredLeaderNotAvailableException",
    KafkaError.ELIGIBLE_LEADERS_NOT_AVAILABLE: "EligibleLeadersNotAvailableException",
}


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="kafka-leader-election",
        description="This tool attempts to elect a new leader for a set of topic partitions. "
        "The type of elections supported are preferred replicas and unclean replicas.",
    )
    parser.add_argument("--bootstrap-server", help="REQUIRED: host:port[,host:port...]")
    parser.add_argument("--admin.config", dest="admin_config", help="Admin client properties.")
    parser.add_argument("--path-to-json-file", help='JSON file: {"partitions":[{"topic":...}]}')
    parser.add_argument("--topic", help="Topic of the partition to elect a leader for.")
    parser.add_argument("--partition", type=int, help="Partition id; REQUIRED with --topic.")
    parser.add_argument("--all-topic-partitions", action="store_true")
    parser.add_argument("--election-type", help="REQUIRED: preferred or unclean.")
    return parser


def _validate(options: argparse.Namespace) -> str:
    """Kafka's checks in its order; returns the election type's name (upper case)."""
    missing = [
        flag
        for flag, value in (
            ("election-type", options.election_type),
            ("bootstrap-server", options.bootstrap_server),
        )
        if value is None
    ]
    if missing:
        raise ToolError(f"Missing required option(s): {', '.join(missing)}")
    chosen = [options.topic is not None, options.all_topic_partitions]
    chosen.append(options.path_to_json_file is not None)
    if sum(chosen) != 1:
        raise ToolError(
            "One and only one of the following options is required: "
            "topic, all-topic-partitions, path-to-json-file"
        )
    if options.topic is not None and options.partition is None:
        raise ToolError("Missing required option(s): partition")
    if options.topic is None and options.partition is not None:
        raise ToolError("Option partition is only allowed if topic is used")
    election_type = str(options.election_type).upper()
    if election_type not in ELECTION_TYPES:
        raise ToolError(
            f"Value {options.election_type} for option election-type is not one of "
            "[PREFERRED, UNCLEAN]"
        )
    return election_type


def parse_election_data(text: str) -> list[tuple[str, int]]:
    """The partitions of a `{"partitions":[{"topic":"t","partition":0}]}` file."""
    try:
        data: Any = json.loads(text)
    except ValueError:
        raise ToolError("Replica election data is empty") from None
    if not isinstance(data, dict) or "partitions" not in data:
        raise ToolError('Replica election data is missing "partitions" field')
    entries = data["partitions"]
    if not isinstance(entries, list):
        raise ToolError('Replica election data: "partitions" must be a list')
    partitions = [_entry(entry) for entry in entries]
    duplicates = sorted({tp for tp in partitions if partitions.count(tp) > 1})
    if duplicates:
        names = ",".join(f"{topic}-{partition}" for topic, partition in duplicates)
        raise ToolError(f"Replica election data contains duplicate partitions: {names}")
    return partitions


def _entry(entry: Any) -> tuple[str, int]:
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("topic"), str)
        or not isinstance(entry.get("partition"), int)
    ):
        raise ToolError(f"Replica election data: invalid partition entry {json.dumps(entry)}")
    return entry["topic"], entry["partition"]


def _requested(options: argparse.Namespace) -> list[tuple[str, int]] | None:
    if options.path_to_json_file is not None:
        try:
            text = Path(options.path_to_json_file).read_text(encoding="utf-8")
        except OSError as error:
            raise ToolError(f"cannot read {options.path_to_json_file}: {error.strerror}") from None
        return parse_election_data(text)
    if options.topic is not None:
        return [(options.topic, options.partition)]
    return None  # every partition


# What confluent-kafka gives per partition: None or a KafkaError (documented as
# KafkaException; accept both).
Outcome = KafkaError | KafkaException | None


def _elect(
    options: argparse.Namespace, election_type: str, partitions: list[tuple[str, int]] | None
) -> dict[Any, Outcome]:
    admin = admin_client(options.bootstrap_server, options.admin_config)
    requested = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
    # No request_timeout/operation_timeout: confluent-kafka 2.16's binding refuses both
    # keywords, so the broker-side wait is librdkafka's default and the tool bounds its own.
    future = admin.elect_leaders(ELECTION_TYPES[election_type], requested)
    try:
        results: dict[Any, Outcome] = future.result(timeout=ELECTION_TIMEOUT_S)
    except (FutureTimeoutError, TimeoutError):
        print("Timeout waiting for election results")
        raise ToolError("Timeout waiting for election results") from None
    except KafkaException as error:
        print("Error while making request")
        raise ToolError(kafka_error_message(error)) from error
    return results


def _kafka_error(outcome: Outcome) -> KafkaError | None:
    """The failure, or None for an elected partition."""
    if isinstance(outcome, KafkaException):
        first = outcome.args[0] if outcome.args else None
        if not isinstance(first, KafkaError):
            return KafkaError(KafkaError.UNKNOWN, str(outcome))
        outcome = first
    if outcome is None or outcome.code() == KafkaError.NO_ERROR:
        return None
    return outcome


def _describe_failure(error: KafkaError) -> str:
    name = _JAVA_EXCEPTIONS.get(error.code(), "ApiException")
    return f"org.apache.kafka.common.errors.{name}: {error.str()}"


def report(election_type: str, results: dict[Any, Outcome]) -> None:
    """Kafka's three kinds of lines; raises when any partition failed."""
    succeeded: list[str] = []
    noop: list[str] = []
    failed: list[tuple[str, KafkaError]] = []
    for tp in sorted(results, key=lambda tp: (tp.topic, tp.partition)):
        name = f"{tp.topic}-{tp.partition}"
        error = _kafka_error(results[tp])
        if error is None:
            succeeded.append(name)
        elif error.code() == KafkaError.ELECTION_NOT_NEEDED:
            noop.append(name)
        else:
            failed.append((name, error))
    if succeeded:
        partitions = ", ".join(succeeded)
        print(
            f"Successfully completed leader election ({election_type}) for partitions {partitions}"
        )
    if noop:
        print(f"Valid replica already elected for partitions {', '.join(noop)}")
    for name, error in failed:
        print(
            f"Error completing leader election ({election_type}) for partition: {name}: "
            f"{_describe_failure(error)}"
        )
    if failed:
        raise ToolError(f"{len(failed)} replica(s) could not be elected")


def _body(argv: list[str]) -> int:
    options = _parser().parse_args(argv)
    election_type = _validate(options)
    partitions = _requested(options)
    report(election_type, _elect(options, election_type, partitions))
    return 0


def main() -> int:
    return run_tool(_body)
