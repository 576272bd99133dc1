"""The cleaner's record filter: which records survive, and the rewritten batch."""

from __future__ import annotations

import pytest

from broker.log import compression
from broker.log.batch import read_batch_header, validate_batches
from broker.log.compaction_map import OffsetMap
from broker.log.compaction_records import filter_batch, parse_records, records_section
from broker.log.compaction_txn import TxnCleaning
from broker.log.control_records import ControlType, EndTxnMarker, build_marker_batch
from broker.log.record_codec import SimpleRecord, build_batch, decode_records
from broker.log.transaction_state import AbortedTxn

MAX_DECOMPRESSED_BYTES = 1 << 24


def _batch(
    entries: list[tuple[bytes | None, bytes | None]],
    base_offset: int = 100,
    compression_type: int = compression.NONE,
    **fields: int | bool,
) -> bytes:
    records = [
        SimpleRecord(key, value, headers=(("h", b"\xff\x00"),), timestamp_ms=5_000 + i)
        for i, (key, value) in enumerate(entries)
    ]
    return build_batch(
        records, base_offset=base_offset, compression_type=compression_type, **fields
    )  # type: ignore[arg-type]


def _map(entries: dict[bytes, int], latest_offset: int | None = None) -> OffsetMap:
    offset_map = OffsetMap(1 << 20)
    for key, offset in sorted(entries.items(), key=lambda item: item[1]):
        offset_map.put(key, offset)
    if latest_offset is not None:
        offset_map.update_latest_offset(latest_offset)
    return offset_map


def _filter(
    batch: bytes,
    offset_map: OffsetMap,
    retain_deletes: bool = True,
    producer_last_offsets: dict[int, int] | None = None,
    txns: TxnCleaning | None = None,
) -> bytes:
    header = read_batch_header(batch, 0)
    return filter_batch(
        batch,
        header,
        offset_map,
        retain_deletes,
        producer_last_offsets or {},
        MAX_DECOMPRESSED_BYTES,
        txns or TxnCleaning(()),
    ).data


def _contents(batch: bytes) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in decode_records(batch)]


@pytest.mark.parametrize(
    "codec",
    [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD],
)
def test_only_the_latest_record_per_key_survives_with_its_offset(codec: int) -> None:
    batch = _batch([(b"a", b"1"), (b"b", b"2"), (b"a", b"3"), (b"c", b"4")], compression_type=codec)
    offset_map = _map({b"a": 102, b"b": 150, b"c": 103})
    cleaned = _filter(batch, offset_map)
    assert _contents(cleaned) == [(102, b"a", b"3"), (103, b"c", b"4")]
    validate_batches(cleaned, 1 << 20, from_client=False)  # size, magic and CRC-32C
    original, rewritten = read_batch_header(batch, 0), read_batch_header(cleaned, 0)
    assert rewritten.compression_type == codec
    assert rewritten.base_offset == 100
    assert rewritten.last_offset == original.last_offset, "the last offset is kept (sequence)"
    assert rewritten.records_count == 2
    assert rewritten.max_timestamp == 5_003
    assert decode_records(cleaned)[0].timestamp_ms == 5_002
    assert decode_records(cleaned)[0].headers == (("h", b"\xff\x00"),)


def test_producer_fields_and_leader_epoch_survive_a_rewrite() -> None:
    batch = _batch(
        [(b"a", b"1"), (b"a", b"2")],
        producer_id=77,
        producer_epoch=3,
        base_sequence=40,
        partition_leader_epoch=9,
    )
    cleaned = _filter(batch, _map({b"a": 101}))
    header = read_batch_header(cleaned, 0)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 3, 40)
    assert header.partition_leader_epoch == 9
    assert header.last_offset_delta == 1


def test_a_batch_that_loses_nothing_is_copied_byte_for_byte() -> None:
    batch = _batch([(b"a", b"1"), (b"b", b"2")], compression_type=compression.GZIP)
    assert _filter(batch, _map({b"a": 100, b"b": 101})) == batch


def test_records_past_the_map_coverage_are_kept() -> None:
    batch = _batch([(b"a", b"1"), (b"a", b"2"), (b"a", b"3")])
    offset_map = _map({b"a": 101})  # the map filled at offset 101
    assert _contents(_filter(batch, offset_map)) == [(101, b"a", b"2"), (102, b"a", b"3")]


