"""The log cleaner on real logs: what survives, offsets, checkpoints, limits, reads over gaps."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path

import pytest

from broker.log import compaction
from broker.log.batch import validate_batches
from broker.log.checkpoints import CLEANER_OFFSET_CHECKPOINT, read_offset_checkpoint
from broker.log.cleaner import delete_retained_segments
from broker.log.compaction import CleanerConfig, CleanerStats, LogCleaner
from broker.log.compaction_map import ENTRY_OVERHEAD_BYTES
from broker.log.config import LogConfig
from broker.log.log import Log
from broker.log.record_codec import SimpleRecord, build_batch, decode_records

COMPACT = LogConfig(
    segment_bytes=1024,
    index_interval_bytes=128,
    segment_index_bytes=4096,
    cleanup_policy="compact",
    min_cleanable_dirty_ratio=0.01,
    file_delete_delay_ms=0,
)
NOW_MS = 10**13  # far after every record timestamp used here
Entry = tuple[int, bytes | None, bytes | None]  # offset, key, value


def _open(tmp_path: Path, config: LogConfig = COMPACT) -> Log:
    return Log.open(tmp_path / "topic-0", config)


def _append(
    log: Log, key: bytes | None, value: bytes | None, timestamp_ms: int = 1_000, **fields: int
) -> int:
    batch = build_batch([SimpleRecord(key, value, timestamp_ms=timestamp_ms)], **fields)  # type: ignore[arg-type]
    return log.append_as_leader(bytearray(batch), 0, 0).first_offset


def _fill(log: Log, count: int, keys: int = 10, prefix: str = "k") -> list[Entry]:
    entries: list[Entry] = []
    for _ in range(count):
        offset = log.log_end_offset
        key = f"{prefix}{offset % keys}".encode()
        value = f"value-{offset:05d}".encode() * 3
        _append(log, key, value)
        entries.append((offset, key, value))
    log.update_high_watermark(log.log_end_offset)
    return entries


def _contents(log: Log) -> list[Entry]:
    """Every record, read the way a consumer does: from an offset, batch run by batch run."""
    out: list[Entry] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        records = [r for r in decode_records(log.read(offset, 1 << 20)) if r.offset >= offset]
        if not records:
            break
        out.extend((r.offset, r.key, r.value) for r in records)
        offset = records[-1].offset + 1
    return out


def _compacted(
    entries: list[Entry], uncleanable: int, drop_tombstones: bool = False
) -> list[Entry]:
    """The model: below `uncleanable`, only each key's latest record survives."""
    latest = {key: offset for offset, key, _ in entries if offset < uncleanable}

    def survives(offset: int, key: bytes | None, value: bytes | None) -> bool:
        if offset >= uncleanable:
            return True
        return latest[key] == offset and not (value is None and drop_tombstones)

    return [entry for entry in entries if survives(*entry)]


def _clean(cleaner: LogCleaner, log: Log, now_ms: int = NOW_MS) -> CleanerStats:
    return asyncio.run(cleaner.clean_once([log], now_ms))


def _assert_valid_batches(log: Log) -> None:
    for segment in log.segments:
        validate_batches(segment.read_bytes(0, segment.size_bytes), 1 << 20, from_client=False)


def test_cleaning_keeps_the_latest_value_per_key_at_its_original_offset(tmp_path: Path) -> None:
    log = _open(tmp_path)
    entries = _fill(log, 300)
    uncleanable = log.active_segment.base_offset
    stats = _clean(LogCleaner(CleanerConfig()), log)
    assert stats.logs_cleaned == 1 and stats.segments_replaced > 0
    assert _contents(log) == _compacted(entries, uncleanable)
    _assert_valid_batches(log)
    checkpoint = read_offset_checkpoint(tmp_path / CLEANER_OFFSET_CHECKPOINT)
    assert checkpoint == {("topic", 0): uncleanable}
    log.close()
    reopened = _open(tmp_path)
    assert _contents(reopened) == _compacted(entries, uncleanable)
    assert not [p for p in (tmp_path / "topic-0").iterdir() if p.suffix in (".cleaned", ".swap")]
    reopened.close()


