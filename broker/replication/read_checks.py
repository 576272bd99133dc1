"""What a leader answers a fetch with (`ReadResult`), and the checks before it reads: the
fetcher's leader epoch, and whether the fetcher's log has diverged from the leader's."""

from __future__ import annotations

from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from broker.log.file_records import FileRecords
from broker.log.log import Log
from broker.log.transaction_state import AbortedTxn
from broker.replication.partition import Partition


@dataclass(frozen=True, slots=True)
class ReadResult:
    error_code: ErrorCode
    # Bytes, or on a plaintext connection a large read left in its segment file for sendfile.
    records: bytes | FileRecords = b""
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    last_stable_offset: int = -1
    # For read_committed fetches: the aborted transactions the records may hold.
    aborted_transactions: tuple[AbortedTxn, ...] | None = None
    # (epoch, end offset) when the fetcher's last fetched epoch parts from this log's below
    # its fetch offset: it truncates there (KIP-595's truncation on fetch) instead of reading.
    diverging_epoch: tuple[int, int] | None = None
    # A leader's answer to a consumer that should fetch from this follower instead (KIP-392);
    # no records then. -1: none.
    preferred_read_replica: int = -1


def check_leader_epoch(current: Partition, requested_epoch: int) -> ErrorCode | None:
    if requested_epoch < 0 or requested_epoch == current.leader_epoch:
        return None
    if requested_epoch < current.leader_epoch:
        return ErrorCode.fenced_leader_epoch
    return ErrorCode.unknown_leader_epoch


def diverging_epoch(
    current: Partition, fetch_offset: int, last_fetched_epoch: int
) -> ReadResult | None:
    """Kafka's check before a read that names the fetcher's last fetched epoch: the leader's
    end of that epoch (the largest epoch at most it, and where the next one starts). A
    fetcher holding a later epoch than the leader knows there, or batches of that epoch past
    its end, has diverged: it is answered (epoch, end offset) to truncate to, and its fetch
    position does not count towards the ISR or the high watermark. Kafka 3.9 followers rely on
    it: they truncate on this answer, not by OffsetForLeaderEpoch."""
    replica_log: Log = current.log
    epoch, end_offset = replica_log.leader_epoch_cache.end_offset_for(
        last_fetched_epoch, replica_log.log_end_offset
    )
    if epoch < 0 or end_offset < 0 or fetch_offset < replica_log.log_start_offset:
        return positions(ErrorCode.offset_out_of_range, current)
    if epoch < last_fetched_epoch or end_offset < fetch_offset:
        return ReadResult(
            ErrorCode.none,
            b"",
            current.high_watermark,
            replica_log.log_start_offset,
            replica_log.log_end_offset,
            replica_log.last_stable_offset,
            diverging_epoch=(epoch, end_offset),
        )
    return None


def positions(error: ErrorCode, current: Partition) -> ReadResult:
    replica_log: Log = current.log
    return ReadResult(
        error, b"", current.high_watermark, replica_log.log_start_offset, replica_log.log_end_offset
    )
