"""The Produce handler's answers built from typed partition results (acks=1 and acks=all),
against a real replica manager on a temporary directory, without processes."""

import asyncio
import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from broker.handlers import produce
from broker.log.config import LogConfig
from broker.log.manager import LogManager
from broker.log.record_codec import SimpleRecord, build_batch
from broker.metrics.prometheus import BrokerCounters
from broker.network.context import RequestContext
from broker.protocol.header import RequestHeader
from broker.quotas.manager import ClientQuotas
from broker.quotas.sensor import QuotaWindow
from broker.replication.replica_manager import ReplicaManager
from tests.unit.replication.hosting import prepare_now
from zk.znodes import PartitionState

ME, FOLLOWER = 1, 2


def _context(
    tmp_path: Path, isr: list[int], min_isr: int = 1
) -> tuple[RequestContext, ReplicaManager]:
    manager = ReplicaManager(
        ME, LogManager([tmp_path], LogConfig()), lambda t, p: True, lambda topic: min_isr
    )
    prepare_now(manager, "t", "", [0])
    state = PartitionState(leader=ME, leader_epoch=0, isr=isr, controller_epoch=1)
    manager.apply_state("t", "", 0, [ME, FOLLOWER], state, LogConfig(), zk_version=0)
    services = SimpleNamespace(
        replica_manager=manager,
        config={"message.max.decompressed.bytes": 1 << 20},
        topic_settings=SimpleNamespace(min_insync_replicas=lambda topic: min_isr),
        metrics=BrokerCounters(),
        authorizer=None,
        quotas=ClientQuotas(None, QuotaWindow(11, 1000), QuotaWindow(11, 1000)),  # type: ignore[arg-type]
    )
    header = RequestHeader(api_key=0, api_version=9, correlation_id=1, client_id=None)
    return RequestContext(header, "127.0.0.1", "PLAINTEXT", services), manager  # type: ignore[arg-type]


def _request(acks: int, timeout_ms: int) -> ProduceRequest:
    batch = build_batch([SimpleRecord(None, b"v", (), 1000)])
    data = PartitionProduceData(index=i32(0), records=batch)
    return ProduceRequest(
        transactional_id=None,
        acks=i16(acks),
        timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
        topic_data=(TopicProduceData(name=TopicName("t"), partition_data=(data,)),),
    )


def _partition(response: Any) -> Any:
    (topic,) = response.responses
    (partition,) = topic.partition_responses
    return partition


def test_acks_all_answers_the_base_offset_once_the_follower_has_the_batch(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        context, manager = _context(tmp_path, isr=[ME, FOLLOWER])
        await produce.handle(context, _request(acks=1, timeout_ms=1000))  # offset 0
        answering = asyncio.create_task(produce.handle(context, _request(-1, 30_000)))
        await asyncio.sleep(0.01)
        assert not answering.done()
        manager.read("t", 0, 2, 1024, True, replica_id=FOLLOWER)  # the follower has both
        partition = _partition(await asyncio.wait_for(answering, 5))
        assert (partition.error_code, partition.base_offset) == (ErrorCode.none, 1)

    asyncio.run(scenario())


def test_acks_all_that_times_out_answers_request_timed_out_without_offsets(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        context, _ = _context(tmp_path, isr=[ME, FOLLOWER])
        partition = _partition(await produce.handle(context, _request(-1, timeout_ms=50)))
        assert partition.error_code == ErrorCode.request_timed_out
        assert (partition.base_offset, partition.log_start_offset) == (-1, -1)

    asyncio.run(scenario())


def test_acks_all_below_min_isr_answers_not_enough_replicas_and_appends_nothing(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        context, manager = _context(tmp_path, isr=[ME], min_isr=2)
        partition = _partition(await produce.handle(context, _request(-1, timeout_ms=1000)))
        assert partition.error_code == ErrorCode.not_enough_replicas
        assert partition.base_offset == -1
        replica = manager.get("t", 0)
        assert replica is not None and replica.log.log_end_offset == 0

    asyncio.run(scenario())
