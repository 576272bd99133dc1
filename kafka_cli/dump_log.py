"""kafka-dump-log: print segment files the way Kafka's DumpLogSegments does.

    kafka-dump-log --files 00000000000000000000.log[,....index,....timeindex,....txnindex,
                   ....snapshot]
                   [--print-data-log] [--deep-iteration] [--index-sanity-check]
                   [--verify-index-only] [--skip-record-metadata] [--max-message-size N]
                   [--transaction-log-decoder]

`.log`: one line per batch, and with --deep-iteration (implied by --print-data-log) one
`| offset: ...` line per record (--transaction-log-decoder: `__transaction_state` records
decoded). `.index`: `offset: N position: P`, `.timeindex`: `timestamp: T offset: N`; both are
checked against the segment's `.log` next to them, and mismatches are reported on standard
error after all files (as Kafka does). `.txnindex`: one line per aborted transaction;
`.snapshot` (producer state): one line per producer. Other suffixes are ignored with a note on
standard error. Pure file reading: no broker is contacted.
"""

from __future__ import annotations

import argparse
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from broker.log.batch import BatchHeader
from broker.log.producer_snapshot import NO_OFFSET, SNAPSHOT_SUFFIX, SnapshotError, read_snapshot
from broker.log.producer_state import MAX_SEQUENCE
from broker.log.txn_index import ENTRY_VERSION, TXN_INDEX_SUFFIX, TransactionIndex
from kafka_cli._segment_dump import (
    LogDumpReport,
    dump_log,
    plain_text,
    read_batches,
    transaction_log_text,
)
from kafka_cli.common import ToolArgumentParser, ToolError, run_tool

OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, position
TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset
MAX_MESSAGE_SIZE_DEFAULT = 5 * 1024 * 1024
NO_TIMESTAMP = -1


@dataclass
class IndexReport:
    offset_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="kafka-dump-log",
        description="Parse a log segment's files and dump their contents to the console.",
    )
    parser.add_argument("--files", help="REQUIRED: comma-separated .log/.index/.timeindex files.")
    parser.add_argument("--print-data-log", action="store_true", help="Print record contents.")
    parser.add_argument("--deep-iteration", action="store_true", help="Print every record.")
    parser.add_argument("--verify-index-only", action="store_true", help="Only check indexes.")
    parser.add_argument("--index-sanity-check", action="store_true", help="Only sanity-check.")
    parser.add_argument("--skip-record-metadata", action="store_true")
    parser.add_argument(
        "--transaction-log-decoder",
        action="store_true",
        help="Decode records as __transaction_state entries (implies --print-data-log).",
    )
    parser.add_argument("--max-message-size", type=int, default=MAX_MESSAGE_SIZE_DEFAULT)
    return parser


def _entries(path: Path, entry: struct.Struct) -> list[tuple[int, int]]:
    data = path.read_bytes()
    whole = len(data) - len(data) % entry.size
    return [(first, second) for first, second in entry.iter_unpack(data[:whole])]


def _base_offset(path: Path) -> int:
    stem = path.name.split(".")[0]
    if not stem.isdigit():
        raise ToolError(f"{path.name} is not named by a segment's base offset")
    return int(stem)


def _sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name.split(".")[0] + suffix)


def _headers(log: Path) -> list[tuple[int, BatchHeader]]:
    """(position, header) of every batch of the segment's log; none if it is missing."""
    if not log.exists():
        return []
    return [(position, header) for position, header, _ in read_batches(log, with_data=False)]


def _offset_sanity(path: Path, entries: list[tuple[int, int]], log_size: int) -> None:
    """Kafka's OffsetIndex.sanityCheck, plus ours (what the broker checks at start-up)."""
    if path.stat().st_size % OFFSET_ENTRY.size:
        raise ToolError(f"Index file {path} is corrupt: its size is not a multiple of 8")
    offsets = [relative for relative, _ in entries]
    positions = [position for _, position in entries]
    if any(b <= a for a, b in pairwise(offsets)) or min(offsets) < 0:
        raise ToolError(f"Index file {path} is corrupt: offsets are not increasing")
    if any(b <= a for a, b in pairwise(positions)):
        raise ToolError(f"Index file {path} is corrupt: positions are not increasing")
    if positions[-1] >= log_size:
        raise ToolError(f"Index file {path} is corrupt: a position is past the log's end")


def dump_index(path: Path, options: argparse.Namespace, report: IndexReport) -> Iterator[str]:
    base_offset = _base_offset(path)
    log = _sibling(path, ".log")
    entries = _entries(path, OFFSET_ENTRY)
    if not entries:
        yield f"{path} is empty."
        return
    if options.index_sanity_check:
        _offset_sanity(path, entries, log.stat().st_size if log.exists() else 0)
        yield f"{path} passed sanity check."
        return
    last_offset_at = {position: header.last_offset for position, header in _headers(log)}
    for slot, (relative, position) in enumerate(entries):
        offset = base_offset + relative
        if offset == base_offset and slot > 0:  # a preallocated (zero) tail: stop
            return
        found = last_offset_at.get(position, -1)
        if found != offset:
            report.offset_mismatches.setdefault(str(path.resolve()), []).append((offset, found))
        if not options.verify_index_only:
            yield f"offset: {offset} position: {position}"


def _time_sanity(path: Path, entries: list[tuple[int, int]]) -> None:
    if path.stat().st_size % TIME_ENTRY.size:
        raise ToolError(f"Time index file {path} is corrupt: its size is not a multiple of 12")
    timestamps = [timestamp for timestamp, _ in entries]
    if any(b <= a for a, b in pairwise(timestamps)):
        raise ToolError(f"Time index file {path} is corrupt: timestamps are not increasing")


