"""Transactional batches written by hand, as a transaction coordinator's producer would, straight
to a partition's leader: for tests of the partition side of transactions (the last stable
offset, markers) and of tools that find transactions no coordinator knows."""

from __future__ import annotations

from broker.log.record_codec import SimpleRecord, build_batch
from tests.integration.conftest import ClusterHandle
from tests.integration.requests import INIT_PRODUCER_ID, topic_spec
from tests.integration.wire import (
    WireClient,
    controller_address,
    create_topics,
    leader_address,
    produce,
)

# Produce requests of transactional batches name a transactional id, or Kafka refuses them;
# no coordinator knows this one: the batches go straight to the leader.
TRANSACTIONAL_ID = "written-by-hand"


def transactional_batch(producer_id: int, sequence: int, values: list[bytes]) -> bytes:
    """A transactional batch of epoch 0, its records timestamped in 1970."""
    records = [SimpleRecord(None, value, (), 1_000 + i) for i, value in enumerate(values)]
    return build_batch(
        records,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=sequence,
        is_transactional=True,
    )


def new_producer_id(client: WireClient) -> int:
    """A new producer id (InitProducerId without a transactional id), at epoch 0."""
    response = client.request(
        INIT_PRODUCER_ID,
        4,
        {
            "transactional_id": None,
            "transaction_timeout": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
    )
    assert int(response.error_code) == 0 and response.producer_epoch == 0, response
    return int(response.producer_id)


def produce_transactional(client: WireClient, topic: str, batch: bytes, partition: int = 0) -> None:
    """Write `batch` to the partition (acks=all); fails unless the leader accepts it."""
    response = produce(client, topic, partition, batch, acks=-1, transactional_id=TRANSACTIONAL_ID)
    assert int(response.error_code) == 0, response


def create_led(cluster: ClusterHandle, topic: str) -> str:
    """Create `topic` (1 partition, RF 3); the address of its leader."""
    controller = controller_address(cluster)
    with WireClient.to(controller) as client:
        assert int(create_topics(client, [topic_spec(topic, 1, 3)]).topics[0].error_code) == 0
    return leader_address(cluster, topic, via=controller)
