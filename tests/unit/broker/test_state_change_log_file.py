"""The state-change log's writer thread: lines reach the file once its queue runs empty,
a burst of them in one flush."""

from __future__ import annotations

import logging
import queue
import time
from pathlib import Path

from broker.state_change_log_file import LOG_FORMAT, BurstFileHandler, BurstListener

WAIT_S = 10.0


class CountingHandler(BurstFileHandler):
    def __init__(self, path: Path) -> None:
        super().__init__(path, encoding="utf-8")
        self.flushes = 0

    def flush_now(self) -> None:
        self.flushes += 1
        super().flush_now()


def record(n: int) -> logging.LogRecord:
    return logging.LogRecord("state.change.logger", logging.INFO, "", 0, "line %d", (n,), None)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_a_queued_burst_is_written_with_one_flush_before_the_listener_stops(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state-change.log"
    handler = CountingHandler(path)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    for n in range(1000):
        records.put(record(n))
    listener = BurstListener(records, handler)
    listener.start()
    try:
        deadline = time.monotonic() + WAIT_S
        while len(lines(path)) < 1000 and time.monotonic() < deadline:
            time.sleep(0.01)
        written = lines(path)
        assert len(written) == 1000, f"{len(written)} of 1000 lines reached the file"
        assert written[-1].endswith("INFO line 999 (state.change.logger)"), written[-1]
        assert handler.flushes == 1
    finally:
        listener.stop()
        handler.close()


def test_stopping_writes_what_is_still_queued(tmp_path: Path) -> None:
    path = tmp_path / "state-change.log"
    handler = BurstFileHandler(path, encoding="utf-8")
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    listener = BurstListener(records, handler)
    listener.start()
    for n in range(50):
        records.put(record(n))
    listener.stop()
    assert lines(path) == [f"line {n}" for n in range(50)]
    handler.close()
