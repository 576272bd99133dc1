"""The requests Kafka brokers send their controller that run as controller events:
AlterPartition (`alter_partition.py`) and AllocateProducerIds (`producer_ids.py`).

Each kind waits in its `RequestQueue` until its event runs; the controller calls `serve` for
those events while active and `fail_all` when it is not (or resigns).
"""

from __future__ import annotations

from collections.abc import Callable

from kio.schema.errors import ErrorCode

from controller.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResult,
    alter_partition,
    alter_partition_requests,
)
from controller.context import ControllerContext
from controller.errors import NOT_CONTROLLER
from controller.events import (
    AllocateProducerIdsRequested,
    AlterPartitionReceived,
    ControllerEvent,
)
from controller.producer_ids import (
    ProducerIdsBlock,
    ProducerIdsRequest,
    allocate_producer_ids,
    producer_ids_requests,
)
from controller.zk_api import ControllerZk

SERVED_EVENTS = (AlterPartitionReceived, AllocateProducerIdsRequested)
ServedEvent = AlterPartitionReceived | AllocateProducerIdsRequested


class ServedRequests:
    def __init__(
        self,
        kafka_zk: ControllerZk,
        controller_id: int,
        enqueue: Callable[[ControllerEvent], None],
    ) -> None:
        self._zk = kafka_zk
        self._controller_id = controller_id
        self._enqueue = enqueue
        self._alter_partition = alter_partition_requests()
        self._producer_ids = producer_ids_requests()

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionResult:
        future = self._alter_partition.add(request)
        if future is None:
            return AlterPartitionResult(NOT_CONTROLLER)
        self._enqueue(AlterPartitionReceived())
        return await future

    async def allocate_producer_ids(self, request: ProducerIdsRequest) -> ProducerIdsBlock:
        future = self._producer_ids.add(request)
        if future is None:
            return ProducerIdsBlock(NOT_CONTROLLER)
        self._enqueue(AllocateProducerIdsRequested())
        return await future

    async def serve(self, event: ServedEvent, context: ControllerContext) -> None:
        if isinstance(event, AlterPartitionReceived):
            await self._alter_partition.run_all(
                lambda request: alter_partition(self._zk, context, self._controller_id, request)
            )
        else:
            await self._producer_ids.run_all(
                lambda request: allocate_producer_ids(self._zk, context, request)
            )

    def fail_all(self, error_code: ErrorCode) -> None:
        self._alter_partition.fail_all(error_code)
        self._producer_ids.fail_all(error_code)
