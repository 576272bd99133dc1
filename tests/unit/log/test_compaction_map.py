"""The cleaner's bounded offset map."""

from __future__ import annotations

import pytest

from broker.log.compaction_map import (
    DIGEST_BYTES,
    ENTRY_OVERHEAD_BYTES,
    NO_OFFSET,
    OffsetMap,
    key_identity,
)


def test_latest_offset_per_key_wins() -> None:
    offset_map = OffsetMap(1 << 20)
    offset_map.put(b"a", 1)
    offset_map.put(b"b", 2)
    offset_map.put(b"a", 3)
    assert offset_map.get(b"a") == 3
    assert offset_map.get(b"b") == 2
    assert offset_map.get(b"c") == NO_OFFSET
    assert offset_map.latest_offset == 3
    assert len(offset_map) == 2


def test_long_keys_are_stored_as_digests_short_ones_as_they_are() -> None:
    long_key = b"x" * 100
    assert key_identity(b"short") == b"short"
    assert len(key_identity(long_key)) == DIGEST_BYTES
    assert key_identity(long_key) != key_identity(b"x" * 101)
    offset_map = OffsetMap(1 << 20)
    offset_map.put(long_key, 7)
    assert offset_map.get(long_key) == 7
    assert offset_map.get(b"x" * 99) == NO_OFFSET


def test_full_map_refuses_new_keys_but_updates_known_ones() -> None:
    room_for_two_bytes = 2 * (ENTRY_OVERHEAD_BYTES + 1)
    offset_map = OffsetMap(room_for_two_bytes)
    assert offset_map.put(b"a", 0)
    assert offset_map.put(b"b", 1)
    assert not offset_map.put(b"c", 2), "a third key does not fit"
    assert offset_map.latest_offset == 1, "a refused put does not extend the coverage"
    assert offset_map.put(b"a", 3), "a known key costs nothing more"
    assert offset_map.get(b"a") == 3
    assert offset_map.used_bytes <= offset_map.capacity_bytes


def test_update_latest_offset_covers_keyless_tail_of_a_batch() -> None:
    offset_map = OffsetMap(1 << 20)
    offset_map.put(b"a", 4)
    offset_map.update_latest_offset(9)
    offset_map.update_latest_offset(5)
    assert offset_map.latest_offset == 9


def test_offsets_must_grow_and_capacity_must_hold_a_key() -> None:
    offset_map = OffsetMap(1 << 20)
    offset_map.put(b"a", 10)
    with pytest.raises(ValueError):
        offset_map.put(b"b", 9)
    with pytest.raises(ValueError):
        OffsetMap(ENTRY_OVERHEAD_BYTES)


def test_clear_empties_the_map() -> None:
    offset_map = OffsetMap(1 << 20)
    offset_map.put(b"a", 1)
    offset_map.clear()
    assert len(offset_map) == 0
    assert offset_map.used_bytes == 0
    assert offset_map.latest_offset == NO_OFFSET
