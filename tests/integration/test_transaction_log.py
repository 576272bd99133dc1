"""The partition side of transactions against a real 3-broker cluster: a transactional batch
holds the last stable offset, read_committed fetches and ListOffsets stop there, and the
markers WriteTxnMarkers writes end the transaction: an aborted one is named to read_committed
fetches (and librdkafka's read_committed consumer skips its records), a committed one becomes
visible. The transaction coordinator is not involved: the test sends what it would."""

from __future__ import annotations

from typing import Any

from broker.log.record_codec import SimpleRecord, build_batch
from tests.integration.conftest import ClusterHandle
from tests.integration.isolated_reads import read_values
from tests.integration.requests import FETCH, LIST_OFFSETS, fetch_request
from tests.integration.txn_wire import (
    create_led,
    new_producer_id,
    produce_transactional,
    transactional_batch,
)
from tests.integration.wire import LATEST, WireClient

WRITE_TXN_MARKERS = 27
READ_COMMITTED = 1


def _fetch(
    client: WireClient, topic: str, offset: int, isolation_level: int, max_bytes: int = 1 << 20
) -> Any:
    fields = fetch_request(topic, 0, offset, partition_max_bytes=max_bytes)
    fields["isolation_level"] = isolation_level
    return client.request(FETCH, 12, fields).responses[0].partitions[0]


def _latest(client: WireClient, topic: str, isolation_level: int, timestamp: int = LATEST) -> int:
    fields = {
        "replica_id": -1,
        "isolation_level": isolation_level,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}
                ],
            }
        ],
    }
    response = client.request(LIST_OFFSETS, 7, fields)
    return int(response.topics[0].partitions[0].offset)


def _end_transaction(client: WireClient, topic: str, producer_id: int, commit: bool) -> int:
    response = client.request(
        WRITE_TXN_MARKERS,
        1,
        {
            "markers": [
                {
                    "producer_id": producer_id,
                    "producer_epoch": 0,
                    "transaction_result": commit,
                    "topics": [{"name": topic, "partition_indexes": [0]}],
                    "coordinator_epoch": 0,
                }
            ]
        },
    )
    return int(response.markers[0].topics[0].partitions[0].error_code)


def test_markers_end_transactions_for_read_committed_readers(cluster: ClusterHandle) -> None:
    topic = "txn-log"
    with WireClient.to(create_led(cluster, topic)) as client:
        producer_id = new_producer_id(client)
        aborted = transactional_batch(producer_id, 0, [b"aborted-1", b"aborted-2"])
        produce_transactional(client, topic, aborted)
        # Open: uncommitted readers see it, read_committed ones stop before it.
        assert _latest(client, topic, 0) == 2
        assert _latest(client, topic, READ_COMMITTED) == 0
        # By time too: read_committed finds nothing of the open transaction.
        assert _latest(client, topic, 0, timestamp=0) == 0
        assert _latest(client, topic, READ_COMMITTED, timestamp=0) == -1
        held = _fetch(client, topic, 0, READ_COMMITTED)
        assert (held.records or b"") == b"" and held.last_stable_offset == 0
        assert _fetch(client, topic, 0, 0).records
        assert _end_transaction(client, topic, producer_id, commit=False) == 0  # marker at 2
        assert _latest(client, topic, READ_COMMITTED) == 3
        answered = _fetch(client, topic, 0, READ_COMMITTED)
        assert [(t.producer_id, t.first_offset) for t in answered.aborted_transactions] == [
            (producer_id, 0)
        ]
        committed = transactional_batch(producer_id, 2, [b"committed-1", b"committed-2"])
        produce_transactional(client, topic, committed)
        assert _end_transaction(client, topic, producer_id, commit=True) == 0
        assert _latest(client, topic, READ_COMMITTED) == 6
        later_abort = transactional_batch(producer_id, 4, [b"aborted-3"])
        produce_transactional(client, topic, later_abort)
        assert _end_transaction(client, topic, producer_id, commit=False) == 0  # 6, marker 7
        # One batch fetched (max bytes 1): only aborted transactions with data in it.
        first = _fetch(client, topic, 0, READ_COMMITTED, max_bytes=1)
        assert [t.first_offset for t in first.aborted_transactions] == [0]
        from_committed = _fetch(client, topic, 3, READ_COMMITTED, max_bytes=1)
        assert list(from_committed.aborted_transactions or []) == []
        # From the abort marker (offset 2; the 1970 timestamps above rolled the segment
        # there): both aborts are in the records read.
        rest = _fetch(client, topic, 2, READ_COMMITTED)
        assert [t.first_offset for t in rest.aborted_transactions] == [0, 6]
    bootstrap = cluster.bootstrap
    assert read_values(bootstrap, topic, "read_committed", 2) == [b"committed-1", b"committed-2"]
    assert read_values(bootstrap, topic, "read_uncommitted", 5) == [
        b"aborted-1",
        b"aborted-2",
        b"committed-1",
        b"committed-2",
        b"aborted-3",
    ]


def test_a_marker_from_an_older_producer_epoch_is_refused(cluster: ClusterHandle) -> None:
    topic = "txn-log-fenced"
    with WireClient.to(create_led(cluster, topic)) as client:
        producer_id = new_producer_id(client)
        batch = build_batch(
            [SimpleRecord(None, b"v")],
            producer_id=producer_id,
            producer_epoch=3,
            base_sequence=0,
            is_transactional=True,
        )
        produce_transactional(client, topic, batch)
        invalid_producer_epoch = 47
        assert _end_transaction(client, topic, producer_id, commit=True) == invalid_producer_epoch