def test_a_second_pass_merges_small_cleaned_segments(tmp_path: Path) -> None:
    log = _open(tmp_path)
    entries = _fill(log, 300)
    cleaner = LogCleaner(CleanerConfig())
    _clean(cleaner, log)
    segments_after_first_pass = len(log.segments)
    entries += _fill(log, 100)
    _clean(cleaner, log)
    assert len(log.segments) < segments_after_first_pass
    assert _contents(log) == _compacted(entries, log.active_segment.base_offset)
    log.close()


def test_nothing_reaching_past_the_high_watermark_is_cleaned(tmp_path: Path) -> None:
    log = _open(tmp_path)
    entries = _fill(log, 300)
    log.update_high_watermark(0)
    assert _clean(LogCleaner(CleanerConfig()), log).logs_cleaned == 0
    assert _contents(log) == entries
    log.update_high_watermark(150)
    _clean(LogCleaner(CleanerConfig()), log)
    uncleanable = log.segment_for(150).base_offset
    assert _contents(log) == _compacted(entries, uncleanable)
    log.close()


def test_min_cleanable_dirty_ratio_holds_back_a_mostly_clean_log(tmp_path: Path) -> None:
    log = _open(tmp_path)
    _fill(log, 300)
    cleaner = LogCleaner(CleanerConfig())
    _clean(cleaner, log)
    _fill(log, 30)
    log.update_config(dataclasses.replace(COMPACT, min_cleanable_dirty_ratio=0.9))
    assert _clean(cleaner, log).logs_cleaned == 0
    log.update_config(COMPACT)
    assert _clean(cleaner, log).logs_cleaned == 1
    log.close()


def test_min_compaction_lag_keeps_recent_records_uncleaned(tmp_path: Path) -> None:
    log = _open(tmp_path, dataclasses.replace(COMPACT, min_compaction_lag_ms=60_000))
    entries = _fill(log, 300)  # timestamps 1_000 ms
    assert _clean(LogCleaner(CleanerConfig()), log, now_ms=30_000).logs_cleaned == 0
    assert _contents(log) == entries
    assert _clean(LogCleaner(CleanerConfig()), log, now_ms=90_000).logs_cleaned == 1
    log.close()


def test_max_compaction_lag_forces_cleaning_below_the_ratio(tmp_path: Path) -> None:
    log = _open(tmp_path)
    _fill(log, 300)
    cleaner = LogCleaner(CleanerConfig())
    _clean(cleaner, log)
    _fill(log, 100)
    config = dataclasses.replace(COMPACT, min_cleanable_dirty_ratio=0.99)
    log.update_config(config)
    assert _clean(cleaner, log).logs_cleaned == 0
    log.update_config(dataclasses.replace(config, max_compaction_lag_ms=1_000))
    assert _clean(cleaner, log).logs_cleaned == 1
    log.close()


def _set_modified_ms(path: Path, modified_ms: int) -> None:
    os.utime(path, ns=(modified_ms * 1_000_000, modified_ms * 1_000_000))


def test_tombstones_are_kept_for_delete_retention_then_removed(tmp_path: Path) -> None:
    log = _open(tmp_path, dataclasses.replace(COMPACT, delete_retention_ms=60_000))
    entries = _fill(log, 100)
    for key in (b"k3", b"k7"):
        offset = _append(log, key, None)
        entries.append((offset, key, None))
    entries += _fill(log, 200, prefix="filler")
    cleaner = LogCleaner(CleanerConfig())
    _clean(cleaner, log)
    first_uncleanable = log.active_segment.base_offset
    assert _contents(log) == _compacted(entries, first_uncleanable), "tombstones kept at first"
    tombstones = [entry for entry in _contents(log) if entry[2] is None]
    assert [key for _, key, _ in tombstones] == [b"k3", b"k7"]

    # The tombstones' segment was last written long before the newest clean segment.
    clean_segments = log.segments[:-1]
    for segment in clean_segments[:-1]:
        _set_modified_ms(segment.log_path, 1_000_000)
    _set_modified_ms(clean_segments[-1].log_path, 1_000_000 + 120_000)
    assert log.segment_for(tombstones[-1][0]) is not clean_segments[-1]
    entries += _fill(log, 200, prefix="late")
    _clean(cleaner, log)
    expected = _compacted(entries, log.active_segment.base_offset, drop_tombstones=True)
    assert _contents(log) == expected
    assert all(value is not None for _, _, value in _contents(log))
    log.close()


