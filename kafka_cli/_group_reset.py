"""`kafka-consumer-groups --reset-offsets`: plan new offsets (Kafka's prepareOffsetsToReset)
and, with `--execute`, commit them for an inactive (Empty or Dead) group.

Scenarios: --to-offset N, --to-earliest, --to-latest, --to-current, --shift-by N,
--to-datetime YYYY-MM-DDTHH:mm:SS.sss[+hh:mm|Z] (UTC when no zone is given),
--by-duration PnDTnHnMnS, --from-file CSV (`topic,partition,offset`, or with the group first).
Explicit offsets are clamped into [log start, log end] as Kafka does.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_cli._client import result_of
from kafka_cli._group_admin import (
    EARLIEST,
    LATEST,
    Partition,
    committed_offsets,
    log_offsets,
    topic_partitions,
)
from kafka_cli.common import ToolError

SCENARIOS = (
    "to_offset",
    "to_earliest",
    "to_latest",
    "to_current",
    "shift_by",
    "to_datetime",
    "by_duration",
    "from_file",
)
_DURATION = re.compile(
    r"^P(?:(?P<days>\d+)D)?(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)

Plan = dict[Partition, int]


def scenario_of(options: argparse.Namespace) -> str:
    chosen = [name for name in SCENARIOS if getattr(options, name) not in (None, False)]
    if len(chosen) != 1:
        flags = ", ".join("--" + name.replace("_", "-") for name in SCENARIOS)
        raise ToolError(f"Option --reset-offsets requires exactly one of: {flags}")
    return chosen[0]


def parse_datetime_ms(text: str) -> int:
    """Kafka's Utils.getDateTime: ISO-8601 with a 'T'; no zone means UTC."""
    if "T" not in text:
        raise ToolError(
            f"Error parsing timestamp '{text}'. It does not contain a 'T' according to "
            "ISO8601 format"
        )
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as error:
        raise ToolError(f"Error parsing timestamp '{text}'") from error
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


def parse_duration_ms(text: str) -> int:
    match = _DURATION.match(text.strip().upper())
    if match is None or text.strip().upper() in ("P", "PT"):
        raise ToolError(f"Invalid duration '{text}': expected the form PnDTnHnMnS")
    parts = {name: float(value or 0) for name, value in match.groupdict().items()}
    seconds = parts["days"] * 86400 + parts["hours"] * 3600 + parts["minutes"] * 60
    return int((seconds + parts["seconds"]) * 1000)


def parse_topic_scope(admin: AdminClient, topics: list[str]) -> list[Partition]:
    """`--topic t` (every partition) or `--topic t:0,2` (those partitions)."""
    explicit: list[Partition] = []
    whole: list[str] = []
    for argument in topics:
        if ":" not in argument:
            whole.append(argument)
            continue
        topic, _, partitions = argument.partition(":")
        for partition in partitions.split(","):
            if not partition.strip().isdigit():
                raise ToolError(
                    f"Invalid partition '{partition}' specified in topic arg '{argument}'"
                )
            explicit.append((topic, int(partition)))
    return explicit + topic_partitions(admin, whole)


def _clamped(admin: AdminClient, requested: Plan) -> Plan:
    """Kafka's checkOffsetsRange: above the log end -> log end, below the start -> start."""
    starts = log_offsets(admin, requested, EARLIEST)
    ends = log_offsets(admin, requested, LATEST)
    plan: Plan = {}
    for partition, offset in requested.items():
        end, start = ends.get(partition, -1), starts.get(partition, -1)
        if end >= 0 and offset > end:
            offset = end
        elif start >= 0 and offset < start:
            offset = start
        plan[partition] = offset
    return plan


