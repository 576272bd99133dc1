"""Opening a partition directory: find segments, repair what a crash or corruption left.

Kafka's rules: a compaction swap that committed is completed (`compaction_recovery`) and the
other leftovers of interrupted operations are removed; a segment whose index is missing or fails
its sanity check is recovered (its indexes rebuilt from the batches); without a clean shutdown
every segment from the one holding the recovery point on is recovered, and when recovery
truncates a segment, all later segments are deleted (nothing after a hole is trusted).
"""

from __future__ import annotations

import itertools
import logging
import re
from pathlib import Path

from broker.log.compaction_recovery import complete_interrupted_swaps
from broker.log.config import LogConfig
from broker.log.errors import LogCorruptError
from broker.log.index import CorruptIndexError
from broker.log.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, LogSegment

logger = logging.getLogger(__name__)

SEGMENT_FILE = re.compile(r"^(\d{20})(\.log|\.index|\.timeindex|\.txnindex)$")
# Leftovers of interrupted writes, deletions, or compaction swaps that never committed (the
# cleaner re-does them); committed swaps are completed first (`complete_interrupted_swaps`).
LEFTOVER_SUFFIXES = (".tmp", ".deleted", ".cleaned", ".swap")


def remove_leftovers(directory: Path) -> list[int]:
    """Delete leftover and orphaned files; return the base offsets of the segments present."""
    bases: set[int] = set()
    index_files: list[tuple[int, Path]] = []
    for path in directory.iterdir():
        if path.name.endswith(LEFTOVER_SUFFIXES):
            path.unlink(missing_ok=True)
            continue
        match = SEGMENT_FILE.match(path.name)
        if match is None:
            continue
        if match.group(2) == LOG_SUFFIX:
            bases.add(int(match.group(1)))
        else:
            index_files.append((int(match.group(1)), path))
    for base_offset, path in index_files:
        if base_offset not in bases:
            path.unlink(missing_ok=True)  # an index without its log is useless
    return sorted(bases)


def _open_segment(directory: Path, base_offset: int, config: LogConfig, now_ms: int) -> LogSegment:
    try:
        return LogSegment(directory, base_offset, config, now_ms)
    except CorruptIndexError as error:
        logger.warning("rebuilding indexes of segment %d in %s: %s", base_offset, directory, error)
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            (directory / f"{base_offset:020d}{suffix}").unlink(missing_ok=True)
        return LogSegment(directory, base_offset, config, now_ms)


def _trust_segment(segment: LogSegment) -> bool:
    """Load a segment without re-validating it; False if its indexes cannot be trusted."""
    if segment.indexes_missing:
        return False
    try:
        segment.sanity_check()
        segment.load_state()
        segment.time_index.check_offset_bound(segment.next_offset)
    except CorruptIndexError as error:
        logger.warning("rebuilding indexes of %s: %s", segment.log_path, error)
        return False
    return True


def _first_to_recover(segments: list[LogSegment], recovery_point: int) -> int:
    """Index of the segment holding the recovery point (everything from there is unflushed)."""
    first = 0
    for slot, segment in enumerate(segments):
        if segment.base_offset <= recovery_point:
            first = slot
    return first


def load_segments(
    directory: Path, config: LogConfig, recovery_point: int, had_clean_shutdown: bool, now_ms: int
) -> list[LogSegment]:
    complete_interrupted_swaps(directory)
    bases = remove_leftovers(directory)
    segments = [_open_segment(directory, base, config, now_ms) for base in bases]
    first_unflushed = len(segments)
    if not had_clean_shutdown:
        first_unflushed = _first_to_recover(segments, recovery_point)
    for slot, segment in enumerate(segments):
        if slot < first_unflushed:
            if not _trust_segment(segment):
                segment.recover()
            continue
        truncated_bytes = segment.recover()
        if truncated_bytes:
            logger.warning("truncated %d bytes of %s", truncated_bytes, segment.log_path)
            for later in segments[slot + 1 :]:
                logger.warning("deleting %s after a corrupt point", later.log_path)
                later.delete()
            del segments[slot + 1 :]
            break
    _check_no_overlap(segments)
    return segments


def _check_no_overlap(segments: list[LogSegment]) -> None:
    for earlier, later in itertools.pairwise(segments):
        if later.base_offset < earlier.next_offset:
            for segment in segments:
                segment.close_handles()
            raise LogCorruptError(
                f"{later.log_path} starts at {later.base_offset}, inside {earlier.log_path} "
                f"which runs to {earlier.next_offset - 1}"
            )