def _config_with_map_entries(entries: int) -> CleanerConfig:
    dedupe_buffer_bytes = 1 << 20
    map_bytes = entries * (ENTRY_OVERHEAD_BYTES + 2) + 50  # room for `entries` 2-byte keys
    return CleanerConfig(
        dedupe_buffer_bytes=dedupe_buffer_bytes,
        io_buffer_load_factor=map_bytes / dedupe_buffer_bytes,
    )


def test_a_full_offset_map_cleans_only_as_far_as_it_reaches(tmp_path: Path) -> None:
    log = _open(tmp_path)
    entries = _fill(log, 150, keys=5, prefix="a")
    first_b = log.log_end_offset
    entries += _fill(log, 150, keys=5, prefix="b")
    uncleanable = log.active_segment.base_offset
    cleaner = LogCleaner(_config_with_map_entries(6))  # five a-keys and the first b-key
    _clean(cleaner, log)
    checkpoint = read_offset_checkpoint(tmp_path / CLEANER_OFFSET_CHECKPOINT)
    assert checkpoint == {("topic", 0): first_b + 1}
    assert [e for e in _contents(log) if e[0] > first_b] == [e for e in entries if e[0] > first_b]
    _clean(cleaner, log)
    assert read_offset_checkpoint(tmp_path / CLEANER_OFFSET_CHECKPOINT) == {
        ("topic", 0): uncleanable
    }
    assert _contents(log) == _compacted(entries, uncleanable)
    log.close()


def test_the_latest_batch_of_an_idempotent_producer_survives_empty(tmp_path: Path) -> None:
    log = _open(tmp_path)
    for sequence in range(5):
        _append(
            log, b"p0", b"from-producer", producer_id=42, producer_epoch=0, base_sequence=sequence
        )
    last_producer_offset = log.log_end_offset - 1
    _fill(log, 300, keys=1, prefix="p")  # supersedes every record the producer wrote
    _clean(LogCleaner(CleanerConfig()), log)
    assert all(value != b"from-producer" for _, _, value in _contents(log))
    batches = validate_batches(
        log.segments[0].read_bytes(0, log.segments[0].size_bytes), 1 << 20, from_client=False
    )
    producer_batches = [h for h in batches if h.producer_id == 42]
    assert [(h.base_offset, h.records_count, h.base_sequence) for h in producer_batches] == [
        (last_producer_offset, 0, 4)
    ]
    log.close()
    reopened = _open(tmp_path)
    entry = reopened.producer_state.entry(42)
    assert entry is not None and entry.last_sequence == 4
    retry = build_batch(
        [SimpleRecord(b"p0", b"from-producer", timestamp_ms=1_000)],
        producer_id=42,
        producer_epoch=0,
        base_sequence=4,
    )
    info = reopened.append_as_leader(bytearray(retry), 0, 0)
    assert info.first_offset == last_producer_offset, "the retry is recognised as a duplicate"
    reopened.close()


