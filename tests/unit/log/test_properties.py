"""Property tests: what goes in comes back, across reopen, crash and torn writes."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.log.log import Log, LogConfig
from broker.log.records import SimpleRecord, build_batch, decode_records, validate_batches

CONFIG = LogConfig(segment_bytes=1500, index_interval_bytes=100, segment_index_bytes=400)
PROPERTY_SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

record_strategy = st.builds(
    SimpleRecord,
    key=st.one_of(st.none(), st.binary(max_size=8)),
    value=st.one_of(st.none(), st.binary(max_size=120)),
    headers=st.just(()),
    timestamp_ms=st.integers(min_value=0, max_value=10_000),
)
batch_strategy = st.tuples(
    st.lists(record_strategy, min_size=1, max_size=5), st.sampled_from([0, 0, 1, 2, 3, 4])
)


def _append_all(log: Log, batches: list[tuple[list[SimpleRecord], int]]) -> None:
    for records, codec in batches:
        log.append_as_leader(bytearray(build_batch(records, compression_type=codec)), 0, 0)


def _contents(log: Log) -> list[tuple[int, bytes | None, bytes | None, int]]:
    data = b"".join(_read_everything(log))
    return [(r.offset, r.key, r.value, r.timestamp_ms) for r in decode_records(data)]


def _read_everything(log: Log) -> list[bytes]:
    chunks: list[bytes] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 700)
        headers = validate_batches(data, 1 << 20, from_client=False)
        chunks.append(data)
        offset = headers[-1].last_offset + 1
    return chunks


def _crash(log: Log) -> None:
    for segment in log.segments:
        segment.close_handles()


@PROPERTY_SETTINGS
@given(
    batches=st.lists(batch_strategy, min_size=1, max_size=25),
    clean=st.booleans(),
)
def test_reopen_returns_the_same_records(
    batches: list[tuple[list[SimpleRecord], int]], clean: bool
) -> None:
    with tempfile.TemporaryDirectory() as root:
        directory = Path(root) / "t-0"
        log = Log.open(directory, CONFIG)
        _append_all(log, batches)
        expected = _contents(log)
        assert [offset for offset, *_ in expected] == list(range(log.log_end_offset))
        if clean:
            log.flush()
            log.close()
        else:
            _crash(log)
        reopened = Log.open(directory, CONFIG, had_clean_shutdown=clean)
        assert _contents(reopened) == expected
        assert reopened.log_end_offset == len(expected)
        reopened.close()


@PROPERTY_SETTINGS
@given(
    batches=st.lists(batch_strategy, min_size=1, max_size=25),
    cut_fraction=st.floats(min_value=0.0, max_value=1.0),
)
def test_torn_last_segment_loses_only_the_torn_batch(
    batches: list[tuple[list[SimpleRecord], int]], cut_fraction: float
) -> None:
    with tempfile.TemporaryDirectory() as root:
        directory = Path(root) / "t-0"
        log = Log.open(directory, CONFIG)
        _append_all(log, batches)
        expected = _contents(log)
        active = log.active_segment
        batch_ends = [
            (pos + header.size_bytes, header.last_offset) for pos, header in active.iter_batches(0)
        ]
        cut_bytes = int(active.size_bytes * cut_fraction)
        _crash(log)
        with open(active.log_path, "r+b") as file:
            file.truncate(cut_bytes)
        surviving = [last_offset for end, last_offset in batch_ends if end <= cut_bytes]
        end_offset = surviving[-1] + 1 if surviving else active.base_offset
        reopened = Log.open(directory, CONFIG)
        assert reopened.log_end_offset == end_offset
        assert _contents(reopened) == [row for row in expected if row[0] < end_offset]
        reopened.close()


@PROPERTY_SETTINGS
@given(
    batches=st.lists(batch_strategy, min_size=1, max_size=25),
    data=st.data(),
)
def test_reads_return_whole_batches_within_bounds(
    batches: list[tuple[list[SimpleRecord], int]], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as root:
        log = Log.open(Path(root) / "t-0", CONFIG)
        _append_all(log, batches)
        end = log.log_end_offset
        start = data.draw(st.integers(min_value=0, max_value=end))
        max_bytes = data.draw(st.integers(min_value=1, max_value=2000))
        max_offset = data.draw(st.one_of(st.none(), st.integers(min_value=0, max_value=end)))
        result = log.read(start, max_bytes, max_offset=max_offset)
        headers = validate_batches(result, 1 << 20, from_client=False)
        if headers:
            assert headers[0].base_offset <= start <= headers[0].last_offset
            assert len(result) <= max_bytes or len(headers) == 1
            assert max_offset is None or headers[-1].base_offset < max_offset
        else:
            assert start == end or (max_offset is not None and max_offset <= start)
        log.close()
