"""Producer snapshots written while the controller moves this broker's leaders away.

A log closes with a producer snapshot at its end (Kafka's `UnifiedLog.close`), one new file
per log. Creating 5,000 files took 0.5-4 s on this machine's ext4 (slowest soon after many
files were deleted), inside the 5 s a SIGTERM'd broker has to exit. During a controlled
shutdown this broker has already stopped its fetchers, so a log it does not lead takes no
more appends: its end snapshot can be written while the controller works, and the close then
finds it written. A log whose end still moves gets another at its new end when it closes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from broker.log.log import Log
from broker.replication.partition import Partition

log = logging.getLogger(__name__)

# How often the partitions are looked at again for leaders that moved away meanwhile.
RESCAN_INTERVAL_S = 0.2
# Snapshot writes at once: each holds a thread of the loop's default executor.
WRITES_IN_FLIGHT = 2


@dataclass
class Tally:
    written: int = 0


async def write_snapshots_of_settled_logs(partitions: Callable[[], list[Partition]]) -> None:
    """Until cancelled: the end snapshot of every log this broker does not lead. Only for a
    broker whose fetchers are stopped (nothing else appends to a log it does not lead)."""
    started, tally = time.monotonic(), Tally()
    try:
        while True:
            await write_end_snapshots((p.log for p in partitions() if not p.is_leader), tally)
            await asyncio.sleep(RESCAN_INTERVAL_S)
    finally:
        log.info(
            "%d producer snapshots written during the controlled shutdown's %d ms",
            tally.written,
            (time.monotonic() - started) * 1000,
        )


async def write_end_snapshots(logs: Iterable[Log], tally: Tally) -> None:
    """Each log's end snapshot (skipped where already written at its end), WRITES_IN_FLIGHT
    at a time, counted in `tally`."""
    pending = iter(logs)
    await asyncio.gather(*(_write_each(pending, tally) for _ in range(WRITES_IN_FLIGHT)))


async def _write_each(pending: Iterator[Log], tally: Tally) -> None:
    for replica_log in pending:
        if await replica_log.write_end_snapshot_early():
            tally.written += 1
