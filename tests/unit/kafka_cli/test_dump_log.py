"""kafka-dump-log on segments written by the project's own Log code (no broker needed)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from broker.log.config import LogConfig
from broker.log.log import Log
from broker.log.producer_snapshot import SnapshotEntry, write_snapshot
from broker.log.records import GZIP, SimpleRecord, build_batch
from kafka_cli import dump_log
from kafka_cli.common import run_tool

# Small index interval so that a handful of batches produce index entries.
CONFIG = LogConfig(segment_bytes=1024 * 1024, index_interval_bytes=64, segment_index_bytes=4096)
BASE_TIMESTAMP_MS = 1_700_000_000_000
SEGMENT = "00000000000000000000"


def _write_log(directory: Path) -> Path:
    log = Log.open(directory, CONFIG, now_ms=BASE_TIMESTAMP_MS)
    for batch_number in range(6):
        records = [
            SimpleRecord(
                key=f"k{batch_number}-{index}".encode(),
                value=f"v{batch_number}-{index}".encode(),
                headers=(("h1", b"x"),) if index == 0 else (),
                timestamp_ms=BASE_TIMESTAMP_MS + batch_number * 10 + index,
            )
            for index in range(2)
        ]
        compression = GZIP if batch_number == 3 else 0
        log.append_as_leader(
            build_batch(records, compression_type=compression), 0, BASE_TIMESTAMP_MS
        )
    log.append_as_leader(build_batch([SimpleRecord(None, b"no-key")]), 1, BASE_TIMESTAMP_MS)
    log.flush()
    log.close()
    return directory


@pytest.fixture
def segment_dir(tmp_path: Path) -> Path:
    return _write_log(tmp_path / "topic-0")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    status = dump_log._body(list(args))
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def test_log_batches_are_listed_with_kafka_fields(
    segment_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, lines, _ = _run(capsys, "--files", str(segment_dir / f"{SEGMENT}.log"))
    assert status == 0
    assert lines[0] == f"Dumping {segment_dir / f'{SEGMENT}.log'}"
    assert lines[1] == "Log starting offset: 0"
    batches = [line for line in lines if line.startswith("baseOffset:")]
    assert len(batches) == 7
    assert batches[0].startswith(
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty "
        f"position: 0 CreateTime: {BASE_TIMESTAMP_MS + 1} size: "
    )
    assert batches[0].endswith("magic: 2 compresscodec: none crc: " + batches[0].split("crc: ")[1])
    assert "isvalid: true" in batches[0]
    assert "compresscodec: gzip" in batches[3]
    assert "partitionLeaderEpoch: 1" in batches[6]
    assert not any(line.startswith("|") for line in lines), "records need --deep-iteration"


def test_print_data_log_decodes_records_including_compressed_ones(
    segment_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, lines, _ = _run(
        capsys, "--files", str(segment_dir / f"{SEGMENT}.log"), "--print-data-log"
    )
    records = [line for line in lines if line.startswith("| ")]
    assert status == 0
    assert len(records) == 13
    assert records[0] == (
        f"| offset: 0 CreateTime: {BASE_TIMESTAMP_MS} keySize: 4 valueSize: 4 sequence: -1 "
        "headerKeys: [h1] key: k0-0 payload: v0-0"
    )
    assert records[7].endswith("headerKeys: [] key: k3-1 payload: v3-1")  # from the gzip batch
    assert records[12].endswith(
        "keySize: -1 valueSize: 6 sequence: -1 headerKeys: [] payload: no-key"
    )


def test_offset_and_time_indexes_match_the_log(
    segment_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = segment_dir / f"{SEGMENT}.index"
    time_index = segment_dir / f"{SEGMENT}.timeindex"
    status, lines, err = _run(capsys, "--files", f"{index},{time_index}")
    assert status == 0
    assert err == ""
    offset_lines = [line for line in lines if line.startswith("offset:")]
    time_lines = [line for line in lines if line.startswith("timestamp:")]
    assert offset_lines and time_lines
    entries = struct.iter_unpack(">ii", index.read_bytes())
    assert offset_lines == [
        f"offset: {offset} position: {position}" for offset, position in entries
    ]
    timestamps = [int(line.split()[1]) for line in time_lines]
    assert timestamps == sorted(timestamps)


def test_index_sanity_check_and_verify_only(
    segment_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = segment_dir / f"{SEGMENT}.index"
    status, lines, _ = _run(capsys, "--files", str(index), "--index-sanity-check")
    assert (status, lines[-1]) == (0, f"{index} passed sanity check.")
    status, lines, err = _run(capsys, "--files", str(index), "--verify-index-only")
    assert (status, lines, err) == (0, [f"Dumping {index}"], "")


def test_index_entry_pointing_inside_a_batch_is_reported_as_a_mismatch(
    segment_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = segment_dir / f"{SEGMENT}.index"
    offset, position = struct.unpack(">ii", index.read_bytes()[:8])
    index.write_bytes(struct.pack(">ii", offset, position + 1))
    status, _, err = _run(capsys, "--files", str(index), "--verify-index-only")
    assert status == 0
    assert f"Mismatches in :{index.resolve()}" in err
    assert f"  Index offset: {offset}, log offset: -1" in err


def test_corrupt_index_fails_the_sanity_check_with_one_line(
    segment_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = segment_dir / f"{SEGMENT}.index"
    index.write_bytes(index.read_bytes() + b"\x00\x00\x00")
    status = run_tool(dump_log._body, ["--files", str(index), "--index-sanity-check"])
    err = capsys.readouterr().err
    assert status == 1
    assert err.count("\n") == 1 and "is corrupt" in err


def test_torn_tail_is_reported_as_invalid_bytes(
    segment_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_file = segment_dir / f"{SEGMENT}.log"
    with log_file.open("ab") as handle:
        handle.write(b"\x00" * 30)
    _, lines, _ = _run(capsys, "--files", str(log_file))
    assert lines[-1] == f"Found 30 invalid bytes at the end of {log_file.name}"


def test_missing_file_and_unknown_suffix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = run_tool(dump_log._body, ["--files", str(tmp_path / "nope.log")])
    assert status == 1
    assert capsys.readouterr().err == f"Error: {tmp_path / 'nope.log'}: no such file\n"
    other = tmp_path / "partition.metadata"
    other.write_bytes(b"")
    status, _, err = _run(capsys, "--files", str(other))
    assert (status, err) == (0, f"Ignoring unknown file {other}\n")


def test_a_producer_snapshot_prints_one_line_per_producer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "00000000000000000042.snapshot"
    with_batch = SnapshotEntry(7, 2, 9, 41, 1, 1001, 3, 40)
    markers_only = SnapshotEntry(8, 0, -1, -1, 0, -1, -1, -1)
    write_snapshot(path, [with_batch, markers_only])
    status, out, _ = _run(capsys, "--files", str(path))
    assert status == 0
    assert out == [
        f"Dumping {path}",
        "producerId: 7 producerEpoch: 2 coordinatorEpoch: 3 currentTxnFirstOffset: "
        "OptionalLong[40] lastTimestamp: 1001 firstSequence: 8 lastSequence: 9 lastOffset: 41 "
        "offsetDelta: 1 timestamp: 1001",
        "producerId: 8 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        "OptionalLong.empty lastTimestamp: -1 ",
    ]


def test_a_damaged_producer_snapshot_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "00000000000000000042.snapshot"
    path.write_bytes(b"\x00\x01")
    status = run_tool(dump_log._body, ["--files", str(path)])
    assert status == 1
    assert "not a producer snapshot: 2 bytes is too short" in capsys.readouterr().err
