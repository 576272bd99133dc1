"""The producer batches of a log's segments, as the producer state is rebuilt from them:
each batch's header, and for a control batch the transaction marker its record carries (also
of the batches a follower replicates)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from broker.log.batch import BatchHeader, Buffer
from broker.log.control_records import EndTxnMarker, read_marker
from broker.log.errors import RecordError
from broker.log.producer_state import NO_PRODUCER_ID, LoggedBatch
from broker.log.segment import LogSegment

logger = logging.getLogger(__name__)


def producer_batches(
    segments: Iterable[LogSegment], end_offset: int | None = None, start_offset: int = 0
) -> Iterator[LoggedBatch]:
    """Batches with a producer id, from `start_offset` and below `end_offset` if given, in
    offset order."""
    for segment in segments:
        if segment.next_offset <= start_offset:
            continue
        for position, header in segment.iter_batches(0):
            if end_offset is not None and header.base_offset >= end_offset:
                return
            if header.last_offset < start_offset:
                continue
            if header.producer_id != NO_PRODUCER_ID:
                yield header, marker_at(segment, position, header)


def marker_at(segment: LogSegment, position: int, header: BatchHeader) -> EndTxnMarker | None:
    """The marker of the control batch at `position`; None for any other batch, or for a
    control batch that is not a readable marker (logged: the transaction stays open)."""
    if not header.is_control:
        return None
    try:
        return read_marker(segment.read_bytes(position, header.size_bytes), header)
    except RecordError as error:
        logger.warning("%s: control batch at offset %d: %s", segment, header.base_offset, error)
        return None


def replicated_marker(records: Buffer, position: int, header: BatchHeader) -> EndTxnMarker | None:
    """The marker of a control batch a follower appends (None for other batches)."""
    if not header.is_control or header.producer_id == NO_PRODUCER_ID:
        return None
    try:
        return read_marker(memoryview(records)[position : position + header.size_bytes], header)
    except RecordError as error:
        logger.warning("control batch at offset %d replicated: %s", header.base_offset, error)
        return None
