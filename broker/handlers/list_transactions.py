"""ListTransactions v0-v1: the transactional ids this broker coordinates (not Dead ones), by state
names (an unknown name is echoed in `unknown_state_filters`), producer ids, and from v1 by
how long they have run (`duration_filter` ms, -1 for any). COORDINATOR_LOAD_IN_PROGRESS while
one of its partitions is still loading, as in Kafka."""

from __future__ import annotations

import time
from typing import Any

from broker.coordinator.transaction.metadata import TxnMetadata
from broker.coordinator.transaction.state import TxnState
from broker.network.context import RequestContext
from broker.protocol import adapter
from broker.protocol.api_keys import ApiKey
from broker.protocol.registry import response_class

STATE_NAMES = {state.kafka_name: state for state in TxnState}


async def handle(context: RequestContext, request: Any) -> Any:
    names = list(request.state_filters)
    states = {STATE_NAMES[name] for name in names if name in STATE_NAMES}
    producer_ids = {int(p) for p in request.producer_id_filters}
    duration_ms = int(getattr(request, "duration_filter", -1))
    now_ms = time.time_ns() // 1_000_000
    error, listed = context.services.transaction_coordinator.list_transactions()
    matching = [
        {
            "transactional_id": metadata.transactional_id,
            "producer_id": metadata.producer_id,
            "transaction_state": metadata.state.kafka_name,
        }
        for metadata in listed
        if metadata.state != TxnState.DEAD
        and (not names or metadata.state in states)
        and (not producer_ids or metadata.producer_id in producer_ids)
        and _ran_longer(metadata, duration_ms, now_ms)
    ]
    cls = response_class(ApiKey.LIST_TRANSACTIONS, context.api_version)
    return adapter.build(
        cls,
        {
            "throttle_time": 0,
            "error_code": error,
            "unknown_state_filters": [name for name in names if name not in STATE_NAMES],
            "transaction_states": matching,
        },
    )


def _ran_longer(metadata: TxnMetadata, duration_ms: int, now_ms: int) -> bool:
    """v1's duration filter, as Kafka applies it: -1 matches all; otherwise the time since
    the (last) transaction started must exceed it (an id that never started one has -1)."""
    return duration_ms < 0 or now_ms - metadata.start_timestamp_ms > duration_ms
