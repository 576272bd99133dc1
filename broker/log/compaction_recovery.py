"""Finishing a compaction swap that a crash interrupted (Kafka's LogLoader rules), at log load.

The cleaner writes a cleaned segment as `<base>.log.cleaned` (+ `.index.cleaned`,
`.timeindex.cleaned`) and, next to it, `<base>.swap-end`: the offset where the run of segments
it replaces ends. The swap (`Log.replace_segments`) then renames, in this order: the `.cleaned`
files to `.swap` (index files first, the `.log` last: its rename commits the swap); the
replaced segments' files to `.deleted`; the `.swap` files to their final names. The cleaner
removes `<base>.swap-end` afterwards. So when a log is opened:
- `<base>.log.swap` present: the swap committed. Every plain segment file whose base offset lies
  in [base, end) goes, and the `.swap` files take their final names. An index without its
  `.swap` (renamed already, or never written) is deleted and rebuilt by segment recovery.
- `.swap` index files without a `.log.swap`: the swap never committed; they go, and so does a
  `.swap-end`. `.cleaned` and `.deleted` files are removed with the other leftovers
  (`log_loader.remove_leftovers`).
The end comes from `<base>.swap-end`. Kafka has no such file and takes the swap segment's own
next offset; that misses a replaced segment whose records were all compacted away, which would
come back after a crash between the commit and its rename to `.deleted` (bringing back records
that an expired tombstone had deleted). Without a readable `.swap-end` Kafka's rule applies.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from broker.log.batch import CURRENT_MAGIC, HEADER_SIZE_BYTES, HEADER_STRUCT, BatchHeader
from broker.log.checkpoints import fsync_directory
from broker.log.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    segment_file_name,
)
from broker.log.txn_index import TXN_INDEX_SUFFIX

logger = logging.getLogger(__name__)

SWAP_END_SUFFIX = ".swap-end"
_SWAP_FILE = re.compile(
    r"^(\d{20})(\.log|\.index|\.timeindex|\.txnindex)" + re.escape(SWAP_SUFFIX) + "$"
)
_SWAP_END_FILE = re.compile(r"^(\d{20})" + re.escape(SWAP_END_SUFFIX) + "$")
_SEGMENT_FILE = re.compile(r"^(\d{20})(\.log|\.index|\.timeindex|\.txnindex)$")


def swap_end_path(directory: Path, base_offset: int) -> Path:
    return directory / segment_file_name(base_offset, SWAP_END_SUFFIX)


def write_swap_end(directory: Path, base_offset: int, end_offset: int) -> None:
    """Record (fsynced) where the run of segments replaced by the cleaned segment at
    `base_offset` ends; written before the swap commits."""
    with open(swap_end_path(directory, base_offset), "w", encoding="ascii") as file:
        file.write(f"{end_offset}\n")
        file.flush()
        os.fsync(file.fileno())


def _read_swap_end(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None


def complete_interrupted_swaps(directory: Path) -> int:
    """Apply the rules above to one partition directory; returns the swaps completed."""
    swaps: dict[int, dict[str, Path]] = {}
    ends: dict[int, Path] = {}
    segment_files: list[tuple[int, Path]] = []
    for path in directory.iterdir():
        if match := _SWAP_FILE.match(path.name):
            swaps.setdefault(int(match.group(1)), {})[match.group(2)] = path
        elif match := _SWAP_END_FILE.match(path.name):
            ends[int(match.group(1))] = path
        elif match := _SEGMENT_FILE.match(path.name):
            segment_files.append((int(match.group(1)), path))
    completed = 0
    for base_offset, files in sorted(swaps.items()):
        if LOG_SUFFIX in files:
            end_offset = _read_swap_end(ends[base_offset]) if base_offset in ends else None
            _complete_swap(directory, base_offset, files, end_offset, segment_files)
            completed += 1
        else:
            for path in files.values():
                path.unlink(missing_ok=True)
    for path in ends.values():
        path.unlink(missing_ok=True)
    if swaps or ends:
        fsync_directory(directory)
    return completed


def _complete_swap(
    directory: Path,
    base_offset: int,
    files: dict[str, Path],
    end_offset: int | None,
    segment_files: list[tuple[int, Path]],
) -> None:
    next_offset = swap_next_offset(files[LOG_SUFFIX], base_offset)
    if end_offset is None or end_offset < next_offset:
        end_offset = next_offset  # Kafka's rule (see the module docstring)
    end_offset = max(end_offset, base_offset + 1)
    logger.warning(
        "completing an interrupted compaction swap in %s: offsets %d..%d",
        directory,
        base_offset,
        end_offset - 1,
    )
    for other_base, path in segment_files:
        if base_offset <= other_base < end_offset:
            path.unlink(missing_ok=True)
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, LOG_SUFFIX):
        if suffix in files:
            os.replace(files[suffix], directory / segment_file_name(base_offset, suffix))


def swap_next_offset(path: Path, base_offset: int) -> int:
    """One past the last offset of the complete batches in the swap segment's log file."""
    next_offset = base_offset
    with open(path, "rb") as file:
        size_bytes = os.fstat(file.fileno()).st_size
        position = 0
        while size_bytes - position >= HEADER_SIZE_BYTES:
            head = os.pread(file.fileno(), HEADER_SIZE_BYTES, position)
            header = BatchHeader(*HEADER_STRUCT.unpack_from(head))
            if header.magic != CURRENT_MAGIC or header.size_bytes < HEADER_SIZE_BYTES:
                break
            if position + header.size_bytes > size_bytes:
                break
            next_offset = header.last_offset + 1
            position += header.size_bytes
    return next_offset