def test_keys_only_in_the_clean_part_are_kept() -> None:
    batch = _batch([(b"old", b"1")])
    assert _filter(batch, _map({b"other": 500})) == batch


def test_tombstones_stay_until_the_delete_horizon_passes() -> None:
    batch = _batch([(b"a", b"1"), (b"a", None), (b"b", b"2")])
    offset_map = _map({b"a": 101, b"b": 102})
    assert _contents(_filter(batch, offset_map, retain_deletes=True)) == [
        (101, b"a", None),
        (102, b"b", b"2"),
    ]
    assert _contents(_filter(batch, offset_map, retain_deletes=False)) == [(102, b"b", b"2")]


def test_keyless_records_are_kept() -> None:
    batch = _batch([(None, b"x"), (b"a", b"1"), (b"a", b"2"), (None, b"y")])
    assert _contents(_filter(batch, _map({b"a": 102}, latest_offset=103))) == [
        (100, None, b"x"),
        (102, b"a", b"2"),
        (103, None, b"y"),
    ]


def test_a_batch_that_loses_every_record_goes() -> None:
    batch = _batch([(b"a", b"1")])
    assert _filter(batch, _map({b"a": 500})) == b""


def test_the_latest_batch_of_a_producer_stays_as_an_empty_batch() -> None:
    batch = _batch(
        [(b"a", b"1"), (b"b", b"2")],
        compression_type=compression.LZ4,
        producer_id=5,
        producer_epoch=1,
        base_sequence=10,
    )
    offset_map = _map({b"a": 900, b"b": 901})
    assert _filter(batch, offset_map, producer_last_offsets={5: 999}) == b"", "not its latest"
    cleaned = _filter(batch, offset_map, producer_last_offsets={5: 101})
    [header] = validate_batches(cleaned, 1 << 20, from_client=False)
    assert header.records_count == 0
    assert (header.base_offset, header.last_offset) == (100, 101)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (5, 1, 10)
    assert header.compression_type == compression.NONE
    assert decode_records(cleaned) == []


def _marker(base_offset: int, producer_id: int = 5) -> bytes:
    marker = EndTxnMarker(ControlType.COMMIT, coordinator_epoch=0)
    batch = bytearray(build_marker_batch(producer_id, 0, marker, timestamp_ms=6_000))
    batch[0:8] = base_offset.to_bytes(8, "big")  # the base offset is outside the CRC
    return bytes(batch)


def _transactional(base_offset: int, key: bytes = b"a") -> bytes:
    return _batch(
        [(key, b"1")],
        base_offset=base_offset,
        producer_id=5,
        producer_epoch=0,
        is_transactional=True,
    )


def test_committed_transactional_data_is_compacted_like_any_other() -> None:
    batch = _transactional(100)
    assert _filter(batch, _map({b"a": 100})) == batch  # the key's latest: kept
    assert _filter(batch, _map({b"a": 500})) == b""  # superseded: gone


def test_an_aborted_transactions_records_all_go() -> None:
    txns = TxnCleaning([AbortedTxn(5, first_offset=100, last_offset=101, last_stable_offset=102)])
    batch = _transactional(100)
    assert _filter(batch, _map({b"a": 100}), txns=txns) == b""
    last_of_producer = _filter(batch, _map({}), producer_last_offsets={5: 100}, txns=txns)
    assert decode_records(last_of_producer) == []  # an empty batch keeps the producer's state
    assert read_batch_header(last_of_producer, 0).is_transactional


def test_a_marker_stays_while_its_transactions_data_is_left_and_deletes_are_retained() -> None:
    txns = TxnCleaning(())
    assert _filter(_transactional(100), _map({b"a": 100}), txns=txns) != b""
    marker = _marker(101)
    assert _filter(marker, _map({}), retain_deletes=False, txns=txns) == marker  # data left
    later = _marker(102)  # a transaction whose data compaction removed earlier
    assert _filter(later, _map({}), retain_deletes=True, txns=txns) == later
    assert _filter(_marker(103), _map({}), retain_deletes=False, txns=txns) == b""


def test_parse_records_locates_each_record() -> None:
    batch = _batch([(b"k", b"v"), (None, None)], compression_type=compression.ZSTD)
    header = read_batch_header(batch, 0)
    records = parse_records(records_section(batch, header, MAX_DECOMPRESSED_BYTES), header)
    assert [(r.offset, r.key, r.has_value) for r in records] == [
        (100, b"k", True),
        (101, None, False),
    ]
    assert records[0].end == records[1].start
