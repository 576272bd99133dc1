from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from broker.log.log import Log

from .support import SMALL_CONFIG, all_values, make_batch, open_log


def _fill(log: Log, batches: int, value_bytes: int = 100) -> None:
    for _ in range(batches):
        log.append_as_leader(make_batch(2, value_bytes=value_bytes), 0, 0)


def _crash(log: Log) -> None:
    """Drop file handles without the clean-close work (as after kill -9)."""
    for segment in log.segments:
        segment.close_handles()


def test_torn_tail_is_truncated_on_open(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    _fill(log, 10)
    active = log.active_segment.log_path
    full_size = active.stat().st_size
    _crash(log)
    with open(active, "r+b") as file:
        file.truncate(full_size - 7)  # half-written last batch
    reopened = open_log(tmp_path)
    assert reopened.log_end_offset == 18
    assert [offset for offset, _ in all_values(reopened)] == list(range(18))
    assert reopened.append_as_leader(make_batch(1), 0, 0).first_offset == 18
    reopened.close()


def test_corrupt_batch_truncates_and_deletes_later_segments(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    _fill(log, 60)
    segments = log.segments
    assert len(segments) >= 3
    victim = segments[1]
    _crash(log)
    with open(victim.log_path, "r+b") as file:
        file.seek(victim.size_bytes - 5)
        file.write(b"XXXXX")  # corrupts the segment's last batch
    reopened = open_log(tmp_path)  # recovery point 0: everything is re-validated
    assert len(reopened.segments) == 2
    assert reopened.log_end_offset == victim.next_offset - 2
    assert not segments[2].log_path.exists()
    assert [offset for offset, _ in all_values(reopened)] == list(range(reopened.log_end_offset))
    reopened.close()


def test_segments_below_recovery_point_are_not_revalidated(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    _fill(log, 60)
    first = log.segments[0]
    log.flush()
    recovery_point = log.recovery_point
    _crash(log)
    with open(first.log_path, "r+b") as file:
        file.seek(first.size_bytes - 5)
        file.write(b"XXXXX")  # CRC now wrong, but below the recovery point
    reopened = open_log(tmp_path, recovery_point=recovery_point)
    assert reopened.log_end_offset == 120
    reopened.close()


def test_corrupt_index_is_rebuilt(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    _fill(log, 60)
    expected = all_values(log)
    first = log.segments[0]
    entries = first.offset_index.entries
    assert entries > 1
    log.flush()
    log.close()
    index_path = first.offset_index.path
    index_path.write_bytes(index_path.read_bytes()[::-1])  # scrambled entries
    reopened = open_log(tmp_path, recovery_point=120, had_clean_shutdown=True)
    assert reopened.segments[0].offset_index.entries == entries
    assert all_values(reopened) == expected
    reopened.close()


def test_missing_and_partial_indexes_are_rebuilt(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    _fill(log, 60)
    expected = all_values(log)
    first, second = log.segments[0], log.segments[1]
    log.close()
    first.offset_index.path.unlink()
    first.time_index.path.unlink()
    with open(second.time_index.path, "ab") as file:
        file.write(b"\x01\x02\x03")
    reopened = open_log(tmp_path, recovery_point=120, had_clean_shutdown=True)
    assert first.offset_index.path.exists() and first.time_index.path.exists()
    assert reopened.segments[0].offset_index.entries > 0
    assert os.path.getsize(second.time_index.path) % 12 == 0
    assert all_values(reopened) == expected
    assert reopened.offset_for_timestamp(1000) == (0, 1000)
    reopened.close()


def test_clean_shutdown_reopen_keeps_everything(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    _fill(log, 60)
    expected = all_values(log)
    last_timestamp = log.offset_for_timestamp(1001)
    log.flush()
    log.close()
    reopened = open_log(tmp_path, recovery_point=0, had_clean_shutdown=True)
    assert reopened.recovery_point == reopened.log_end_offset == 120
    assert all_values(reopened) == expected
    assert reopened.offset_for_timestamp(1001) == last_timestamp
    reopened.close()


def test_leftover_files_are_removed(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    _fill(log, 2)
    log.close()
    directory = log.directory
    (directory / "00000000000000000000.log.deleted").write_bytes(b"x")
    (directory / "00000000000000000999.index").write_bytes(b"")
    (directory / "leader-epoch-checkpoint.tmp").write_bytes(b"")
    reopened = open_log(tmp_path)
    names = {p.name for p in directory.iterdir()}
    assert "00000000000000000999.index" not in names
    assert not any(name.endswith((".deleted", ".tmp")) for name in names)
    reopened.close()


def test_log_start_offset_beyond_data_restarts_log_there(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    _fill(log, 2)
    log.close()
    reopened = open_log(tmp_path, log_start_offset=50)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (50, 50)
    reopened.close()


def test_appends_are_visible_to_other_readers_without_flush(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    batch = bytes(make_batch(1))
    log.append_as_leader(bytearray(batch), 0, 0)
    on_disk = log.active_segment.log_path.read_bytes()  # a separate open(): the kernel's view
    assert len(on_disk) == len(batch) and on_disk[16:] == batch[16:]
    log.close()


KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from broker.log.log import Log, LogConfig
from broker.log.records import SimpleRecord, build_batch
log = Log.open(Path(sys.argv[1]), LogConfig(segment_bytes=2048))
for i in range(50):
    batch = build_batch([SimpleRecord(b"k", str(i).encode() * 20, (), i)])
    log.append_as_leader(bytearray(batch), 0, 0)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_appends_survive_sigkill_without_flush(tmp_path: Path) -> None:
    directory = tmp_path / "topic-0"
    result = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(directory)], timeout=30, check=False
    )
    assert result.returncode == -signal.SIGKILL
    reopened = Log.open(directory, SMALL_CONFIG)
    values = all_values(reopened)
    assert [offset for offset, _ in values] == list(range(50))
    assert values[49][1] == b"49" * 20
    reopened.close()


def test_config_with_overrides_reads_topic_configs() -> None:
    config = SMALL_CONFIG.with_overrides({"segment.bytes": "1000", "cleanup.policy": "delete"})
    assert config.segment_bytes == 1000
    assert config.index_interval_bytes == SMALL_CONFIG.index_interval_bytes
