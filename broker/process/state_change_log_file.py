"""The state-change log's file: `state.change.logger`'s lines written by a thread of their
own to $LOG_DIR/state-change.log, as Kafka's log4j config routes them."""

from __future__ import annotations

import logging
import logging.handlers
import queue
from pathlib import Path

from controller.state_change_log import LOGGER_NAME as STATE_CHANGE_LOGGER

log = logging.getLogger(__name__)

# Kafka's log4j layout ([%d] %p %m (%c)); asctime has milliseconds, so lines of several
# brokers merge into one timeline (`scripts/cluster events`).
LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
STATE_CHANGE_LOG_FILE = "state-change.log"


class _UnformattedQueueHandler(logging.handlers.QueueHandler):
    """Queues the record as it is: the listener's thread formats it. The standard handler
    formats on the caller's thread (the event loop) so that records survive pickling and
    later changes to their arguments; the state-change log's arguments are strings and
    numbers, and the queue stays in the process."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record


class BurstFileHandler(logging.FileHandler):
    """A file handler that leaves flushing to `BurstListener`: a failover's thousands of
    state-change lines then reach the file in a few writes instead of one each."""

    def flush(self) -> None:
        pass  # StreamHandler.emit flushes after every record

    def flush_now(self) -> None:
        super().flush()

    def close(self) -> None:
        self.flush_now()
        super().close()


class BurstListener(logging.handlers.QueueListener):
    """Flushes its handler whenever the queue runs empty, so a line waits in the buffer only
    while more lines are queued behind it."""

    def __init__(self, records: queue.SimpleQueue[logging.LogRecord], handler: BurstFileHandler):
        super().__init__(records, handler)
        self._records = records
        self._handler = handler

    def dequeue(self, block: bool) -> logging.LogRecord:
        try:
            return self._records.get_nowait()
        except queue.Empty:
            self._handler.flush_now()
            return self._records.get(block)

    def stop(self) -> None:
        super().stop()
        self._handler.flush_now()


def route_state_change_log(log_dir: str | None) -> logging.handlers.QueueListener | None:
    """Write `state.change.logger` to $LOG_DIR/state-change.log instead of the main log, as
    Kafka's log4j config does (additivity false): a failover writes thousands of its lines.
    A thread writes the file, so the event loop never waits for the disk."""
    if not log_dir:
        return None
    path = Path(log_dir) / STATE_CHANGE_LOG_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        file_handler = BurstFileHandler(path, encoding="utf-8")
    except OSError as error:
        log.warning("cannot write %s: %s", path, error)
        return None
    file_handler.setFormatter(logging.Formatter(LOG_FORMAT))
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    state_change = logging.getLogger(STATE_CHANGE_LOGGER)
    state_change.addHandler(_UnformattedQueueHandler(records))
    state_change.propagate = False
    listener = BurstListener(records, file_handler)
    listener.start()
    return listener
