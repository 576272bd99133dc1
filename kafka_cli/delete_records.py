"""kafka-delete-records: delete records of partitions up to given offsets (DeleteRecords).

Flags, JSON and output follow Kafka 3.0's DeleteRecordsCommand: `--offset-json-file` holds
`{"partitions":[{"topic":"t","partition":0,"offset":3}],"version":1}` (`version` may be left
out; offset -1 means the high watermark). It prints "Executing records delete operation",
"Records delete operation completed:" and one line per partition,
`partition: t-0<TAB>low_watermark: 3` or `partition: t-0<TAB>error: <message>`. Partitions are
printed in the file's order (Kafka's order is that of a Java HashMap).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from kafka_cli._client import ADMIN_TIMEOUT_S, admin_client, kafka_error_message
from kafka_cli.common import ToolArgumentParser, ToolError, run_tool

SUPPORTED_VERSION = 1  # DeleteRecordsCommand's EarliestVersion, the only one


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="kafka-delete-records",
        description="Delete records of the given partitions down to the specified offset.",
    )
    parser.add_argument("--bootstrap-server", required=True, help="REQUIRED: The server to use.")
    parser.add_argument(
        "--offset-json-file",
        required=True,
        help='REQUIRED: {"partitions": [{"topic": "foo", "partition": 1, "offset": 1}],'
        ' "version": 1}',
    )
    parser.add_argument("--command-config", help="Property file passed to the admin client.")
    return parser


def parse_offsets(text: str) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) per entry, as DeleteRecordsCommand parses the file."""
    try:
        document = json.loads(text)
    except ValueError as error:
        raise ToolError("The input string is not a valid JSON") from error
    if not isinstance(document, dict):
        raise ToolError("The input string is not a valid JSON object")
    version = document.get("version", SUPPORTED_VERSION)
    if version != SUPPORTED_VERSION:
        raise ToolError(f"Not supported version field value {version}")
    partitions = document.get("partitions")
    if not isinstance(partitions, list):
        raise ToolError("Missing partitions field")
    return [_entry(entry) for entry in partitions]


def _entry(entry: Any) -> tuple[str, int, int]:
    try:
        topic, partition, offset = entry["topic"], entry["partition"], entry["offset"]
    except (KeyError, TypeError) as error:
        raise ToolError(f"Invalid partition entry {json.dumps(entry)}") from error
    if not isinstance(topic, str) or not isinstance(partition, int) or not isinstance(offset, int):
        raise ToolError(f"Invalid partition entry {json.dumps(entry)}")
    return topic, partition, offset


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ToolError(f"cannot read {path}: {error.strerror}") from error


def _body(args: list[str]) -> int:
    options = _parser().parse_args(args)
    offsets = parse_offsets(_read(options.offset_json_file))
    counts = Counter((topic, partition) for topic, partition, _ in offsets)
    duplicates = [f"{topic}-{partition}" for (topic, partition), n in counts.items() if n > 1]
    if duplicates:
        raise ToolError(
            f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}"
        )
    admin = admin_client(options.bootstrap_server, options.command_config)
    print("Executing records delete operation")
    requested = [TopicPartition(t, p, o) for t, p, o in offsets]
    futures = admin.delete_records(requested, request_timeout=ADMIN_TIMEOUT_S) if requested else {}
    print("Records delete operation completed:")
    by_key = {(tp.topic, tp.partition): future for tp, future in futures.items()}
    for topic, partition, _ in offsets:
        future = by_key[(topic, partition)]
        try:
            low_watermark = future.result(timeout=ADMIN_TIMEOUT_S).low_watermark
            print(f"partition: {topic}-{partition}\tlow_watermark: {low_watermark}")
        except Exception as error:  # the client's per-partition failure: Kafka prints it
            print(f"partition: {topic}-{partition}\terror: {kafka_error_message(error)}")
    return 0


def main() -> int:
    return run_tool(_body)