def _read_plan_file(path: str, group: str) -> Plan:
    try:
        rows = list(csv.reader(Path(path).read_text(encoding="utf-8").splitlines()))
    except OSError as error:
        raise ToolError(f"cannot read {path}: {error.strerror}") from error
    plan: Plan = {}
    for row in rows:
        if not row:
            continue
        if len(row) == 4 and row[0] != group:
            continue
        fields = row[-3:]
        if len(row) not in (3, 4) or not fields[1].isdigit():
            raise ToolError(f"Invalid reset plan line '{','.join(row)}'")
        plan[(fields[0], int(fields[1]))] = int(fields[2])
    return plan


def _by_timestamp(admin: AdminClient, partitions: list[Partition], timestamp_ms: int) -> Plan:
    found = log_offsets(admin, partitions, timestamp_ms)
    missing = [partition for partition, offset in found.items() if offset < 0]
    for topic, partition in missing:
        print(
            f"\nWarn: Partition {partition} from topic {topic} is empty. Falling back to latest "
            "known offset."
        )
    latest = log_offsets(admin, missing, LATEST)
    return {partition: latest.get(partition, offset) for partition, offset in found.items()}


def plan_reset(
    admin: AdminClient, options: argparse.Namespace, group: str, partitions: list[Partition]
) -> Plan:
    scenario = scenario_of(options)
    if scenario == "to_offset":
        return _clamped(admin, dict.fromkeys(partitions, options.to_offset))
    if scenario == "to_earliest":
        return log_offsets(admin, partitions, EARLIEST)
    if scenario == "to_latest":
        return log_offsets(admin, partitions, LATEST)
    if scenario == "from_file":
        return _clamped(admin, _read_plan_file(options.from_file, group))
    committed = committed_offsets(admin, group)
    if scenario == "to_current":
        latest = log_offsets(admin, [tp for tp in partitions if tp not in committed], LATEST)
        return {tp: committed[tp] if tp in committed else latest[tp] for tp in partitions}
    if scenario == "shift_by":
        requested: Plan = {}
        for topic, partition in partitions:
            if (topic, partition) not in committed:
                raise ToolError(
                    f"Cannot shift offset for partition {topic}-{partition} since there is no "
                    "current committed offset"
                )
            requested[(topic, partition)] = committed[(topic, partition)] + options.shift_by
        return _clamped(admin, requested)
    if scenario == "to_datetime":
        return _by_timestamp(admin, partitions, parse_datetime_ms(options.to_datetime))
    now_ms = int(time.time() * 1000)
    return _by_timestamp(admin, partitions, now_ms - parse_duration_ms(options.by_duration))


def commit(admin: AdminClient, group: str, plan: Plan) -> None:
    offsets = [
        TopicPartition(topic, partition, offset) for (topic, partition), offset in plan.items()
    ]
    futures = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, offsets)])
    for future in futures.values():
        result = result_of(future)
        for tp in result.topic_partitions or []:
            if tp.error is not None:
                raise ToolError(f"{tp.topic}-{tp.partition}: {tp.error.str()}")


def format_plan(plans: dict[str, Plan]) -> list[str]:
    """Kafka's printOffsetsToReset table (nothing at all when no group was planned)."""
    if not plans:
        return []
    lines = ["", f"{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} {'NEW-OFFSET':<15}"]
    for group, plan in plans.items():
        for (topic, partition), offset in plan.items():
            lines.append(f"{group:<30} {topic:<30} {partition!s:<10} {offset!s:<15}")
    return lines


def export_csv(plans: dict[str, Plan], single_group: bool) -> str:
    lines = []
    for group, plan in plans.items():
        for (topic, partition), offset in plan.items():
            prefix = "" if single_group else f"{group},"
            lines.append(f"{prefix}{topic},{partition},{offset}\n")
    return "".join(lines)


def warn_dry_run_default() -> None:
    print(
        "WARN: No action will be performed as the --execute option is missing.In a future major "
        "release, the default behavior of this command will be to prompt the user before "
        "executing the reset rather than doing a dry run. You should add the --dry-run option "
        "explicitly if you are scripting this command and want to keep the current default "
        "behavior without prompting.",
        file=sys.stderr,
    )