def test_reads_skip_the_gaps_compaction_leaves(tmp_path: Path) -> None:
    log = _open(tmp_path)
    entries = _fill(log, 300)
    _clean(LogCleaner(CleanerConfig()), log)
    survivors = _compacted(entries, log.active_segment.base_offset)
    assert len(survivors) < len(entries)
    for offset in range(log.log_end_offset):
        records = [r for r in decode_records(log.read(offset, 1 << 20)) if r.offset >= offset]
        expected = next(entry for entry in survivors if entry[0] >= offset)
        assert (records[0].offset, records[0].key, records[0].value) == expected
        segment = log.segment_for(offset)
        found = segment.translate_offset(offset)
        if found is not None:
            assert found[1].last_offset >= offset
    assert log.offset_for_timestamp(0) == (survivors[0][0], 1_000)
    log.close()


def test_follower_style_read_of_a_compacted_log_appends_cleanly(tmp_path: Path) -> None:
    log = _open(tmp_path)
    entries = _fill(log, 300)
    _clean(LogCleaner(CleanerConfig()), log)
    follower = Log.open(tmp_path / "follower-0", COMPACT)
    offset = 0
    while offset < log.log_end_offset:
        data = log.read(offset, 4096)
        follower.append_as_follower(data)
        offset = follower.log_end_offset
    assert _contents(follower) == _contents(log)
    assert follower.log_end_offset == log.log_end_offset == entries[-1][0] + 1
    follower.close()
    log.close()


def test_the_log_changing_under_the_cleaner_abandons_the_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _open(tmp_path)
    entries = _fill(log, 300)
    real_write = compaction.write_cleaned_segment

    def write_then_truncate(*args: object, **kwargs: object) -> object:
        cleaned = real_write(*args, **kwargs)  # type: ignore[arg-type]
        log.truncation_count += 1  # as if a follower truncated meanwhile
        return cleaned

    monkeypatch.setattr(compaction, "write_cleaned_segment", write_then_truncate)
    stats = _clean(LogCleaner(CleanerConfig()), log)
    assert (stats.logs_cleaned, stats.logs_abandoned) == (0, 1)
    assert _contents(log) == entries
    assert not list((tmp_path / "topic-0").glob("*.cleaned"))
    assert not (tmp_path / CLEANER_OFFSET_CHECKPOINT).exists()
    log.close()


def test_replace_segments_refuses_stale_snapshots(tmp_path: Path) -> None:
    log = _open(tmp_path)
    _fill(log, 300)
    segments = log.segments
    active = log.active_segment
    assert not log.replace_segments(segments[:2], segments[0], log.truncation_count + 1)
    assert not log.replace_segments([segments[1], segments[0]], segments[1], log.truncation_count)
    assert not log.replace_segments(segments[-2:], segments[-2], log.truncation_count)
    assert log.active_segment is active and log.segments == segments
    log.close()


def test_delete_and_non_compacted_logs_are_left_alone(tmp_path: Path) -> None:
    log = _open(tmp_path, dataclasses.replace(COMPACT, cleanup_policy="delete"))
    entries = _fill(log, 300)
    assert _clean(LogCleaner(CleanerConfig()), log).logs_cleaned == 0
    log.update_config(COMPACT)
    assert _clean(LogCleaner(CleanerConfig(enable=False)), log).logs_cleaned == 0
    assert _contents(log) == entries
    closed = LogCleaner(CleanerConfig())
    asyncio.run(closed.close())
    assert _clean(closed, log).logs_cleaned == 0
    log.close()


def test_compact_only_logs_keep_segments_past_retention(tmp_path: Path) -> None:
    log = _open(tmp_path, dataclasses.replace(COMPACT, retention_ms=0, retention_bytes=10))
    _fill(log, 300)
    segment_count = len(log.segments)
    assert delete_retained_segments(log, NOW_MS, log.log_end_offset) == 0
    log.increment_log_start_offset(log.segments[2].base_offset)
    assert delete_retained_segments(log, NOW_MS, log.log_end_offset) == 2, "log start still rules"
    log.update_config(dataclasses.replace(log.config, cleanup_policy="compact,delete"))
    assert delete_retained_segments(log, NOW_MS, log.log_end_offset) == segment_count - 3
    log.close()


