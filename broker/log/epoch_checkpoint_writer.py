"""Writes leader-epoch checkpoints off the event loop, in batches.

A failover makes thousands of partitions change epoch in a row; each used to write its
`leader-epoch-checkpoint` (temp file, fsync, rename, directory fsync) on the loop. Now a change
only marks its log dirty here, and one task per event loop (so one per broker) writes every
dirty log's checkpoint on a worker thread soon after (`DELAY_S` gathers a burst into one
batch). Those writes skip fsync (Kafka skips it only for truncations): a failover's
thousands of fsyncs would keep the disk busy and a controlled shutdown waiting. A log's
flush makes its file durable before the recovery point moves past the epochs it holds, and
a clean shutdown leaves every file current and synced; a file lost or stale after a crash
is repaired when the log is loaded (`epoch_cache.EpochRebuilder`).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Protocol

logger = logging.getLogger(__name__)

DELAY_S = 0.05  # gather the changes of one burst (a LeaderAndIsr-sized batch) into one write
MAX_LOGS_PER_BATCH = 1000  # bounds each worker-thread call, so shutdown waits little


class EpochCheckpointed(Protocol):
    def write_epoch_checkpoint_if_dirty(self, fsync: bool = True) -> None:
        """(A worker thread.) Write the checkpoint if it changed since the last write;
        report, not raise, an I/O error."""


class EpochCheckpointWriter:
    """The per-loop writer; get it with `for_loop`."""

    def __init__(self) -> None:
        self._dirty: dict[int, EpochCheckpointed] = {}  # by id: at most one entry per log
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.batches_written = 0

    @classmethod
    def for_loop(cls, loop: asyncio.AbstractEventLoop) -> EpochCheckpointWriter:
        writer = _writers.get(loop)
        if writer is None:
            writer = _writers[loop] = cls()  # holds no reference to `loop`: the key stays weak
        return writer

    def mark_dirty(self, log: EpochCheckpointed) -> None:
        """(The loop.) `log`'s epoch cache changed."""
        self._dirty[id(log)] = log
        self._wake.set()
        if self._task is None or self._task.done():
            loop = asyncio.get_running_loop()
            self._task = loop.create_task(self._run(), name="epoch-checkpoint-writer")

    @property
    def pending(self) -> int:
        return len(self._dirty)

    async def flush(self) -> None:
        """Write everything marked so far (tests, shutdown)."""
        while self._dirty:
            await self._write_batch()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(DELAY_S)
            while self._dirty:
                await self._write_batch()

    async def _write_batch(self) -> None:
        batch = list(self._dirty.values())[:MAX_LOGS_PER_BATCH]
        for log in batch:
            del self._dirty[id(log)]
        await asyncio.to_thread(_write_all, batch)
        self.batches_written += 1


def _write_all(logs: list[EpochCheckpointed]) -> None:
    for log in logs:
        try:
            log.write_epoch_checkpoint_if_dirty(fsync=False)
        except Exception:  # one log's failure must not stop the others' writes
            logger.exception("writing the leader-epoch checkpoint of %s failed", log)


_writers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, EpochCheckpointWriter] = (
    weakref.WeakKeyDictionary()
)
