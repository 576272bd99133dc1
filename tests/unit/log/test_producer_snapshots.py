"""Producer-state snapshots: Kafka's file format, written at each segment roll and when a log
closes, used by loading (at or below the recovery point only) and by the rebuild after a
truncation, deleted above a truncation; a corrupt one is ignored."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from broker.log.config import LogConfig
from broker.log.control_records import ControlType, EndTxnMarker
from broker.log.log import Log
from broker.log.producer_snapshot import (
    SnapshotEntry,
    SnapshotError,
    decode_snapshot,
    encode_snapshot,
    read_snapshot,
    snapshot_offsets,
    snapshot_path,
    write_snapshot,
)
from broker.log.record_codec import SimpleRecord, build_batch
from broker.log.transaction_state import AbortedTxn

ABORT = EndTxnMarker(ControlType.ABORT, coordinator_epoch=4)
SMALL_SEGMENTS = LogConfig(segment_bytes=600)
ENTRY = SnapshotEntry(
    producer_id=99,
    producer_epoch=2,
    last_sequence=9,
    last_offset=41,
    offset_delta=1,
    timestamp=1_001,
    coordinator_epoch=3,
    current_txn_first_offset=40,
)


def _batch(producer_id: int, sequence: int, transactional: bool = False) -> bytearray:
    records = [SimpleRecord(None, f"v{sequence + i}".encode() * 20, (), 1000 + i) for i in (0, 1)]
    return bytearray(
        build_batch(
            records,
            producer_id=producer_id,
            producer_epoch=0,
            base_sequence=sequence,
            is_transactional=transactional,
        )
    )


def _open(directory: Path, **kwargs: object) -> Log:
    return Log.open(directory, SMALL_SEGMENTS, **kwargs)  # type: ignore[arg-type]


def _fill(log: Log, producer_id: int, batches: int, first_sequence: int = 0) -> None:
    for n in range(batches):
        log.append_as_leader(_batch(producer_id, first_sequence + 2 * n), 0, 1)


def _state(log: Log) -> list[SnapshotEntry]:
    return sorted(log.producer_state.snapshot_entries(), key=lambda e: e.producer_id)


def test_the_file_is_kafkas_version_1_with_a_crc32c_of_the_entries() -> None:
    data = encode_snapshot([ENTRY])
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count, len(data)) == (1, 1, 2 + 4 + 4 + 46)
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (99, 2, 9, 41, 1, 1_001, 3, 40)
    assert decode_snapshot(data) == [ENTRY]
    assert crc != 0


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d[:-1], "CRC"),
        (lambda d: d[:6], "too short"),
        (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "CRC"),
        (lambda d: b"\x00\x02" + d[2:], "version 2"),
    ],
)
def test_a_damaged_file_is_refused(damage: object, message: str) -> None:
    with pytest.raises(SnapshotError, match=message):
        decode_snapshot(damage(encode_snapshot([ENTRY])))  # type: ignore[operator]


def test_a_count_that_does_not_fill_the_file_is_refused() -> None:
    body = struct.pack(">i", 2) + encode_snapshot([ENTRY])[10:]
    with pytest.raises(SnapshotError, match="do not fill"):
        decode_snapshot(struct.pack(">hI", 1, crc32c(body)) + body)


def test_each_roll_writes_the_state_of_the_batches_below_the_new_segment(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0")
    _fill(log, 7, 12)
    bases = [segment.base_offset for segment in log.segments]
    assert len(bases) > 2
    assert snapshot_offsets(log.directory) == bases[1:]
    second = read_snapshot(snapshot_path(log.directory, bases[1]))
    assert [(e.producer_id, e.last_offset, e.last_sequence) for e in second] == [
        (7, bases[1] - 1, bases[1] - 1)
    ]


def test_a_clean_start_takes_the_state_from_the_snapshot_at_the_log_end(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0")
    _fill(log, 7, 3)
    log.append_as_leader(_batch(8, 0, transactional=True), 0, 1)
    expected, end = _state(log), log.log_end_offset
    log.close()
    assert snapshot_offsets(log.directory)[-1] == end
    # Proof that the start-up reads the file: a producer only the snapshot knows.
    write_snapshot(snapshot_path(log.directory, end), [*expected, ENTRY])
    reopened = _open(tmp_path / "t-0", had_clean_shutdown=True)
    assert _state(reopened) == sorted([*expected, ENTRY], key=lambda e: e.producer_id)
    assert reopened.producer_state.transactions.ongoing == {8: 6, 99: 40}


def test_the_state_after_a_snapshot_is_replayed_from_the_log(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0")
    _fill(log, 7, 12)
    expected = _state(log)
    log.close()
    # Unclean: only snapshots at or below the recovery point count, the rest is replayed.
    middle = snapshot_offsets(log.directory)[1]
    reopened = _open(tmp_path / "t-0", recovery_point=middle)
    assert _state(reopened) == expected
    assert reopened.append_as_leader(_batch(7, 24), 0, 1).first_offset == log.log_end_offset


def test_a_snapshot_above_the_recovery_point_is_not_trusted(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0")
    _fill(log, 7, 12)
    expected, end = _state(log), log.log_end_offset
    log.close()
    write_snapshot(snapshot_path(log.directory, end), [ENTRY])  # not what the log holds
    reopened = _open(tmp_path / "t-0", recovery_point=0)
    assert _state(reopened) == expected


def test_a_corrupt_snapshot_is_ignored_and_deleted(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0")
    _fill(log, 7, 3)
    expected, end = _state(log), log.log_end_offset
    log.close()
    path = snapshot_path(log.directory, end)
    path.write_bytes(path.read_bytes()[:-3])
    reopened = _open(tmp_path / "t-0", had_clean_shutdown=True)
    assert _state(reopened) == expected
    assert not path.exists()


def test_aborts_below_the_snapshot_come_from_the_transaction_indexes(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0")
    log.append_as_leader(_batch(9, 0, transactional=True), 0, 1)  # 0-1
    log.append_marker_as_leader(9, 0, ABORT, leader_epoch=1, now_ms=5)  # 2
    _fill(log, 7, 12)
    aborted = log.aborted_transactions(0, log.log_end_offset)
    assert aborted == [AbortedTxn(9, 0, 2, 3)]
    log.close()
    reopened = _open(tmp_path / "t-0", had_clean_shutdown=True)
    assert reopened.aborted_transactions(0, reopened.log_end_offset) == aborted


def test_a_truncation_deletes_the_snapshots_above_it(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0")
    _fill(log, 7, 12)
    bases = [segment.base_offset for segment in log.segments]
    log.truncate_to(bases[1] + 1)
    assert snapshot_offsets(log.directory) == [bases[1]]
    log.truncate_fully_and_start_at(100)
    assert snapshot_offsets(log.directory) == []


def test_the_rebuild_after_a_truncation_starts_from_the_latest_snapshot_below_it(
    tmp_path: Path,
) -> None:
    log = _open(tmp_path / "t-0")
    _fill(log, 7, 12)
    second = snapshot_offsets(log.directory)[1]
    # A producer only the snapshot knows: the rebuild must have read it.
    write_snapshot(
        snapshot_path(log.directory, second),
        [*read_snapshot(snapshot_path(log.directory, second)), ENTRY],
    )

    async def truncate() -> None:
        log.truncate_to(second + 2)
        assert log._producers.rebuild_task is not None
        await log._producers.rebuild_task

    asyncio.run(truncate())
    state = {entry.producer_id: entry for entry in _state(log)}
    assert state[7].last_offset == second + 1
    assert state[ENTRY.producer_id] == ENTRY


def test_a_log_closed_before_its_rebuild_ends_writes_no_partial_end_snapshot(
    tmp_path: Path,
) -> None:
    log = _open(tmp_path / "t-0")
    _fill(log, 7, 3)  # offsets 0-5, two records a batch

    async def truncate_then_close() -> None:
        log.truncate_to(4)  # the last batch goes; the rebuild has not run yet
        assert log._producers.rebuild_task is not None
        log.close()

    asyncio.run(truncate_then_close())
    assert 4 not in snapshot_offsets(log.directory)
    # The next start-up replays the batches instead: producer 7's last batch is 2-3.
    reopened = _open(tmp_path / "t-0", had_clean_shutdown=True)
    assert [(e.producer_id, e.last_offset, e.last_sequence) for e in _state(reopened)] == [
        (7, 3, 3)
    ]


def test_an_empty_log_closes_without_a_snapshot_as_kafkas(tmp_path: Path) -> None:
    """Kafka snapshots only an end offset past its last snapshot's, so an empty log (a topic
    never written, a follower that never fetched) closes with no `.snapshot`; ours matches."""
    directory = tmp_path / "topic-0"
    _open(directory).close()
    assert sorted(p.name for p in directory.iterdir() if p.suffix == ".snapshot") == []
    reopened = _open(directory)
    assert reopened.log_end_offset == 0
    reopened.close()
