"""Hands out producer ids from blocks claimed in ZooKeeper (/latest_producer_id_block).

Each broker claims a block of ids with a conditional write, then serves ids from it until it
is used up, as Kafka's ZooKeeper-mode ProducerIdManager does; ids are unique cluster-wide.
"""

from __future__ import annotations

import asyncio

from zk.kafka_zk import KafkaZk


class ProducerIdManager:
    def __init__(self, kafka_zk: KafkaZk, broker_id: int) -> None:
        self._kafka_zk = kafka_zk
        self._broker_id = broker_id
        self._next_id = 0
        self._block_end = -1
        self._lock = asyncio.Lock()

    async def generate_producer_id(self) -> int:
        async with self._lock:
            if self._next_id > self._block_end:
                start, end = await self._kafka_zk.allocate_producer_id_block(self._broker_id)
                self._next_id, self._block_end = start, end
            producer_id = self._next_id
            self._next_id += 1
            return producer_id
