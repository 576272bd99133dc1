"""offsets.retention.minutes: which commits expire (Kafka 2.1+ rules)."""

from broker.coordinator.group.expiry import expired_offsets
from broker.coordinator.group.records import OffsetValue

RETENTION_MS = 1000


def _offset(committed_ms: int, expire_ms: int = -1) -> OffsetValue:
    return OffsetValue(1, -1, "", committed_ms, expire_ms)


def test_a_group_with_members_keeps_even_old_offsets() -> None:
    offsets = {("t", 0): _offset(0)}
    assert expired_offsets(offsets, True, None, now_ms=10_000, retention_ms=RETENTION_MS) == []


def test_an_empty_group_loses_all_offsets_one_retention_after_it_emptied() -> None:
    offsets = {("t", 0): _offset(0), ("t", 1): _offset(9_000)}
    assert expired_offsets(offsets, False, 9_500, now_ms=10_000, retention_ms=RETENTION_MS) == []
    expired = expired_offsets(offsets, False, 9_000, now_ms=10_000, retention_ms=RETENTION_MS)
    assert expired == [("t", 0), ("t", 1)]


def test_offsets_without_membership_expire_one_by_one_after_their_commit() -> None:
    offsets = {("t", 0): _offset(8_000), ("t", 1): _offset(9_500), ("t", 2): _offset(0, 20_000)}
    expired = expired_offsets(offsets, False, None, now_ms=10_000, retention_ms=RETENTION_MS)
    assert expired == [("t", 0)]
