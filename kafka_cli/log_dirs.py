"""kafka-log-dirs: log directory usage of brokers (DescribeLogDirs), as Kafka 3.0's
LogDirsCommand prints it.

`--describe [--broker-list 1,2] [--topic-list t1,t2]` prints "Querying brokers for log
directories information", "Received log directory information from brokers 1,2,3" and one
JSON line: `{"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/d","error":null,
"partitions":[{"partition":"t-0","size":0,"offsetLag":0,"isFuture":false}]}]}]}`. Brokers,
directories and partitions are sorted (Kafka prints them in Java hash-map order). A broker in
--broker-list that the cluster does not have is an error on stderr with exit status 1 (Kafka
prints it on stdout and exits 0).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from kafka import KafkaAdminClient
from kio.schema.errors import ErrorCode

from kafka_cli._client import ensure_reachable, load_properties
from kafka_cli.common import ToolArgumentParser, ToolError, bootstrap_servers, run_tool

# Java exception classes of the errors DescribeLogDirs can carry per directory.
ERROR_CLASSES: dict[int, str] = {
    ErrorCode.kafka_storage_error: "org.apache.kafka.common.errors.KafkaStorageException",
    ErrorCode.log_dir_not_found: "org.apache.kafka.common.errors.LogDirNotFoundException",
}
UNKNOWN_ERROR_CLASS = "org.apache.kafka.common.errors.UnknownServerException"
# kafka-python takes these admin client properties from --command-config (Kafka's names).
COMMAND_CONFIG_KEYS = {"client.id": "client_id", "request.timeout.ms": "request_timeout_ms"}


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="kafka-log-dirs",
        description="This tool helps to query log directory usage on the specified brokers.",
    )
    parser.add_argument("--bootstrap-server", required=True, help="REQUIRED: the server(s).")
    parser.add_argument("--command-config", help="Property file passed to the admin client.")
    parser.add_argument("--describe", action="store_true", help="REQUIRED: describe log dirs.")
    parser.add_argument("--topic-list", default="", help="Topics to query: t1,t2 (default all).")
    parser.add_argument("--broker-list", help="Brokers to query: 1,2 (default all).")
    return parser


def _broker_ids(text: str) -> set[int]:
    try:
        return {int(item) for item in text.split(",") if item.strip()}
    except ValueError as error:
        raise ToolError(f"--broker-list expects broker ids like 1,2,3: {text!r}") from error


def _admin(bootstrap: str, command_config: str | None) -> KafkaAdminClient:
    ensure_reachable(bootstrap)
    options: dict[str, Any] = {"client_id": "log-dirs-tool"}
    for key, value in load_properties(command_config).items():
        if key in COMMAND_CONFIG_KEYS:
            options[COMMAND_CONFIG_KEYS[key]] = int(value) if key.endswith(".ms") else value
    return KafkaAdminClient(bootstrap_servers=bootstrap, **options)


def format_as_json(described: list[dict[str, Any]], topics: set[str]) -> str:
    """Kafka's LogDirsCommand JSON, compact, from kafka-python's describe_log_dirs answer."""
    brokers = []
    for broker in sorted(described, key=lambda entry: int(entry["broker"])):
        log_dirs = []
        for log_dir in sorted(broker["log_dirs"], key=lambda entry: str(entry["log_dir"])):
            code = int(log_dir["error_code"])
            partitions = [
                {
                    "partition": f"{topic['name']}-{partition['partition_index']}",
                    "size": partition["partition_size"],
                    "offsetLag": partition["offset_lag"],
                    "isFuture": partition["is_future_key"],
                }
                for topic in sorted(log_dir["topics"], key=lambda entry: str(entry["name"]))
                if not topics or topic["name"] in topics
                for partition in sorted(topic["partitions"], key=lambda p: p["partition_index"])
            ]
            error = None if code == ErrorCode.none else ERROR_CLASSES.get(code, UNKNOWN_ERROR_CLASS)
            log_dirs.append(
                {"logDir": log_dir["log_dir"], "error": error, "partitions": partitions}
            )
        brokers.append({"broker": int(broker["broker"]), "logDirs": log_dirs})
    return json.dumps({"version": 1, "brokers": brokers}, separators=(",", ":"))


def _body(args: list[str]) -> int:
    options = _parser().parse_args(args)
    if not options.describe:
        raise ToolError('Missing required argument "[describe]"')
    bootstrap = bootstrap_servers(options.bootstrap_server)
    topics = {topic for topic in options.topic_list.split(",") if topic}
    admin = _admin(bootstrap, options.command_config)
    try:
        cluster_brokers = {int(b["broker_id"]) for b in admin.describe_cluster()["brokers"]}
        wanted = (
            cluster_brokers if options.broker_list is None else _broker_ids(options.broker_list)
        )
        missing = wanted - cluster_brokers
        if missing:
            raise ToolError(
                "The given brokers do not exist from --broker-list: "
                f"{','.join(map(str, sorted(missing)))}. Current existent brokers: "
                f"{','.join(map(str, sorted(cluster_brokers)))}"
            )
        print("Querying brokers for log directories information")
        # Every partition, filtered by --topic-list below, as Kafka's tool does.
        described = admin.describe_log_dirs(None, brokers=sorted(wanted))
        queried = ",".join(map(str, sorted(wanted)))
        print(f"Received log directory information from brokers {queried}")
        print(format_as_json(described, topics))
    finally:
        admin.close()
    return 0


def main() -> int:
    return run_tool(_body)
