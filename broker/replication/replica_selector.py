"""Follower fetching (KIP-392): which replica a consumer should read a partition from.

A leader with `replica.selector.class` set answers a consumer's fetch (v11+, which carries the
consumer's `client.rack`) with a preferred read replica instead of records when the selector
picks another replica. As in Kafka's ReplicaManager.findPreferredReadReplica, the candidates
are the leader and the followers that are in the ISR, alive in the metadata, and whose log
covers the fetch offset (log start <= fetch offset <= log end). Kafka's
RackAwareReplicaSelector then picks the leader when the client names no rack, when no candidate
shares the client's rack, or when the leader does; otherwise the same-rack candidate with the
highest log end offset, then the one caught up most recently, then the highest broker id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.replication.partition import Partition

RACK_AWARE_REPLICA_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


@dataclass(frozen=True, slots=True)
class ClientMetadata:
    """What a consumer's Fetch v11+ tells about it (Kafka's ClientMetadata): its presence lets
    a follower serve the consumer, and `rack_id` (`client.rack`, "" when unset) steers the
    leader's choice of a preferred read replica."""

    rack_id: str = ""


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One candidate replica as the selector sees it (Kafka's ReplicaView)."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_last_caught_up_ms: int


def select_rack_aware(
    client_rack: str | None, leader: ReplicaView, candidates: list[ReplicaView]
) -> ReplicaView:
    """Kafka's RackAwareReplicaSelector.select over `candidates` (the leader among them)."""
    if not client_rack:
        return leader
    same_rack = [replica for replica in candidates if replica.rack == client_rack]
    if not same_rack or leader in same_rack:
        return leader
    return max(
        same_rack,
        key=lambda r: (r.log_end_offset, -r.time_since_last_caught_up_ms, r.broker_id),
    )


def preferred_read_replica(
    current: Partition,
    client_rack: str | None,
    fetch_offset: int,
    now_ms: int,
    broker_racks: Mapping[int, str | None],
) -> int | None:
    """The follower a consumer of the leader `current` should fetch from, or None (the
    leader itself). `broker_racks`: the live brokers' racks."""
    leader = ReplicaView(
        current.broker_id, broker_racks.get(current.broker_id), current.log.log_end_offset, 0
    )
    candidates = [leader]
    for broker_id, state in current.followers.items():
        if broker_id not in current.isr or broker_id not in broker_racks:
            continue
        if not state.log_start_offset <= fetch_offset <= state.log_end_offset:
            continue
        candidates.append(
            ReplicaView(
                broker_id,
                broker_racks[broker_id],
                state.log_end_offset,
                now_ms - state.last_caught_up_time_ms,
            )
        )
    selected = select_rack_aware(client_rack, leader, candidates)
    return None if selected is leader else selected.broker_id
