"""kafka-transactions: the transactional state of producers in the cluster, with Kafka's
commands, flags and tables (TransactionsCommand).

    kafka-transactions --bootstrap-server HOST:PORT [--command-config FILE] COMMAND ...
      list [--duration-filter MS]
      describe --transactional-id ID
      describe-producers --topic T --partition P [--broker-id N]
      abort --topic T --partition P (--start-offset O |
            --producer-id ID --producer-epoch E --coordinator-epoch C)
      find-hanging (--topic T [--partition P] | --broker-id N) [--max-transaction-timeout MIN]

Tables are printed as Kafka prints them: each cell left-aligned to its column's width and
followed by a tab. A hanging transaction is an open one (seen by DescribeProducers) older than
--max-transaction-timeout whose coordinator does not list the partition in the producer's
transaction, or does not know the producer at all: its markers will never come, and `abort`
writes them instead (WriteTxnMarkers to the partition's leader).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from kafka_cli._client import load_properties
from kafka_cli._cluster_requests import ClusterRequests, build_request
from kafka_cli.common import ToolArgumentParser, ToolError, run_tool

FIND_COORDINATOR = (10, 3)
WRITE_TXN_MARKERS = (27, 1)
DESCRIBE_PRODUCERS = (61, 0)
DESCRIBE_TRANSACTIONS = (65, 0)
LIST_TRANSACTIONS = (66, 1)
TRANSACTION_KEY_TYPE = 1
MAX_TRANSACTION_TIMEOUT_MIN_DEFAULT = 15
DESCRIBE_BATCH_PARTITIONS = 500  # partitions per DescribeProducers request, as Kafka's tool
CLIENT_ID = "kafka-transactions"


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    topic: str
    partition: int
    producer: Any  # a DescribeProducers ProducerState


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    return "\n".join(
        "".join(cell.ljust(width) + "\t" for cell, width in zip(row, widths, strict=True))
        for row in [headers, *rows]
    )


def _check(error_code: Any, what: str) -> None:
    if int(error_code) != ErrorCode.none:
        raise ToolError(f"{what}: {ErrorCode(int(error_code)).name.upper()}")


async def list_transactions(cluster: ClusterRequests, duration_filter_ms: int | None) -> str:
    fields = {
        "state_filters": [],
        "producer_id_filters": [],
        "duration_filter": -1 if duration_filter_ms is None else duration_filter_ms,
    }
    rows = []
    for broker_id in sorted(cluster.brokers):
        response = await cluster.send(broker_id, build_request(*LIST_TRANSACTIONS, fields))
        _check(response.error_code, "Failed to list transactions")
        rows += [
            [t.transactional_id, str(broker_id), str(t.producer_id), t.transaction_state]
            for t in response.transaction_states
        ]
    return format_table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], rows)


async def _coordinator(cluster: ClusterRequests, transactional_id: str) -> int:
    fields = {"key": transactional_id, "key_type": TRANSACTION_KEY_TYPE}
    response = await cluster.send_to_any(build_request(*FIND_COORDINATOR, fields))
    _check(response.error_code, f"Failed to find the coordinator of `{transactional_id}`")
    return int(response.node_id)


async def _describe(cluster: ClusterRequests, transactional_id: str) -> tuple[int, Any]:
    coordinator = await _coordinator(cluster, transactional_id)
    request = build_request(*DESCRIBE_TRANSACTIONS, {"transactional_ids": [transactional_id]})
    (state,) = (await cluster.send(coordinator, request)).transaction_states
    return coordinator, state


async def describe_transaction(cluster: ClusterRequests, transactional_id: str) -> str:
    coordinator, state = await _describe(cluster, transactional_id)
    _check(
        state.error_code,
        f"Failed to describe transaction state of transactional-id `{transactional_id}`",
    )
    start_ms = int(state.transaction_start_time.timestamp() * 1000)
    started, duration = (
        ("None", "None") if start_ms < 0 else (str(start_ms), str(_now_ms() - start_ms))
    )
    partitions = ",".join(f"{t.topic}-{p}" for t in state.topics for p in t.partitions)
    row = [
        str(coordinator),
        transactional_id,
        str(state.producer_id),
        str(state.producer_epoch),
        state.transaction_state,
        str(int(state.transaction_timeout.total_seconds() * 1000)),
        started,
        duration,
        partitions,
    ]
    headers = ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch"]
    headers += ["TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs"]
    headers += ["TransactionDurationMs", "TopicPartitions"]
    return format_table(headers, [row])


async def _producers(
    cluster: ClusterRequests, broker_id: int, partitions: list[tuple[str, int]]
) -> dict[tuple[str, int], list[Any]]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    topics = [{"name": t, "partition_indexes": p} for t, p in by_topic.items()]
    response = await cluster.send(broker_id, build_request(*DESCRIBE_PRODUCERS, {"topics": topics}))
    found = {}
    for topic in response.topics:
        for partition in topic.partitions:
            name = f"{topic.name}-{partition.partition_index}"
            _check(partition.error_code, f"Failed to describe producers for partition {name}")
            found[(topic.name, int(partition.partition_index))] = list(partition.active_producers)
    return found


async def describe_producers(
    cluster: ClusterRequests, topic: str, partition: int, broker_id: int | None
) -> str:
    target = cluster.leader_of(topic, partition) if broker_id is None else broker_id
    producers = (await _producers(cluster, target, [(topic, partition)]))[(topic, partition)]
    rows = [
        [
            str(p.producer_id),
            str(p.producer_epoch),
            str(p.coordinator_epoch),
            str(p.last_sequence),
            str(p.last_timestamp),
            "None" if p.current_txn_start_offset < 0 else str(p.current_txn_start_offset),
        ]
        for p in producers
    ]
    headers = ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence"]
    headers += ["LastTimestamp", "CurrentTransactionStartOffset"]
    return format_table(headers, rows)


async def abort_transaction(cluster: ClusterRequests, options: argparse.Namespace) -> None:
    topic, partition = options.topic, options.partition
    if options.start_offset is None and options.producer_id is None:
        raise ToolError(
            "The transaction to abort must be identified either with --start-offset (for "
            "brokers on 3.0 or above) or with --producer-id, --producer-epoch, and "
            "--coordinator-epoch (for older brokers)"
        )
    leader = cluster.leader_of(topic, partition)
    if options.start_offset is not None:
        producers = (await _producers(cluster, leader, [(topic, partition)]))[(topic, partition)]
        matching = [p for p in producers if p.current_txn_start_offset == options.start_offset]
        if not matching:
            raise ToolError(
                f"Could not find any open transactions starting at offset "
                f"{options.start_offset} on partition {topic}-{partition}"
            )
        producer_id, producer_epoch = matching[0].producer_id, matching[0].producer_epoch
        coordinator_epoch = matching[0].coordinator_epoch
    else:
        if options.producer_epoch is None:
            raise ToolError("Missing required argument --producer-epoch")
        if options.coordinator_epoch is None:
            raise ToolError("Missing required argument --coordinator-epoch")
        producer_id, producer_epoch = options.producer_id, options.producer_epoch
        coordinator_epoch = options.coordinator_epoch
    marker = {
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
        "transaction_result": False,
        "topics": [{"name": topic, "partition_indexes": [partition]}],
        # A producer whose transaction hung before any marker has coordinator epoch -1;
        # 0 is no higher than any leader's (Kafka's tool does the same).
        "coordinator_epoch": max(coordinator_epoch, 0),
    }
    request = build_request(*WRITE_TXN_MARKERS, {"markers": [marker]})
    response = await cluster.send(leader, request)
    for result in response.markers:
        for written in result.topics:
            for p in written.partitions:
                _check(p.error_code, f"Failed to abort the transaction on {topic}-{partition}")


async def find_hanging(cluster: ClusterRequests, options: argparse.Namespace) -> str:
    if options.topic is None and options.broker_id is None:
        raise ToolError(
            "The `find-hanging` command requires either --topic or --broker-id to limit the "
            "scope of the search"
        )
    if options.partition is not None and options.topic is None:
        raise ToolError("The --partition argument requires --topic to be provided")
    timeout_ms = options.max_transaction_timeout * 60_000
    candidates = await _open_transactions(cluster, options, timeout_ms)
    hanging = await _without_coordinator(cluster, candidates)
    now_ms = _now_ms()
    rows = [
        [
            t.topic,
            str(t.partition),
            str(t.producer.producer_id),
            str(t.producer.producer_epoch),
            str(t.producer.coordinator_epoch),
            str(t.producer.current_txn_start_offset),
            str(t.producer.last_timestamp),
            str((now_ms - t.producer.last_timestamp) // 60_000),
        ]
        for t in hanging
    ]
    headers = ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch"]
    headers += ["StartOffset", "LastTimestamp", "Duration(min)"]
    return format_table(headers, rows)


async def _open_transactions(
    cluster: ClusterRequests, options: argparse.Namespace, timeout_ms: int
) -> list[OpenTransaction]:
    """Open transactions older than `timeout_ms`, on the leaders (or on --broker-id)."""
    if options.topic is not None and options.partition is not None:
        cluster.leader_of(options.topic, options.partition)  # it must exist
        keys = [(options.topic, options.partition)]
    else:
        infos = (
            cluster.topic_partitions(options.topic)
            if options.topic is not None
            else [cluster.partitions[key] for key in sorted(cluster.partitions)]
        )
        keys = [
            (i.topic, i.partition)
            for i in infos
            if options.broker_id is None or options.broker_id in i.replicas
        ]
    by_broker: dict[int, list[tuple[str, int]]] = {}
    for key in keys:
        target = cluster.leader_of(*key) if options.broker_id is None else options.broker_id
        by_broker.setdefault(target, []).append(key)
    now_ms = _now_ms()
    found = []
    for broker_id, partitions in sorted(by_broker.items()):
        for start in range(0, len(partitions), DESCRIBE_BATCH_PARTITIONS):
            batch = partitions[start : start + DESCRIBE_BATCH_PARTITIONS]
            for (topic, partition), producers in (
                await _producers(cluster, broker_id, batch)
            ).items():
                found += [
                    OpenTransaction(topic, partition, p)
                    for p in producers
                    if p.current_txn_start_offset >= 0 and now_ms - p.last_timestamp > timeout_ms
                ]
    return found


async def _without_coordinator(
    cluster: ClusterRequests, candidates: list[OpenTransaction]
) -> list[OpenTransaction]:
    """Those whose coordinator will never write a marker: it knows no transactional id for
    the producer, or its transaction does not include the partition."""
    producer_ids = sorted({int(t.producer.producer_id) for t in candidates})
    if not producer_ids:
        return []
    fields = {"state_filters": [], "producer_id_filters": producer_ids, "duration_filter": -1}
    ids: dict[int, str] = {}
    for broker_id in sorted(cluster.brokers):
        response = await cluster.send(broker_id, build_request(*LIST_TRANSACTIONS, fields))
        _check(
            response.error_code, f"Failed to list transactions for {len(producer_ids)} producers"
        )
        ids |= {int(t.producer_id): t.transactional_id for t in response.transaction_states}
    described: dict[str, set[tuple[str, int]] | None] = {}
    for transactional_id in sorted(set(ids.values())):
        _, state = await _describe(cluster, transactional_id)
        if int(state.error_code) == ErrorCode.transactional_id_not_found:
            described[transactional_id] = None
            continue
        _check(state.error_code, f"Failed to describe `{transactional_id}`")
        described[transactional_id] = {
            (t.topic, int(p)) for t in state.topics for p in t.partitions
        }
    hanging = []
    for candidate in candidates:
        owner = ids.get(int(candidate.producer.producer_id))
        partitions = None if owner is None else described.get(owner)
        if partitions is None or (candidate.topic, candidate.partition) not in partitions:
            hanging.append(candidate)
    return hanging


def _now_ms() -> int:
    return int(time.time() * 1000)


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="kafka-transactions",
        description="Analyze the transactional state of producers in the cluster; detect and "
        "recover from hanging transactions.",
    )
    parser.add_argument("--bootstrap-server", required=True, metavar="host:port")
    parser.add_argument("--command-config", metavar="FILE")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    listing = commands.add_parser("list", help="list transactions")
    listing.add_argument("--duration-filter", type=int)
    describe = commands.add_parser("describe", help="describe an active transactional-id")
    describe.add_argument("--transactional-id", required=True)
    producers = commands.add_parser("describe-producers", help="active producers of a partition")
    producers.add_argument("--broker-id", type=int)
    producers.add_argument("--topic", required=True)
    producers.add_argument("--partition", type=int, required=True)
    abort = commands.add_parser("abort", help="abort a hanging transaction")
    abort.add_argument("--topic", required=True)
    abort.add_argument("--partition", type=int, required=True)
    abort.add_argument("--start-offset", type=int)
    abort.add_argument("--producer-id", type=int)
    abort.add_argument("--producer-epoch", type=int)
    abort.add_argument("--coordinator-epoch", type=int)
    hanging = commands.add_parser("find-hanging", help="find hanging transactions")
    hanging.add_argument("--broker-id", type=int)
    hanging.add_argument(
        "--max-transaction-timeout", type=int, default=MAX_TRANSACTION_TIMEOUT_MIN_DEFAULT
    )
    hanging.add_argument("--topic")
    hanging.add_argument("--partition", type=int)
    return parser


async def _run(options: argparse.Namespace) -> str | None:
    load_properties(options.command_config)  # no security settings apply yet; must parse
    cluster = ClusterRequests(options.bootstrap_server, CLIENT_ID)
    try:
        await cluster.load_metadata()
        if options.command == "list":
            return await list_transactions(cluster, options.duration_filter)
        if options.command == "describe":
            return await describe_transaction(cluster, options.transactional_id)
        if options.command == "describe-producers":
            return await describe_producers(
                cluster, options.topic, options.partition, options.broker_id
            )
        if options.command == "abort":
            await abort_transaction(cluster, options)
            return None
        return await find_hanging(cluster, options)
    finally:
        await cluster.close()


def _body(argv: list[str]) -> int:
    output = asyncio.run(_run(_parser().parse_args(argv)))
    if output is not None:
        print(output)
    return 0


def main() -> int:
    return run_tool(_body)