def dump_time_index(path: Path, options: argparse.Namespace, report: IndexReport) -> Iterator[str]:
    base_offset = _base_offset(path)
    entries = _entries(path, TIME_ENTRY)
    if options.index_sanity_check:
        if entries:
            _time_sanity(path, entries)
        yield f"{path} passed sanity check."
        return
    headers = [header for _, header in _headers(_sibling(path, ".log"))]
    previous = NO_TIMESTAMP
    key = str(path.resolve())
    for slot, (timestamp, relative) in enumerate(entries):
        offset = base_offset + relative
        if offset == base_offset and slot > 0:
            return
        batch = next((header for header in headers if header.last_offset >= offset), None)
        if batch is None or batch.last_offset != offset:
            found = -1 if batch is None else batch.last_offset
            report.not_found.setdefault(key, []).append((offset, found))
        else:
            if batch.max_timestamp != timestamp:
                mismatch = (timestamp, batch.max_timestamp)
                report.time_mismatches.setdefault(key, []).append(mismatch)
            if previous >= timestamp:
                report.out_of_order.setdefault(key, []).append((timestamp, previous))
        if not options.verify_index_only:
            yield f"timestamp: {timestamp} offset: {offset}"
        previous = timestamp


def _print_reports(index: IndexReport, log: LogDumpReport) -> None:
    err = sys.stderr
    for name, pairs in index.offset_mismatches.items():
        print(f"Mismatches in :{name}", file=err)
        for index_offset, log_offset in pairs:
            print(f"  Index offset: {index_offset}, log offset: {log_offset}", file=err)
    for name, pairs in index.time_mismatches.items():
        print(f"Found timestamp mismatch in :{name}", file=err)
        for index_ts, log_ts in pairs:
            print(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}", file=err)
    for name, pairs in index.out_of_order.items():
        print(f"Found out of order timestamp in :{name}", file=err)
        for index_ts, previous in pairs:
            print(
                f"  Index timestamp: {index_ts}, Previously indexed timestamp: {previous}",
                file=err,
            )
    for pairs in index.not_found.values():
        print("The following indexed offsets are not found in the log.", file=err)
        for index_offset, log_offset in pairs:
            print(f"Indexed offset: {index_offset}, found log offset: {log_offset}", file=err)
    for name, pairs in log.non_consecutive.items():
        print(f"Non-consecutive offsets in {name}", file=err)
        for first, second in pairs:
            print(f"  {first} is followed by {second}", file=err)


def dump_txn_index(path: Path) -> Iterator[str]:
    for txn in TransactionIndex(path).entries():
        yield (
            f"version: {ENTRY_VERSION} producerId: {txn.producer_id} firstOffset: "
            f"{txn.first_offset} lastOffset: {txn.last_offset} "
            f"lastStableOffset: {txn.last_stable_offset}"
        )


def dump_producer_snapshot(path: Path) -> Iterator[str]:
    try:
        entries = read_snapshot(path)
    except SnapshotError as error:
        raise ToolError(f"{path}: not a producer snapshot: {error}") from error
    for entry in entries:
        open_txn = (
            "OptionalLong.empty"
            if entry.current_txn_first_offset == NO_OFFSET
            else f"OptionalLong[{entry.current_txn_first_offset}]"
        )
        line = (
            f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
            f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: {open_txn} "
            f"lastTimestamp: {entry.timestamp} "
        )
        if entry.last_offset != NO_OFFSET:
            first_sequence = (entry.last_sequence - entry.offset_delta) % (MAX_SEQUENCE + 1)
            line += (
                f"firstSequence: {first_sequence} lastSequence: {entry.last_sequence} "
                f"lastOffset: {entry.last_offset} offsetDelta: {entry.offset_delta} "
                f"timestamp: {entry.timestamp}"
            )
        yield line


def _dump_file(
    path: Path, options: argparse.Namespace, index: IndexReport, log: LogDumpReport
) -> Iterator[str]:
    suffix = path.suffix
    if suffix == ".log":
        print_data = options.print_data_log or options.transaction_log_decoder
        deep = options.deep_iteration or print_data
        decode = transaction_log_text if options.transaction_log_decoder else plain_text
        return dump_log(path, print_data, deep, options.skip_record_metadata, log, decode)
    if suffix == ".index":
        return dump_index(path, options, index)
    if suffix == ".timeindex":
        return dump_time_index(path, options, index)
    if suffix == TXN_INDEX_SUFFIX:
        return dump_txn_index(path)
    if suffix == SNAPSHOT_SUFFIX:
        return dump_producer_snapshot(path)
    print(f"Ignoring unknown file {path}", file=sys.stderr)
    return iter(())


def _body(args: list[str]) -> int:
    options = _parser().parse_args(args)
    if not options.files:
        raise ToolError('Missing required argument "[files]"')
    index_report, log_report = IndexReport(), LogDumpReport()
    for name in options.files.split(","):
        path = Path(name.strip())
        print(f"Dumping {path}")
        if not path.is_file():
            raise ToolError(f"{path}: no such file")
        try:
            for line in _dump_file(path, options, index_report, log_report):
                print(line)
        except OSError as error:
            raise ToolError(f"{path}: {error.strerror or error}") from error
    sys.stdout.flush()
    _print_reports(index_report, log_report)
    return 0


def main() -> int:
    return run_tool(_body)
