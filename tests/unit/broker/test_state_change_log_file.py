"""The state-change log's writer thread: lines reach the file once its queue runs empty,
a burst of them in one flush."""

from __future__ import annotations

import logging
import queue
import time
from pathlib import Path
from typing import TextIO

from broker.process.state_change_log_file import LOG_FORMAT, BurstFileHandler, BurstListener

WAIT_S = 10.0


class CountingStream:
    """The handler's file, counting the flushes that reach it."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self.flushes = 0

    def write(self, text: str) -> int:
        return self.inner.write(text)

    def flush(self) -> None:
        self.flushes += 1
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()


def record(n: int) -> logging.LogRecord:
    return logging.LogRecord("state.change.logger", logging.INFO, "", 0, "line %d", (n,), None)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_a_queued_burst_is_written_with_one_flush_before_the_listener_stops(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state-change.log"
    handler = BurstFileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    assert handler.stream is not None
    stream = CountingStream(handler.stream)
    handler.setStream(stream)  # type: ignore[arg-type]
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    for n in range(1000):
        records.put(record(n))
    listener = BurstListener(records, handler)
    listener.start()
    try:
        # Until the last line is whole in the file (earlier lines may reach it as the
        # buffer fills; the last only with the flush).
        last = "INFO line 999 (state.change.logger)\n"
        deadline = time.monotonic() + WAIT_S
        while not path.read_text(encoding="utf-8").endswith(last):
            if time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        written = lines(path)
        assert len(written) == 1000, f"{len(written)} of 1000 lines reached the file"
        assert written[-1].endswith("INFO line 999 (state.change.logger)"), written[-1]
        assert stream.flushes == 1  # not one per line
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