def test_topic_overrides_set_the_compaction_configs() -> None:
    config = LogConfig().with_overrides(
        {
            "cleanup.policy": "compact, delete",
            "min.cleanable.dirty.ratio": "0.25",
            "delete.retention.ms": "5",
            "min.compaction.lag.ms": "7",
            "max.compaction.lag.ms": "9",
        }
    )
    assert config.compact and config.delete
    assert config.cleanup_policy == "compact,delete"
    assert config.min_cleanable_dirty_ratio == 0.25
    assert (config.delete_retention_ms, config.min_compaction_lag_ms) == (5, 7)
    assert config.max_compaction_lag_ms == 9
    assert not LogConfig().compact and LogConfig().delete


def test_cleaner_config_from_broker_keys_and_its_limits() -> None:
    broker = {
        "log.cleaner.enable": False,
        "log.cleaner.backoff.ms": 100,
        "log.cleaner.dedupe.buffer.size": 2 << 20,
        "log.cleaner.io.buffer.load.factor": 0.5,
        "log.cleaner.io.buffer.size": 4096,
        "log.cleaner.io.max.bytes.per.second": 1e6,
    }
    config = CleanerConfig.from_broker_config(broker)
    assert not config.enable and config.backoff_ms == 100
    assert config.offset_map_bytes == 1 << 20 and config.read_chunk_bytes == 2048
    with pytest.raises(ValueError):
        CleanerConfig(dedupe_buffer_bytes=1000)
    with pytest.raises(ValueError):
        CleanerConfig(io_buffer_load_factor=0)


def test_replaced_segments_stay_readable_for_file_delete_delay(tmp_path: Path) -> None:
    log = _open(tmp_path, dataclasses.replace(COMPACT, file_delete_delay_ms=60_000))
    entries = _fill(log, 300)
    before = log.segments
    clock_s = [100.0]
    cleaner = LogCleaner(CleanerConfig(), clock_s=lambda: clock_s[0])
    _clean(cleaner, log)
    deleted = sorted((tmp_path / "topic-0").glob("*.deleted"))
    assert len(deleted) == 3 * (len(before) - 1)
    retired = before[1]  # a read that found this segment before the swap can still use it
    assert retired not in log.segments
    assert retired.read_bytes(0, 61) == retired.log_path.read_bytes()[:61]
    clock_s[0] += 59
    _clean(cleaner, log)
    assert sorted((tmp_path / "topic-0").glob("*.deleted")) == deleted
    clock_s[0] += 2
    _clean(cleaner, log)
    assert not list((tmp_path / "topic-0").glob("*.deleted"))
    assert _contents(log) == _compacted(entries, log.active_segment.base_offset)
    asyncio.run(cleaner.close())
    log.close()


def test_close_deletes_replaced_segments_at_once(tmp_path: Path) -> None:
    log = _open(tmp_path, dataclasses.replace(COMPACT, file_delete_delay_ms=60_000))
    _fill(log, 300)
    cleaner = LogCleaner(CleanerConfig())
    _clean(cleaner, log)
    assert list((tmp_path / "topic-0").glob("*.deleted"))
    asyncio.run(cleaner.close())
    assert not list((tmp_path / "topic-0").glob("*.deleted"))
    log.close()


def test_a_corrupt_batch_makes_the_log_uncleanable_until_restart(tmp_path: Path) -> None:
    log = _open(tmp_path)
    _fill(log, 300)
    victim = log.segments[1]
    with open(victim.log_path, "r+b") as file:
        file.seek(victim.size_bytes - 5)
        file.write(b"XXXXX")  # breaks the CRC of the segment's last batch
    cleaner = LogCleaner(CleanerConfig())
    assert _clean(cleaner, log).logs_abandoned == 1
    assert not list((tmp_path / "topic-0").glob("*.cleaned"))
    assert [s.log_path for s in log.segments[:2]] == [log.segments[0].log_path, victim.log_path]
    assert _clean(cleaner, log) == CleanerStats(), "not retried"
    log.close()
