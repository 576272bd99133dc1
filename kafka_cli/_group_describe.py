"""`kafka-consumer-groups --describe`: Kafka 3.0's three tables (offsets, --members, --state).

Columns are left-aligned with Kafka's widths: GROUP, TOPIC, CONSUMER-ID and HOST are at least
15 wide and grow to their longest value, fixed ones are 10 or 15 wide, and every table is
preceded by an empty line. `-` stands for a missing value. Group states are announced on
standard error as Kafka does (no active members, rebalancing); a group that does not exist is
reported by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka.admin import AdminClient

from kafka_cli._group_admin import (
    LATEST,
    GroupDescription,
    Partition,
    committed_offsets,
    log_offsets,
)

MISSING = "-"
MIN_COLUMN_WIDTH = 15


@dataclass(frozen=True)
class OffsetRow:
    group: str
    topic: str
    partition: str
    current_offset: str
    log_end_offset: str
    lag: str
    consumer_id: str
    host: str
    client_id: str


def _text(value: int | None) -> str:
    return MISSING if value is None else str(value)


def offset_rows(admin: AdminClient, description: GroupDescription) -> list[OffsetRow]:
    """Assigned partitions member by member (largest assignment first), then partitions with
    a committed offset that nobody is assigned, as Kafka's collectGroupsOffsets orders them."""
    committed = committed_offsets(admin, description.group)
    members = sorted(
        (member for member in description.members if member.assignment),
        key=lambda member: -len(member.assignment),
    )
    owners: list[tuple[Partition, str, str, str]] = []
    for member in members:
        for partition in sorted(member.assignment, key=lambda tp: tp[1]):
            owners.append((partition, member.consumer_id, member.host, member.client_id))
    assigned = {partition for partition, *_ in owners}
    unassigned = sorted(tp for tp in committed if tp not in assigned)
    owners += [(tp, MISSING, MISSING, MISSING) for tp in unassigned]
    log_ends = log_offsets(admin, [partition for partition, *_ in owners], LATEST)
    rows = []
    for (topic, number), consumer_id, host, client_id in owners:
        current = committed.get((topic, number))
        log_end = log_ends.get((topic, number))
        log_end = None if log_end is None or log_end < 0 else log_end
        lag = None if current is None or log_end is None else log_end - current
        rows.append(
            OffsetRow(
                description.group,
                topic,
                str(number),
                _text(current),
                _text(log_end),
                _text(lag),
                consumer_id,
                host,
                client_id,
            )
        )
    return rows


def _width(values: list[str]) -> int:
    return max([MIN_COLUMN_WIDTH, *map(len, values)])


def format_offsets(rows: list[OffsetRow]) -> list[str]:
    group_w = _width([row.group for row in rows])
    topic_w = _width([row.topic for row in rows])
    consumer_w = _width([row.consumer_id for row in rows])
    host_w = _width([row.host for row in rows])

    def line(*cells: str) -> str:
        group, topic, partition, current, log_end, lag, consumer, host, client = cells
        return (
            f"{group:<{group_w}} {topic:<{topic_w}} {partition:<10} {current:<15} "
            f"{log_end:<15} {lag:<15} {consumer:<{consumer_w}} {host:<{host_w}} {client}"
        )

    header = line(
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
        "CONSUMER-ID", "HOST", "CLIENT-ID",
    )  # fmt: skip
    body = [
        line(
            row.group,
            row.topic,
            row.partition,
            row.current_offset,
            row.log_end_offset,
            row.lag,
            row.consumer_id,
            row.host,
            row.client_id,
        )
        for row in rows
    ]
    return ["", header, *body]


def format_members(description: GroupDescription, verbose: bool) -> list[str]:
    members = description.members
    group_w = _width([description.group])
    consumer_w = _width([member.consumer_id for member in members])
    instance_w = max([17, *(len(member.group_instance_id) for member in members)])
    host_w = _width([member.host for member in members])
    client_w = _width([member.client_id for member in members])
    with_instance = any(member.group_instance_id for member in members)

    def line(group: str, consumer: str, instance: str, host: str, client: str, count: str) -> str:
        text = f"{group:<{group_w}} {consumer:<{consumer_w}} "
        if with_instance:
            text += f"{instance:<{instance_w}} "
        return text + f"{host:<{host_w}} {client:<{client_w}} {count:<15} "

    header = line("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
    lines = ["", header + ("ASSIGNMENT" if verbose else "")]
    for member in members:
        text = line(
            description.group, member.consumer_id, member.group_instance_id, member.host,
            member.client_id, str(len(member.assignment)),
        )  # fmt: skip
        if verbose:
            text += _assignment_text(member.assignment)
        lines.append(text)
    return lines


def _assignment_text(assignment: list[Partition]) -> str:
    """`t1(0,1), t2(3)` (Kafka's --verbose ASSIGNMENT column), `-` when empty."""
    if not assignment:
        return MISSING
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assignment:
        by_topic.setdefault(topic, []).append(partition)
    parts = [f"{topic}({','.join(map(str, sorted(p)))})" for topic, p in by_topic.items()]
    return ", ".join(sorted(parts))


def format_state(description: GroupDescription) -> list[str]:
    # Kafka sizes the first column by the coordinator's text (its quirk, kept for parsers).
    width = max(25, len(description.coordinator))
    header = (
        f"{'GROUP':<{width}} {'COORDINATOR (ID)':<25} {'ASSIGNMENT-STRATEGY':<20} "
        f"{'STATE':<15} #MEMBERS"
    )
    row = (
        f"{description.group:<{width}} {description.coordinator:<25} "
        f"{description.assignor:<20} {description.state:<15} {len(description.members)}"
    )
    return ["", header, row]


def state_notice(description: GroupDescription) -> str | None:
    """What Kafka prints on standard error before a table, for groups not Stable."""
    if description.state == "Empty":
        return f"\nConsumer group '{description.group}' has no active members."
    if description.state in ("PreparingRebalance", "CompletingRebalance"):
        return f"\nWarning: Consumer group '{description.group}' is rebalancing."
    return None
