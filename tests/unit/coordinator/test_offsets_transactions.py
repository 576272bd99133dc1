"""__consumer_offsets read back with transactional commits: a transaction's offsets count
once its commit marker follows, vanish with an abort marker, and stay pending without one."""

from __future__ import annotations

from broker.coordinator.group.offsets import _PartitionState, _replay
from broker.coordinator.group.records import (
    OffsetKey,
    OffsetValue,
    encode_offset_key,
    encode_offset_value,
)
from broker.coordinator.internal_log import LoggedBatch
from broker.log.control_records import ControlType, EndTxnMarker


def _commit(group: str, partition: int, offset: int) -> tuple[bytes, bytes]:
    return (
        encode_offset_key(OffsetKey(group, "in", partition)),
        encode_offset_value(OffsetValue(offset, -1, "", 1_000)),
    )


def _data(producer_id: int, *records: tuple[bytes, bytes]) -> LoggedBatch:
    return LoggedBatch(producer_id, producer_id >= 0, None, list(records))


def _marker(producer_id: int, commit: bool) -> LoggedBatch:
    control = ControlType.COMMIT if commit else ControlType.ABORT
    return LoggedBatch(producer_id, True, EndTxnMarker(control, 0), [])


def test_transactional_commits_follow_their_markers() -> None:
    state = _PartitionState()
    _replay(
        state,
        [
            _data(-1, _commit("g", 0, 5)),  # a plain OffsetCommit
            _data(7, _commit("g", 0, 9)),
            _data(8, _commit("g", 1, 4)),
            _marker(7, commit=True),
            _marker(8, commit=False),
            _data(9, _commit("g", 2, 3)),  # no marker yet
        ],
    )
    offsets = {tp: value.offset for tp, value in state.offsets["g"].items()}
    assert offsets == {("in", 0): 9}
    assert {
        p: {g: set(o) for g, o in by_group.items()} for p, by_group in state.pending.items()
    } == {9: {"g": {("in", 2)}}}
