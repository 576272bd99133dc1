"""How a fetch response is assembled when the connection can sendfile: large record sets stay
in their segment files as FileRecords parts, small ones are copied, and the frame the parts
make is byte for byte the one the copying path writes; without sendfile (TLS) nothing is left
in a file, and answers kio encodes get the records read into memory."""

import asyncio
import dataclasses
import datetime
from pathlib import Path

from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from broker.handlers import fetch
from broker.log.file_records import FileRecords, records_bytes
from broker.protocol import adapter
from broker.protocol.framing import frame_parts
from tests.unit.replication.test_delayed_fetch import Broker

LARGE_VALUE_BYTES = 2 * fetch.ZERO_COPY_MIN_BYTES


def _frame(parts: list[adapter.BodyPart]) -> bytes:
    return b"".join(records_bytes(part) for part in frame_parts(b"HDR", parts))


def _request(partitions: int) -> FetchRequest:
    return FetchRequest(
        cluster_id=None,
        replica_id=BrokerId(-1),
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=0)),
        min_bytes=i32(0),
        max_bytes=i32(50 * 1024 * 1024),
        isolation_level=i8(0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            FetchTopic(
                topic=TopicName("t"),
                partitions=tuple(
                    FetchPartition(
                        partition=i32(index),
                        current_leader_epoch=i32(-1),
                        fetch_offset=i64(0),
                        last_fetched_epoch=i32(-1),
                        log_start_offset=i64(-1),
                        partition_max_bytes=i32(1024 * 1024),
                    )
                    for index in range(partitions)
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def _answer(broker: Broker, zero_copy: bool) -> list[adapter.BodyPart]:
    context = dataclasses.replace(broker.context, zero_copy=zero_copy)
    response = asyncio.run(fetch.handle(context, _request(3)))
    assert isinstance(response, adapter.Encoded)
    return list(response.parts)


def _broker(tmp_path: Path) -> tuple[Broker, int]:
    """Partitions 0 and 2 with large batches, 1 with a small one; a large batch's size."""
    broker = Broker(tmp_path, partitions=3, isr=[1])
    large_batch_bytes = broker.append(0, LARGE_VALUE_BYTES)
    broker.append(0, LARGE_VALUE_BYTES)
    broker.append(1, 100)  # small: copied next to its partition's fields
    broker.append(2, LARGE_VALUE_BYTES)
    return broker, large_batch_bytes


def test_large_record_sets_stay_in_their_files_and_the_frame_is_unchanged(tmp_path: Path) -> None:
    broker, large_batch_bytes = _broker(tmp_path)
    zero_copy_parts = _answer(broker, zero_copy=True)
    regions = [part for part in zero_copy_parts if isinstance(part, FileRecords)]
    assert [len(region) for region in regions] == [2 * large_batch_bytes, large_batch_bytes]
    copied_parts = _answer(broker, zero_copy=False)
    assert not any(isinstance(part, FileRecords) for part in copied_parts)
    assert _frame(zero_copy_parts) == _frame(copied_parts)


def test_answers_kio_encodes_read_the_records_into_memory(tmp_path: Path) -> None:
    broker, _ = _broker(tmp_path)
    read = broker.manager.read("t", 0, 0, 1 << 20, True, zero_copy_min_bytes=1)
    assert isinstance(read.records, FileRecords)
    expected = read.records.read()
    values = {"responses": [{"partitions": [{"records": read.records}]}]}
    assert fetch._in_memory(values)["responses"][0]["partitions"][0]["records"] == expected
